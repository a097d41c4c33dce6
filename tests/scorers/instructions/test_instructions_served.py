"""`ifeval` and `ifbench` through a real server: by path, by label object, with detail."""

from __future__ import annotations

import httpx

from reward_service.testing import LiveServer

IDS = ["change_case:english_lowercase", "punctuation:no_comma"]


def test_score_ifeval_by_path_gives_slimes_number(server: LiveServer) -> None:
    """/score/ifeval answers a SLIME body with a bare number: 1.0 when all are followed."""
    label = {"instruction_id_list": IDS, "kwargs": [{}, {}]}
    for response, reward in (("<think>No, Way.</think>all fine here", 1.0), ("No, way", 0.0)):
        body = {"prompt": "p", "response": response, "label": label}
        answer = httpx.post(f"{server.url}/score/ifeval", json=body, timeout=30)
        assert (answer.status_code, answer.json()) == (200, reward)


def test_ifbench_by_label_object_with_detail(server: LiveServer) -> None:
    """A label object picks ifbench on /score; ?detail=1 lists each instruction's verdicts."""
    label = {
        "scorer": "ifbench",
        "instruction_id_list": ["format:no_whitespace", "count:numbers"],
        "kwargs": [None, {"N": 2}],
        "record_id": 9,
    }
    body = {"prompt": "p", "response": "no-space:1and2", "label": label}
    answer = httpx.post(f"{server.url}/score?detail=1", json=body, timeout=30).json()
    assert answer["reward"] == 1.0
    assert answer["instructions"] == [
        {"id": "format:no_whitespace", "strict": True, "loose": True},
        {"id": "count:numbers", "strict": True, "loose": True},
    ]


def test_unknown_instruction_is_an_error_naming_it(server: LiveServer) -> None:
    """An unknown instruction id is status error, its name in the detail, the fallback reward."""
    body = {"prompt": "p", "response": "text", "label": {"instruction_id_list": ["no:such"]}}
    answer = httpx.post(f"{server.url}/score/ifbench?detail=1", json=body, timeout=30).json()
    assert answer["status"] == "error"
    assert "no:such" in answer["reason"]


def test_scorers_lists_the_start_up_checks(server: LiveServer) -> None:
    """GET /scorers reports both scorers' checks: their checker counts and what lacks data."""
    checks = httpx.get(f"{server.url}/scorers", timeout=30).json()["checks"]
    assert (checks["ifeval"]["instructions"], checks["ifbench"]["instructions"]) == (25, 58)
    for name in ("ifeval", "ifbench"):
        assert checks[name]["ok"] and checks[name]["degraded"] == bool(checks[name]["missing_data"])
        for instruction in checks[name].get("unavailable", []):
            assert instruction in checks[name]["summary"]
