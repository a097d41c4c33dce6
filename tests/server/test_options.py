"""Scorer options from the URL query, label objects and settings, over real sockets."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from reward_service.testing import LiveServer, free_port, live_server
from tests.conftest import TEST_ENV


def _post(server: LiveServer, path: str, label: Any, response: str) -> httpx.Response:
    body = {"prompt": "p", "response": response, "label": label}
    return httpx.post(f"{server.url}{path}", json=body, timeout=30)


def _detail(server: LiveServer, path: str, label: Any, response: str) -> dict[str, Any]:
    separator = "&" if "?" in path else "?"
    answer = _post(server, f"{path}{separator}detail=1", label, response)
    assert answer.status_code == 200, answer.text
    detail: dict[str, Any] = answer.json()
    return detail


@pytest.fixture(scope="module")
def any_by_default() -> Iterator[LiveServer]:
    """A server whose deployment default for math_verify is `extraction=any`."""
    env = {**TEST_ENV, "REWARD_SCORER_OPTIONS": '{"math_verify": {"extraction": "any"}}'}
    with live_server(workers=1, env=env) as running:
        yield running


BARE = [
    ("-5", "-5"),
    ("$(3,2)$", "(3,2)"),
    ("$$f(y) = y$$", "f(y) = y"),
    ("The result is 7", "7"),
]


@pytest.mark.parametrize(("response", "label"), [*BARE, ("The answer is 7", "7")])
def test_extraction_any_in_the_url_reads_bare_answers(
    server: LiveServer, response: str, label: str
) -> None:
    """`/score?extraction=any` rewards an answer written without box or anchor, as parse does."""
    detail = _detail(server, "/score?extraction=any", label, response)
    assert (detail["reward"], detail["status"], detail["extraction"]) == (1.0, "ok", "any")


@pytest.mark.parametrize(("response", "label"), BARE)
def test_default_final_extraction_finds_no_answer_in_bare_answers(
    server: LiveServer, response: str, label: str
) -> None:
    """Plain `/score` (extraction `final`) gives answers with no box nor anchor `no_answer`."""
    detail = _detail(server, "/score", label, response)
    assert (detail["reward"], detail["status"], detail["extraction"]) == (0.0, "no_answer", "final")


def test_extraction_any_answers_slime_with_a_bare_number(server: LiveServer) -> None:
    """Without `detail`, the answer is the bare number SLIME trains on."""
    answer = _post(server, "/score?extraction=any", "-5", "-5")
    assert (answer.status_code, answer.json()) == (200, 1.0)


def test_extraction_any_applies_to_the_batch_endpoints(server: LiveServer) -> None:
    """`/score/math_verify/batch?extraction=any` grades every item with the option."""
    items = [{"response": "-5", "label": "-5"}, {"response": "$(3,2)$", "label": "(3,2)"}]
    answer = httpx.post(
        f"{server.url}/score/math_verify/batch?extraction=any", json={"items": items}, timeout=30
    )
    assert (answer.status_code, answer.json()) == (200, {"rewards": [1.0, 1.0]})


def test_an_unknown_extraction_value_gets_400_listing_the_valid_ones(server: LiveServer) -> None:
    """`?extraction=nope` is a misconfigured URL: 400 naming `final` and `any`."""
    answer = _post(server, "/score?extraction=nope", "5", "\\boxed{5}")
    assert answer.status_code == 400
    assert "any, final" in answer.json()["error"]


def test_an_unknown_option_gets_400_listing_the_valid_options(server: LiveServer) -> None:
    """`?bogus=1` names no option of math_verify: 400 naming `extraction`."""
    answer = _post(server, "/score?bogus=1", "5", "\\boxed{5}")
    assert answer.status_code == 400
    assert "'bogus'" in answer.json()["error"] and "extraction" in answer.json()["error"]


def test_an_option_on_a_scorer_without_options_gets_400(server: LiveServer) -> None:
    """`/score/random?extraction=any`: random reads no options, so the URL is refused; one
    that reads others names them (`exact` reads only `think`)."""
    answer = _post(server, "/score/random?extraction=any", "5", "5")
    assert answer.status_code == 400
    assert "its options: none" in answer.json()["error"]
    answer = _post(server, "/score/exact?extraction=any", "5", "5")
    assert answer.status_code == 400
    assert "its options: think" in answer.json()["error"]


def test_a_batch_with_a_bad_option_gets_400(server: LiveServer) -> None:
    """The batch endpoints check their query options the same way."""
    answer = httpx.post(f"{server.url}/score/batch?extraction=nope", json={"items": []}, timeout=30)
    assert answer.status_code == 400


def test_an_option_given_twice_gets_400(server: LiveServer) -> None:
    """`?extraction=any&extraction=final` is ambiguous: 400."""
    answer = _post(server, "/score?extraction=any&extraction=final", "-5", "-5")
    assert answer.status_code == 400
    assert "twice" in answer.json()["error"]


def test_an_anchored_answer_is_read_in_both_modes(server: LiveServer) -> None:
    """`The answer is 7` holds an anchor, so `final` reads it as `any` does."""
    detail = _detail(server, "/score", "7", "The answer is 7")
    assert (detail["reward"], detail["extraction"]) == (1.0, "final")


def test_detail_is_not_an_option(server: LiveServer) -> None:
    """`detail` keeps switching the answer to the object; it never reaches the scorer."""
    detail = _detail(server, "/score/fake", 1, "options")
    assert detail["options"] == {}


def test_label_object_options_override_the_url(server: LiveServer) -> None:
    """A label object's `extraction` wins over the URL's."""
    label = {"answer": "-5", "extraction": "final"}
    detail = _detail(server, "/score?extraction=any", label, "-5")
    assert (detail["status"], detail["extraction"]) == ("no_answer", "final")


def test_an_invalid_extraction_in_a_label_object_grades_as_error_not_4xx(
    server: LiveServer,
) -> None:
    """A dataset's bad `extraction` value is the sample's error (200, fallback), not a 4xx."""
    detail = _detail(server, "/score", {"answer": "-5", "extraction": "nope"}, "-5")
    assert (detail["reward"], detail["status"]) == (0.0, "error")
    assert "any, final" in detail["reason"]


def test_url_options_reach_another_scorer_only_if_it_takes_them(server: LiveServer) -> None:
    """A label picking `fake` on `/score?extraction=any` gets no `extraction`; on a route
    of `fake`, `tag` reaches it."""
    label = {"scorer": "fake", "answer": 1}
    assert _detail(server, "/score?extraction=any", label, "options")["options"] == {}
    tagged = _detail(server, "/score/fake?tag=blue", label, "options")
    assert tagged["options"] == {"tag": "blue"}


def test_a_url_option_another_scorer_does_not_take_is_dropped_for_it(server: LiveServer) -> None:
    """A label picking `math_verify` on `/score/fake?tag=blue` is graded without `tag`."""
    label = {"scorer": "math_verify", "answer": "5"}
    detail = _detail(server, "/score/fake?tag=blue", label, "\\boxed{5}")
    assert (detail["scorer"], detail["status"], detail["extraction"]) == (
        "math_verify",
        "ok",
        "final",
    )


def test_the_settings_default_applies_without_a_query(any_by_default: LiveServer) -> None:
    """`REWARD_SCORER_OPTIONS` makes `any` the extraction of plain `/score`."""
    detail = _detail(any_by_default, "/score", "-5", "-5")
    assert (detail["reward"], detail["extraction"]) == (1.0, "any")


def test_the_url_overrides_the_settings_default(any_by_default: LiveServer) -> None:
    """`?extraction=final` wins over the deployment's `any`."""
    detail = _detail(any_by_default, "/score?extraction=final", "-5", "-5")
    assert (detail["status"], detail["extraction"]) == ("no_answer", "final")


