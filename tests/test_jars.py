"""`toolchains.jar_member` reads a JVM compiler's version file out of its jar as `zipfile`
does, from one search of the central directory (here, not in tests/sandbox/: see the
CHANGELOG of 2026-12-07)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from reward_service.sandbox.toolchains import TOOLCHAINS, jar_member

MANIFEST = "META-INF/MANIFEST.MF"


def _jar(path: Path, members: dict[str, bytes], **options: object) -> Path:
    with zipfile.ZipFile(path, "w", **options) as jar:  # type: ignore[arg-type]
        for name, data in members.items():
            jar.writestr(name, data)
    return path


@pytest.mark.parametrize("compression", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
def test_the_first_name_held_is_read_whole(tmp_path: Path, compression: int) -> None:
    """Deflated or stored, among many entries, one whose name ends in the wanted one first:
    the member itself, the first of the names it holds."""
    members = {f"org/x/C{i}.class": bytes([i % 256]) * 300 for i in range(2000)}
    members |= {f"shaded/{MANIFEST}": b"Implementation-Version: 0.0\n"}
    members |= {MANIFEST: b"Manifest-Version: 1.0\nImplementation-Version: 1.3.31\n" * 40}
    jar = _jar(tmp_path / "c.jar", members, compression=compression)
    assert jar_member(str(jar), ["compiler.properties", MANIFEST]) == (MANIFEST, members[MANIFEST])
    assert jar_member(str(jar), [MANIFEST, "org/x/C7.class"])[0] == MANIFEST


def test_an_archive_with_a_comment_is_read(tmp_path: Path) -> None:
    jar = tmp_path / "c.jar"
    with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("compiler.properties", "version.number=2.11.12\n")
        archive.comment = b"a comment of the archive " * 100
    assert jar_member(str(jar), ["compiler.properties"])[1] == b"version.number=2.11.12\n"


def test_a_missing_member_is_a_key_error(tmp_path: Path) -> None:
    jar = _jar(tmp_path / "c.jar", {"a.class": b"x"})
    with pytest.raises(KeyError):
        jar_member(str(jar), [MANIFEST])


def test_what_it_cannot_read_by_hand_zipfile_reads(tmp_path: Path) -> None:
    """A compression other than deflate (bzip2) is left to `zipfile`: the same bytes."""
    jar = _jar(tmp_path / "c.jar", {MANIFEST: b"Implementation-Version: 9\n"}, compression=12)
    assert jar_member(str(jar), [MANIFEST]) == (MANIFEST, b"Implementation-Version: 9\n")


def test_a_jvm_compilers_version_is_read_from_its_jar(tmp_path: Path) -> None:
    """Kotlin's version from its compiler jar's manifest, Scala's from compiler.properties."""
    kotlin = _jar(tmp_path / "k.jar", {MANIFEST: b"Implementation-Version: 1.3.31\r\n"})
    scala = _jar(
        tmp_path / "s.jar",
        {
            MANIFEST: b"Implementation-Version: 9\n",
            "compiler.properties": b"version.number=2.11.12",
        },
    )
    assert (
        TOOLCHAINS["kotlin"].version({"jar:kotlin-compiler.jar": str(kotlin)}) == "kotlinc 1.3.31"
    )
    assert TOOLCHAINS["scala"].version({"jar:scala-compiler.jar": str(scala)}) == "scalac 2.11.12"
