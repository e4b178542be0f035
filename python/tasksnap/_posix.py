"""How a process is waited for and signalled, as psutil's ``_psposix`` does it: a pidfd
when there is one (``_pidfd_open``), the exit status as psutil's exit code (``Negsignal`` for
a signal), and psutil's ``wait_pid`` (``_wait_pid``): a child reaped, another process waited
for until it is gone.
"""

from __future__ import annotations

import enum
import errno
import os
import select
import signal
import time
from typing import Optional, Tuple

from ._common import TimeoutExpired

_UNSET = object()


def _pidfd_open(pid: int) -> Optional[int]:
    """A pidfd for ``pid``, or None where pidfds are missing (old kernel or Python, a
    seccomp policy, a thread id): the caller then signals by pid."""
    if not hasattr(os, "pidfd_open") or not hasattr(signal, "pidfd_send_signal"):
        return None
    try:
        return os.pidfd_open(pid, 0)
    except ProcessLookupError:
        raise
    except OSError as e:
        if e.errno in (errno.ENOSYS, errno.EPERM, errno.EACCES, errno.EINVAL, errno.EMFILE, errno.ENFILE, errno.ENODEV):
            return None
        raise


#: psutil's code for a child ended by a signal: minus the signal, as an IntEnum.
Negsignal = enum.IntEnum("Negsignal", {s.name: -s.value for s in signal.Signals}, module="tasksnap")


def _exit_code(status: int) -> int:
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    if os.WIFSIGNALED(status):
        try:
            return Negsignal(-os.WTERMSIG(status))
        except ValueError:
            return -os.WTERMSIG(status)
    raise ValueError(f"unknown process exit status {status!r}")


def _wait_pid(pid: int, timeout: Optional[float]) -> Optional[int]:
    """psutil's wait: a child is reaped (its exit code), another process waited for until
    it is gone (None). The end is seen through a pidfd when there is one (no polling),
    else by polling with a backoff up to 40 ms."""
    deadline = None if timeout is None else time.monotonic() + timeout

    def left() -> Optional[float]:
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    def reap(block: bool) -> Tuple[bool, Optional[int]]:
        try:
            got, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return False, None
        if got == 0:
            return True, _UNSET  # a child, still running
        return True, _exit_code(status)

    fd = None
    try:
        fd = _pidfd_open(pid)
    except ProcessLookupError:
        fd = None
    try:
        if fd is not None:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            rest = left()
            if not poller.poll(None if rest is None else int(rest * 1000)):
                raise TimeoutExpired(timeout)
        interval = 0.0001
        while True:
            child, code = reap(False)
            if child and code is not _UNSET:
                return code
            if not child and not _pid_alive(pid):
                return None
            rest = left()
            if rest is not None and rest <= 0:
                raise TimeoutExpired(timeout)
            time.sleep(interval if rest is None else min(interval, rest))
            interval = min(interval * 2, 0.04)
    finally:
        if fd is not None:
            os.close(fd)


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` names a process, zombie included (``kill(pid, 0)``, as psutil)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


