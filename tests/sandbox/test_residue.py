"""Nothing of an earlier answer is in the memory a later run starts with, in any language.

`tests.sandbox.harness.residue` runs, inside an outer PID namespace (`confine`), an
answer in each language the zygote runs (its source, a file given beside it, its stdin
and a file fetched after it each holding a fresh marker; a C++ answer whose build fails
with its marker in the message), each followed by a Python run that reads its own
memory for the markers. The zygote keeps programs, inputs and outputs only in buffers a
fork does not inherit (docs/sandbox.md, "Processes").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.harness import confine, platforms
from tests.sandbox.harness.platforms import PROFILES
from tests.sandbox.harness.residue import PROGRAMS

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 240.0

pytestmark = [
    pytest.mark.heavy,
    pytest.mark.skipif(confine.unavailable() is not None, reason=str(confine.unavailable())),
]


@pytest.fixture(
    scope="module",
    params=[p if p == "full" else pytest.param(p, marks=pytest.mark.slow) for p in PROFILES],
)
def residue(request: pytest.FixtureRequest) -> Iterator[dict[str, dict[str, Any]]]:
    """The residue runner's findings on one profile, by language."""
    profile: str = request.param
    if reason := platforms.unavailable(profile):
        pytest.skip(reason)
    tmp = Path(tempfile.mkdtemp(prefix=f"residue-{profile}-"))
    tmp.chmod(0o777)
    try:
        results, report = tmp / "results.jsonl", tmp / "confine.jsonl"
        inner = [sys.executable, "-m", "tests.sandbox.harness.residue", "--results", str(results)]
        done = subprocess.run(
            confine.command(
                report, platforms.command(profile, inner), DEADLINE_S, fake_token=False
            ),
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=DEADLINE_S + 30,
        )
        events = confine.read_report(results)
        outer = confine.read_report(report)
        logs = f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        assert outer.get("probe", [{}])[0].get("ok"), f"not confined: {outer}\n{logs}"
        assert not outer.get("watchdog"), outer["watchdog"]
        assert done.returncode == 0 and "after" in events, logs
        yield {event["language"]: event for event in events.get("residue", [])}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize("language", list(PROGRAMS))
def test_a_later_run_finds_nothing_of_an_earlier_answer(
    residue: dict[str, dict[str, Any]], language: str
) -> None:
    """No marker of the earlier answer (source, files, stdin, fetched file, build message) is
    in the heap or the object arenas of the Python run after it."""
    found = residue.get(language)
    if found is None:
        pytest.skip(f"no {language} toolchain here")
    assert found["error"] is None and found["pages"], found
    assert found["found"] == [], found
