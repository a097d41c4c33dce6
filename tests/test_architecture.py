"""The layer rules of the Architecture docs, checked on the source, as an allow-list.

Every module belongs to one part (`PARTS`: the part with the longest prefix of
its name). `MAY_IMPORT` says, for each part, the other parts it may import and
the third-party packages it may import; the standard library is everyone's, and
a part may import its own modules. Every import of every module (inside functions
too, relative ones resolved) must be allowed. A new module outside every part,
a new part without a row, an import the table does not allow, or a table with a
cycle fails here, before the layering can rot. Below the parts, the modules
themselves form no circle either, inside a part as across parts: no module
imports one that imports it back, at any distance, lazily or not.

Names: no import binds one of the package's modules to a library's name, and
nothing Python puts on `sys.path` itself is named like a library (see
`test_no_import_binds_a_package_module_to_a_library_name`).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable, Mapping
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

PACKAGE = Path(__file__).resolve().parents[1] / "reward_service"
ROOT = "reward_service"
"""The package itself (its `__init__`, `__version__`); it matches no module below it."""

PARTS: dict[str, tuple[str, ...]] = {
    # what everyone may import: no state, no processes, imports nothing above it
    "floor": (
        ROOT,
        "reward_service.errors",
        "reward_service.logs",
        "reward_service.redaction",
        "reward_service.cpus",
        "reward_service.scorers.base",
    ),
    "settings": ("reward_service.settings",),
    # running model-written programs: stdlib and the floor only, so the zygote holds nothing else
    "sandbox": ("reward_service.sandbox",),
    # pure grading: no web, no processes of their own, no settings
    "scorers": ("reward_service.scorers",),
    # the one type the server, the contracts and the engine pass around
    "sample": ("reward_service.grading.sample",),
    # the grading runtime: processes, deadlines, screening; scorers through the registry
    "grading": ("reward_service.grading",),
    # request bodies become samples
    "contracts": ("reward_service.contracts",),
    # the HTTP layer: never a grader or a scorer module (the types in scorers.base aside)
    "server": ("reward_service.server",),
    # code that runs inside other frameworks
    "clients": ("reward_service.clients",),
    # what the sub-commands share: the parser type, guarded, NAME=VALUE, secrets, Ray's address
    "subcommands": ("reward_service.subcommands",),
    # a `reward-service serve` process on this machine, for bench, ray bench and tests
    "local_server": ("reward_service.local_server",),
    # the SLIME launcher's library: config, URLs, preflight, launch, submit
    "launcher": ("reward_service.launcher",),
    # the `slime` command
    "slime_command": ("reward_service.launcher.slime_command", "reward_service.launcher.__main__"),
    # the dashboard side of Ray Serve, over HTTP: what the launcher uses from a training job
    "rayserve": ("reward_service.rayserve",),
    # what runs on the cluster and imports Ray: the Serve replica (wraps the app), and the
    # direct path's deploy job (creates the actors that hold `reward-service serve`)
    "ray_replica": ("reward_service.rayserve.deployment", "reward_service.rayserve.direct_driver"),
    # the `ray` command and its bench (`ray bench`)
    "ray_command": ("reward_service.rayserve.ray_command", "reward_service.rayserve.throughput"),
    # `reward-service bench`: drives the service as a client, grades the plain side itself
    "bench": ("reward_service.bench",),
    # `reward-service`: the only part that names every command
    "cli": ("reward_service.cli", "reward_service.__main__"),
    # test doubles for users' tests: nothing in the package imports it
    "testing": ("reward_service.testing",),
}

WEB = ("fastapi", "starlette", "uvicorn")

MAY_IMPORT: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # part: ((parts it may import), (third-party packages it may import))
    "floor": ((), ("orjson", "pydantic", "pydantic_settings")),  # scorers.base: ScorerSettings
    "settings": (("floor",), ("pydantic", "pydantic_settings")),
    "sandbox": (("floor",), ()),
    "scorers": (
        ("floor", "sandbox"),
        (
            "math_verify",
            "latex2sympy2_extended",
            "sympy",
            "torch",
            "transformers",
            "pydantic",
            "openai",  # llm_judge: the judge endpoint's client
            *("nltk", "langdetect", "punkt"),  # instructions/: if-verifiable's checkers' own
        ),
    ),
    "sample": (("floor",), ()),
    "grading": (("floor", "settings", "scorers", "sample"), ()),
    "contracts": (("floor", "sample"), ("pydantic",)),  # nemo_gym, responses_api: request models
    "server": (
        ("floor", "settings", "sample", "contracts", "grading"),
        (*WEB, "orjson", "prometheus_client", "pydantic"),
    ),
    "clients": (("floor", "launcher"), ("httpx",)),
    "subcommands": (("floor",), ()),
    "local_server": (("floor",), ("httpx",)),
    "launcher": (("floor", "subcommands"), ("httpx", "ray")),
    "slime_command": (("floor", "subcommands", "launcher", "rayserve"), ()),
    "rayserve": (("floor", "subcommands"), ("httpx", "yaml")),
    "ray_replica": (
        ("floor", "settings", "server", "rayserve"),
        ("ray", "fastapi", "prometheus_client"),
    ),
    "ray_command": (("floor", "subcommands", "rayserve", "bench", "local_server"), ("aiohttp",)),
    "bench": (
        ("floor", "subcommands", "sandbox", "scorers", "contracts", "local_server"),
        ("aiohttp", "httpx", "prometheus_client", "math_verify", "if_verifiable"),
    ),
    "cli": (
        (
            "floor",
            "settings",
            "subcommands",
            "contracts",
            "grading",
            "server",
            "bench",
            "slime_command",
            "ray_command",
        ),
        ("pydantic",),
    ),
    "testing": (("floor", "local_server", "sandbox"), ("httpx",)),
}


def _module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(package: Path) -> dict[str, Path]:
    return {_module_name(p, package): p for p in sorted(package.rglob("*.py"))}


def part_of(module: str, parts: Mapping[str, Iterable[str]] = PARTS) -> str | None:
    """The part whose longest prefix names `module` (the package root names only itself)."""
    best: tuple[int, str] | None = None
    for part, prefixes in parts.items():
        for prefix in prefixes:
            inside = module.startswith(prefix + ".") and prefix != ROOT
            if (module == prefix or inside) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), part)
    return best[1] if best else None


def _package_of(path: Path, name: str) -> str:
    """The package relative imports in module `name` (file `path`) start from."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _source(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a `from ... import` reads from, relative ones resolved."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports(path: Path, name: str, modules: Iterable[str]) -> set[str]:
    """Every module `path` (module `name`) imports, absolute, at any depth.

    `from a import b` is `a.b` when that is a module of the package, else `a`;
    relative imports are resolved against `name`.
    """
    known = set(modules)
    package = _package_of(path, name)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _source(node, package)
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.add(submodule if submodule in known else source)
    return found


