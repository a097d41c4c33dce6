"""The sandbox components, `separate-uid` and `gvisor`, on every overlay.

Each combination renders, validates against the API schemas, keeps the production
requirement (seccomp, and landlock or a uid of the runs' own) and passes start-up
validation; `separate-uid` is checked against the sandbox itself: a root process holding
only the component's capabilities, on a platform without namespaces or landlock (an old
kernel in a pod), gets a zygote that runs programs under their own uid.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reward_service.scorers.code.settings import CodeSettings
from reward_service.settings import Settings

from .rendering import (
    KUBERNETES,
    KUBERNETES_VERSIONS,
    OVERLAYS,
    ROOT,
    Rendered,
    render_with_components,
    schema_errors,
)

COMBINATIONS = [("separate-uid",), ("gvisor",), ("gvisor", "separate-uid")]
RUNTIME_CLASS = KUBERNETES / "components" / "gvisor" / "runtimeclass.yaml"
SEPARATE_UID_CAPABILITIES = ["CHOWN", "SETGID", "SETUID"]
BASELINE_CAPABILITIES = {
    *("AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD"),
    *("NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"),
}
"""What the `baseline` Pod Security Standard lets a container add."""


@pytest.fixture(
    scope="module",
    params=[(o, c) for o in OVERLAYS for c in COMBINATIONS],
    ids=lambda p: f"{p[0]}+{'+'.join(p[1])}",
)
def combined(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    """Each overlay with each combination of the sandbox components."""
    overlay, components = request.param
    return render_with_components(tmp_path_factory.mktemp("components"), overlay, *components)


def _components(rendered: Rendered) -> set[str]:
    return set(rendered.overlay.split("+")[1:])


def _settings(rendered: Rendered, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings as the container starts with them, the token Secret in place."""
    for name in [n for n in os.environ if n.startswith("REWARD_")]:
        monkeypatch.delenv(name)
    for name, value in rendered.config.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("REWARD_API_TOKEN", "s3cret")
    return Settings()


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_combinations_pass_strict_schema_validation(combined: Rendered, version: str) -> None:
    """Every object of every overlay with the components validates strictly."""
    errors = schema_errors(combined.objects, version)
    assert errors == [], f"{combined.overlay} on {version}:\n" + "\n".join(errors)


