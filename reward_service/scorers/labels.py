"""Reading gold labels, shared by the scorers that grade against a gold answer."""

from __future__ import annotations

from reward_service.scorers.base import JSON


def gold_texts(label: JSON) -> list[str] | str:
    """The gold answers a label holds, or the reason it holds none."""
    if label is None:
        return "label is null"
    if isinstance(label, bool):
        return "label is a boolean"
    if isinstance(label, int):
        return [str(label)]
    if isinstance(label, float):
        return [str(int(label)) if label.is_integer() else repr(label)]
    if isinstance(label, str):
        return [label.strip()] if label.strip() else "label is empty"
    if isinstance(label, list):
        usable = [texts for texts in map(gold_texts, label) if isinstance(texts, list)]
        return [text for texts in usable for text in texts] or "label list holds no answer"
    return f"label of type {type(label).__name__} holds no answer"


def boxed(text: str) -> str:
    """`text` wrapped in `\\boxed{}` unless it already holds a box."""
    return text if "\\boxed" in text or "\\fbox" in text else f"\\boxed{{{text}}}"
