"""Preflight: fail fast and clearly when the service is down, not ready or wrong."""

from __future__ import annotations

import time

import pytest

from reward_service.launcher.preflight import PreflightError, run_preflight
from reward_service.testing import Reply, StandIn, free_port
from tests.stand_in import grade_like_math


def _preflight(
    url: str, lines: list[str], reward_key: str | None = None, check_grading: bool = True
) -> None:
    run_preflight(
        url,
        reward_key=reward_key,
        wait_s=1.0,
        interval_s=0.1,
        check_grading=check_grading,
        say=lines.append,
    )


def test_passes_against_the_real_service(reward_url: str) -> None:
    """The real service grades the known-correct sample 1 and the known-wrong one 0."""
    lines: list[str] = []
    _preflight(f"{reward_url}/score", lines)
    assert lines[-1] == "preflight: known-correct sample graded 1, known-wrong graded 0"


def test_passes_with_detail_and_reward_key(reward_url: str) -> None:
    """With ?detail=1 the reward is read from the object, as SLIME's --reward-key does."""
    _preflight(f"{reward_url}/score?detail=1", [], reward_key="reward")


def test_service_down_fails_within_the_wait() -> None:
    """Nothing listening: the preflight gives up after its bound and says how to check."""
    url = f"http://127.0.0.1:{free_port()}/score"
    lines: list[str] = []
    start = time.monotonic()
    with pytest.raises(PreflightError, match="not ready after 1s") as failure:
        _preflight(url, lines)
    assert time.monotonic() - start < 5
    assert "unreachable (ConnectError" in str(failure.value)
    assert f"curl -sS -i {url.removesuffix('/score')}/readyz" in str(failure.value)
    assert lines[1].startswith("preflight: waiting for")


def test_unresolvable_host_fails_at_once() -> None:
    """A wrong Service name fails before any wait, pointing at the name and namespace."""
    start = time.monotonic()
    with pytest.raises(PreflightError, match=r"cannot resolve 'slime-reward\.nowhere\.invalid'"):
        run_preflight("http://slime-reward.nowhere.invalid:8000/score", wait_s=60, say=print)
    assert time.monotonic() - start < 10


def test_unresolvable_service_names_the_namespace_to_set() -> None:
    """An unresolvable cluster name names the namespace asked, the manifests' one and the fix."""
    with pytest.raises(PreflightError) as failure:
        run_preflight("http://slime-reward.default.svc.cluster.local:8000/score", say=print)
    message = str(failure.value)
    assert "no Service 'slime-reward' in namespace 'default'" in message
    assert "into namespace 'reward-service'" in message
    assert "SLIME_REWARD_NAMESPACE" in message


def test_timeout_hint_names_the_network_policy_label(stand_in: StandIn) -> None:
    """A service never ready leaves a message naming its namespace and the client label."""
    stand_in.route("/readyz", lambda _: Reply(503))
    with pytest.raises(PreflightError) as failure:
        _preflight(f"{stand_in.url}/score", [])
    assert "reward-service/client=true" in str(failure.value)


def test_unauthorized_probe_asks_for_the_token(stand_in: StandIn) -> None:
    """A 401 on a probe says the service wants its token and which variable carries it."""
    stand_in.route("/score", lambda _: Reply(401, {"error": "unauthorized"}))
    with pytest.raises(PreflightError, match=r"requires its API token\. Set SLIME_REWARD_TOKEN"):
        _preflight(f"{stand_in.url}/score", [])


def test_not_ready_fails_naming_the_status(stand_in: StandIn) -> None:
    """/readyz answering 503 throughout stops the launch with that status in the message."""
    stand_in.route("/readyz", lambda _: Reply(503, {"status": "warming"}))
    with pytest.raises(PreflightError, match="is HTTP 503"):
        _preflight(f"{stand_in.url}/score", [])
    assert "POST" not in {method for method, _, _ in stand_in.requests}


