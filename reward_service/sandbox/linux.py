"""The few Linux calls the sandbox needs that Python's `os` lacks, through ctypes.

Stdlib only: the zygote imports this module. Syscall numbers are tabled for
the two architectures the seccomp filter knows (x86_64, aarch64); anywhere
else `ARCH` is None and the layers that need a number report inactive.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping, Sequence

_libc = ctypes.CDLL(None, use_errno=True)

ARCH: str | None = {"x86_64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(
    os.uname().machine
)

# name -> (x86_64, aarch64); None: the architecture has no such call
SYSCALLS: dict[str, tuple[int | None, int | None]] = {
    "socket": (41, 198),
    "socketpair": (53, 199),
    "connect": (42, 203),
    "bind": (49, 200),
    "listen": (50, 201),
    "accept": (43, 202),
    "accept4": (288, 242),
    "sendto": (44, 206),
    "kill": (62, 129),
    "tkill": (200, 130),
    "tgkill": (234, 131),
    "rt_sigqueueinfo": (129, 138),
    "rt_tgsigqueueinfo": (297, 240),
    "pidfd_send_signal": (424, 424),
    "pidfd_open": (434, 434),
    "pidfd_getfd": (438, 438),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "process_madvise": (440, 440),
    "kcmp": (312, 272),
    "fork": (57, None),
    "vfork": (58, None),
    "clone": (56, 220),
    "clone3": (435, 435),
    "execve": (59, 221),
    "execveat": (322, 281),
    "seccomp": (317, 277),
    "setsid": (112, 157),
    "setpgid": (109, 154),
    "unshare": (272, 97),
    "setns": (308, 268),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "move_mount": (429, 429),
    "open_tree": (428, 428),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "open_tree_attr": (467, 467),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "userfaultfd": (323, 282),
    "personality": (135, 92),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "reboot": (169, 142),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "acct": (163, 89),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "settimeofday": (164, 170),
    "clock_settime": (227, 112),
    "clock_adjtime": (305, 266),
    "adjtimex": (159, 171),
    "quotactl": (179, 60),
    "syslog": (103, 116),
    "vhangup": (153, 58),
    "fanotify_init": (300, 262),
    "name_to_handle_at": (303, 264),
    "open_by_handle_at": (304, 265),
    "setuid": (105, 146),
    "setgid": (106, 144),
    "setreuid": (113, 145),
    "setregid": (114, 143),
    "setresuid": (117, 147),
    "setresgid": (119, 149),
    "setfsuid": (122, 151),
    "setfsgid": (123, 152),
    "setgroups": (116, 159),
    "capset": (126, 91),
    "prlimit64": (302, 261),
    "iopl": (172, None),
    "ioperm": (173, None),
    "lookup_dcookie": (212, 18),
    "setpriority": (141, 140),
    "sched_setaffinity": (203, 122),
    "sched_setscheduler": (144, 119),
    "sched_setparam": (142, 118),
    "sched_setattr": (314, 274),
    "ioprio_set": (251, 30),
    "migrate_pages": (256, 238),
    "move_pages": (279, 239),
    "shmget": (29, 194),
    "msgget": (68, 186),
    "semget": (64, 190),
    "mq_open": (240, 180),
    "ioctl": (16, 29),
    "fcntl": (72, 25),
    "memfd_create": (319, 279),
    "memfd_secret": (447, 447),
    "sethostname": (170, 161),
    "setdomainname": (171, 162),
    "open": (2, None),
    "openat": (257, 56),
    "openat2": (437, 437),
    "creat": (85, None),
    "mkdir": (83, None),
    "mkdirat": (258, 34),
    "rmdir": (84, None),
    "unlink": (87, None),
    "unlinkat": (263, 35),
    "rename": (82, None),
    "renameat": (264, 38),
    "renameat2": (316, 276),
    "link": (86, None),
    "linkat": (265, 37),
    "symlink": (88, None),
    "symlinkat": (266, 36),
    "truncate": (76, 45),
    "chmod": (90, None),
    "fchmod": (91, 52),
    "fchmodat": (268, 53),
    "fchmodat2": (452, 452),
    "chown": (92, None),
    "lchown": (94, None),
    "fchown": (93, 55),
    "fchownat": (260, 54),
    "mknod": (133, None),
    "mknodat": (259, 33),
    "setxattr": (188, 5),
    "lsetxattr": (189, 6),
    "fsetxattr": (190, 7),
    "removexattr": (197, 14),
    "lremovexattr": (198, 15),
    "fremovexattr": (199, 16),
    "setxattrat": (463, 463),
    "removexattrat": (466, 466),
    "file_setattr": (469, 469),
    "utime": (132, None),
    "utimes": (235, None),
    "futimesat": (261, None),
    "utimensat": (280, 88),
}
LANDLOCK_CREATE_RULESET = 444
LANDLOCK_ADD_RULE = 445
LANDLOCK_RESTRICT_SELF = 446

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
PR_SET_SECCOMP = 22

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2


def syscall_number(name: str) -> int | None:
    """`name`'s number on this architecture (None: unknown arch or no such call)."""
    if ARCH is None:
        return None
    return SYSCALLS[name][0 if ARCH == "x86_64" else 1]


def _check(result: int) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return result


_Argument = int | bytes | ctypes.c_void_p | ctypes.Array[ctypes.c_char_p] | None


def syscall(name_or_number: str | int, *args: _Argument) -> int:
    """A raw system call; raises OSError on failure."""
    number = name_or_number if isinstance(name_or_number, int) else syscall_number(name_or_number)
    if number is None:
        raise OSError(38, f"no syscall {name_or_number!r} on this architecture")
    return _check(_libc.syscall(ctypes.c_long(number), *args))


AT_EMPTY_PATH = 0x1000


def execveat(fd: int, argv: Sequence[str], env: Mapping[str, str]) -> None:
    """Become the file at `fd` (`execveat(fd, "", argv, env, AT_EMPTY_PATH)`); raises OSError.

    Unlike `os.execve`, the interpreter's lock is released while the call waits, so that
    another thread can answer for it (`exec_once.Supervisor`)."""
    args = [*(os.fsencode(a) for a in argv), None]
    variables = [*(os.fsencode(f"{k}={v}") for k, v in env.items()), None]
    argv_p = (ctypes.c_char_p * len(args))(*args)
    env_p = (ctypes.c_char_p * len(variables))(*variables)
    syscall("execveat", fd, b"", argv_p, env_p, AT_EMPTY_PATH)


def prctl(option: int, arg2: int = 0, arg3: int | ctypes.c_void_p = 0) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg2), arg3, 0, 0))


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags))


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    encoded = [None if s is None else s.encode() for s in (source, target, fstype)]
    _check(_libc.mount(*encoded, ctypes.c_ulong(flags), data.encode() or None))


def umount(target: str, flags: int = 0) -> None:
    _check(_libc.umount2(target.encode(), flags))


CAP_CHOWN = 0
CAP_SETGID = 6
CAP_SETUID = 7
_CAPABILITY_V3 = 0x20080522


def has_capabilities(*capabilities: int) -> bool:
    """Whether every one of `capabilities` is in the effective set (capget v3)."""
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_V3, 0)
    data = (ctypes.c_uint32 * 6)()  # two {effective, permitted, inheritable} words
    _check(_libc.capget(header, data))
    effective = data[0] | data[3] << 32
    return all(effective >> capability & 1 for capability in capabilities)


def drop_capabilities() -> None:
    """Empty the effective, permitted and inheritable capability sets (capset v3)."""
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_V3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.capset(header, data))
