"""The `gpqa` scorer: SLIME's lenient multiple-choice reward, pinned case by case and in bulk."""

from __future__ import annotations

import random
import re
import string
from collections.abc import Mapping
from typing import Any

import pytest

from reward_service.scorers.base import JSON, Status
from reward_service.scorers.reasoning import AFTER, answer_region
from reward_service.scorers.slime.gpqa import GpqaScorer, extract_letter
from tests.scorers.math_verify.test_screen_cost import GROWTH, _assert_linear, _units

SCORER = GpqaScorer()
FOUR = ["Nitric oxide", "Carbon dioxide", "Ozone", "Methane"]


def strip_cot(text: str) -> str:
    """Oracle step: the text after the last `</think>`."""
    return text.rsplit("</think>", 1)[-1] if "</think>" in text else text


def normalize(text: str) -> str:
    """Oracle step: lower case, runs of other than a-z0-9 become one space."""
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def slime_letter(text: str, valid_letters: list[str]) -> str | None:
    """Test oracle: SLIME's `_extract_letter_from_response`, transcribed from its description."""
    text = strip_cot(text)
    patterns = [
        r"(?:answer|option|choice)\s*(?:is|:)?\s*([A-Z])",
        r"([A-Z])\s*(?:is\s*(?:the)?\s*correct)",
        r"final\s*(?:answer|option)\s*(?:is|:)?\s*([A-Z])",
    ]
    for pattern in patterns:
        match = re.search(pattern, text, flags=re.IGNORECASE)
        if match and match.group(1).upper() in valid_letters:
            return match.group(1).upper()
    for letter in reversed(re.findall(r"\b([A-Z])\b", text)):
        if letter in valid_letters:
            return letter
    return None


def slime_reward(response: str, label: Any, metadata: dict[str, Any]) -> float:
    """Test oracle: SLIME's `compute_gpqa_reward`, transcribed step by step from its description,
    with the scorer's third difference: a letter label is no target, targets match whole words."""
    choices = metadata.get("choices")
    if isinstance(choices, dict):
        choices = list(choices.values())
    elif choices is not None:
        choices = list(choices)
    valid_letters = metadata.get("valid_letters")
    if valid_letters:
        valid_letters = [str(letter).upper() for letter in valid_letters]
    elif choices:
        valid_letters = list(string.ascii_uppercase[: len(choices)])
    else:
        valid_letters = list("ABCDEFGHIJ")
    correct_letter = metadata.get("correct_letter")
    correct_letter = correct_letter.strip().upper() if isinstance(correct_letter, str) else None
    label_text = None
    if isinstance(label, str):
        label_text = label.strip()
        if len(label_text) == 1 and label_text.upper() in valid_letters and not correct_letter:
            correct_letter = label_text.upper()
    elif isinstance(label, int | float):
        idx = int(label)
        if 0 <= idx < len(valid_letters):
            correct_letter = valid_letters[idx]
    if not correct_letter and choices and label_text:
        for idx, choice in enumerate(choices):
            if normalize(str(choice)) == normalize(label_text):
                correct_letter = valid_letters[idx]
                metadata.setdefault("correct_answer", choice)
                break
    extracted = slime_letter(response, valid_letters) if response else None
    if extracted and correct_letter:
        return 1.0 if extracted == correct_letter else 0.0
    candidates = []
    if correct_letter and choices:
        idx = valid_letters.index(correct_letter) if correct_letter in valid_letters else None
        if idx is not None and idx < len(choices):
            candidates.append(str(choices[idx]))
    for key in ("correct_answer", "answer_text"):
        if metadata.get(key):
            candidates.append(str(metadata.get(key)))
    if label_text and not (len(label_text) == 1 and label_text.upper() in valid_letters):
        candidates.append(label_text)
    targets = {normalize(text) for text in candidates if text}
    normalized_response = f" {normalize(strip_cot(response))} "
    if any(target and f" {target} " in normalized_response for target in targets):
        return 1.0
    if extracted and not correct_letter and label_text:
        return 1.0 if extracted == label_text.strip().upper() else 0.0
    return 0.0