def test_becomes_ready_during_the_wait(stand_in: StandIn) -> None:
    """A service that turns ready within the bound passes, after a progress line."""
    answers = iter([Reply(503), Reply(503)])
    stand_in.route("/readyz", lambda _: next(answers, Reply(200)))
    stand_in.route("/score", lambda body: Reply(200, grade_like_math(body)))
    lines: list[str] = []
    _preflight(f"{stand_in.url}/score", lines)
    assert any("HTTP 503" in line for line in lines)


def test_grading_a_correct_answer_wrong_fails(stand_in: StandIn) -> None:
    """A service that answers 0.0 to everything is refused, with a curl line to see it."""
    stand_in.route("/score/exact", lambda _: Reply(200, 0.0))
    with pytest.raises(PreflightError, match="graded the known-correct sample 0") as failure:
        _preflight(f"{stand_in.url}/score/exact", [])
    message = str(failure.value)
    assert "curl -sS -i -X POST -H 'Content-Type: application/json' -d" in message
    assert f"{stand_in.url}/score/exact" in message


def test_grading_everything_right_fails(stand_in: StandIn) -> None:
    """A service that answers 1.0 to everything fails on the known-wrong sample."""
    stand_in.route("/score", lambda _: Reply(200, 1.0))
    with pytest.raises(PreflightError, match="graded the known-wrong sample 1, expected 0"):
        _preflight(f"{stand_in.url}/score", [])


def test_object_answer_without_reward_key_fails(stand_in: StandIn) -> None:
    """An object answer without --reward-key would break SLIME, so the preflight says so."""
    stand_in.route("/score", lambda body: Reply(200, {"reward": grade_like_math(body)}))
    with pytest.raises(PreflightError, match="--reward-key reward"):
        _preflight(f"{stand_in.url}/score", [])


def test_error_status_fails_with_the_answer(stand_in: StandIn) -> None:
    """A 4xx on a probe is reported with its status and body."""
    stand_in.route("/score/nope", lambda _: Reply(404, {"error": "unknown scorer 'nope'"}))
    with pytest.raises(PreflightError, match=r"HTTP 404.*unknown scorer"):
        _preflight(f"{stand_in.url}/score/nope", [])


def test_skip_grading_only_waits(stand_in: StandIn) -> None:
    """With grading skipped, a ready service passes without any sample posted."""
    _preflight(f"{stand_in.url}/score", [], check_grading=False)
    assert stand_in.paths("POST") == []


@pytest.mark.parametrize("scorer", ["judge", "math_judge", "boxed_math_judge"])
def test_an_unconfigured_judge_is_named_with_its_setting(reward_url: str, scorer: str) -> None:
    """Against a service with no judge endpoint, a judge URL fails on the scorer's start-up
    check, naming the variable to set, not the URL."""
    with pytest.raises(PreflightError, match="REWARD_JUDGE__BASE_URL") as failure:
        _preflight(f"{reward_url}/score/{scorer}", [])
    assert f"scorer {scorer!r} failed its start-up check" in str(failure.value)
    assert "wrong scorer in the URL" not in str(failure.value)


def test_an_unknown_scorer_is_refused_with_every_known_name(reward_url: str) -> None:
    """A URL naming a scorer the service lacks fails listing the ones it serves, uncut."""
    with pytest.raises(PreflightError, match="names scorer 'nonesuch'") as failure:
        _preflight(f"{reward_url}/score/nonesuch", [])
    assert str(failure.value).rstrip().endswith(", run_code")  # the last name, so none is cut


def test_a_zero_that_is_a_failure_is_not_a_wrong_grade(stand_in: StandIn) -> None:
    """A service giving the known-wrong sample 0 with status `judge_failed` is refused: the
    detail answer's status must be `wrong`."""
    stand_in.route("/score", lambda body: Reply(200, grade_like_math(body)))

    def detailed(body: dict[str, str]) -> Reply:
        if grade_like_math(body):
            return Reply(200, {"reward": 1.0, "status": "ok"})
        return Reply(200, {"reward": 0.0, "status": "judge_failed", "reason": "judge failed: x"})

    stand_in.route("/score?detail=1", detailed)
    with pytest.raises(PreflightError, match="status judge_failed, not wrong"):
        _preflight(f"{stand_in.url}/score", [])
