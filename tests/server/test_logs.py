"""Logs are JSON lines; deadline kills and worker deaths name the request and the answer."""

from __future__ import annotations

import json

import httpx
import pytest

from reward_service.testing import live_server
from tests.conftest import TEST_ENV


def _lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_failures_are_logged_with_request_id_and_excerpt(capfd: pytest.CaptureFixture[str]) -> None:
    """A worker death and a deadline kill each log the request id and the answer's tail."""
    with live_server(workers=1, env=TEST_ENV, quiet=False) as server:
        for rid, answer in (("rid-crash", "crash"), ("rid-stall", "stall")):
            httpx.post(
                f"{server.url}/score/fake",
                json={"response": answer},
                headers={"X-Request-ID": rid},
                timeout=30,
            )
    lines = _lines(capfd.readouterr().err)
    assert lines, "the server wrote no JSON log lines"
    died = [line for line in lines if line["msg"] == "grading worker died; replacing it"]
    killed = [line for line in lines if str(line["msg"]).startswith("grading deadline passed")]
    assert {(line["request_id"], line["answer_excerpt"]) for line in died} == {
        ("rid-crash", "crash")
    }
    assert [(line["request_id"], line["answer_excerpt"]) for line in killed] == [
        ("rid-stall", "stall")
    ]
    assert all({"ts", "level", "logger", "msg"} <= line.keys() for line in lines)