def violations(
    name: str,
    imported: Iterable[str],
    parts: Mapping[str, Iterable[str]] = PARTS,
    may_import: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = MAY_IMPORT,
) -> list[str]:
    """What `name` imports that the allow-list does not allow, one line each."""
    part = part_of(name, parts)
    if part is None:
        return [f"{name} is in no part: add it to PARTS"]
    if part not in may_import:
        return [f"{name}: part {part} has no row in MAY_IMPORT"]
    allowed_parts, allowed_packages = may_import[part]
    found = []
    for target in sorted(imported):
        top = target.partition(".")[0]
        if top == ROOT:
            other = part_of(target, parts)
            if other != part and other not in allowed_parts:
                found.append(f"{name} ({part}) imports {target} ({other})")
        elif top not in sys.stdlib_module_names and top not in allowed_packages:
            found.append(f"{name} ({part}) imports {top} (third-party)")
    return found


def cycle(edges: Mapping[str, Iterable[str]]) -> list[str]:
    """A cycle along `edges` (each node's successors), as `[a, b, a]`, or `[]` if there is
    none; nodes are tried in sorted order, so the same graph gives the same cycle."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str]:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return []
        for successor in sorted(edges.get(node, ())):
            found = visit(successor, [*path, node])
            if found:
                return found
        done.add(node)
        return []

    for node in sorted(edges):
        found = visit(node, [])
        if found:
            return found
    return []


def allowed_parts(
    may_import: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]],
) -> dict[str, tuple[str, ...]]:
    """Each part's row of `may_import` as edges: the parts it may import."""
    return {part: allowed for part, (allowed, _) in may_import.items()}


