"""Reading an answer's instructions as SLIME's `ifbench` reads them from sample metadata.

`instruction_id_list`: each entry a string, stripped, `None` and blanks dropped
(a lone string is one id, where SLIME would read its characters).
`kwargs`: a list of dicts, one per instruction (an entry that is not a dict is
`{}`), a single dict for every instruction, anything else `{}`; a short list is
padded with its last entry, a long one cut, and `None` values are dropped.
`prompt_text` (default `""`) is what the checkers that quote the prompt compare
against; `record_id` is carried for the details only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reward_service.scorers.base import JSON

FIELDS = ("instruction_id_list", "kwargs", "prompt_text", "record_id")
"""The fields read, from the label object's options or else from the label itself."""


@dataclass(frozen=True)
class Instructions:
    """The instructions one answer must follow, with each one's arguments."""

    ids: tuple[str, ...]
    kwargs: tuple[dict[str, JSON], ...]
    prompt_text: str = ""
    record_id: JSON = None


def instruction_ids(raw: JSON) -> list[str]:
    """The instruction ids of `raw`: strings, stripped, blanks and `None` dropped."""
    entries = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    ids = (str(entry).strip() for entry in entries if entry is not None)
    return [text for text in ids if text]


def instruction_kwargs(raw: JSON, count: int) -> list[dict[str, JSON]]:
    """`count` argument dicts from `raw`, without `None` values."""
    if isinstance(raw, list):
        found = [dict(entry) if isinstance(entry, dict) else {} for entry in raw]
    elif isinstance(raw, dict):
        found = [dict(raw)] * count
    else:
        found = [{}] * count
    tail = found[-1] if found else {}
    found = (found + [tail] * count)[:count]
    return [{k: v for k, v in entry.items() if v is not None} for entry in found]


def read_instructions(label: JSON, options: Mapping[str, JSON]) -> Instructions | None:
    """The instructions an answer carries, or None when it names none (SLIME's 0.0)."""
    source = {**(label if isinstance(label, dict) else {}), **options}
    ids = instruction_ids(source.get("instruction_id_list"))
    if not ids:
        return None
    prompt = source.get("prompt_text")
    return Instructions(
        tuple(ids),
        tuple(instruction_kwargs(source.get("kwargs"), len(ids))),
        "" if prompt is None else str(prompt),
        source.get("record_id"),
    )
