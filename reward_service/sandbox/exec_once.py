"""The exec_once layer: a run that execs its program makes that one exec and no other.

Stdlib only (the zygote imports it). A filter sees no path, so the exec it
lets through, `execveat(EXEC_FD, ..., AT_EMPTY_PATH)`, would run any file
given by absolute path. With `exec_once` the filter hands that call to a
listener instead (`seccomp.SyscallFilter(exec_once=True)`,
SECCOMP_RET_USER_NOTIF): the run process starts a `Supervisor` thread,
installs the filter with a new listener and gives it the listener; the
thread lets the first notification's exec go on
(SECCOMP_USER_NOTIF_FLAG_CONTINUE) and closes the listener. That first
exec is the run's own: nothing but the sandbox's code runs before it.
After it no listener is left (the exec ends the thread, and the listener
is close-on-exec), and the kernel answers every later call the filter
hands on with ENOSYS; the program cannot bring a listener of its own (the
filter refuses it `seccomp(2)`, and `prctl` installs none). Linux 5.5+
(the CONTINUE flag); `works` is the probe.
"""

from __future__ import annotations

import _thread
import errno
import fcntl
import os
import signal
import struct

from reward_service.sandbox import linux
from reward_service.sandbox.seccomp import SyscallFilter

_NOTIF_RECV = 0xC0502100
"""SECCOMP_IOCTL_NOTIF_RECV: SECCOMP_IOWR(0, struct seccomp_notif), 80 bytes."""
_NOTIF_SEND = 0xC0182101
"""SECCOMP_IOCTL_NOTIF_SEND: SECCOMP_IOWR(1, struct seccomp_notif_resp), 24 bytes."""
_NOTIFICATION_SIZE = 80
_RESPONSE = struct.Struct("=QqiI")
"""struct seccomp_notif_resp: id, val, error, flags."""
_FLAG_CONTINUE = 1
_PROBE_FD = 64
_PROBE_TIMEOUT_S = 5
_PARK_TIMEOUT_S = 5.0
"""How long a run waits for its supervisor thread to start (far more than it takes)."""


class Supervisor:
    """A thread of the run process that lets the first exec it is asked about go on.

    Started before the run's limits (`confine` says why there), it is parked, its
    buffers and frame allocated, before the constructor returns (under an address-space
    limit below the zygote's size a thread could not allocate them), and waits for
    `serve` to give it the listener of the filter just installed."""

    def __init__(self) -> None:
        self._listener = -1
        self._notification = bytearray(_NOTIFICATION_SIZE)
        self._response = bytearray(_RESPONSE.pack(0, 0, 0, _FLAG_CONTINUE))
        self._call_in = memoryview(self._notification)[:8]
        self._call_out = memoryview(self._response)[:8]
        self._given, self._parked, self._closed = (_thread.allocate_lock() for _ in range(3))
        for lock in (self._given, self._parked, self._closed):
            lock.acquire()
        try:
            _thread.start_new_thread(self._answer_once, ())
        except RuntimeError as e:  # no thread left under the uid's RLIMIT_NPROC
            raise OSError(errno.EAGAIN, str(e)) from None
        if not self._parked.acquire(timeout=_PARK_TIMEOUT_S):
            raise OSError(errno.ETIMEDOUT, "the supervisor thread did not start")

    def serve(self, listener: int) -> None:
        self._listener = listener
        self._given.release()

    def wait_closed(self) -> None:
        """Until the listener is closed: its one answer given, or none possible."""
        self._closed.acquire()

    def _answer_once(self) -> None:
        try:
            self._parked.release()
            self._given.acquire()
            while True:
                try:
                    fcntl.ioctl(self._listener, _NOTIF_RECV, self._notification)
                    self._call_out[:] = self._call_in
                    fcntl.ioctl(self._listener, _NOTIF_SEND, self._response)
                    return
                except OSError as e:
                    # ENOENT: the exec was interrupted before the answer; it asks again
                    if e.errno not in (errno.ENOENT, errno.EINTR):
                        return
                self._notification[:] = bytes(_NOTIFICATION_SIZE)  # RECV wants it zeroed
        finally:
            if self._listener >= 0:
                os.close(self._listener)
            self._closed.release()


def works() -> bool:
    """Whether the kernel (and any filter above this process) lets a run's exec be let
    through once, and no second time: the real filter and supervisor, in a forked child."""
    try:
        probe = SyscallFilter(exec_fd=_PROBE_FD, exec_once=True)
    except OSError:
        return False
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(_PROBE_TIMEOUT_S)  # a probe that hangs failed
            status = 0 if _let_through_once(probe) else 1
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _let_through_once(probe: SyscallFilter) -> bool:
    """In the probe's child: the first exec reaches the kernel (a directory: EACCES), the
    second is answered ENOSYS by no listener."""
    os.dup2(os.open("/", os.O_PATH | os.O_CLOEXEC), _PROBE_FD)
    supervisor = Supervisor()
    supervisor.serve(probe.install_listening(os.getpid()))
    first = _exec_errno()
    supervisor.wait_closed()
    return first == errno.EACCES and _exec_errno() == errno.ENOSYS


def _exec_errno() -> int:
    try:
        linux.execveat(_PROBE_FD, ["probe"], {})
    except OSError as e:
        return e.errno or 0
    return 0