def module_imports(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of the package's modules, as edges.

    An import names the module it runs: `from a import b` runs `a` (and `a.b`
    when that is a module), so a package's `__init__` importing its own modules
    is no circle, while a module that imports one of its importers is.
    """
    return {
        name: {target for target in imports(path, name, modules) if target in modules}
        for name, path in modules.items()
    }


MODULES = _modules(PACKAGE)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_imports_only_what_its_part_may(name: str) -> None:
    """Every import of every module is one its part's row allows."""
    broken = violations(name, imports(MODULES[name], name, MODULES))
    assert not broken, "\n".join(broken)


def test_the_allow_list_has_no_cycle() -> None:
    """Parts import downward only: no part may import one that may import it back."""
    assert cycle(allowed_parts(MAY_IMPORT)) == []


def test_no_module_imports_itself_back() -> None:
    """No module imports one that imports it back, at any distance: a part may import its own
    modules, but never in a circle (the bench's two commands once did, through a function)."""
    assert cycle(module_imports(MODULES)) == []


def test_the_tables_name_real_parts_and_modules() -> None:
    """Each row is a part, each allowed part exists, each prefix names a module that exists."""
    assert set(MAY_IMPORT) == set(PARTS)
    assert {p for allowed, _ in MAY_IMPORT.values() for p in allowed} <= set(PARTS)
    prefixes = [prefix for prefixes in PARTS.values() for prefix in prefixes]
    assert len(prefixes) == len(set(prefixes))
    assert [prefix for prefix in prefixes if prefix not in MODULES] == []


def test_production_code_never_imports_testing() -> None:
    """`reward_service.testing` is for users' tests: no part of the package may import it."""
    assert [part for part, (allowed, _) in MAY_IMPORT.items() if "testing" in allowed] == []


def _tree(root: Path, files: Mapping[str, str]) -> Path:
    package = root / ROOT
    for relative, text in files.items():
        path = package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


def _check(package: Path) -> list[str]:
    modules = _modules(package)
    return [
        line
        for name, path in modules.items()
        for line in violations(name, imports(path, name, modules))
    ]


def test_the_checker_fails_on_planted_upward_imports(tmp_path: Path) -> None:
    """A planted package: a scorer importing the HTTP layer inside a function, relatively and
    absolutely, production code importing `testing`, the sandbox importing httpx, a module in
    no part, and rayserve importing the launcher back. Each is reported; allowed ones are not.
    """
    package = _tree(
        tmp_path,
        {
            "__init__.py": "__version__ = '0'\n",
            "errors.py": "",
            "testing.py": "",
            "scorers/__init__.py": "",
            "scorers/base.py": "from reward_service import __version__\n",
            "scorers/upward.py": (
                "import json\n"
                "from reward_service.scorers import base\n"
                "def f():\n"
                "    from reward_service.server.app import create_app\n"
                "def g():\n"
                "    from .. import server\n"
            ),
            "server/__init__.py": "",
            "server/app.py": "from reward_service.scorers.base import __version__\n",
            "sandbox/__init__.py": "def run():\n    import httpx\n",
            "bench/__init__.py": "",
            "bench/bench_command.py": "from reward_service.testing import live_server\n",
            "launcher/__init__.py": "from reward_service.rayserve import spec\n",
            "rayserve/__init__.py": "",
            "rayserve/spec.py": "from reward_service.launcher import slime_command\n",
            "launcher/slime_command.py": "from reward_service.rayserve import spec\n",
            "newpart.py": "",
        },
    )
    assert sorted(_check(package)) == [
        "reward_service.bench.bench_command (bench) imports reward_service.testing (testing)",
        "reward_service.launcher (launcher) imports reward_service.rayserve.spec (rayserve)",
        "reward_service.newpart is in no part: add it to PARTS",
        "reward_service.rayserve.spec (rayserve) imports "
        "reward_service.launcher.slime_command (slime_command)",
        "reward_service.sandbox (sandbox) imports httpx (third-party)",
        "reward_service.scorers.upward (scorers) imports reward_service.server (server)",
        "reward_service.scorers.upward (scorers) imports reward_service.server.app (server)",
    ]


def test_the_checker_resolves_from_imports_and_relative_ones(tmp_path: Path) -> None:
    """`from a import b` is the module `a.b` when it exists; `..b` climbs from the package."""
    package = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "scorers/__init__.py": "from . import registry\nfrom .base import Scorer\n",
            "scorers/base.py": "",
            "scorers/registry.py": "from .. import errors\nfrom ..scorers.base import Scorer\n",
            "errors.py": "",
        },
    )
    modules = _modules(package)
    assert imports(package / "scorers/__init__.py", "reward_service.scorers", modules) == {
        "reward_service.scorers.registry",
        "reward_service.scorers.base",
    }
    assert imports(package / "scorers/registry.py", "reward_service.scorers.registry", modules) == {
        "reward_service.errors",
        "reward_service.scorers.base",
    }


