"""The `ifeval` workload: IFEval-style answers with known rewards, and the plain grader.

Each group is eight answers to one prompt whose label object lists two to
five IFEval instructions (`{"scorer": "ifeval", "instruction_id_list": [...],
"kwargs": [...]}`), drawn from ten types that can hold together in one
answer (a title, lowercase only, no commas, a keyword, a forbidden word, a
length, a sentence count, English, a postscript, an end phrase). About 40% of
the answers break one of their instructions and expect 0.0; the rest follow
all and expect 1.0. Answers run 600 to 3,000 characters.

The plain side is what a peer's reward function does in-process: the same
checkers through if-verifiable's own `evaluate_instructions`, its strict
all-or-nothing score, in as many processes as the service has workers.
"""

from __future__ import annotations

import random
from typing import Any

GROUP_SIZE = 8
BREAK_SHARE = 0.4
END_PHRASE = "is there anything else i can help with?"
KEYWORD, FORBIDDEN = "lattice", "banana"
_SENTENCE = (
    "the method keeps each step small so that the reader can follow the idea from the "
    "first line to the last and we check every claim against the data before we move on "
    "which makes the whole answer easy to trust and simple to repeat later"
)
_VOCABULARY = tuple(_SENTENCE.split(" "))

_INSTRUCTIONS: dict[str, dict[str, Any]] = {
    "detectable_format:title": {},
    "change_case:english_lowercase": {},
    "punctuation:no_comma": {},
    "keywords:existence": {"keywords": [KEYWORD]},
    "keywords:forbidden_words": {"forbidden_words": [FORBIDDEN]},
    "length_constraints:number_words": {"num_words": 80, "relation": "at least"},
    "length_constraints:number_sentences": {"num_sentences": 4, "relation": "at least"},
    "language:response_language": {"language": "en"},
    "detectable_content:postscript": {"postscript_marker": "P.S."},
    "startend:end_checker": {"end_phrase": END_PHRASE},
}
_BREAKABLE = (
    "detectable_format:title",
    "change_case:english_lowercase",
    "punctuation:no_comma",
    "keywords:existence",
    "keywords:forbidden_words",
    "detectable_content:postscript",
    "startend:end_checker",
)


def _body(rng: random.Random, chars: int) -> list[str]:
    sentences, size = [], 0
    while size < chars:
        words = [rng.choice(_VOCABULARY) for _ in range(rng.randint(8, 18))]
        sentences.append(" ".join(words) + ".")
        size += len(sentences[-1]) + 1
    return sentences


def _response(rng: random.Random, ids: list[str], broken: str | None) -> str:
    """An answer following every instruction of `ids` but `broken`."""
    sentences = _body(rng, rng.randint(600, 3000))
    if "keywords:existence" in ids and broken != "keywords:existence":
        sentences.insert(rng.randrange(len(sentences)), f"a {KEYWORD} helps here.")
    if broken == "keywords:forbidden_words":
        sentences.insert(rng.randrange(len(sentences)), f"a {FORBIDDEN} is fine.")
    if broken == "punctuation:no_comma":
        sentences[0] = sentences[0].replace(" ", ", ", 1)
    if broken == "change_case:english_lowercase":
        sentences[-1] = sentences[-1].capitalize()
    text = "\n".join(" ".join(sentences[i : i + 4]) for i in range(0, len(sentences), 4))
    if "detectable_format:title" in ids and broken != "detectable_format:title":
        text = f"<<a plan in {len(sentences)} steps>>\n{text}"
    ending = END_PHRASE if "startend:end_checker" in ids else "that is all."
    if broken == "startend:end_checker":
        ending = f"{END_PHRASE} thanks."
    if "detectable_content:postscript" in ids and broken != "detectable_content:postscript":
        return f"{text}\np.s. {ending}"
    return f"{text}\n{ending}"


def instruction_workload(seed: int, answers: int) -> list[dict[str, Any]]:
    """`answers` IFEval answers in groups of eight, each with the reward it must get."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    group = 0
    while len(items) < answers:
        ids = rng.sample(sorted(_INSTRUCTIONS), rng.randint(2, 5))
        label = {
            "scorer": "ifeval",
            "instruction_id_list": ids,
            "kwargs": [_INSTRUCTIONS[i] for i in ids],
        }
        breakable = [i for i in ids if i in _BREAKABLE]
        for _ in range(min(GROUP_SIZE, answers - len(items))):
            broken = rng.choice(breakable) if breakable and rng.random() < BREAK_SHARE else None
            items.append(
                {
                    "prompt": f"Task {seed}-{group}: write a short plan.",
                    "response": _response(rng, ids, broken),
                    "label": label,
                    "expected": 0.0 if broken else 1.0,
                }
            )
        group += 1
    return items


def warm_plain() -> None:
    """Import the checkers in a plain process, NLTK offline as the service has it."""
    from reward_service.scorers.instructions.checkers import load

    load("ifeval")
    import if_verifiable.common  # noqa: F401  (the peer's import: its package, datasets too)


def grade_plain(item: dict[str, Any]) -> float:
    """What a peer does per answer: if-verifiable's `evaluate_instructions`, strict, all."""
    from if_verifiable.common import evaluate_instructions
    from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT

    label = item["label"]
    _, scores = evaluate_instructions(
        item["response"], label["instruction_id_list"], label["kwargs"], "", INSTRUCTION_DICT
    )
    return float(scores.binary_strict)