@pytest.mark.parametrize(
    ("response", "letter"),
    [
        pytest.param("Answer: B", "B", id="answer-colon"),
        pytest.param("the answer is c", "C", id="lower-case-statement"),
        pytest.param("The answer is about D", "A", id="answer-is-about-reads-a"),
        pytest.param("Option: D", "D", id="option"),
        pytest.param("choice C", "C", id="choice"),
        pytest.param("I think C is the correct one", "C", id="is-the-correct"),
        pytest.param("So D is correct.", "D", id="is-correct"),
        pytest.param("Answer: A. Later: answer is B", "A", id="first-statement-wins"),
        pytest.param("The answer is Z, so B", "B", id="invalid-statement-falls-through"),
        pytest.param("I would go with B, not C", "C", id="last-lone-capital"),
        pytest.param("i would pick b", None, id="lower-case-lone-letter-ignored"),
        pytest.param("<think>Answer: A</think>So, C.", "C", id="after-think-only"),
        pytest.param("<think>Answer: A</think>", None, id="nothing-after-think"),
        pytest.param("Vitamin K deficiency", None, id="letter-outside-choices"),
        pytest.param("", None, id="empty"),
        pytest.param("answer" + " " * 200_000 + "5", None, id="huge-whitespace"),
    ],
)
def test_extract_letter(response: str, letter: str | None) -> None:
    """The first statement pattern that finds a valid letter wins, else the last lone capital."""
    assert extract_letter(answer_region(response, AFTER), "ABCD") == letter


@pytest.mark.parametrize(
    ("response", "label", "options", "reward", "status"),
    [
        pytest.param("Answer: B", "B", {}, 1.0, Status.OK, id="letter"),
        pytest.param("Answer: B", " b ", {}, 1.0, Status.OK, id="lower-case-letter-label"),
        pytest.param("Answer: C", "B", {}, 0.0, Status.WRONG, id="other-letter"),
        pytest.param("Answer: B", 1, {}, 1.0, Status.OK, id="index"),
        pytest.param("Answer: C", 2.7, {}, 1.0, Status.OK, id="float-index-truncated"),
        pytest.param("Answer: B", True, {}, 1.0, Status.OK, id="true-is-index-1"),
        pytest.param("Answer: B", 10, {}, 0.0, Status.ERROR, id="index-out-of-range"),
        pytest.param("Answer: B", "Ozone", {"choices": FOUR}, 0.0, Status.WRONG, id="text-other"),
        pytest.param("Answer: C", "ozone!", {"choices": FOUR}, 1.0, Status.OK, id="text-label"),
        pytest.param(
            "Answer: C",
            "Ozone",
            {"choices": dict(zip("wxyz", FOUR, strict=True))},
            1.0,
            Status.OK,
            id="dict-choices",
        ),
        pytest.param(
            "Answer: E", "E", {"choices": FOUR}, 1.0, Status.OK, id="letter-past-choices-as-text"
        ),
        pytest.param(
            "Answer: D", "E", {"choices": FOUR}, 0.0, Status.WRONG, id="letter-past-choices"
        ),
        pytest.param(
            "Answer: E",
            "E",
            {"valid_letters": "ABCDE", "choices": FOUR},
            1.0,
            Status.OK,
            id="valid-letters",
        ),
        pytest.param(
            "Answer: D", "A", {"correct_letter": " d "}, 1.0, Status.OK, id="correct-letter-wins"
        ),
        pytest.param(
            "It is clearly ozone.", "C", {"choices": FOUR}, 1.0, Status.OK, id="option-text"
        ),
        pytest.param(
            "<think>ozone?</think>nitric oxide",
            "C",
            {"choices": FOUR},
            0.0,
            Status.NO_ANSWER,
            id="option-text-after-think-only",
        ),
        pytest.param(
            "the gas is ozone",
            None,
            {"answer_text": "Ozone"},
            1.0,
            Status.OK,
            id="answer-text",
        ),
        pytest.param(
            "Answer: B",
            "Methane",
            {"choices": FOUR, "correct_answer": "x"},
            0.0,
            Status.WRONG,
            id="correct-answer-kept",
        ),
        pytest.param("So C.", "b", {"valid_letters": ["A"]}, 0.0, Status.NO_ANSWER, id="no-gold"),
        pytest.param("So A.", "a ", {"valid_letters": ["A"]}, 1.0, Status.OK, id="valid-letter-a"),
        pytest.param("So, A", "Paris", {}, 0.0, Status.WRONG, id="letter-without-gold-letter"),
        pytest.param("So, P", "p", {"valid_letters": "AP"}, 1.0, Status.OK, id="custom-letters"),
        pytest.param("i pick b", "B", {}, 0.0, Status.NO_ANSWER, id="lower-case-not-a-pick"),
        pytest.param("B", None, {}, 0.0, Status.ERROR, id="null-label"),
        pytest.param("B", ["B"], {}, 0.0, Status.ERROR, id="list-label"),
        pytest.param("B", "B", {"choices": 4}, 0.0, Status.ERROR, id="choices-not-a-list"),
        pytest.param("B", "B", {"valid_letters": 4}, 0.0, Status.ERROR, id="letters-not-a-list"),
        pytest.param("B", float("inf"), {}, 0.0, Status.ERROR, id="infinite-index"),
        pytest.param(
            "B",
            "Ozone",
            {"choices": FOUR, "valid_letters": "AB"},
            0.0,
            Status.ERROR,
            id="no-letter",
        ),
    ],
)
def test_reward(
    response: str, label: JSON, options: Mapping[str, JSON], reward: float, status: Status
) -> None:
    """Each case gets SLIME's reward, with a status saying how it was reached."""
    result = SCORER.score("", response, label, options)
    assert (result.reward, result.status) == (reward, status)


