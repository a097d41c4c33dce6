"""Platforms that take layers away from the sandbox, to test the layers left on their own.

The runner puts a profile on itself before it starts the sandbox, so the
zygote inherits it: a seccomp filter makes namespace creation fail with
EPERM (as a pod's `RuntimeDefault` profile does) and, for an older kernel,
landlock's calls fail with ENOSYS; without `root` the service runs as the
manifests run it, an unprivileged uid that its runs share. The same hostile programs
must still achieve nothing. x86_64 only: elsewhere only `full` runs.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import shutil
import struct
import subprocess
import sys

PROFILES: dict[str, tuple[str, ...]] = {
    "full": (),
    "root-pod": ("namespaces",),
    "root-nocaps-pod": ("namespaces", "capabilities"),
    "nonroot-pod": ("namespaces", "root"),
    "nonroot-old-kernel": ("namespaces", "root", "landlock"),
}
"""Profile name -> what the platform takes away (`nonroot-pod` is the Kubernetes manifests')."""

UNCONFINED_READS = "nonroot-old-kernel"
"""The profile where nothing confines a run's reads: no landlock, no mount namespace, and
runs share the service's uid (docs/sandbox.md, "When the platform takes layers away")."""
READ_GAPS: dict[str, str] = {
    "proc_every_environ": "HOSTILE_ENV_CANARY",
    "serviceaccount_token": "HOSTILE_TOKEN_CANARY",
    "cpp_read_secrets": "HOSTILE_TOKEN_CANARY",
}
"""Programs that read a secret where reads are unconfined, and the canary each can read:
a documented gap (require `landlock` there), pinned so that it can only shrink. The API
token is never among them: no child process holds it."""

_X86_64 = 0xC000003E
_NR = {"clone": 56, "unshare": 272, "setns": 308, "clone3": 435}
_LANDLOCK = (444, 445, 446)
_CLONE_NEW = 0x00000080 | 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000
_CLONE_NEW |= 0x10000000 | 0x20000000 | 0x40000000
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_LD, _JEQ, _AND, _RET = 0x20, 0x15, 0x54, 0x06
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def unavailable(profile: str) -> str | None:
    """Why `profile` cannot be set up here, or None."""
    take = PROFILES[profile]
    if take and platform.machine() != "x86_64":
        return f"profile {profile} needs the x86_64 seccomp filter"
    if "capabilities" in take and shutil.which("setpriv") is None:
        return f"profile {profile} needs setpriv (util-linux)"
    if "root" in take:
        probe = [shutil.which("unshare") or "unshare", "--user", "--map-user=10001", "true"]
        if subprocess.run(probe, capture_output=True).returncode != 0:
            return f"profile {profile} needs a user namespace (unshare --user)"
    return None


def _filter(take: set[str]) -> list[tuple[int, int, int, int]]:
    """(code, jt, jf, k) classic-BPF instructions: deny `take`'s calls, allow the rest."""
    eperm, enosys = _ERRNO | errno.EPERM, _ERRNO | errno.ENOSYS
    denied = [(_NR["unshare"], eperm), (_NR["setns"], eperm), (_NR["clone3"], enosys)]
    if "landlock" in take:
        denied += [(nr, enosys) for nr in _LANDLOCK]
    body: list[tuple[int, int, int, int]] = [(_LD, 0, 0, 4)]
    tail = len(denied) * 2 + 6  # from after the arch check to the final ALLOW
    body.append((_JEQ, 0, tail, _X86_64))
    body.append((_LD, 0, 0, 0))
    for nr, action in denied:
        body.append((_JEQ, 0, 1, nr))
        body.append((_RET, 0, 0, action))
    body.append((_JEQ, 0, 4, _NR["clone"]))
    body.append((_LD, 0, 0, 16))
    body.append((_AND, 0, 0, _CLONE_NEW))
    body.append((_JEQ, 1, 0, 0))
    body.append((_RET, 0, 0, eperm))
    body.append((_RET, 0, 0, _ALLOW))
    assert len(body) == tail + 3
    return body


def _prctl(libc: ctypes.CDLL, option: int, arg: object, what: str) -> None:
    if libc.prctl(option, arg, None, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), what)


def command(profile: str, inner: list[str]) -> list[str]:
    """`inner` on the profile's platform: its filter put on first; without `capabilities` as root
    that holds none (securebits `noroot`: no exec regains them); without `root` as uid 10001 in
    a user namespace (no capabilities, as in the manifests; outside, the uid maps to this user,
    so the interpreter stays readable)."""
    line = [sys.executable, "-m", "tests.sandbox.harness.platforms", profile, "--", *inner]
    take = PROFILES[profile]
    if "capabilities" in take:
        setpriv = [shutil.which("setpriv") or "setpriv", "--inh-caps=-all", "--ambient-caps=-all"]
        setpriv += ["--bounding-set=-all", "--securebits=+noroot,+noroot_locked", "--"]
        line = [*setpriv, *line]
    if "root" in take:
        line = as_nonroot_user(line)
    return line


def as_nonroot_user(inner: list[str]) -> list[str]:
    """`inner` as uid 10001 in a user namespace of its own (no capabilities outside it)."""
    unshare = shutil.which("unshare") or "unshare"
    return [unshare, "--user", "--map-user=10001", "--map-group=10001", "--", *inner]


def platform_command(platform: str, inner: list[str]) -> list[str]:
    """`inner` on a simulated profile, or for `userns` (the image under podman: a non-root
    zygote with namespaces of its own) as uid 10001 in a user namespace, nothing taken."""
    return as_nonroot_user(inner) if platform == "userns" else command(platform, inner)


def install(profile: str) -> None:
    """Take away what `profile` names from this process and everything it starts."""
    take = set(PROFILES[profile]) - {"root", "capabilities"}
    if not take:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]
    libc.prctl.argtypes += [ctypes.c_ulong, ctypes.c_ulong]
    code = b"".join(struct.pack("HBBI", *insn) for insn in _filter(take))
    buffer = ctypes.create_string_buffer(code)
    program = _Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    _prctl(libc, _PR_SET_NO_NEW_PRIVS, 1, "PR_SET_NO_NEW_PRIVS")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP")


if __name__ == "__main__":
    install(sys.argv[1])
    os.execvp(sys.argv[3], sys.argv[3:])