def test_the_cycle_check_finds_a_planted_cycle() -> None:
    """Letting rayserve import the `slime` command back is a cycle through the launcher."""
    planted = {**MAY_IMPORT, "rayserve": (("floor", "slime_command"), ())}
    assert cycle(allowed_parts(planted)) == ["rayserve", "slime_command", "rayserve"]


def test_the_module_cycle_check_finds_a_planted_circle_inside_a_part(tmp_path: Path) -> None:
    """Two bench commands importing each other, one lazily inside a function, are a circle
    though the part may import itself; once one no longer imports the other, there is none,
    though importing `bench.measure` runs `bench/__init__`, which imports a command."""
    package = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "bench/__init__.py": "from . import bench_command\n",
            "bench/bench_command.py": "from reward_service.bench import judge_bench, measure\n",
            "bench/judge_bench.py": (
                "from reward_service.bench.measure import Run\n"
                "def run():\n"
                "    from reward_service.bench import bench_command\n"
            ),
            "bench/measure.py": "import asyncio\n",
        },
    )
    edges = module_imports(_modules(package))
    assert cycle(edges) == [
        "reward_service.bench.bench_command",
        "reward_service.bench.judge_bench",
        "reward_service.bench.bench_command",
    ]
    (package / "bench/judge_bench.py").write_text("from reward_service.bench.measure import Run\n")
    assert cycle(module_imports(_modules(package))) == []


CHECKOUT = PACKAGE.parent

ON_SYS_PATH = (CHECKOUT, CHECKOUT / "loadtest")
"""Directories put on `sys.path` without anyone asking: the checkout (the base pytest inserts
for the `tests` package, and `python -m`'s working directory) and `loadtest/`, whose scripts
run by path (`python loadtest/memory.py`; locust inserts its locustfile's directory)."""


def library_names() -> frozenset[str]:
    """The top-level names modules not ours are imported by: the standard library's, every
    installed distribution's, and the third-party packages `MAY_IMPORT` names (installed
    here or not: torch, ray)."""
    installed = {
        name
        for name, distributions in packages_distributions().items()
        if canonicalize_name(ROOT) not in map(canonicalize_name, distributions)
    }
    named = {package for _, packages in MAY_IMPORT.values() for package in packages}
    return frozenset(sys.stdlib_module_names) | installed | named