@pytest.mark.parametrize("gold", ["A", "D", "a"])
@pytest.mark.parametrize("options", [{}, {"choices": FOUR}], ids=["no-choices", "choices"])
def test_a_letter_label_is_never_found_as_a_substring(
    gold: str, options: Mapping[str, JSON]
) -> None:
    """Third difference from SLIME, which rewards "no idea" for gold A or D (`a`, `d` of `idea`)."""
    result = SCORER.score("", "no idea", gold, options)
    assert (result.reward, result.status) == (0.0, Status.NO_ANSWER)


def test_details_name_prediction_and_gold() -> None:
    """Details carry the extracted letter and the gold letter."""
    details = SCORER.score("", "Answer: C", "Ozone", {"choices": FOUR}).details
    assert (details["pred"], details["gold"]) == ("C", "C")


def test_letters_match_slime_on_generated_text() -> None:
    """On 5,000 seeded concatenations of keywords, spaces and letters the letter is SLIME's."""
    rng = random.Random(3)
    parts = ["answer", "Is", ":", " ", "\n\t", "the", "correct", "final", "option", "choice"]
    parts += ["A", "b", "Z", "i", "\u0131", "\u017f", "K", "</think>", ".", "x"]
    for _ in range(5000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 10)))
        letters = rng.choice(["ABCD", "ABCDEFGHIJ", "AKS", "ISZ"])
        answer = answer_region(text, AFTER)
        assert extract_letter(answer, letters) == slime_letter(text, list(letters)), text


def test_extraction_is_linear() -> None:
    """Ten times the whitespace after a keyword costs at most about ten times the CPU time,
    best of several."""

    def build(n: int) -> str:
        return ("answer" + " " * n + "5 is" + " " * n) * 4

    n = _units(build)
    small, large = build(n), build(GROWTH * n)
    _assert_linear(lambda: extract_letter(small, "ABCD"), lambda: extract_letter(large, "ABCD"))


@pytest.mark.parametrize(
    "unit", ["A, ", "A or ", "A ", "**A**, ", "nitrogen oxygen ", ", " + " " * 50], ids=repr
)
def test_hedge_checks_are_linear(unit: str) -> None:
    """Ten times a run of listed letters or option texts costs at most about ten times the
    CPU time, best of several, in the letter reading and in the check for several named
    options."""

    def read(response: str) -> None:
        extract_letter(response, "ABCD")
        SCORER.score("", response, "A", {"choices": [*FOUR, "nitrogen", "oxygen"]})

    n = _units(lambda count: unit * count)
    small, large = unit * n, unit * GROWTH * n
    _assert_linear(lambda: read(small), lambda: read(large))


