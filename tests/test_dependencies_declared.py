"""Whatever the package imports, pyproject.toml declares: nothing arrives through another's extras.

Each third-party import of each module (inside functions too) is mapped to
the distributions that install it (`importlib.metadata.packages_distributions`,
the module's own name for one not installed here) and one of them must be a
runtime dependency, or a dependency of an extra for the modules that run only
where that extra is installed (`EXTRA_MODULES`). Those modules' extra imports
must wait until they are needed: every other module imports, and the command
line has every command, with the extras missing.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.test_architecture import MODULES, imports

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    # the Serve replica (Ray imports it on the cluster); `slime submit` (imports ray when it runs)
    "ray": (
        "reward_service.rayserve.deployment",
        "reward_service.rayserve.direct_driver",
        "reward_service.launcher.submit",
    ),
    # the `reward_model` scorer, registered only where torch is installed
    "rm": ("reward_service.scorers.reward_model.scorer",),
    # the ifeval/ifbench checkers (loaded by the first instruction answer); the bench's peer
    "ifeval": (
        "reward_service.scorers.instructions.checkers",
        "reward_service.bench.instruction_workload",
    ),
    # the judge scorers' client (opened only with a judge endpoint set)
    "judge": ("reward_service.scorers.llm_judge.client",),
}
"""Modules that run only where an extra is installed, by extra."""

COMMANDS = ("serve", "score", "bench", "slime", "ray")


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(line).name) for line in requirements}


@cache
def _declared() -> tuple[set[str], dict[str, set[str]]]:
    """Runtime dependency names, and each extra's."""
    with PYPROJECT.open("rb") as handle:
        project = tomllib.load(handle)["project"]
    extras = {name: _names(lines) for name, lines in project["optional-dependencies"].items()}
    return _names(project["dependencies"]), extras


def third_party(module: str) -> set[str]:
    """The top-level third-party modules `module` imports."""
    found = {name.partition(".")[0] for name in imports(MODULES[module], module, MODULES)}
    return {top for top in found if top != "reward_service" and top not in sys.stdlib_module_names}


@cache
def _installers() -> dict[str, list[str]]:
    """Top-level module to distributions, read once: each read walks every installed
    distribution's file list (about 0.15 s with torch installed, for each of ~300 imports)."""
    return packages_distributions()


def distributions(top: str) -> set[str]:
    """The distributions that install the top-level module `top`; its own name if none is here."""
    return {canonicalize_name(d) for d in _installers().get(top, [top])}


def undeclared(module: str, runtime: set[str] | None = None) -> list[str]:
    """Each third-party import of `module` that neither the runtime (`runtime`, by default
    pyproject.toml's) nor the extra it runs with declares."""
    declared, extras = _declared()
    allowed = set(declared if runtime is None else runtime)
    for extra, modules in EXTRA_MODULES.items():
        if module in modules:
            allowed |= extras[extra]
    return [
        f"{module} imports {top} (from {', '.join(sorted(distributions(top)))}): not declared"
        for top in sorted(third_party(module))
        if not distributions(top) & allowed
    ]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_import_is_declared(module: str) -> None:
    """Every third-party module `module` imports comes from a dependency pyproject.toml declares."""
    assert undeclared(module) == []


def test_the_extras_named_exist() -> None:
    """Each extra of `EXTRA_MODULES` is one pyproject.toml defines, each module a real one."""
    _, extras = _declared()
    assert set(EXTRA_MODULES) <= set(extras)
    assert [m for ms in EXTRA_MODULES.values() for m in ms if m not in MODULES] == []


def test_the_check_catches_an_import_only_another_extra_brings() -> None:
    """Without pyyaml declared, spec.py's yaml (which uvicorn[standard] installs) is reported;
    ray, declared by the `ray` extra only, is fine in the replica and nowhere else."""
    runtime, _ = _declared()
    assert undeclared("reward_service.rayserve.spec", runtime - {"pyyaml"}) == [
        "reward_service.rayserve.spec imports yaml (from pyyaml): not declared"
    ]
    assert undeclared("reward_service.rayserve.deployment") == []
    assert "ray" not in runtime and "ray" in third_party("reward_service.rayserve.deployment")


_WITHOUT_EXTRAS = """
import importlib, sys
from importlib.machinery import PathFinder

class Uninstalled(PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] in {blocked!r}:
            return None
        return super().find_spec(name, path, target)

sys.meta_path = [Uninstalled if f is PathFinder else f for f in sys.meta_path]
for module in {modules!r}:
    importlib.import_module(module)
from reward_service.cli import build_parser
commands = build_parser()._subparsers._group_actions[0].choices
print(" ".join(commands))
"""


def test_everything_but_the_extra_modules_imports_without_the_extras() -> None:
    """With what only the extras bring missing (ray, torch, transformers), every other module
    imports and the command line has every command."""
    runtime, _ = _declared()
    extra_modules = {m for ms in EXTRA_MODULES.values() for m in ms}
    blocked = sorted(
        top
        for module in extra_modules
        for top in third_party(module)
        if not distributions(top) & runtime
    )
    assert {"ray", "torch", "transformers"} <= set(blocked)
    modules = sorted(m for m in MODULES if m not in extra_modules and not m.endswith("__main__"))
    code = textwrap.dedent(_WITHOUT_EXTRAS).format(blocked=blocked, modules=modules)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == list(COMMANDS)
