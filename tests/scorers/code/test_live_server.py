"""The `code` scorer through a real server: `/score/code`, label objects and URL options."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from reward_service.testing import LiveServer, live_server
from tests.conftest import TEST_ENV

PROGRAM = "Here:\n```python\nprint(2 * int(input()))\n```"
WRONG = "```python\nx = int(input())\nprint(2 * x if x < 3 else x)\n```"
TESTS = {"inputs": ["1\n", "2\n", "5\n"], "outputs": ["2\n", "4\n", "10\n"]}


@pytest.fixture(scope="module")
def code_server() -> Iterator[LiveServer]:
    """A one-worker server with the service's own sandbox."""
    with live_server(workers=1, env=TEST_ENV) as running:
        yield running


def _post(server: LiveServer, path: str, label: Any, response: str) -> httpx.Response:
    body = {"prompt": "Double n.", "response": response, "label": label}
    return httpx.post(f"{server.url}{path}", json=body, timeout=30)


def test_score_code_route_grades_with_detail(code_server: LiveServer) -> None:
    """`POST /score/code?detail=1` runs the program against the tests and reports them."""
    answer = _post(code_server, "/score/code?detail=1", TESTS, PROGRAM)
    assert answer.status_code == 200, answer.text
    detail = answer.json()
    assert (detail["reward"], detail["status"], detail["scorer"]) == (1.0, "ok", "code")
    assert (detail["passed"], detail["total"], detail["first_failure"]) == (3, 3, None)
    assert "process" in detail["sandbox"]


@pytest.mark.parametrize(
    ("label", "response", "reward"),
    [
        ({"scorer": "code", "answer": TESTS}, PROGRAM, 1.0),
        ({"scorer": "code", **TESTS}, PROGRAM, 1.0),
        ({"scorer": "code", "answer": TESTS}, WRONG, 0.0),
        ({"scorer": "code", "answer": TESTS, "partial": True}, WRONG, 2 / 3),
    ],
)
def test_label_object_routes_plain_score_to_code(
    code_server: LiveServer, label: Any, response: str, reward: float
) -> None:
    """On `/score`, a label object `{"scorer": "code", ...}` is graded by the code scorer."""
    answer = _post(code_server, "/score", label, response)
    assert (answer.status_code, answer.json()) == (200, reward)


def test_url_option_partial_and_bad_values(code_server: LiveServer) -> None:
    """`?partial=1` gives the fraction passed; a value the scorer cannot use is a 400."""
    assert _post(code_server, "/score/code?partial=1", TESTS, WRONG).json() == 2 / 3
    assert _post(code_server, "/score/code?float_tolerance=lots", TESTS, PROGRAM).status_code == 400


def test_no_program_and_unreadable_label_get_200_and_fallback(code_server: LiveServer) -> None:
    """A response without code is `no_answer`, a label without tests `error`: both 200 and 0.0."""
    none = _post(code_server, "/score/code?detail=1", TESTS, "I would print 2n.").json()
    bad = _post(code_server, "/score/code?detail=1", {"nothing": 1}, PROGRAM).json()
    assert (none["reward"], none["status"]) == (0.0, "no_answer")
    assert (bad["reward"], bad["status"]) == (0.0, "error")


def test_scorers_listing_names_code(code_server: LiveServer) -> None:
    """`GET /scorers` lists `code`."""
    assert "code" in httpx.get(f"{code_server.url}/scorers", timeout=10).json()["scorers"]
