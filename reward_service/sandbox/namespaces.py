"""The namespaces layer: what the zygote enters at start-up, where the platform allows.

Stdlib only (the zygote imports it). Each namespace is tried on its own and
the ones that worked are reported:

- `userns`: only when the zygote is not root, as the others need it;
- `netns`: new network, IPC and UTS namespaces (a loopback that is down:
  nothing leaves);
- `mountns`: a new root built on a tmpfs holding only read-only binds of the
  system and Python directories, a few `/etc` files and device nodes, and a
  `/tmp` tmpfs of `scratch_mb` MiB (and `ENTRY_QUOTA` inodes) for the runs'
  scratch directories; no `/sys`, home directories or service files, and a
  `/proc` that shows each run only itself (`mount_proc`, for `/dev/stdin`,
  `/dev/stdout`, `/dev/stderr` and `/dev/fd`), or none;
- `pidns`: the zygote becomes pid 1 of a new PID namespace, so after every
  run it kills whatever is left in it with `kill(-1)`, and when it dies the
  kernel kills everything inside.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence

from reward_service.sandbox import linux
from reward_service.sandbox.supervise import ENTRY_QUOTA

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
STREAMS = {
    "/dev/stdin": "/proc/self/fd/0",
    "/dev/stdout": "/proc/self/fd/1",
    "/dev/stderr": "/proc/self/fd/2",
    "/dev/fd": "/proc/self/fd",
}
"""The links of a usual /dev to a process's own descriptors (through `/proc`)."""
_ROOT_CANDIDATES = ("/mnt", "/srv", "/media", "/opt", "/tmp")
_READ_ONLY = linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV
_MS_NOEXEC = 8


def enter_user_namespace() -> bool:
    """A non-root zygote becomes root of a new user namespace (one uid, one gid)."""
    uid, gid = os.geteuid(), os.getegid()
    try:
        linux.unshare(linux.CLONE_NEWUSER)
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"0 {uid} 1"),
            ("gid_map", f"0 {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    except OSError:
        return False
    return True


def enter_network_namespace() -> bool:
    try:
        linux.unshare(linux.CLONE_NEWNET | linux.CLONE_NEWIPC | linux.CLONE_NEWUTS)
    except OSError:
        return False
    return True


def enter_mount_namespace(read_paths: Sequence[str], scratch_mb: int) -> bool:
    """Pivot into a new root of `read_paths` (read-only) and a `/tmp` tmpfs."""
    try:
        linux.unshare(linux.CLONE_NEWNS)
        linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
        _pivot_into(_build_root(read_paths, scratch_mb))
    except OSError:
        return False
    return True


def _build_root(read_paths: Sequence[str], scratch_mb: int) -> str:
    root = next(
        (
            c
            for c in _ROOT_CANDIDATES
            if os.path.isdir(c) and not any(p == c or p.startswith(c + "/") for p in read_paths)
        ),
        None,
    )
    if root is None:
        raise OSError(2, "no directory to build the new root on")
    linux.mount("tmpfs", root, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "size=1m,mode=0755")
    os.makedirs(root + "/dev", mode=0o755)
    linux.mount("tmpfs", root + "/dev", "tmpfs", linux.MS_NOSUID, "size=64k,mode=0755")
    for device in DEVICES:
        if os.path.exists(device):
            open(root + device, "w").close()
            linux.mount(device, root + device, None, linux.MS_BIND)
    for link, target in STREAMS.items():
        os.symlink(target, root + link)
    linux.mount(None, root + "/dev", None, linux.MS_REMOUNT | linux.MS_RDONLY | linux.MS_NOSUID)
    os.makedirs(root + "/proc", mode=0o555)
    os.makedirs(root + "/tmp", mode=0o755)
    linux.mount(
        "tmpfs",
        root + "/tmp",
        "tmpfs",
        linux.MS_NOSUID | linux.MS_NODEV,
        f"size={scratch_mb}m,nr_inodes={ENTRY_QUOTA + 64},mode=0755",
    )
    bound: list[str] = []
    for path in sorted(read_paths, key=len):
        if path in DEVICES or any(path == b or path.startswith(b + "/") for b in bound):
            continue
        if _mirror(path, root + path):
            bound.append(path)
    return root


def _mirror(path: str, target: str) -> bool:
    """Recreate `path` at `target`: a symlink as a symlink, else a read-only bind."""
    if os.path.islink(path) and path in (*SYSTEM_DIRS, *ETC_FILES):
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        os.symlink(os.readlink(path), target)
        return True
    if not os.path.exists(path):
        return False
    if os.path.isdir(path):
        os.makedirs(target, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        open(target, "w").close()
    linux.mount(path, target, None, linux.MS_BIND | linux.MS_REC)
    linux.mount(None, target, None, linux.MS_REMOUNT | linux.MS_BIND | _READ_ONLY)
    return True


def _pivot_into(root: str) -> None:
    old = root + "/.old"
    os.mkdir(old)
    linux.syscall("pivot_root", root.encode(), old.encode())
    os.chdir("/")
    linux.umount("/.old", linux.MNT_DETACH)
    os.rmdir("/.old")
    linux.mount(None, "/", None, linux.MS_REMOUNT | linux.MS_BIND | _READ_ONLY)


def mount_proc() -> bool:
    """In the new root, after the PID namespace (it shows the mounter's): a read-only `/proc`
    of processes only (`subset=pid`: no /proc/sys, no kernel files) where each process
    sees only the ones it may ptrace (`hidepid=invisible`): a run, itself (the zygote is
    not dumpable). False where the kernel refuses it (before 5.8; in a user namespace,
    once the host's /proc is out of reach): the /dev links then lead nowhere."""
    flags = linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV | _MS_NOEXEC
    try:
        linux.mount("proc", "/proc", "proc", flags, "subset=pid,hidepid=invisible")
    except OSError:
        return False
    return True


def enter_pid_namespace() -> bool:
    """Become pid 1 of a new PID namespace; the caller's old self stays behind as a waiter.

    Returns in the new pid 1 only. The waiter holds no descriptor of use,
    forwards nothing, and exits with pid 1's status; when the waiter dies
    (its parent, the worker, died), pid 1 gets SIGKILL (set by the caller).
    """
    try:
        linux.unshare(linux.CLONE_NEWPID)
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:
        return True
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, 65536)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _, status = os.waitpid(pid, 0)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
