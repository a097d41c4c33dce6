"""The hand-written syscall table against the kernel headers, where they are installed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reward_service.sandbox import linux

HEADERS = {
    0: Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
    1: Path("/usr/include/asm-generic/unistd.h"),  # aarch64 uses the generic table
}


@pytest.mark.parametrize(("column", "arch"), [(0, "x86_64"), (1, "aarch64")])
def test_the_syscall_numbers_match_the_headers(column: int, arch: str) -> None:
    """Every number the header has is the table's; a call newer than the header is numbered
    past the header's last, and one the architecture lacks is None in the table too."""
    header = HEADERS[column]
    if not header.exists():
        pytest.skip(f"{header} not installed")
    numbers = {}
    for name, number in re.findall(r"#define __NR(?:3264)?_(\w+)\s+(\d+)", header.read_text()):
        numbers.setdefault(name, int(number))
    table = {name: numbers_by_arch[column] for name, numbers_by_arch in linux.SYSCALLS.items()}
    newer = {name for name, number in table.items() if number is not None and name not in numbers}
    assert all(table[name] > max(numbers.values()) for name in newer), arch
    assert {n: table[n] for n in table if n not in newer} == {
        n: numbers.get(n) for n in table if n not in newer
    }, arch