def test_combinations_keep_the_production_requirement(
    combined: Rendered, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No component weakens start-up's requirement; separate-uid requires the uid it pays for."""
    required = (
        _settings(combined, monkeypatch).scorer_settings("code", CodeSettings).required_layers
    )
    if "separate-uid" in _components(combined):
        assert required == {"seccomp", "uid"}
    else:
        assert required == {"seccomp", "landlock|uid"}


def test_separate_uid_runs_as_root_with_only_the_zygotes_capabilities(combined: Rendered) -> None:
    """Root holding CHOWN, SETGID and SETUID, nothing else, no escalation; the
    namespace enforces `baseline`, which allows them. Without the component: restricted."""
    pod = combined.pod_spec["securityContext"]
    container = combined.container["securityContext"]
    enforce = combined.one("Namespace")["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
    assert pod["seccompProfile"] == container["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["allowPrivilegeEscalation"] is False
    assert container["readOnlyRootFilesystem"] is True
    if "separate-uid" not in _components(combined):
        assert (pod["runAsNonRoot"], container["runAsNonRoot"]) == (True, True)
        assert container["capabilities"] == {"drop": ["ALL"]}
        assert enforce == "restricted"
        return
    assert (pod["runAsUser"], container["runAsUser"]) == (0, 0)
    assert (pod["runAsNonRoot"], container["runAsNonRoot"]) == (False, False)
    assert container["capabilities"] == {"drop": ["ALL"], "add": SEPARATE_UID_CAPABILITIES}
    assert set(SEPARATE_UID_CAPABILITIES) <= BASELINE_CAPABILITIES
    assert enforce == "baseline"


def test_gvisor_sets_the_runtime_class_it_documents(combined: Rendered) -> None:
    """With gvisor the pod names the RuntimeClass of runtimeclass.yaml; without it, none."""
    runtime_class = combined.pod_spec.get("runtimeClassName")
    if "gvisor" in _components(combined):
        assert runtime_class == yaml.safe_load(RUNTIME_CLASS.read_text())["metadata"]["name"]
    else:
        assert runtime_class is None


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_the_example_runtime_class_validates(version: str) -> None:
    """The RuntimeClass offered to self-managed clusters is a valid object (handler runsc)."""
    runtime_class = yaml.safe_load(RUNTIME_CLASS.read_text())
    assert runtime_class["handler"] == "runsc"
    assert schema_errors([runtime_class], version) == []


def _python_nobody_can_run() -> str | None:
    """An interpreter (>= 3.11) whose own directories uid 65534 can list, as in the image."""
    for candidate in (sys.executable, "/usr/bin/python3", shutil.which("python3")):
        if candidate is None:
            continue
        own = [candidate, "-I", "-c", "import json, os, sys; assert sys.version_info >= (3, 11)"]
        own[-1] += "; print(json.dumps([p for p in sys.path if os.path.isdir(p)]))"
        found = subprocess.run(own, capture_output=True, text=True, timeout=30)
        if found.returncode != 0:
            continue
        lists = "import json, os, sys; [os.listdir(p) for p in json.loads(sys.argv[1])]"
        probe = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", candidate]
        probe += ["-I", "-c", lists, found.stdout.strip()]
        if subprocess.run(probe, capture_output=True, timeout=30).returncode == 0:
            return candidate
    return None


def test_separate_uid_capabilities_give_runs_a_uid_of_their_own(tmp_path: Path) -> None:
    """Root with only the component's capabilities, without namespaces or landlock: the
    sandbox starts, meets the component's requirement with the `uid` layer, and runs a
    program that lists its scratch directory (its own uid's) and reads its input."""
    from tests.sandbox.harness import platforms

    if os.geteuid() != 0:
        pytest.skip("needs root: the component's container runs as root")
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to hold only the component's capabilities")
    if platform.machine() != "x86_64" or platforms.unavailable("root-pod"):
        pytest.skip("the platform filter (no namespaces, no landlock) is x86_64 only")
    python = _python_nobody_can_run()
    if python is None:
        pytest.skip("no Python here whose files uid 65534 can read (the image's can)")
    rendered = render_with_components(tmp_path, "generic", "separate-uid")
    capabilities = rendered.container["securityContext"]["capabilities"]["add"]
    required = json.loads(rendered.config["REWARD_CODE__REQUIRED_LAYERS"])
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from reward_service.sandbox.zygote_client import ZygoteSandbox\n"
        "from reward_service.sandbox import Limits, Program\n"
        f"with ZygoteSandbox(required_layers={required!r}) as box:\n"
        "    limits = Limits(5, 256, 1024)\n"
        "    source = 'import os; print(sorted(os.listdir()), input()[::-1])'\n"
        "    [run] = box.execute(Program('python', source), [b'abc'], limits, 20).outcomes()\n"
        "    print(' '.join(box.layers), run.kind.value, run.stdout.decode().strip())\n"
    )
    bounding = ",".join(["-all", *(f"+{c.lower()}" for c in capabilities)])
    command = ["setpriv", f"--bounding-set={bounding}", "--inh-caps=-all", "--ambient-caps=-all"]
    command += ["--no-new-privs", "--", sys.executable, "-m", "tests.sandbox.harness.platforms"]
    command += ["nonroot-old-kernel", "--", python, "-I", "-c", code]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    *layers, kind, listed, printed = result.stdout.split()
    assert {"uid", "seccomp"} <= set(layers) and "landlock" not in layers, layers
    assert (kind, listed, printed) == ("ok", "['solution.py']", "cba"), result.stdout
