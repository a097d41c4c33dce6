"""Request bodies keep exact JSON numbers: big integers stay integers, end to end."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx
import orjson
import pytest

from reward_service.server.json_body import MAX_INT_CHARS, read_json
from reward_service.testing import LiveServer

D30 = "123456789012345678901234567890"
OFF_BY_ONE = D30[:-1] + "1"


@pytest.mark.parametrize(
    ("body", "value"),
    [
        (f'{{"label": {D30}}}', {"label": int(D30)}),
        (f'{{"label": [-{D30}, 1.5, "x"]}}', {"label": [-int(D30), 1.5, "x"]}),
        ("[18446744073709551616, 9223372036854775807]", [2**64, 2**63 - 1]),
        ('{"response": 12345678901234567890123}', {"response": 12345678901234567890123}),
    ],
)
def test_big_integers_stay_exact(body: str, value: object) -> None:
    """Integers past 64 bits are read as the same integers, not as floats."""
    read = read_json(body.encode())
    assert read == value
    assert json.dumps(read) == json.dumps(value)


def test_integers_past_the_bound_stay_digit_strings() -> None:
    """An integer longer than `MAX_INT_CHARS` stays its digit string; up to it, an int."""
    longest, longer = "7" * MAX_INT_CHARS, "7" * (MAX_INT_CHARS + 1)
    assert read_json(f"[{longest}, {longer}]".encode()) == [int(longest), longer]
    assert read_json(f'{{"label": {"9" * 100_000}}}'.encode()) == {"label": "9" * 100_000}


def test_bodies_without_long_digit_runs_read_as_orjson_does() -> None:
    """A body with no run of 19 digits is orjson's value."""
    body = b'{"label": 123456789012345678, "y": 0.1, "z": "\\u00e9", "p": [{"role": "user"}]}'
    assert (
        read_json(body)
        == orjson.loads(body)
        == {
            "label": 123456789012345678,
            "y": 0.1,
            "z": "\u00e9",
            "p": [{"role": "user"}],
        }
    )


@pytest.mark.parametrize(
    "body",
    [
        f"[NaN, {D30}]".encode(),
        f"[Infinity, {D30}]".encode(),
        f"[1e400, {D30}]".encode(),
        b"\xff" + D30.encode(),
        b"[" * 100_000 + D30.encode() + b"]" * 100_000,
        f'{{"label": {D30}'.encode(),
    ],
    ids=["nan", "infinity", "float overflow", "not utf-8", "deep", "truncated"],
)
def test_long_digit_bodies_refuse_what_orjson_refuses(body: bytes) -> None:
    """The exact-integer path raises ValueError where orjson would."""
    with pytest.raises(ValueError):
        read_json(body)


@pytest.mark.parametrize(
    "body",
    [b"[NaN]", b"[Infinity]", b"[1e400]", b"\xff", b"[" * 100_000 + b"]" * 100_000, b'{"a": 1'],
    ids=["nan", "infinity", "float overflow", "not utf-8", "deep", "truncated"],
)
def test_short_digit_bodies_refuse_what_orjson_refuses(body: bytes) -> None:
    """A body orjson refuses is read again on the exact path, which refuses it too."""
    with pytest.raises(ValueError):
        read_json(body)


def test_a_lone_surrogate_reads_the_same_on_either_path() -> None:
    """A lone surrogate escape, which orjson refuses, is text whether or not the body holds
    a long digit run: one reading, never a 400 for a body SLIME can send."""
    short = read_json(b'{"response": "x \\ud800 y", "label": 1}')
    long = read_json(f'{{"response": "x \\ud800 y", "label": {D30}}}'.encode())
    assert short["response"] == long["response"] == "x \ud800 y"


LINEAR_SHAPES = {
    "longest ints": lambda n: ("[" + ",".join(["7" * MAX_INT_CHARS] * (n // 100)) + "]").encode(),
    "one huge int": lambda n: ("[" + "7" * (n * 6) + "]").encode(),
    "digit runs in text": lambda n: ('["' + "12345678901234567890 " * (n // 4) + '"]').encode(),
    "many small numbers": lambda n: ("[" + "12345678901234567890," * (n // 4) + "1]").encode(),
}


def _cost(body: bytes) -> float:
    best = float("inf")
    for _ in range(5):
        started = time.thread_time()  # CPU: a loaded machine preempts long samples more
        read_json(body)
        best = min(best, time.thread_time() - started)
    return best


@pytest.mark.parametrize("shape", LINEAR_SHAPES.values(), ids=LINEAR_SHAPES.keys())
def test_reading_is_linear(shape: Callable[[int], bytes]) -> None:
    """Reading costs about 10x at 10x the size (quadratic would be 100x)."""
    small, large = shape(20_000), shape(200_000)
    ratio = _cost(large) / _cost(small)
    assert ratio < 30, f"n -> 10n costs x{ratio:.0f}"


WORKER_TAIL = " which is the count we wanted, as the argument above shows in full."


@pytest.mark.parametrize(
    ("route", "response", "path"),
    [
        ("/score", f"\\boxed{{{D30}}}", "inline"),
        ("/score", f"So \\boxed{{{D30}}}{WORKER_TAIL}", "fast"),
        ("/score/math", f"\\boxed{{{D30}}}", None),
        ("/score/deepscaler", f"</think> \\boxed{{{D30}}}", None),
    ],
    ids=["math_verify inline", "math_verify worker", "math", "deepscaler"],
)
def test_thirty_digit_integer_label_grades_exactly(
    server: LiveServer, route: str, response: str, path: str | None
) -> None:
    """A 30-digit label sent as a JSON number: the same digits get 1.0, one digit off 0.0."""
    wrong = response.replace(D30, OFF_BY_ONE)
    with httpx.Client(base_url=server.url, timeout=30) as client:

        def post(answer: str, detail: bool) -> httpx.Response:
            body = f'{{"response": {json.dumps(answer)}, "label": {D30}}}'.encode()
            headers = {"content-type": "application/json"}
            return client.post(route, content=body, headers=headers, params={"detail": detail})

        assert [post(r, False).json() for r in (response, wrong)] == [1.0, 0.0]
        right, off = post(response, True).json(), post(wrong, True).json()
    assert (right["reward"], right["status"], right.get("path")) == (1.0, "ok", path)
    assert (off["reward"], off["status"], off.get("path")) == (0.0, "wrong", path)


@pytest.mark.parametrize("label", [D30, "4"], ids=["exact path", "orjson path"])
def test_a_lone_surrogate_is_answered_escaped(server: LiveServer, label: str) -> None:
    """A lone surrogate orjson would refuse, read by the standard library, is echoed escaped,
    whichever path the body's numbers send it down."""
    body = f'{{"response": "\\\\boxed{{\\ud800}}", "label": {label}}}'.encode()
    headers = {"content-type": "application/json"}
    response = httpx.post(f"{server.url}/score?detail=1", content=body, headers=headers)
    assert response.status_code == 200
    assert b'"pred": "\\ud800"' in response.content
    assert (response.json()["reward"], response.json()["status"]) == (0.0, "wrong")
