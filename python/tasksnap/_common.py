"""What tasksnap shares with psutil's ``_common``: the status constants and platform flags,
the exceptions and the named tuples of a process's values (psutil's ``_common`` and
``_ntuples``), handed to the native half once (``_tasksnap.setup``: it builds the tuples and
raises the exceptions), and the attribute names every call checks its arguments against.

Everything here is ``tasksnap``'s by name (``__module__``), as it was when it lived in the
package's ``__init__``: reprs, tracebacks and pickles say ``tasksnap.NoSuchProcess``. The
package's ``__init__`` imports what it shows; nothing reads this module through the package's
attribute of its name (psutil's upstream suite, run against tasksnap, replaces
``tasksnap._common`` with psutil's own).
"""

from __future__ import annotations

import collections
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from . import _tasksnap

STATUS_RUNNING = "running"
STATUS_SLEEPING = "sleeping"
STATUS_DISK_SLEEP = "disk-sleep"
STATUS_STOPPED = "stopped"
STATUS_TRACING_STOP = "tracing-stop"
STATUS_ZOMBIE = "zombie"
STATUS_DEAD = "dead"
STATUS_IDLE = "idle"
STATUS_PARKED = "parked"
STATUS_WAKING = "waking"
STATUS_WAITING = "waiting"
STATUS_LOCKED = "locked"


# psutil's platform flags and constants, so that code written against psutil's names runs.
LINUX = POSIX = True
WINDOWS = MACOS = OSX = FREEBSD = OPENBSD = NETBSD = BSD = SUNOS = AIX = False


# --- exceptions: psutil's, attribute for attribute -------------------------------------


class Error(Exception):
    """Base class of tasksnap's exceptions (as ``psutil.Error``)."""

    def _infodict(self, attrs: Sequence[str]) -> Dict[str, Any]:
        info = collections.OrderedDict()
        for name in attrs:
            value = getattr(self, name, None)
            if value or (name == "pid" and value == 0):
                info[name] = value
        return info

    def __str__(self) -> str:
        info = self._infodict(("pid", "ppid", "name"))
        details = "({})".format(", ".join(f"{k}={v!r}" for k, v in info.items())) if info else None
        return " ".join(x for x in (getattr(self, "msg", ""), details) if x)

    def __repr__(self) -> str:
        info = self._infodict(("pid", "ppid", "name", "seconds", "msg"))
        details = ", ".join(f"{k}={v!r}" for k, v in info.items())
        return f"tasksnap.{self.__class__.__name__}({details})"


class NoSuchProcess(Error):
    """The process does not exist, or no longer does (its pid may have been reused)."""

    def __init__(self, pid: int, name: Optional[str] = None, msg: Optional[str] = None):
        Error.__init__(self)
        self.pid = pid
        self.name = name
        self.msg = msg or "process no longer exists"

    def __reduce__(self):
        return (self.__class__, (self.pid, self.name, self.msg))


class ZombieProcess(NoSuchProcess):
    """The process exited and its parent has not reaped it: what it had is gone."""

    def __init__(
        self,
        pid: int,
        name: Optional[str] = None,
        ppid: Optional[int] = None,
        msg: Optional[str] = None,
    ):
        NoSuchProcess.__init__(self, pid, name, msg)
        self.ppid = ppid
        self.msg = msg or "PID still exists but it's a zombie"

    def __reduce__(self):
        return (self.__class__, (self.pid, self.name, self.ppid, self.msg))


class AccessDenied(Error):
    """The kernel does not let the caller read this (another user's process)."""

    def __init__(self, pid: Optional[int] = None, name: Optional[str] = None, msg: Optional[str] = None):
        Error.__init__(self)
        self.pid = pid
        self.name = name
        self.msg = msg or ""

    def __reduce__(self):
        return (self.__class__, (self.pid, self.name, self.msg))


class TimeoutExpired(Error):
    """``Process.wait(timeout)`` timed out (the process is still running)."""

    def __init__(self, seconds: float, pid: Optional[int] = None, name: Optional[str] = None):
        Error.__init__(self)
        self.seconds = seconds
        self.pid = pid
        self.name = name
        self.msg = f"timeout after {seconds} seconds"

    def __reduce__(self):
        return (self.__class__, (self.seconds, self.pid, self.name))


