"""Generated answers for checking the `math_verify` scorer against plain math_verify.

`generate_cases` builds (response, label) pairs the way an RL rollout sends
them: a chain of thought, then a final answer in one of many wrappings
(boxed, in math environments, several boxes, text after the box, no box,
unbalanced braces, truncated mid-answer), against a gold label of any JSON
type. Answers are drawn around the gold: the same value in other forms,
near misses and plain wrong values. The reference verdict comes from
`reward_service.bench.reference.plain_grade`.

With `bare`, the answers are also written the way `extraction=any` is for:
the answer alone (`-5`, `$(3,2)$`, `$$f(y) = y$$`), after "The answer is"
with no box, a number then a change of mind, a box then a later bare
value; a third of them with no reasoning before. Their reference is
`plain_grade_any`.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from reward_service.bench.reference import Case
from reward_service.scorers.base import JSON

_PROSE = (
    "so we have then the value of is let compute note that hence it follows "
    "because therefore sum product each term gives us check again"
)

_Family = Callable[[random.Random], tuple[JSON, list[str]]]


def _integer(rng: random.Random) -> tuple[JSON, list[str]]:
    n = rng.choice([rng.randint(0, 99), rng.randint(100, 10**7), rng.randint(-999, -1)])
    label: JSON = rng.choice([n, str(n), float(n), f" {n} "])
    forms = [str(n), str(n), str(n + 1), str(n - 1), str(-n), f"+{n}", f"0{n}", f"{n}.0"]
    forms += [f"{n:,}", f"{n}{{,}}000", f"\\text{{{n}}}", f"{n} \\text{{ cm}}", f"\\${n}"]
    forms += [f"{n}\\%", f"{n}^\\circ", f"x = {n}", f"{n}.", f"- {n}", f"{n} {n}"]
    return label, forms


def _decimal(rng: random.Random) -> tuple[JSON, list[str]]:
    cents = rng.randint(-999, 9999)
    x = cents / 100
    label: JSON = rng.choice([f"{x}", x, f"{x:.2f}", "0.5"])
    forms = [f"{x}", f"{x:.2f}", f"{x:.3f}", f"\\frac{{{cents}}}{{100}}", f"{cents}/100"]
    forms += [f"{x + 0.01:.2f}", f"{-x}", "0.5", ".5", "\\frac12", f"{x:.6f}", f"{x}0"]
    return label, forms


def _fraction(rng: random.Random) -> tuple[JSON, list[str]]:
    p, q = rng.randint(1, 40), rng.randint(2, 40)
    sign = rng.choice(["", "-"])
    label: JSON = rng.choice([f"{sign}\\frac{{{p}}}{{{q}}}", f"{sign}{p}/{q}"])
    forms = [f"{sign}\\frac{{{p}}}{{{q}}}", f"{sign}\\dfrac{{{p}}}{{{q}}}", f"{sign}{p}/{q}"]
    forms += [f"{sign}\\frac{{{2 * p}}}{{{2 * q}}}", f"{sign}{p / q:.6f}", f"\\frac{{{p}}}{{{q}}}"]
    forms += [f"\\frac{{-{p}}}{{{q}}}", f"{sign}\\frac{{{q}}}{{{p}}}", f"{sign}\\frac {p}{q}"]
    forms += [f"{sign}\\tfrac{{{p}}}{{{q}}}", f"{sign}\\frac{{{p}}}{{{q + 1}}}"]
    return label, forms


def _radical(rng: random.Random) -> tuple[JSON, list[str]]:
    a, b = rng.randint(2, 6), rng.choice([2, 3, 5, 6, 7])
    label: JSON = rng.choice([f"{a}\\sqrt{{{b}}}", f"{a}\\sqrt{b}", f"\\sqrt{{{a * a * b}}}"])
    forms = [f"{a}\\sqrt{{{b}}}", f"\\sqrt{{{a * a * b}}}", f"{a}\\sqrt{b}", f"\\sqrt{{{b}}}"]
    forms += [f"\\sqrt{{{b}}} \\cdot {a}", f"{a + 1}\\sqrt{{{b}}}", f"{(a * a * b) ** 0.5:.4f}"]
    return label, forms


def _pi(rng: random.Random) -> tuple[JSON, list[str]]:
    k = rng.randint(2, 9)
    label: JSON = rng.choice([f"{k}\\pi", f"\\frac{{\\pi}}{{{k}}}"])
    forms = [f"{k}\\pi", f"\\pi {k}", f"\\frac{{\\pi}}{{{k}}}", f"{k * 3.14159265:.6f}", "\\pi"]
    forms += [f"\\frac{{{k}\\pi}}{{2}}", f"{k}\\cdot\\pi", f"{k} \\pi \\text{{ cm}}^2"]
    return label, forms


def _interval(rng: random.Random) -> tuple[JSON, list[str]]:
    a, b = sorted(rng.sample(range(-9, 10), 2))
    label: JSON = rng.choice([f"({a}, {b}]", f"[{a},\\infty)", f"(-\\infty, {b})"])
    forms = [f"({a}, {b}]", f"({a},{b}]", f"\\left({a}, {b}\\right]", f"[{a},{b}]", f"({a},{b})"]
    forms += [f"[{a},\\infty)", f"(-\\infty, {b})", f"x > {a}", f"{a} < x \\le {b}"]
    return label, forms


def _set(rng: random.Random) -> tuple[JSON, list[str]]:
    items = [str(n) for n in rng.sample(range(-5, 20), 3)]
    label: JSON = rng.choice([f"\\{{{', '.join(items)}\\}}", ", ".join(items), items])
    forms = [f"\\{{{', '.join(items)}\\}}", ", ".join(reversed(items)), ", ".join(items[:2])]
    forms += [f"\\{{{','.join(sorted(items))}\\}}", f"{items[0]} and {items[1]}"]
    forms += [" or ".join(items), f"x = {items[0]}, {items[1]}, {items[2]}"]
    return label, forms


def _tuple(rng: random.Random) -> tuple[JSON, list[str]]:
    a, b = rng.randint(-9, 9), rng.randint(-9, 9)
    label: JSON = f"({a}, {b})"
    forms = [f"({a}, {b})", f"({a},{b})", f"({b}, {a})", f"\\left({a}, {b}\\right)", f"{a}, {b}"]
    forms += [f"(x, y) = ({a}, {b})", f"({a}, {b}, 0)"]
    return label, forms


def _polynomial(rng: random.Random) -> tuple[JSON, list[str]]:
    a = rng.randint(1, 9)
    label: JSON = rng.choice([f"x^2+{2 * a}x+{a * a}", f"(x+{a})^2"])
    forms = [f"x^2+{2 * a}x+{a * a}", f"(x+{a})^2", f"{a * a}+{2 * a}x+x^2", f"x^2+{a}x+{a * a}"]
    forms += [f"(x + {a})(x + {a})", f"y^2+{2 * a}y+{a * a}", f"x^{{2}} + {2 * a} x + {a * a}"]
    return label, forms


def _percentage(rng: random.Random) -> tuple[JSON, list[str]]:
    p = rng.randint(1, 99)
    label: JSON = rng.choice([f"{p}\\%", f"{p}%", f"{p}", p])
    forms = [f"{p}\\%", f"{p}%", f"{p}", f"{p / 100}", f"{p} \\text{{ percent}}", f"{p} percent"]
    forms += [f"{p + 1}\\%", f"{p}.0\\%", f"\\frac{{{p}}}{{100}}"]
    return label, forms


def _matrix(rng: random.Random) -> tuple[JSON, list[str]]:
    a, b, c, d = (rng.randint(-5, 9) for _ in range(4))
    body = f"{a}&{b}\\\\{c}&{d}"
    label: JSON = f"\\begin{{pmatrix}}{body}\\end{{pmatrix}}"
    forms = [
        f"\\begin{{pmatrix}}{body}\\end{{pmatrix}}",
        f"\\begin{{bmatrix}}{body}\\end{{bmatrix}}",
    ]
    forms += [f"\\begin{{pmatrix}}{a}&{b}\\\\{c}&{d + 1}\\end{{pmatrix}}", f"\\begin{{pmatrix}}{a}"]
    return label, forms


def _text(rng: random.Random) -> tuple[JSON, list[str]]:
    word = rng.choice(["yes", "no", "(B)", "east"])
    label: JSON = rng.choice([word, f"\\text{{{word}}}"])
    return label, [word, f"\\text{{{word}}}", f"\\textbf{{{word}}}", "\\text{maybe}", "C"]


_MIXED: list[_Family] = [
    _integer,
    _decimal,
    _fraction,
    _radical,
    _pi,
    _interval,
    _set,
    _tuple,
    _polynomial,
    _percentage,
    _matrix,
    _text,
]


def _chain_of_thought(rng: random.Random, chars: int) -> str:
    words = _PROSE.split()
    parts: list[str] = []
    size = 0
    while size < chars:
        roll = rng.random()
        if roll < 0.15:
            part = f"${rng.choice('xyn')} = {rng.randint(1, 99)}$"
        elif roll < 0.2:
            part = f"\n\\[ \\frac{{{rng.randint(1, 9)}}}{{{rng.randint(2, 9)}}} + y^{{2}} \\]\n"
        elif roll < 0.23:
            part = f"(see step {rng.randint(1, 5)})"
        elif roll < 0.24:
            part = f"so far \\boxed{{{rng.randint(1, 99)}}} but"
        elif roll < 0.25:
            part = "the answer might be"
        else:
            part = rng.choice(words)
        parts.append(part)
        size += len(part) + 1
    return " ".join(parts)


_FINALS: list[str] = [
    "The answer is $\\boxed{X}$.",
    "Therefore, the final answer is \\boxed{X}.",
    "**Final Answer**\n\\[\n\\boxed{X}\n\\]",
    "So \\(\\boxed{X}\\)",
    "$$ r = \\boxed{X} $$",
    "Hence \\boxed {X}.",
    "Hence \\fbox{X}.",
    "\\boxed{X}",
    "\\boxed{X}\n\nLet me double-check: $y = 2$ holds (see above).",
    "\\boxed{X}. Done [checked].",
    "\\boxed{Y} and \\boxed{X}",
    "\\boxed{X}, \\boxed{Y}",
    "$\\boxed{Y}$ or $\\boxed{X}$",
    "\\boxed{Y}\n\nOn reflection, a long pause to reconsider every step once more.\n\\boxed{X}",
    "\\boxed{{X}}",
    "\\boxed{\\text{X}}",
    "\\boxed{X",
    "\\boxed{X}}",
    "\\boxed{{X}",
    "\\boxed{}",
    "$\\boxed{X}$\\%",
    "\\boxed{X}\\%",
    "\\boxed{X} [ \\boxed{Y} ] ",
    "\\boxed{X}. The final answer is $X$. I hope it is correct.",
    "The final answer is $X$. I hope it is correct.",
    "The answer is X.",
    "Final Answer: $X$",
    "**Answer:** X",
    "so it is X",
    "",
]


_BARE_FINALS: list[str] = [
    "X",
    "X",
    "$X$",
    "$$X$$",
    "\\(X\\)",
    "\\[X\\]",
    "$$f(y) = X$$",
    "The answer is X",
    "X.",
    "so x = X",
    "Y, so X",
    "X\n\nWait, maybe Y",
    "\\boxed{X} but actually Y",
    "**X**",
    "answer: $X$",
    "We get $Y$ and then $X$.",
    "X (not Y)",
]

_CHAIN_CHARS = [0, 200, 800, 2000, 5000]
_SHORT_CHAIN_CHARS = [0, 0, 200, 800]


def _response(
    rng: random.Random,
    answer: str,
    other: str,
    finals: list[str] = _FINALS,
    chain_chars: list[int] = _CHAIN_CHARS,
) -> str:
    final = rng.choice(finals).replace("X", answer).replace("Y", other)
    chain = _chain_of_thought(rng, rng.choice(chain_chars))
    shape = rng.random()
    if shape < 0.3:
        text = f"<think>\n{chain}\n</think>\n\n{final}"
    elif shape < 0.4:
        text = f"{chain}</think>{final}"
    elif shape < 0.45:
        text = f"<think>{chain} \\boxed{{{other}}}</think>\n{final}"
    else:
        text = f"{chain}\n\n{final}"
    if rng.random() < 0.1:
        text = text[: rng.randint(0, len(text))]
    return text


_ODD_LABELS: list[JSON] = [None, {}, {"answer": 3}, True, False, "", "  ", [], [None], "\\frac{"]


def generate_cases(
    seed: int, count: int, integer_only: bool = False, group_size: int = 1, bare: bool = False
) -> list[Case]:
    """`count` cases drawn deterministically from `seed`.

    With `integer_only`, labels are integers and answers boxed numbers, as
    in DAPO-Math or GSM8K; otherwise every answer family and wrapping mixes,
    and with `bare` the answer-only and unboxed wrappings join them, with
    shorter reasoning. Each run of `group_size` cases shares one label, as
    GRPO's samples do.
    """
    rng = random.Random(seed)
    families = [_integer] if integer_only else _MIXED
    cases: list[Case] = []
    while len(cases) < count:
        family = rng.choice(families)
        group_label, forms = family(rng)
        for _ in range(min(group_size, count - len(cases))):
            label = group_label
            answer = forms[0] if rng.random() < 0.35 else rng.choice(forms)
            if integer_only:
                label = int(forms[0])
                digits = answer if rng.random() < 0.9 else str(rng.randint(0, 999))
                response = f"{_chain_of_thought(rng, 1500)}\n\nThe answer is \\boxed{{{digits}}}."
                if rng.random() < 0.1:
                    response = response[: rng.randint(0, len(response))]
            else:
                if rng.random() < 0.03:
                    label = rng.choice(_ODD_LABELS)
                response = (
                    _bare_response(rng, answer, rng.choice(forms))
                    if bare
                    else (_response(rng, answer, rng.choice(forms)))
                )
            cases.append(Case(response, label, family.__name__.lstrip("_")))
    return cases


def _bare_response(rng: random.Random, answer: str, other: str) -> str:
    if rng.random() < 0.33:
        text = rng.choice(_BARE_FINALS).replace("X", answer).replace("Y", other)
        return text[: rng.randint(0, len(text))] if rng.random() < 0.05 else text
    return _response(rng, answer, other, _FINALS + _BARE_FINALS, _SHORT_CHAIN_CHARS)
