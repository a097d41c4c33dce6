"""Nothing of an earlier answer is in the memory a later run starts with, in any language.

`tests.sandbox.harness.residue` runs, inside an outer PID namespace (`confine`), an
answer in each language the zygote runs (its source, a file given beside it, its stdin
and a file fetched after it each holding a fresh marker; a C++ answer whose build fails
with its marker in the message), each followed by a Python run that reads its own
memory for the markers. The zygote keeps programs, inputs and outputs only in buffers a
fork does not inherit (docs/sandbox.md, "Processes").
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.harness import campaigns, confine, platforms
from tests.sandbox.harness.platforms import PROFILES
from tests.sandbox.harness.residue import PROGRAMS

DEADLINE_S = 240.0

pytestmark = [
    pytest.mark.heavy,
    pytest.mark.skipif(confine.unavailable() is not None, reason=str(confine.unavailable())),
]


def _residue_run(profile: str) -> dict[str, list[dict[str, Any]]]:
    runner = [sys.executable, "-m", "tests.sandbox.harness.residue", "--results"]
    return confine.confined_events(
        f"residue-{profile}-",
        lambda results: platforms.command(profile, [*runner, str(results)]),
        DEADLINE_S,
    )


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest) -> Iterator[campaigns.Campaigns[Any]]:
    """Every selected profile's residue run, a few at a time from the module's start."""
    profiles = campaigns.selected(request.session, Path(__file__), "residue")
    with campaigns.Campaigns(_residue_run, profiles, len(PROFILES) * (DEADLINE_S + 30)) as started:
        yield started


@pytest.fixture(
    scope="module",
    params=[p if p == "full" else pytest.param(p, marks=pytest.mark.slow) for p in PROFILES],
)
def residue(
    request: pytest.FixtureRequest, runs: campaigns.Campaigns[Any]
) -> dict[str, dict[str, Any]]:
    """The residue runner's findings on one profile, by language."""
    profile: str = request.param
    if reason := platforms.unavailable(profile):
        pytest.skip(reason)
    events = runs.result(profile)
    return {event["language"]: event for event in events.get("residue", [])}


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
