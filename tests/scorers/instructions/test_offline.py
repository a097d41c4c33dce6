"""The instruction scorers never reach the network: import, open and grade with sockets cut."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.scorers.instructions.test_each_instruction import ROWS

_GUARDED = textwrap.dedent(
    """
    import json, socket, subprocess, sys

    attempts = []

    def refuse(what):
        def call(*args, **kwargs):
            attempts.append(what)
            raise OSError(f"network cut by the test: {what}")
        return call

    socket.socket.connect = refuse("connect")
    socket.socket.connect_ex = refuse("connect_ex")
    socket.socket.sendto = refuse("sendto")
    socket.create_connection = refuse("create_connection")
    socket.getaddrinfo = refuse("getaddrinfo")
    subprocess.Popen.__init__ = refuse("subprocess")

    from reward_service.scorers.instructions import checkers
    from reward_service.scorers.instructions.scorers import IfBenchScorer, IfEvalScorer

    scorers = {"ifeval": IfEvalScorer(), "ifbench": IfBenchScorer()}
    statuses = {}
    for benchmark, instruction, kwargs, follows, _ in json.loads(sys.stdin.read()):
        label = {"instruction_id_list": [instruction], "kwargs": [kwargs]}
        score = scorers[benchmark].score("", follows, label, {})
        statuses[instruction] = score.status.value
    print(json.dumps({"attempts": attempts, "statuses": statuses,
                      "datasets": "datasets" in sys.modules,
                      "refused": sorted(checkers.refused_downloads)}))
    """
)


def test_import_and_grading_try_no_download() -> None:
    """Every instruction type grades with sockets and subprocesses cut, and none is tried.

    NLTK downloads the checkers ask for are refused before any socket, and the
    dataset API (`datasets`) is never imported."""
    run = subprocess.run(
        [sys.executable, "-c", _GUARDED],
        input=json.dumps(ROWS),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found = json.loads(run.stdout)
    assert found["attempts"] == []
    assert found["datasets"] is False
    assert set(found["refused"]) <= {"punkt", "stopwords", "averaged_perceptron_tagger_eng"}
    assert set(found["statuses"]) == {row[1] for row in ROWS}
    assert {i for i, s in found["statuses"].items() if s != "ok"} <= {"words:start_verb"}