def bound_to_library_names(
    path: Path, name: str, modules: Iterable[str], libraries: Iterable[str]
) -> list[str]:
    """The imports in `path` (module `name`) that bind one of the package's `modules` to a
    name in `libraries`, one line each: `from reward_service.scorers import math`."""
    known, names = set(modules), set(libraries)
    package = _package_of(path, name)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            bound = [(alias.asname, alias.name) for alias in node.names if alias.asname]
        elif isinstance(node, ast.ImportFrom):
            source = _source(node, package)
            bound = [(alias.asname or alias.name, f"{source}.{alias.name}") for alias in node.names]
        else:
            continue
        found += [
            f"{name}:{node.lineno} binds {module} to {local!r}, a library's name"
            for local, module in bound
            if module in known and local in names
        ]
    return found


def shadowing_entries(directory: Path, libraries: Iterable[str]) -> list[str]:
    """What in `directory`, were it on `sys.path`, would be imported in place of a library:
    a module or a regular package (a namespace package loses to the library) of its name."""
    names = set(libraries)
    entries = [
        entry
        for entry in sorted(directory.iterdir())
        if entry.suffix == ".py" or (entry / "__init__.py").is_file()
    ]
    return [
        f"{entry} shadows the library {entry.stem!r}"
        for entry in entries
        if entry.stem in names and entry.stem != ROOT
    ]


def _checkout_modules() -> dict[str, Path]:
    """Every Python file of the package, the tests and the load tests, by module name."""
    found = dict(MODULES)
    for directory in ("tests", "loadtest"):
        found.update(_modules(CHECKOUT / directory))
    return found


def test_no_import_binds_a_package_module_to_a_library_name() -> None:
    """A module may be named like a library (`scorers/slime/math.py` is SLIME's `math` port):
    imports are absolute, so `import math` still finds the standard library everywhere.
    Confusion comes where a name is bound: after `from reward_service.scorers.slime import math`,
    `math.` in that module is ours where a reader (or a later `import math`) means the
    library's, so such an import says `as slime_math`. Names Python finds first on
    `sys.path` are the other trap: a `json.py` in the checkout or beside a load-test
    script would replace the real `json` for the whole process, so none may exist.
    """
    libraries = library_names()
    bound = [
        line
        for name, path in _checkout_modules().items()
        for line in bound_to_library_names(path, name, MODULES, libraries)
    ]
    shadowing = [line for d in ON_SYS_PATH for line in shadowing_entries(d, libraries)]
    assert bound + shadowing == []


def test_the_name_check_finds_planted_library_names(tmp_path: Path) -> None:
    """Binding `scorers/math.py` to `math`, absolutely, relatively or with `as json`, is
    reported; binding it to another name or importing its contents is not; a `json.py` or a
    `yaml/` package on `sys.path` shadows, a namespace directory or a script of its own name
    does not."""
    package = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "scorers/__init__.py": "",
            "scorers/math.py": "",
            "scorers/registry.py": (
                "import math\n"
                "from reward_service.scorers import math\n"
                "from . import math as slime_math\n"
                "from .math import MathScorer\n"
                "import reward_service.scorers.math\n"
                "def load():\n"
                "    from .. import scorers\n"
                "    from . import math\n"
                "    import reward_service.scorers.math as json\n"
            ),
        },
    )
    modules = _modules(package)
    registry = "reward_service.scorers.registry"
    found = bound_to_library_names(
        package / "scorers/registry.py", registry, modules, {"math", "json"}
    )
    assert found == [
        f"{registry}:2 binds reward_service.scorers.math to 'math', a library's name",
        f"{registry}:8 binds reward_service.scorers.math to 'math', a library's name",
        f"{registry}:9 binds reward_service.scorers.math to 'json', a library's name",
    ]
    scripts = tmp_path / "loadtest"
    for relative in ("json.py", "memory.py", "yaml/__init__.py", "docs/page.md"):
        (scripts / relative).parent.mkdir(parents=True, exist_ok=True)
        (scripts / relative).write_text("")
    assert shadowing_entries(scripts, {"json", "yaml", "docs", ROOT}) == [
        f"{scripts / 'json.py'} shadows the library 'json'",
        f"{scripts / 'yaml'} shadows the library 'yaml'",
    ]
    assert shadowing_entries(tmp_path, {ROOT}) == []


GRADERS = ("math_verify", "latex2sympy2_extended", "sympy", "torch", "transformers")


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
