"""A library of the sandbox's own that runtimes preload: what glibc cannot answer in a run.

The main thread's stack: glibc's `pthread_getattr_np` finds the main thread's stack by reading
`/proc/self/maps`, which no run may read (landlock refuses `/proc`; a zygote in
a user namespace of its own has none). Mono asks for it as it starts and aborts
when it fails ("pthread_getattr_np failed with Permission denied"). This
library, preloaded (`LD_PRELOAD`) into such a runtime's build and runs, answers
for the main thread from what glibc knows without /proc: the stack's top is
`__libc_stack_end` (the stack pointer at the program's start: only its
arguments, environment and auxiliary vector lie above it), its size
`RLIMIT_STACK`. Any other thread, and a main thread whose /proc is readable,
get glibc's own answer. And a thread's scheduling set to what it already is:
Mono sets each thread's to normal as it starts it, which the run's filter
refuses (no run changes any scheduling), and prints a warning into the
program's stdout; `pthread_setschedparam` refused with EPERM answers success
when the thread's policy and priority are already those asked for. And
whether `/proc/self/maps` exists, which Mono checks first ("Mono requires /proc
to be mounted"): where a zygote in a user namespace of its own has no /proc,
`access(F_OK)` on that one path answers yes, so that Mono starts as it does
where /proc is there but unreadable (every read of it still fails). And, there
too, the link `/proc/self/exe`, which Racket reads to find its boot files in
its own executable: the path the sandbox exec'd, given as `SANDBOX_SELF_EXE`. The library
runs inside the confined process, under every layer, and asks for nothing a run
may not do.

It is compiled by the service (the system's `cc`), not shipped: once per
source, into `SHIM_DIR` (beside Python, where runs may read), a file named by
the source's hash so that a changed source is built anew. Stdlib only, and
imported only when a toolchain that needs it is looked for (never by the
zygote, which must not load `subprocess`: `toolchains.run_tool`).
"""

from __future__ import annotations

import hashlib
import os
import sys

SHIM_DIR = os.path.join(sys.prefix, "share", "reward-service", "preload")
"""Where the library is built: under Python's prefix, a read path of every run (the
image builds it there at build time, as the root filesystem is read-only in the pod)."""
SOURCE = """\
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *__libc_stack_end;

int pthread_getattr_np(pthread_t thread, pthread_attr_t *attr) {
    int (*real)(pthread_t, pthread_attr_t *) =
        (int (*)(pthread_t, pthread_attr_t *))dlsym(RTLD_NEXT, "pthread_getattr_np");
    int error = real ? real(thread, attr) : ENOSYS;
    if (error == 0 || !pthread_equal(thread, pthread_self()) || syscall(SYS_gettid) != getpid())
        return error;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t top = ((uintptr_t)__libc_stack_end + page - 1) & ~(page - 1);
    struct rlimit limit;
    uintptr_t size = 8u << 20;
    if (getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        size = (uintptr_t)limit.rlim_cur & ~(page - 1);
    if (size > top - page) size = (top - page) & ~(page - 1);
    error = pthread_attr_init(attr);
    return error ? error : pthread_attr_setstack(attr, (void *)(top - size), size);
}

int pthread_setschedparam(pthread_t thread, int policy, const struct sched_param *param) {
    int (*real)(pthread_t, int, const struct sched_param *) =
        (int (*)(pthread_t, int, const struct sched_param *))dlsym(RTLD_NEXT,
                                                                   "pthread_setschedparam");
    int error = real ? real(thread, policy, param) : ENOSYS;
    int now;
    struct sched_param held;
    if (error == EPERM && pthread_getschedparam(thread, &now, &held) == 0 && now == policy &&
        held.sched_priority == param->sched_priority)
        return 0;
    return error;
}

ssize_t readlink(const char *path, char *buf, size_t size) {
    ssize_t (*real)(const char *, char *, size_t) =
        (ssize_t (*)(const char *, char *, size_t))dlsym(RTLD_NEXT, "readlink");
    ssize_t done = real ? real(path, buf, size) : -1;
    const char *self = getenv("SANDBOX_SELF_EXE");
    if (done >= 0 || errno != ENOENT || !self || strcmp(path, "/proc/self/exe") != 0)
        return done;
    size_t length = strlen(self);
    if (length > size) length = size;
    memcpy(buf, self, length);
    return (ssize_t)length;
}

int access(const char *path, int mode) {
    int (*real)(const char *, int) = (int (*)(const char *, int))dlsym(RTLD_NEXT, "access");
    int done = real ? real(path, mode) : -1;
    if (done != 0 && errno == ENOENT && mode == F_OK && strcmp(path, "/proc/self/maps") == 0)
        return 0;
    return done;
}
"""


def library() -> str:
    """Where the library for this `SOURCE` is (it may not be built yet)."""
    digest = hashlib.sha256(SOURCE.encode()).hexdigest()[:16]
    return os.path.join(SHIM_DIR, f"libsandbox-preload-{digest}.so")


def ensure(build_path: str) -> str:
    """The library's path, built now with the `cc` found in `build_path` unless already
    there; OSError saying why it could not be."""
    path = library()
    if os.path.isfile(path):
        return path
    import shutil
    import subprocess

    cc = shutil.which("cc", path=build_path) or shutil.which("gcc", path=build_path)
    if cc is None:
        raise OSError(2, f"no C compiler (cc) in {build_path} to build {os.path.basename(path)}")
    os.makedirs(SHIM_DIR, 0o755, exist_ok=True)
    partial = f"{path}.{os.getpid()}"
    source = f"{partial}.c"
    try:
        with open(source, "w") as f:
            f.write(SOURCE)
        argv = [cc, "-O2", "-shared", "-fPIC", "-o", partial, source, "-ldl"]
        try:
            env = {"PATH": build_path}
            subprocess.run(argv, env=env, capture_output=True, check=True, timeout=60)
        except subprocess.SubprocessError as e:
            raise OSError(5, f"{cc} could not build {os.path.basename(path)}: {e}") from e
        os.chmod(partial, 0o644)
        os.replace(partial, path)
    finally:
        for leftover in (source, partial):
            if os.path.exists(leftover):
                os.unlink(leftover)
    return path