_WORDS = ["the", "answer", "is", "option", "choice", "final", ":", "correct", "about", "so"]
_WORDS += [*"ABCDEFGHIJKZabcdez", "(B)", "**C**", "I", "a", "</think>", "\n", ".", "ozone"]
_WORDS += ["nitric oxide", "Carbon-Dioxide", "methane!", "is the correct", "42", "x"]


def _random_case(rng: random.Random) -> tuple[str, JSON, dict[str, JSON]]:
    """A response, label and metadata drawn from the shapes GPQA-style datasets use."""
    response = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 14)))
    choices = rng.sample([*FOUR, "42", "Ozone layer"], rng.randint(2, 6))
    label = rng.choice(
        [
            rng.choice("ABCDEFGHIJabcdz"),
            f" {rng.choice('ABCD')} ",
            rng.randint(-1, 11),
            rng.choice([0.0, 1.5, 3.0, True, False]),
            rng.choice(choices).upper(),
            rng.choice(["ozone", "methane", "42", "Paris", ""]),
            None,
        ]
    )
    metadata: dict[str, JSON] = {}
    if rng.random() < 0.5:
        metadata["choices"] = (
            choices if rng.random() < 0.7 else dict(zip("pqrstu", choices, strict=False))
        )
    if rng.random() < 0.15:
        metadata["valid_letters"] = rng.choice(["ABCDEF", ["a", "b", "c"], [], "ABCDEFGHIJKL"])
    if rng.random() < 0.15:
        metadata["correct_letter"] = rng.choice([" c", "B", "", "Z", 3])
    for key in ("correct_answer", "answer_text"):
        if rng.random() < 0.1:
            metadata[key] = rng.choice(["Ozone", "", "nitric oxide", 42])
    return response, label, metadata


def parity(cases: int, seed: int = 14) -> tuple[int, int, int]:
    """(cases SLIME grades, of which identical rewards, cases where SLIME raises) over a sample."""
    rng = random.Random(seed)
    graded = identical = raised = 0
    for _ in range(cases):
        response, label, metadata = _random_case(rng)
        ours = SCORER.score("", response, label, {**metadata, "think": AFTER})
        try:
            expected = slime_reward(response, label, dict(metadata))
        except (IndexError, TypeError, ValueError, OverflowError):
            raised += 1
            assert ours.status is Status.ERROR
            continue
        graded += 1
        identical += ours.reward == expected
    return graded, identical, raised


def test_parity_with_slime() -> None:
    """On 2,000 generated cases at least 99% of rewards equal SLIME's, and nothing raises."""
    graded, identical, _ = parity(2000)
    assert graded > 1900
    assert identical >= 0.99 * graded


@pytest.mark.parametrize(
    ("label", "right", "wrong"),
    [
        ({"choices": FOUR, "correct_letter": "C"}, "Answer: C", "Answer: B"),
        ({"choices": FOUR, "correct_answer": "Ozone"}, "It is ozone.", "It is methane."),
        ({"correct_letter": "C", "valid_letters": "ABCD"}, "Answer: C", "Answer: B"),
    ],
)
def test_a_label_object_of_gpqa_keys_is_read_as_its_options(
    label: JSON, right: str, wrong: str
) -> None:
    """A bare label object of gpqa's keys (no `scorer`, no `answer`) grades as those options."""
    assert SCORER.score("", right, label, {}).reward == 1.0
    assert SCORER.score("", wrong, label, {}).reward == 0.0


def test_a_label_designating_nothing_says_what_it_lacks() -> None:
    """The error for a label naming no option lists what would name one."""
    result = SCORER.score("", "Answer: C", {"choices": FOUR}, {})
    assert result.status is Status.ERROR
    assert "correct_letter" in result.details["reason"]
