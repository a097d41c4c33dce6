"""An earlier answer in each language, then a later Python run that reads its own memory for it.

Never run this directly: `test_residue.py` starts it under `tests.sandbox.harness.confine`
inside `unshare --pid --fork --mount-proc` (the later run reads its own heap with ctypes,
`hostile_programs._heap_scan`), on a platform of `tests.sandbox.harness.platforms`.
Every run is forked from the zygote (or from a template it forked), so what the zygote
kept of an earlier answer in memory a fork inherits, the later run finds there. Each
earlier answer carries fresh markers in its source, in a file given beside it and in its
stdin; the Python one also writes a file that is fetched, and a C++ one fails to build
with its marker in the compiler's message. One JSON line per language: the markers the
later run found.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from pathlib import Path
from typing import Any

from reward_service.sandbox import Limits, Program
from reward_service.sandbox.toolchains import TOOLCHAINS
from reward_service.sandbox.zygote_client import ZygoteSandbox
from tests.sandbox.harness.hostile_programs import _heap_scan

PREFIX = "resid"
SCAN = _heap_scan(rb"resid[0-9a-f]{32}") + (
    "import json\nprint(json.dumps({'pages': pages, 'found': sorted(x.decode() for x in found)}))\n"
)
"""The later run: every marker in the memory it was forked with."""
EARLIER = Limits(time_s=10.0, memory_mb=512, output_bytes=1 << 16)
LATER = Limits(time_s=10.0, memory_mb=384, output_bytes=1 << 16)
"""Other limits than the earlier answer's: a template of its own, forked after it."""
SIZES = (2000, 400, 80)
"""Lines of each earlier answer, largest first (about 100, 20 and 4 kB: the sizes a freed
chunk, a write buffer, a message are reused at differ); each has markers of its own."""
PROGRAMS = {
    "python": "import sys\nsys.stdin.read()\nopen('out.txt', 'w').write({out!r} * {lines})\n"
    "print('ok')\n",
    "cpp": '#include <cstdio>\nint main() {{ std::puts("ok"); }}\n',
    "cpp-broken": "int main() {{ return {word}; }}\n",
    "java": "public class Main {{\n    public static void main(String[] args) {{\n"
    '        System.out.println("ok");\n    }}\n}}\n',
    "go": 'package main\n\nimport "fmt"\n\nfunc main() {{ fmt.Println("ok") }}\n',
    "javascript": 'console.log("ok");\n',
    "rust": 'fn main() {{ println!("ok"); }}\n',
    "scala": 'object Main {{\n  def main(args: Array[String]): Unit = println("ok")\n}}\n',
}
"""Each language's earlier answer (formatted: `out`, `word`); its source marker is added
in comments. Scala's build names its file from the source (the zygote reads it in place,
as Java's); the other languages' sources reach the zygote as these do (C# and D passed
too on the five profiles, 2026-12-03, and were left out for the suite's time)."""


def marker() -> str:
    return PREFIX + secrets.token_hex(16)


def earlier(language: str, lines: int) -> tuple[Program, bytes, dict[str, str]]:
    """An answer in `language` of about `lines` lines with fresh markers (its stdin and files
    as long), its stdin, and which marker is where."""
    where = {"source": marker(), "file": marker(), "stdin": marker(), "fetched": marker()}
    comment = "#" if language == "python" else "//"
    # the marker far from the start (a freed chunk's first bytes are the allocator's) and in
    # a source of a few kB (beyond pymalloc's small objects, within a write buffer's 8 kB)
    text = PROGRAMS[language].format(out=where["fetched"] + "\n", word=where["source"], lines=lines)
    text += "".join(f"{comment} line {i} {where['source']}\n" for i in range(lines))
    name = language.removesuffix("-broken")
    files = (("input.txt", (where["file"] + "\n").encode() * lines),)
    return Program(name, text, files=files), (where["stdin"] + "\n").encode() * lines, where


def emit(results: Path, event: str, **fields: Any) -> None:
    with results.open("a") as f:
        f.write(json.dumps({"event": event, **fields}, default=str) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=Path, required=True)
    args = parser.parse_args()
    from reward_service.scorers.code.settings import DEFAULT_TOOLCHAIN_PATH

    with ZygoteSandbox(
        scratch_mb=64, toolchain_path=DEFAULT_TOOLCHAIN_PATH, languages=list(TOOLCHAINS)
    ) as sandbox:
        emit(args.results, "layers", layers=list(sandbox.layers))
        for language in PROGRAMS:
            where: dict[str, str] = {}
            ended: list[str] = []
            for lines in SIZES:
                program, stdin, markers = earlier(language, lines)
                where |= {f"{part}@{lines}": marker for part, marker in markers.items()}
                try:
                    done = sandbox.execute(
                        program,
                        [stdin],
                        EARLIER,
                        90,
                        fetch=("out.txt",),
                        fetch_bytes=1 << 20,
                        build_time_s=40,  # scalac takes 5-20 s on a loaded machine
                    )
                except Exception as e:  # no toolchain for it here: reported, not scanned
                    ended.append(f"{type(e).__name__}: {e}")
                    break
                ended += [f"build {done.build.kind.value}"] if done.build is not None else []
                ended += [o.kind.value for o in done.runs]
            (scan,) = sandbox.execute(Program("python", SCAN), [b""], LATER, 60).outcomes()
            try:
                seen = json.loads(scan.stdout)
            except ValueError:
                seen = {"error": f"{scan.kind.value}: {scan.stdout[-200:]!r} {scan.stderr}"}
            found = [name for name, marker in where.items() if marker in seen.get("found", [])]
            emit(
                args.results,
                "residue",
                language=language,
                ended=ended,
                pages=seen.get("pages"),
                error=seen.get("error"),
                found=found,
            )
    emit(args.results, "after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
