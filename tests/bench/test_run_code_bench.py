"""The `run_code` bench workload: the issue's shape, what counts as a right answer, and the
`--against` side."""

from __future__ import annotations

import asyncio
import tempfile
from collections import Counter

import pytest

from reward_service.bench.run_code_bench import (
    _right,
    against_url,
    post_runs,
    run,
    run_code_workload,
    run_plain,
)
from reward_service.cli import build_parser


def test_the_workload_has_the_issues_shape_in_distinct_programs() -> None:
    """400 runs, 12 sleeping past their 2 s timeout, no two programs alike."""
    items = run_code_workload(5, 400)
    assert sum(item["expected"] is None for item in items) == 12
    assert len({item["body"]["code"] for item in items}) == 400
    assert {item["body"]["run_timeout"] for item in items} == {2}


def test_the_cpp_workload_has_the_same_shape_and_a_build_timeout() -> None:
    """In C++ the same runs and answers, each program distinct, each with a `compile_timeout`."""
    python, cpp = run_code_workload(5, 400), run_code_workload(5, 400, "cpp")
    assert [item["expected"] for item in cpp] == [item["expected"] for item in python]
    assert {item["body"]["language"] for item in cpp} == {"cpp"}
    assert len({item["body"]["code"] for item in cpp}) == 400
    assert {item["body"]["compile_timeout"] for item in cpp} == {30}


@pytest.mark.parametrize(
    ("answer", "expected", "right"),
    [
        ({"status": "Success", "run_result": {"status": "Finished", "stdout": "5\n"}}, "5\n", True),
        (
            {"status": "Success", "run_result": {"status": "Finished", "stdout": "6\n"}},
            "5\n",
            False,
        ),
        ({"status": "Failed", "run_result": {"status": "TimeLimitExceeded"}}, None, True),
        ({"status": "Failed", "run_result": {"status": "TimeLimitExceeded"}}, "5\n", False),
        ({"status": "Success", "run_result": {"status": "Finished", "stdout": ""}}, None, False),
        ({"status": "SandboxError", "run_result": None}, None, False),
    ],
)
def test_a_sleeper_must_time_out_and_the_others_print_their_number(
    answer: dict[str, object], expected: str | None, right: bool
) -> None:
    """A sleeper is right only as `TimeLimitExceeded`; another run only with its stdout."""
    assert _right(answer, expected) is right


def _sample(language: str) -> list[dict[str, object]]:
    """A sleeper and two runs that print their number, of the workload's first 17."""
    items = run_code_workload(9, 17, language)
    sleeper = [item for item in items if item["expected"] is None]
    return sleeper + [item for item in items if item["expected"] is not None][:2]


@pytest.mark.parametrize("language", ["python", "cpp"])
def test_the_plain_side_runs_each_language_right(language: str) -> None:
    """Unconfined, a sleeper is killed at its timeout and the others print their number."""
    with tempfile.TemporaryDirectory() as scratch:
        done = run_plain(_sample(language), scratch)
    assert (done.answers, done.wrong) == (3, 0)


@pytest.mark.parametrize("language", ["python", "cpp"])
def test_another_servers_run_code_is_posted_the_same_runs(reward_url: str, language: str) -> None:
    """The `--against` side's client, against a SandboxFusion-compatible `/run_code` (the
    service's own here): every answer as expected, the sleeper's `TimeLimitExceeded` too."""
    done = asyncio.run(post_runs(reward_url, _sample(language)))
    assert (done.answers, done.wrong, len(done.latencies_s)) == (3, 0, 3)


def test_a_wrong_answers_statuses_are_counted(reward_url: str) -> None:
    """A run whose stdout is not the one expected, or a sleeper's, or a run that times out
    where it should not: each wrong, its statuses counted, a sleeper's marked."""
    sleeper, item, _ = _sample("python")
    misses: Counter[str] = Counter()
    wrongly = [{**item, "expected": "nope\n"}, {**item, "expected": None}]
    done = asyncio.run(post_runs(reward_url, [*wrongly, {**sleeper, "expected": "0\n"}], misses))
    assert done.wrong == 3
    assert misses == Counter(
        {"Success/Finished": 1, "Success/Finished (sleeper)": 1, "Failed/TimeLimitExceeded": 1}
    )


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://127.0.0.2:8080/", "http://127.0.0.2:8080"),
        ("http://localhost:8080", "http://localhost:8080"),
        ("https://[::1]:8443/", "https://[::1]:8443"),
    ],
)
def test_against_takes_a_loopback_url(url: str, base: str) -> None:
    """A loopback host, by address or by a name that resolves to loopback only, is taken."""
    assert against_url(url) == base


@pytest.mark.parametrize(
    "url", ["http://192.0.2.1:8080", "http://10.0.0.1", "127.0.0.1:8080", "ftp://127.0.0.1/"]
)
def test_against_refuses_another_host_or_scheme(url: str) -> None:
    """A host that is not loopback, or a URL that is not http(s) with a host, is refused."""
    with pytest.raises(ValueError, match="--against"):
        against_url(url)


def test_against_remote_lets_another_host_through() -> None:
    """`--against-remote` takes a host that is not loopback."""
    assert against_url("http://192.0.2.1:8080/", remote=True) == "http://192.0.2.1:8080"


def test_the_options_default_to_python_and_no_other_server() -> None:
    """`--run-code-language` is python or cpp, python unless said; `--against` is off."""
    args = build_parser().parse_args(["bench", "--workload", "run_code"])
    assert (args.run_code_language, args.against, args.against_remote) == ("python", None, False)
    args = build_parser().parse_args(
        ["bench", "--run-code-language", "cpp", "--against", "http://127.0.0.1:1"]
    )
    assert (args.run_code_language, args.against) == ("cpp", "http://127.0.0.1:1")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--run-code-language", "java"])


def test_the_bench_refuses_a_remote_server_before_starting_any(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A host that is not loopback stops the bench with its reason, nothing run or printed."""
    args = build_parser().parse_args(
        ["bench", "--workload", "run_code", "--against", "http://192.0.2.1:8080"]
    )
    with pytest.raises(SystemExit, match="not loopback"):
        run(args)
    assert capsys.readouterr().out == ""


def test_against_is_refused_beside_another_workload() -> None:
    """`--against` without `--workload run_code` stops the bench rather than be ignored."""
    args = build_parser().parse_args(["bench", "--against", "http://127.0.0.1:1"])
    with pytest.raises(SystemExit, match="--workload run_code"):
        args.run(args)


def test_a_short_bench_against_another_server_prints_its_side(
    reward_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """With `--against` the other server is a fourth side: its line, every answer right, the
    service's ratio to it, and the load average."""
    options = ["--workload", "run_code", "--answers", "4", "--workers", "1"]
    args = build_parser().parse_args(["bench", *options, "--against", f"{reward_url}/"])
    run(args)
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if "answers in" in line}
    assert set(lines) == {"plain", "spares", "default", "against"}
    assert all(line.endswith("wrong: 0") for line in lines.values())
    assert "vs against" in out
    assert f"against {reward_url};" in out
    assert "load average (1/5/15 min)" in out
