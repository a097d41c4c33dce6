"""A third-party scorer package, installed apart from the venv, served through its entry point."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from reward_service.clients.http import RewardClient
from reward_service.testing import LiveServer, live_server

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "shout-scorer"
version = "0.1.0"

[project.entry-points."reward_service.scorers"]
shout = "shout_scorer:ShoutScorer"
"""

MODULE = '''\
"""A scorer that wants the label shouted: upper case, ending in "!"."""

from collections.abc import Mapping

from reward_service.scorers.base import JSON, Score, Scorer


class ShoutScorer(Scorer):
    name = "shout"

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        if not isinstance(label, str):
            return Score.error("label must be a string")
        answer = response.strip()
        if not answer:
            return Score.no_answer("empty response")
        return Score.verdict(answer == label.upper() + "!", heard=answer[:50])
'''


def build_and_install(
    source: Path, site: Path, pyproject: str = PYPROJECT, module: str = MODULE
) -> None:
    """Write a one-module package to `source` (the module named as the directory, with
    underscores) and pip-install it, offline, into the directory `site`.

    The build uses this venv's setuptools, which needs `wheel` (the dev extra) below 70.1.
    """
    source.mkdir()
    (source / "pyproject.toml").write_text(pyproject)
    (source / f"{source.name.replace('-', '_')}.py").write_text(textwrap.dedent(module))
    offline = ["--no-deps", "--no-index", "--no-build-isolation", "--disable-pip-version-check"]
    pip = [sys.executable, "-m", "pip", "install", "--quiet", *offline]
    subprocess.run([*pip, "--target", str(site), str(source)], check=True, timeout=120)


@pytest.fixture(scope="module")
def plugin_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A live server whose `sys.path` holds the plugin's install directory, and nothing else new."""
    root = tmp_path_factory.mktemp("plugin")
    site = root / "site"
    build_and_install(root / "shout-scorer", site)
    assert list(site.glob("shout_scorer-0.1.0.dist-info/entry_points.txt"))
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    with live_server(workers=1, env={"PYTHONPATH": path}) as server:
        yield server


@pytest.mark.parametrize(
    ("response", "reward", "status"),
    [("PARIS!", 1.0, "ok"), ("paris", 0.0, "wrong"), ("  ", 0.0, "no_answer")],
)
def test_plugin_grades_at_its_own_path(
    plugin_server: LiveServer, response: str, reward: float, status: str
) -> None:
    """`POST /score/shout` is graded by the installed plugin."""
    with RewardClient(plugin_server.url) as client:
        detail = client.score(response, "paris", scorer="shout", detail=True)
    assert (detail["reward"], detail["status"], detail["scorer"]) == (reward, status, "shout")


def test_plugin_is_reachable_from_a_label_object(plugin_server: LiveServer) -> None:
    """A label `{"scorer": "shout", ...}` routes a plain `/score` sample to the plugin."""
    with RewardClient(plugin_server.url) as client:
        assert client.score("ROME!", {"scorer": "shout", "answer": "rome"}) == 1.0


def test_plugin_has_a_boxed_form(plugin_server: LiveServer) -> None:
    """`POST /score/boxed_shout` grades the content of the last box with the plugin."""
    with RewardClient(plugin_server.url) as client:
        boxed = client.score("I say \\boxed{PARIS!}", "paris", scorer="boxed_shout")
        unboxed = client.score("PARIS!", "paris", scorer="boxed_shout", detail=True)
    assert (boxed, unboxed["status"]) == (1.0, "no_answer")


def test_plugin_is_listed(plugin_server: LiveServer) -> None:
    """`GET /scorers` lists the plugin and its boxed form beside the built-ins."""
    names = httpx.get(f"{plugin_server.url}/scorers", timeout=10).json()["scorers"]
    assert {"shout", "boxed_shout", "math_verify", "choice"} <= set(names)


def test_unknown_scorer_lists_the_plugin(plugin_server: LiveServer) -> None:
    """The 404 for an unknown scorer names the plugin among the known ones."""
    answer = httpx.post(f"{plugin_server.url}/score/nope", json={"response": "x"}, timeout=10)
    assert answer.status_code == 404
    assert "shout" in answer.json()["error"]


def test_plugin_is_not_in_the_test_venv() -> None:
    """The plugin went to its own directory: the test's interpreter cannot import it."""
    result = subprocess.run(
        [sys.executable, "-c", "import shout_scorer"], capture_output=True, timeout=30
    )
    assert result.returncode != 0
