"""The program in a response: its last fenced code block in a known language.

The scorer passes only the answer region (`scorers.reasoning`). A fence is a line whose
first non-blank characters are three or more backticks; the block ends at a
line holding only a fence at least as long. The info string's first word
names the language (`python`, `py`, `python3`, or none for Python; `cpp`,
`c++`, `c`, `java`, `go`, `js`, `javascript`, `ts`, `rust`, `ruby`, `php`,
`perl`, `lua`, `r`, `verilog`, `scala`, `kotlin`, `csharp`, `d`, `racket` and their like); the last
closed block in a known language is the program, so an answer that ends with a block of sample
output (```` ```text ````) still grades its code.
An unclosed block (a truncated answer) is not a program.

The scan reads each line once, with no regular expression: linear in the
response, safe on the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass

FENCE = "```"
LANGUAGES: dict[str, str] = {
    "": "python",
    "python": "python",
    "py": "python",
    "python3": "python",
    "cpp": "cpp",
    "c++": "cpp",
    "cxx": "cpp",
    "cc": "cpp",
    "java": "java",
    "go": "go",
    "golang": "go",
    "js": "javascript",
    "javascript": "javascript",
    "node": "javascript",
    "nodejs": "javascript",
    "rust": "rust",
    "rs": "rust",
    "c": "c",
    "ruby": "ruby",
    "rb": "ruby",
    "php": "php",
    "perl": "perl",
    "pl": "perl",
    "lua": "lua",
    "ts": "typescript",
    "typescript": "typescript",
    "r": "R",
    "verilog": "verilog",
    "systemverilog": "verilog",
    "scala": "scala",
    "kotlin": "kotlin",
    "kt": "kotlin",
    "kts": "kotlin_script",
    "csharp": "csharp",
    "cs": "csharp",
    "c#": "csharp",
    "d": "d",
    "dlang": "d",
    "racket": "racket",
    "rkt": "racket",
}
"""A fence's info word (lower case) -> the sandbox runner that runs its program."""


@dataclass(frozen=True)
class Extracted:
    """A program found in a response."""

    language: str
    source: str


def _fence_length(line: str) -> int:
    """How many backticks open `line` after its indentation (0: not a fence)."""
    body = line.lstrip(" \t")
    return len(body) - len(body.lstrip("`")) if body.startswith(FENCE) else 0


def last_program(text: str) -> Extracted | None:
    """The last closed code block in a known language in `text`, or None."""
    found: Extracted | None = None
    opened: tuple[int, str | None] | None = None
    body: list[str] = []
    for line in text.split("\n"):
        run = _fence_length(line)
        if opened is None:
            if run:
                info = line.lstrip(" \t")[run:].strip()
                if "`" not in info:
                    words = info.split(maxsplit=1)
                    opened = (run, LANGUAGES.get(words[0].lower() if words else ""))
                    body = []
        elif run >= opened[0] and not line.strip(" \t\r`"):
            if opened[1] is not None:
                found = Extracted(opened[1], "\n".join(body) + "\n")
            opened = None
        else:
            body.append(line)
    return found