def test_a_label_object_overrides_the_settings_default(any_by_default: LiveServer) -> None:
    """A label object's `extraction` wins over the deployment's `any` too."""
    detail = _detail(any_by_default, "/score", {"answer": "-5", "extraction": "final"}, "-5")
    assert detail["extraction"] == "final"


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ('{"nonesuch": {}}', "unknown scorer 'nonesuch'"),
        ('{"math_verify": {"bogus": "1"}}', "no option 'bogus'"),
        ('{"math_verify": {"extraction": "nope"}}', "takes one of any, final"),
    ],
)
def test_a_bad_scorer_options_setting_stops_start_up(setting: str, message: str) -> None:
    """An unknown scorer, option or value in `REWARD_SCORER_OPTIONS` stops start-up, saying so."""
    cmd = [sys.executable, "-m", "reward_service", "serve", "--host", "127.0.0.1"]
    cmd += ["--port", str(free_port()), "--workers", "1"]
    env = {**TEST_ENV, "REWARD_SCORER_OPTIONS": setting, "PYTHONWARNINGS": "ignore"}
    ended = subprocess.run(
        cmd, env={**os.environ, **env}, capture_output=True, text=True, timeout=120, check=False
    )
    assert ended.returncode != 0
    assert message in ended.stderr, ended.stderr[-2000:]
