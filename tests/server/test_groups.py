"""The group endpoint, composites and the mask field, over real sockets."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from reward_service.testing import LiveServer

FORMATTED = "<think>\nadd them\n</think>\n<answer>\n\\boxed{4}\n</answer>"


def _post(server: LiveServer, path: str, body: Any) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", json=body, timeout=60)


def test_a_group_gets_rewards_masks_and_its_facts(server: LiveServer) -> None:
    """One prompt's answers in one call: rewards in order, all verdicts, the group's facts."""
    body = {
        "prompt": "What is 1/2 + 1/4?",
        "label": "\\frac{3}{4}",
        "k": [1, 2],
        "responses": [
            "so \\boxed{0.75}",
            "so \\boxed{\\frac{3}{4}}",
            "so \\boxed{1}",
            "so \\boxed{1}",
        ],
    }
    answer = _post(server, "/score/group", body).json()
    assert answer["rewards"] == [1.0, 1.0, 0.0, 0.0]
    assert answer["loss_multipliers"] == [1.0] * 4
    group = answer["group"]
    assert (group["size"], group["correct"], group["mean"], group["all_equal"]) == (
        4,
        2,
        0.5,
        False,
    )
    assert (group["distinct_answers"], group["majority_count"], group["gradings"]) == (2, 2, 3)
    assert group["pass_at_k"] == {"1": 0.5, "2": pytest.approx(5 / 6)}


def test_a_groups_fallbacks_are_masked(server: LiveServer) -> None:
    """A crashed grading is `error` with loss multiplier 0, left out of the group's statistics."""
    body = {"label": None, "responses": ["1.0", "raise", "1.0"]}
    answer = _post(server, "/score/fake/group?detail=1", body).json()
    assert answer["loss_multipliers"] == [1.0, 0.0, 1.0]
    assert [d["status"] for d in answer["details"]] == ["ok", "error", "ok"]
    assert answer["details"][1]["loss_multiplier"] == 0.0
    assert (answer["group"]["masked"], answer["group"]["all_equal"]) == (1, True)


def test_every_detail_answer_carries_the_mask(server: LiveServer) -> None:
    """`/score?detail=1` says whether its reward is a verdict: 1.0 for a wrong answer."""
    detail = _post(server, "/score?detail=1", {"response": "\\boxed{5}", "label": "4"}).json()
    assert (detail["status"], detail["loss_multiplier"]) == ("wrong", 1.0)


def test_the_open_r1_composite_returns_each_component(server: LiveServer) -> None:
    """`/score/open_r1`: accuracy, format and tag_count in the details and their sum."""
    body = {"response": FORMATTED, "label": "4"}
    assert _post(server, "/score/open_r1", body).json() == 3.0
    detail = _post(server, "/score/open_r1?detail=1", body).json()
    assert detail["components"] == {"accuracy": 1.0, "format": 1.0, "tag_count": 1.0}
    assert (detail["format"], detail["scorer"], detail["status"]) == (1.0, "open_r1", "ok")


def test_scorers_lists_the_composites_and_their_components(server: LiveServer) -> None:
    """`GET /scorers` names each composite among the scorers and lists its components."""
    listing = httpx.get(f"{server.url}/scorers", timeout=10).json()
    assert "open_r1" in listing["scorers"]
    assert listing["composites"] == {"open_r1": ["accuracy", "format", "tag_count"]}


def test_a_composite_grades_a_group(server: LiveServer) -> None:
    """The group endpoint takes a composite like any scorer; pass@k counts its verdict."""
    body = {"label": "4", "responses": [FORMATTED, "\\boxed{4}", "\\boxed{5}"], "k": 1}
    answer = _post(server, "/score/open_r1/group", body).json()
    assert answer["rewards"] == [3.0, 1.0, 0.0]
    assert (answer["group"]["correct"], answer["group"]["pass_at_k"]) == (
        2,
        {"1": pytest.approx(2 / 3)},
    )


@pytest.mark.parametrize(
    ("body", "code"),
    [({"responses": []}, 400), ({"responses": ["a"], "k": 0}, 400), ({"label": "4"}, 400)],
)
def test_a_body_that_is_no_group_is_refused(server: LiveServer, body: Any, code: int) -> None:
    """No responses or a bad k: refused with a message, never graded."""
    reply = _post(server, "/score/group", body)
    assert reply.status_code == code
    assert "responses" in reply.json()["error"] or "k must" in reply.json()["error"]


def test_group_metrics_count_groups(server: LiveServer) -> None:
    """`reward_groups_total` and the distinct-answer histogram grow with each group."""
    _post(server, "/score/group", {"label": "4", "responses": ["\\boxed{4}", "\\boxed{4}"]})
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    assert 'reward_groups_total{all_equal="true",scorer="math_verify"}' in text
    assert 'reward_group_answers_distinct_bucket{le="1.0",scorer="math_verify"}' in text


def test_the_group_endpoint_is_in_the_openapi_schema(server: LiveServer) -> None:
    """Both group routes are described, with their body and answer."""
    paths = httpx.get(f"{server.url}/openapi.json", timeout=10).json()["paths"]
    for path in ("/score/group", "/score/{scorer}/group"):
        assert (
            "responses"
            in paths[path]["post"]["requestBody"]["content"]["application/json"]["schema"][
                "properties"
            ]
        )


def test_a_group_task_that_overruns_is_graded_answer_by_answer(server: LiveServer) -> None:
    """A group goes to one worker in one task; when one answer stalls it past the deadline,
    each answer is graded again alone: only the stalled one times out."""
    body = {"label": None, "responses": ["1.0", "stall", "0.5"]}
    answer = _post(server, "/score/fake/group?detail=1", body).json()
    assert answer["rewards"] == [1.0, 0.0, 0.5]
    assert [d["status"] for d in answer["details"]] == ["ok", "timeout", "ok"]
    assert answer["loss_multipliers"] == [1.0, 0.0, 1.0]


def test_a_hostile_answer_in_a_group_is_screened_not_graded(server: LiveServer) -> None:
    """A tower of powers in a group is settled by the screen (no_answer) and costs the rest
    of the group nothing: they are graded as usual."""
    body = {"label": "4", "responses": ["so \\boxed{9^{9^{9^{9^{9}}}}}", "so \\boxed{4}"]}
    answer = _post(server, "/score/group?detail=1", body).json()
    assert answer["rewards"] == [0.0, 1.0]
    assert [d["status"] for d in answer["details"]] == ["no_answer", "ok"]
    assert answer["group"]["distinct_answers"] == 1