class ReadTimeout(AccessDenied, TimeoutError):
    """A read of the process given up at tasksnap's deadline: it was blocked on the
    process's memory map lock (``cmdline``, ``environ``, ``memory_maps``,
    ``memory_full_info``), or on a file system that does not answer (a path the process
    names), where psutil would wait as long as that lasts. Not in psutil: it is an
    ``AccessDenied`` (the value is not to be had now; ``as_dict`` and ``process_iter`` give
    ``ad_value``, and psutil code's ``except psutil.AccessDenied`` or ``except psutil.Error``
    catches it) and a ``TimeoutError`` (what tasksnap raised before)."""


# --- psutil's named tuples (psutil._ntuples), same names and fields ---------------------


class pcputimes(NamedTuple):
    """CPU seconds of a process (``Process.cpu_times()``)."""

    user: float
    system: float
    children_user: float
    children_system: float
    iowait: float


class pmem(NamedTuple):
    """Memory of a process in bytes, from /proc/PID/statm (``Process.memory_info()``)."""

    rss: int
    vms: int
    shared: int
    text: int
    lib: int
    data: int
    dirty: int


class pio(NamedTuple):
    """I/O counters of a process (``Process.io_counters()``)."""

    read_count: int
    write_count: int
    read_bytes: int
    write_bytes: int
    read_chars: int
    write_chars: int


class pthread(NamedTuple):
    """One thread: its id and CPU seconds (``Process.threads()``)."""

    id: int
    user_time: float
    system_time: float


class puids(NamedTuple):
    """User ids (``Process.uids()``)."""

    real: int
    effective: int
    saved: int


class pgids(NamedTuple):
    """Group ids (``Process.gids()``)."""

    real: int
    effective: int
    saved: int


class pctxsw(NamedTuple):
    """Context switches (``Process.num_ctx_switches()``)."""

    voluntary: int
    involuntary: int


for _cls in (
    Error, NoSuchProcess, ZombieProcess, AccessDenied, TimeoutExpired, ReadTimeout,
    pcputimes, pmem, pio, pthread, puids, pgids, pctxsw,
):
    _cls.__module__ = "tasksnap"
del _cls

_tasksnap.setup(
    {
        "pcputimes": pcputimes,
        "pmem": pmem,
        "pio": pio,
        "pthread": pthread,
        "puids": puids,
        "pgids": pgids,
        "pctxsw": pctxsw,
        "NoSuchProcess": NoSuchProcess,
        "ZombieProcess": ZombieProcess,
        "AccessDenied": AccessDenied,
        "ReadTimeout": ReadTimeout,
    }
)

_NATIVE_ATTRS = tuple(_tasksnap.attr_names())

#: The attributes one whole-system pass answers for every process at once.
_PASS_ATTRS = frozenset(n for n, _ in _NATIVE_ATTRS)

#: The attributes read per process, by the ``Process`` method of their name (a file of
#: the process's own, or a value kept per ``Process`` object), as psutil reads them.
_METHOD_ATTRS = frozenset(
    {"cwd", "open_files", "memory_maps", "memory_full_info", "net_connections", "ionice"}
)

#: Every attribute ``process_iter`` and ``as_dict`` accept: psutil's, all of them.
ATTRS: Tuple[str, ...] = tuple(sorted(_PASS_ATTRS | _METHOD_ATTRS))
_ATTRS_SET = frozenset(ATTRS)


def _check_attrs(attrs: Optional[Iterable[str]]) -> List[str]:
    """psutil's checks: a list, tuple or set of known names; None or empty means all."""
    if attrs is None:
        return list(ATTRS)
    if not isinstance(attrs, (list, tuple, set, frozenset)):
        raise TypeError(f"invalid attrs type {type(attrs)}")
    names = set(attrs)
    bad = names - _ATTRS_SET
    if bad:
        raise ValueError(
            "invalid attr name{} {}".format("s" if len(bad) > 1 else "", ", ".join(map(repr, sorted(bad))))
        )
    if not names:
        return list(ATTRS)
    # Keep the caller's order when it has one.
    return [a for a in dict.fromkeys(attrs)] if isinstance(attrs, (list, tuple)) else sorted(names)


#: The largest pid the kernel can give (pid_t is a signed 32-bit integer).
_PID_MAX = 2**31 - 1


def _check_pid(pid: Any) -> int:
    if isinstance(pid, bool) or not isinstance(pid, int):
        raise TypeError(f"pid must be an integer (got {pid!r})")
    if pid < 0:
        raise ValueError(f"pid must be a positive integer (got {pid})")
    return pid
