"""Request bodies read as JSON with every number kept exact.

A 30-digit gold label sent as a JSON number must stay that integer: see
`read_json`.
"""

from __future__ import annotations

import json
import math

import orjson

from reward_service.scorers.base import JSON

_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_LONG_DIGIT_RUN = b"0" * 19
"""orjson reads integers exactly up to 64 bits (19 digits and some of 20); past, as floats."""
MAX_INT_CHARS = 640
"""Longer integers stay their digit string (see `read_json`)."""


def read_json(body: bytes) -> JSON:
    """The JSON value of a request body, integers kept exact.

    orjson reads integers past 64 bits as floats, so a 30-digit label would
    lose its last digits. A body holding a run of 19 or more digits is read
    by the standard library instead (a translate and a find, both linear and
    in C, tell which), so the common body keeps orjson's speed.

    There an integer of up to `MAX_INT_CHARS` characters (sign included)
    becomes an `int`; a longer one stays its digit string, which every gold
    reader turns an integer into anyway. CPython converts integers to and
    from decimal in quadratic time: at 640 digits a body of them costs about
    10 ns a digit to read and to print back, at 4,300 about 60, so a bound of
    640 keeps an 8 MiB body under 0.1 s of event loop. 640 is also the lowest
    limit `sys.set_int_max_str_digits` accepts, so `int()` never refuses.

    That path refuses what orjson refuses (invalid UTF-8, `NaN`, `Infinity`,
    floats past a double, nesting past the recursion limit) but keeps lone
    surrogate escapes, which orjson refuses: a body orjson refuses is read
    there too, so the same body gets the same answer whichever path reads it,
    and a lone surrogate (which SLIME's client can send) is text, never a
    400. Answers that echo one are written escaped. Raises ValueError when the
    body is not JSON.
    """
    if body.translate(_DIGITS_AS_ZERO).find(_LONG_DIGIT_RUN) < 0:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass  # a lone surrogate escape orjson refuses, or not JSON: the one reading below
    try:
        return json.loads(
            body.decode(),
            parse_int=_exact_int,
            parse_float=_finite_float,
            parse_constant=_no_constant,
        )
    except RecursionError:
        raise ValueError("JSON nested too deep") from None


def _exact_int(text: str) -> int | str:
    return int(text) if len(text) <= MAX_INT_CHARS else text


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:20]}... is infinity when read as a double")
    return value


def _no_constant(name: str) -> JSON:
    raise ValueError(f"{name} is not JSON")
