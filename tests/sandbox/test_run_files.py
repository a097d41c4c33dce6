"""A program's files in and out of a run's directory (`run_files`), never through a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reward_service.sandbox import run_files


@pytest.mark.parametrize(
    ("path", "names"),
    [
        ("a/b.txt", ["a", "b.txt"]),
        ("./a//b", ["a", "b"]),
        ("a/../b", ["b"]),
        ("/etc/passwd", None),
        ("../x", None),
        ("a/../../x", None),
        (".", None),
        ("", None),
        ("a\0b", None),
    ],
)
def test_a_path_is_its_components_inside_the_directory(path: str, names: list[str] | None) -> None:
    """A relative path is its components (`..` taken lexically); one that leaves is None."""
    assert run_files.parts(path) == names


def test_files_are_written_with_their_directories(tmp_path: Path) -> None:
    """Each file lands at its path, its directories made; one whose place is taken is left out
    and the rest are written."""
    (tmp_path / "main.cpp").write_text("the source")
    files = [
        ("d/e/in.txt", b"hi"),
        ("main.cpp", b"not the source"),
        ("main.cpp/x", b""),
        ("z", b""),
    ]
    run_files.write_files(str(tmp_path), [(p, memoryview(d)) for p, d in files])
    assert (tmp_path / "d" / "e" / "in.txt").read_bytes() == b"hi"
    assert (tmp_path / "main.cpp").read_text() == "the source"
    assert (tmp_path / "z").read_bytes() == b""


def test_no_file_is_written_through_a_link(tmp_path: Path) -> None:
    """A link in the directory (a runner's, to a directory outside) is not a way out: the
    file under it, and a file at its name, are left out."""
    outside, workdir = tmp_path / "outside", tmp_path / "run"
    outside.mkdir()
    workdir.mkdir()
    (workdir / "lib").symlink_to(outside)
    run_files.write_files(str(workdir), [("lib/x", memoryview(b"x")), ("lib", memoryview(b"y"))])
    assert list(outside.iterdir()) == []
    assert (workdir / "lib").is_symlink()


def test_files_are_read_in_order_within_the_cap(tmp_path: Path) -> None:
    """Files asked for come back by index while their bytes fit; a missing one is skipped,
    one too big for what is left is skipped and a smaller one after it still fits."""
    for name, size in (("a", 4), ("b", 5), ("c", 2)):
        (tmp_path / name).write_bytes(b"x" * size)
    found = run_files.read_files(str(tmp_path), ["a", "gone", "b", "c"], 7)
    assert found == [(0, b"xxxx"), (3, b"xx")]


def test_nothing_is_read_through_a_link_or_from_a_special_file(tmp_path: Path) -> None:
    """A link to a file, a directory on the way swapped for a link, a FIFO (which would block
    an open for reading) and a file with a second hard link are not read."""
    secret = tmp_path / "secret"
    secret.write_text("the service's")
    workdir = tmp_path / "run"
    workdir.mkdir()
    (workdir / "out.txt").symlink_to(secret)
    (workdir / "d").symlink_to(tmp_path)
    os.mkfifo(workdir / "fifo")
    (workdir / "mine").write_text("mine")
    os.link(workdir / "mine", workdir / "hard")
    paths = ["out.txt", "d/secret", "fifo", "hard", "mine"]
    assert run_files.read_files(str(workdir), paths, 1000) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid: root only")
def test_hand_over_changes_links_not_their_targets(tmp_path: Path) -> None:
    """The run's uid gets every entry, a link itself included; what the link names keeps
    its owner."""
    target = tmp_path / "target"
    target.write_text("root's")
    workdir = tmp_path / "run"
    (workdir / "d").mkdir(parents=True)
    (workdir / "d" / "f").write_text("x")
    (workdir / "link").symlink_to(target)
    run_files.hand_over(str(workdir), 60599)
    owners = {p.name: p.lstat().st_uid for p in workdir.rglob("*")}
    assert owners == {"d": 60599, "f": 60599, "link": 60599}
    assert target.stat().st_uid == 0
