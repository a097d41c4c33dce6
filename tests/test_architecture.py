"""The import rules of the README's Architecture section, checked on the source.

Each rule names a part of the package and what it may never import, at any
depth (imports inside functions count too). A move or a new module that breaks
a rule fails here, before the layering can rot.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "reward_service"

WEB = ("fastapi", "starlette", "uvicorn")
GRADERS = ("math_verify", "latex2sympy2_extended", "sympy", "torch", "transformers")

RULES: dict[str, tuple[str, ...]] = {
    # pure grading: no web, no processes of its own (the code scorer runs programs
    # through sandbox/), nothing above it
    "reward_service.scorers": (
        *WEB,
        "httpx",
        "reward_service.server",
        "reward_service.grading",
        "reward_service.contracts",
        "reward_service.clients",
        "reward_service.launcher",
        "reward_service.bench",
        "reward_service.settings",
    ),
    # running model-written programs: stdlib and the floor only, so the zygote holds nothing else
    "reward_service.sandbox": (
        *WEB,
        *GRADERS,
        "httpx",
        "reward_service.server",
        "reward_service.grading",
        "reward_service.scorers",
        "reward_service.contracts",
        "reward_service.clients",
        "reward_service.launcher",
        "reward_service.bench",
        "reward_service.settings",
    ),
    # the grading runtime knows scorers, never HTTP
    "reward_service.grading": (
        *WEB,
        "reward_service.server",
        "reward_service.contracts",
        "reward_service.clients",
        "reward_service.launcher",
        "reward_service.bench",
    ),
    # request bodies become samples; no HTTP, no processes
    "reward_service.contracts": (
        *WEB,
        "reward_service.server",
        "reward_service.grading.engine",
        "reward_service.grading.pool",
        "reward_service.clients",
        "reward_service.launcher",
        "reward_service.bench",
    ),
    # the HTTP layer never imports a grader or a scorer module (the types in base aside)
    "reward_service.server": (
        *GRADERS,
        "reward_service.scorers.",
        "reward_service.clients",
        "reward_service.launcher",
        "reward_service.bench",
    ),
    # code that runs inside other frameworks: no server, no graders
    "reward_service.clients": (
        *WEB,
        *GRADERS,
        "reward_service.server",
        "reward_service.grading",
        "reward_service.scorers",
        "reward_service.contracts",
        "reward_service.bench",
    ),
    "reward_service.launcher": (
        *WEB,
        *GRADERS,
        "reward_service.server",
        "reward_service.grading",
        "reward_service.scorers",
        "reward_service.contracts",
        "reward_service.clients",
        "reward_service.bench",
        "reward_service.rayserve.deployment",
    ),
    # the service on Ray: the replica wraps the app, nothing here grades
    "reward_service.rayserve": (
        *GRADERS,
        "reward_service.grading",
        "reward_service.scorers.",
        "reward_service.contracts",
        "reward_service.clients",
    ),
    # what the launcher uses from a training job: HTTP to the dashboard, no Ray, no app
    **{
        f"reward_service.rayserve.{module}": (*WEB, "ray", "reward_service.server")
        for module in ("spec", "placement", "cluster", "ray_cli")
    },
    # the shared floor imports nothing of the parts above it
    "reward_service.settings": ("reward_service.server", "reward_service.grading"),
    "reward_service.errors": ("reward_service.",),
    "reward_service.logs": ("reward_service.",),
    "reward_service.redaction": ("reward_service.",),
    "reward_service.cpus": ("reward_service.",),
}

ALLOWED = {"reward_service.server": ("reward_service.scorers.base",)}
"""Exceptions to a part's rule: the scorer interface's types are everyone's."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, absolute, at any depth."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _breaks(imported: str, forbidden: str) -> bool:
    if forbidden.endswith("."):
        return imported.startswith(forbidden)
    return imported == forbidden or imported.startswith(forbidden + ".")


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[_module_name(p) for p in MODULES])
def test_module_keeps_the_import_rules(path: Path) -> None:
    """No module imports what the rule of its part forbids."""
    name = _module_name(path)
    rules = [forbidden for part, forbidden in RULES.items() if _breaks(name, part)]
    allowed = [ok for part, oks in ALLOWED.items() if _breaks(name, part) for ok in oks]
    broken = sorted(
        f"{name} imports {imported}"
        for imported in _imports(path)
        for forbidden in (f for rule in rules for f in rule)
        if _breaks(imported, forbidden)
        and not _breaks(imported, name)
        and not any(_breaks(imported, ok) for ok in allowed)
    )
    assert not broken, "\n".join(broken)


def test_rules_catch_a_forbidden_import(tmp_path: Path) -> None:
    """The checker itself sees a function-level import of the HTTP layer from a scorer."""
    module = tmp_path / "scorer.py"
    module.write_text("def f():\n    from reward_service.server.app import create_app\n")
    assert "reward_service.server.app" in _imports(module)
    assert _breaks("reward_service.server.app", RULES["reward_service.scorers"][4])


def test_every_part_is_named_by_a_rule() -> None:
    """Each package folder has a rule, so a new part cannot skip the layering."""
    parts = {f"reward_service.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert parts - {"reward_service.bench"} <= set(RULES), parts - set(RULES)


def test_no_two_modules_share_a_name() -> None:
    """Module file names are unique across the package (dunder files aside)."""
    names = [p.stem for p in MODULES if not p.stem.startswith("__")]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_the_server_process_never_loads_a_grader() -> None:
    """Building the app, its registry and every scorer class loads no math_verify or sympy."""
    code = (
        "import sys\n"
        "from reward_service.server.app import create_app\n"
        "from reward_service.settings import Settings\n"
        "app = create_app(Settings(workers=1))\n"
        "registry = app.state.engine.registry\n"
        "[registry.scorer_class(name) for name in registry.names()]\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {GRADERS!r}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
