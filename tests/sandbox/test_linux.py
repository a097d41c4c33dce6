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
    """Every tabled number is the header's, and a missing one is missing there too."""
    header = HEADERS[column]
    if not header.exists():
        pytest.skip(f"{header} not installed")
    numbers = {}
    for name, number in re.findall(r"#define __NR(?:3264)?_(\w+)\s+(\d+)", header.read_text()):
        numbers.setdefault(name, int(number))
    table = {name: numbers_by_arch[column] for name, numbers_by_arch in linux.SYSCALLS.items()}
    assert table == {name: numbers.get(name) for name in table}, arch
