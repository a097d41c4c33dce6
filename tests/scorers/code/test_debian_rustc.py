"""Debian bookworm's rustc 1.63 (the image's, `LANGS=rust`) builds and runs on every platform.

That rustc looks for a sysroot through `/proc/self/exe` whatever `--sysroot`
says, unless its argv[0] is a link and `./lib/rustlib` exists; a zygote in a
user namespace of its own has no `/proc` (docs/code.md). These machines'
rustc is rustup's, which needs none, so `.ci/run` unpacks Debian's packages
into `DEBIAN_RUSTC` and each test lays them over `/usr` in a mount namespace
of its own (root only), then grades a Rust answer there on one platform.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sandbox.harness import platforms

DEBIAN_RUSTC = Path.home() / ".cache" / "reward-service" / "debian-rustc-1.63"
"""Where `.ci/run` unpacks Debian's rustc, libstd-rust-1.63 and libstd-rust-dev."""
NO_OVERLAY = 97
"""The exit status of the wrapper when the overlay cannot be mounted here."""
GRADING = """\
import json
from reward_service.sandbox.toolchains import discover
from reward_service.scorers.base import GradingLimits
from reward_service.scorers.code.settings import CodeSettings
from reward_service.scorers.code.scorer import CodeScorer
from tests.scorers.code.test_languages import BROKEN, PROGRAMS, SUMS, _fenced
settings = CodeSettings(toolchain_path="/usr/bin:/bin", languages={"rust"}, pch_dir="")
scorer = CodeScorer(GradingLimits(deadlines={"code": 40.0}), settings)
graded = {"version": discover(settings.toolchain_path, ["rust"], versions=True)["rust"].version}
for name, source in (("correct", PROGRAMS["rust"]), ("broken", BROKEN["rust"])):
    score = scorer.score("p", _fenced("rust", source), SUMS, {})
    graded[name] = [score.reward, score.status.value, score.details.get("reason")]
scorer.close()
print(json.dumps(graded))
"""


def _unavailable() -> str | None:
    if os.geteuid() != 0:
        return "laying Debian's rustc over /usr takes a mount namespace: root only"
    if not (DEBIAN_RUSTC / "usr" / "bin" / "rustc").is_file():
        return f"no Debian rustc unpacked in {DEBIAN_RUSTC} (.ci/run step 0 does it)"
    if shutil.which("unshare") is None:
        return "no unshare (util-linux)"
    return None


UNAVAILABLE = _unavailable()
pytestmark = pytest.mark.needs_tool(UNAVAILABLE or "")


@pytest.mark.parametrize("platform", [*platforms.PROFILES, "userns"])
def test_debian_rustc_grades_on_every_platform(platform: str) -> None:
    """A correct Rust answer is 1.0 and one that does not compile `compile_error` under
    rustc 1.63 on each simulated platform and where the zygote has a user namespace of its
    own (`userns`: no /proc; rustc panicked there, an `error`, before its link)."""
    if reason := platforms.unavailable(platform if platform != "userns" else "nonroot-pod"):
        pytest.skip(reason)
    inner = platforms.platform_command(platform, [sys.executable, "-c", GRADING])
    overlay = f"lowerdir={DEBIAN_RUSTC}/usr:/usr"
    wrapper = f'mount -t overlay overlay -o {overlay} /usr || exit {NO_OVERLAY}; exec "$@"'
    command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", wrapper, "-"]
    repo = Path(__file__).resolve().parents[3]
    done = subprocess.run([*command, *inner], cwd=repo, capture_output=True, text=True, timeout=300)
    if done.returncode == NO_OVERLAY:
        pytest.skip(f"no overlay mount here: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stderr[-3000:]
    graded = json.loads(done.stdout.splitlines()[-1])
    assert graded["version"].startswith("rustc 1.63"), graded
    assert graded["correct"] == [1.0, "ok", None], graded
    assert graded["broken"][:2] == [0.0, "compile_error"], graded
