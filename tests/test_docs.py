"""The README and docs/ hold together: every link resolves, every page is reachable.

Links are checked as GitHub renders them: a relative path must name a file or
directory of the checkout, and a `#fragment` must be the slug of a heading of
the page it points to (GitHub's rules: lower case, punctuation dropped, spaces
to hyphens, `-1`, `-2` for repeated headings). Links in code are not links.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
INDEX = DOCS / "index.md"
README = ROOT / "README.md"
PAGES = [README, ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]
MAX_README_LINES = 200
SERVE_COMMAND = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install . && reward-service serve"
)
TEST_COMMAND = (
    "python3 -m venv .venv && . .venv/bin/activate && "
    "pip install -c requirements-dev.lock -e '.[dev]' && python -m pytest"
)

_FENCE = re.compile(r"^\s{0,3}(`{3,}(?=[^`]*$)|~{3,})")  # a backtick fence's info has no backtick
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^\s)>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text: str) -> list[str]:
    """The lines of a Markdown text outside fenced code blocks."""
    lines, fence = [], ""
    for line in text.splitlines():
        opening = _FENCE.match(line)
        if fence:
            if opening and opening[1][0] == fence[0] and len(opening[1]) >= len(fence):
                fence = ""
            continue
        if opening:
            fence = opening[1]
            continue
        lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: links to their text, punctuation out."""
    text = _LINK.sub(lambda m: m[1], heading).lower()
    kept = (
        c
        for c in text
        if c in "-_ " or (c.isalnum() if c.isascii() else unicodedata.category(c)[0] in "LNM")
    )
    return "".join(kept).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every `#fragment` that reaches a heading of the page, repeats numbered as GitHub does."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose_lines(page.read_text()):
        heading = _HEADING.match(line)
        if not heading:
            continue
        base = slug(heading[2])
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    """The targets of the page's inline and reference links, in order, code left out."""
    targets = []
    for line in prose_lines(page.read_text()):
        targets += [m[2] for m in _LINK.finditer(_CODE_SPAN.sub("", line))]
        reference = _REFERENCE.match(line)
        if reference:
            targets.append(reference[1])
    return targets


def broken_links(page: Path) -> list[str]:
    """The page's relative links whose file or heading does not exist, each with why."""
    broken = []
    for target in links(page):
        if _EXTERNAL.match(target):
            continue
        path, _, fragment = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif fragment and destination.suffix == ".md" and fragment not in anchors(destination):
            broken.append(f"{target}: no heading with that anchor")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(page: Path) -> None:
    """Every relative link of the README, the changelog and docs/ reaches a file and heading."""
    assert broken_links(page) == []


def test_every_docs_page_is_linked_from_the_index() -> None:
    """Each page in docs/ is one link away from docs/index.md."""
    linked = {(INDEX.parent / t.partition("#")[0]).resolve() for t in links(INDEX)}
    missing = [
        p.name for p in sorted(DOCS.glob("*.md")) if p != INDEX and p.resolve() not in linked
    ]
    assert missing == []


def test_readme_links_the_index() -> None:
    """The README leads to docs/index.md, so every page is reachable from it too."""
    assert "docs/index.md" in links(README)


def test_readme_is_short() -> None:
    """The README stays a five-minute read: at most 200 lines."""
    assert len(README.read_text().splitlines()) <= MAX_README_LINES


def test_readme_starts_with_the_two_commands() -> None:
    """After its title the README opens with the serve command, then the test command."""
    lines = README.read_text().splitlines()
    assert lines[:9] == [
        "# reward-service",
        "",
        "```bash",
        SERVE_COMMAND,
        "```",
        "",
        "```bash",
        TEST_COMMAND,
        "```",
    ]


def test_link_check_finds_planted_breaks(tmp_path: Path) -> None:
    """A missing file, a missing heading and a repeated heading's wrong number are caught."""
    (tmp_path / "other.md").write_text("# Other\n\n## Production: what to `require`\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## Notes\n\n## Notes\n\n"
        "[ok](other.md#production-what-to-require) [ok](#notes-1) [ok](other.md)\n"
        "[gone](missing.md) [no heading](other.md#nope) [too far](#notes-2)\n"
        "[web](https://example.com/x.md#y) `[code](missing.md)`\n"
        "```\n[fenced](missing.md)\n# not a heading\n```\n"
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#nope: no heading with that anchor",
        "#notes-2: no heading with that anchor",
    ]


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("math_verify: `final` or `any` extraction", "math_verify-final-or-any-extraction"),
        (
            "A uid of the runs' own: `components/separate-uid`",
            "a-uid-of-the-runs-own-componentsseparate-uid",
        ),
        ("On a Ray cluster (Ray Serve)", "on-a-ray-cluster-ray-serve"),
        ("Details (`?detail=1`)", "details-detail1"),
        ("See [the sandbox](sandbox.md)", "see-the-sandbox"),
    ],
)
def test_slug_follows_github(heading: str, anchor: str) -> None:
    """Heading anchors are computed as GitHub computes them."""
    assert slug(heading) == anchor
