"""tasksnap: Linux processes and threads read in one pass, with psutil's shape.

Three ways in:

* psutil's API for processes, all of it: ``process_iter(attrs, ad_value)``,
  ``Process(pid)`` with every method and attribute psutil has on Linux (getters, setters,
  signals, ``wait``), ``wait_procs``, ``Popen``, the host figures (``cpu_percent``,
  ``virtual_memory``...), the same named tuples, constants and exceptions
  (``NoSuchProcess``, ``ZombieProcess``, ``AccessDenied``, ``TimeoutExpired``; and
  ``ReadTimeout``, an ``AccessDenied`` for a read given up where psutil would wait). Switching
  from psutil is a change of the import line (docs/python.md has the table of every
  name).
* ``snapshot(attrs, threads=False)``: the same attributes as columns in one call (a
  ``pyarrow.Table`` when pyarrow is installed, else a dict of lists), no object per process.
* ``states(pids=None, interval=1.0)``: the share of an interval each thread spent running,
  waiting for a CPU, sleeping, in D, stopped or otherwise, and why it waited most.

``last_report()`` says which backend answered the last whole-system call (the BPF task
iterator as root on a large host, else /proc) and what it cost. See docs/python.md.
"""

from __future__ import annotations

import collections
import enum
import errno
import os
import resource as _resource
import select
import signal
import subprocess
import sys
import time
from typing import (
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

if not sys.platform.startswith("linux"):  # pragma: no cover - exercised on other systems
    # psutil's answer on a platform it does not support.
    raise NotImplementedError(f"platform {sys.platform} is not supported")

from . import _tasksnap


from ._files import *  # noqa: E402,F401,F403 - psutil's tuples and constants of one process's files
from ._files import __all__ as _files_all  # noqa: E402
from ._files import _FilesMixin  # noqa: E402
from ._system import (  # noqa: E402 - after the platform check, as the rest
    cpu_count,
    cpu_percent,
    cpu_stats,
    cpu_times,
    cpu_times_percent,
    getloadavg,
    scpustats,
    scputimes,
    sswap,
    suser,
    svmem,
    swap_memory,
    users,
    virtual_memory,
)

__all__ = [
    "Error",
    "NoSuchProcess",
    "ZombieProcess",
    "AccessDenied",
    "TimeoutExpired",
    "ReadTimeout",
    "Process",
    "process_iter",
    "pids",
    "pid_exists",
    "boot_time",
    "snapshot",
    "FIELDS",
    "states",
    "last_report",
    "PassReport",
    "ThreadStates",
    "pcputimes",
    "pmem",
    "pio",
    "pthread",
    "puids",
    "pgids",
    "pctxsw",
    "STATUS_RUNNING",
    "STATUS_SLEEPING",
    "STATUS_DISK_SLEEP",
    "STATUS_STOPPED",
    "STATUS_TRACING_STOP",
    "STATUS_ZOMBIE",
    "STATUS_DEAD",
    "STATUS_IDLE",
    "STATUS_PARKED",
    "STATUS_WAKING",
    "STATUS_WAITING",
    "STATUS_LOCKED",
    "ATTRS",
    "COLUMN_ATTRS",
    "Popen",
    "Negsignal",
    "wait_procs",
    "column_names",
    "LINUX",
    "POSIX",
    "WINDOWS",
    "MACOS",
    "OSX",
    "FREEBSD",
    "OPENBSD",
    "NETBSD",
    "BSD",
    "SUNOS",
    "AIX",
    "PROCFS_PATH",
    "RLIM_INFINITY",
    "version_info",
    "cpu_count",
    "cpu_percent",
    "cpu_stats",
    "cpu_times",
    "cpu_times_percent",
    "getloadavg",
    "scpustats",
    "scputimes",
    "sswap",
    "suser",
    "svmem",
    "swap_memory",
    "users",
    "virtual_memory",
]
__all__ += [n for n in _files_all if n not in __all__] + sorted(
    {n for n in dir(_resource) if n.startswith("RLIMIT_")} | {"RLIMIT_LOCKS"}
)

__version__ = "0.1.0"
version_info = tuple(int(x) for x in __version__.split("."))

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
#: Where /proc is (psutil's name): ``TASKSNAP_PROC_ROOT`` when the environment names a tree
#: the library takes, else /proc. Assigning it points every later call at the /proc tree
#: there, as psutil's does (only /proc moves: /sys, /dev and utmp stay where they were).
PROCFS_PATH = os.fsdecode(_tasksnap.env_proc_root())
RLIM_INFINITY = _resource.RLIM_INFINITY
for _name in dir(_resource):
    if _name.startswith("RLIMIT_"):
        globals()[_name] = getattr(_resource, _name)
del _name
#: Not in Python's resource module; Linux's number (include/uapi/asm-generic/resource.h).
RLIMIT_LOCKS = getattr(_resource, "RLIMIT_LOCKS", 10)


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


for _cls in (pcputimes, pmem, pio, pthread, puids, pgids, pctxsw):
    _cls.__module__ = "tasksnap"

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

#: The attributes ``snapshot`` has columns for (psutil's names; see ``column_names``).
COLUMN_ATTRS: Tuple[str, ...] = tuple(n for n, columnar in _NATIVE_ATTRS if columnar)

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

#: The model's task fields ``snapshot`` and ``column_names`` also take by name, beyond
#: ``COLUMN_ATTRS``: each a column of its name, in the unit its name says (``utime_ns``,
#: ``shared_bytes``, ``egid``...); a bytes field (``exe``, ``wchan``, ``cgroup_v2_path``,
#: ``label``, ``systemd_unit``...) is text with a ``_bytes`` sibling, as ``name`` is.
#: A field added to tasksnap's table is here without a change to the binding.
FIELDS: Tuple[str, ...] = tuple(n for n, _, _ in _tasksnap.field_names())
_COLUMNS_SET = frozenset(COLUMN_ATTRS) | frozenset(FIELDS)


class _Module(type(sys)):
    """tasksnap's module type: ``tasksnap.PROCFS_PATH = path`` (psutil's way, and
    ``mock.patch.object``'s) tells the native half, which reads there from the next call on."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "PROCFS_PATH":
            _tasksnap.set_proc_root(value)
        super().__setattr__(name, value)


# A reload starts again from the environment's tree, as a new import does.
_tasksnap.set_proc_root(PROCFS_PATH)
sys.modules[__name__].__class__ = _Module


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


#: The backend every whole-system call asks for: the environment's ``TASKSNAP_BACKEND`` as
#: the binding read it, else ``auto`` (tests assign it).
_BACKEND = _tasksnap.env_backend()


# --- Process -----------------------------------------------------------------------------


def _num_cpus() -> int:
    """psutil's ``cpu_count()`` (logical CPUs), the factor of its CPU timer."""
    return cpu_count() or 1


def _timer() -> float:
    """psutil's CPU timer for ``cpu_percent``: monotonic seconds times the CPU count."""
    return time.monotonic() * _num_cpus()


class Process(_FilesMixin):
    """A process, as ``psutil.Process``: made from a pid (the current process when None)
    and tied to its start time, so that a reused pid raises ``NoSuchProcess`` instead of
    answering for another process (psutil checks this only before actions; tasksnap before
    every read too).

    Every method reads what it returns when called (no caching, as psutil on Linux), with
    one /proc read of this process through tasksnap's procfs collector; actions (signals,
    ``nice``/``ionice``/``rlimit``/``cpu_affinity`` settings) check the process is still
    the same one first, and signals go through a pidfd so a pid reused after the check
    cannot receive them.
    """

    # `_info`: the `info` dict `process_iter(attrs)` made (`{}` otherwise).
    # `_cpu_last`: (timer, CPU seconds) of the last `cpu_percent` call, psutil's
    # "since the last call". `__dict__`: a caller may add attributes, as to psutil's
    # (`wait_procs` sets `returncode`).
    __slots__ = (
        "_pid", "_start_ns", "_name", "_info", "_cpu_last", "_exitcode",
        "_exe", "_create_time", "__dict__", "__weakref__",
    )

    def __init__(self, pid: Optional[int] = None) -> None:
        if pid is None:
            pid = os.getpid()
        pid = _check_pid(pid)
        # psutil on Linux: a pid beyond pid_t is "out of range", and 0 (the scheduler, which
        # /proc does not show) is "not found", both NoSuchProcess.
        if pid > _PID_MAX:
            raise NoSuchProcess(pid, msg="process PID out of range")
        if pid == 0:
            raise NoSuchProcess(pid, msg="process PID not found")
        try:
            start_ns, info = _tasksnap.process(pid, ["name"], None, True)
        except NoSuchProcess:
            raise NoSuchProcess(pid, msg="process PID not found") from None
        self._pid = pid
        self._start_ns = start_ns
        self._name = info.get("name")
        self._info: Dict[str, Any] = {}

    @classmethod
    def _from(cls, pid: int, start_ns: int, name: Optional[str] = None) -> "Process":
        p = object.__new__(cls)
        p._pid = pid
        p._start_ns = start_ns
        p._name = name
        p._info = {}
        return p

    @property
    def info(self) -> Dict[str, Any]:
        """The attributes ``process_iter(attrs)`` read for this process (``{}`` without
        ``attrs``), as psutil's ``info``."""
        return self._info

    @info.setter
    def info(self, value: Dict[str, Any]) -> None:
        self._info = value

    # -- identity

    @property
    def pid(self) -> int:
        """The process id."""
        return self._pid

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Process):
            return NotImplemented
        return (self._pid, self._start_ns) == (other._pid, other._start_ns)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self._pid, self._start_ns))

    def __str__(self) -> str:
        info = collections.OrderedDict(pid=self._pid)
        try:
            info["name"] = self.name()
            info["status"] = self.status()
        except ZombieProcess:
            info["status"] = STATUS_ZOMBIE
        except NoSuchProcess:
            info["status"] = "terminated"
        except AccessDenied:
            pass
        exitcode = getattr(self, "_exitcode", None)
        if exitcode is not None:
            info["exitcode"] = exitcode
        return "tasksnap.Process({})".format(", ".join(f"{k}={v!r}" for k, v in info.items()))

    __repr__ = __str__

    def _get(self, attr: str) -> Any:
        _, info = _tasksnap.process(self._pid, [attr], None, False, self._start_ns, self._name)
        return info[attr]

    def _check_same(self) -> None:
        """Raises ``NoSuchProcess`` when the pid now names another process (psutil's
        ``_raise_if_pid_reused``); a process that merely exited is left to the action."""
        try:
            _tasksnap.process(self._pid, ["pid"], None, True, self._start_ns, self._name)
        except NoSuchProcess as e:
            if "reused" in (e.msg or ""):
                raise

    def oneshot(self):
        """psutil's context manager for grouped reads; a no-op here (``as_dict`` already
        reads each file once)."""
        import contextlib

        return contextlib.nullcontext()

    def as_dict(self, attrs: Optional[Iterable[str]] = None, ad_value: Any = None) -> Dict[str, Any]:
        """The attributes ``attrs`` (all of ``ATTRS`` when None) in one read; an attribute the
        caller may not read, or that a zombie no longer has, is ``ad_value``. An attribute
        whose method is not tasksnap's own here (a subclass's, or one patched on the class
        or on this object) is what that method returns, as psutil's ``as_dict`` calls each."""
        names = _check_attrs(attrs)
        mine = _own_methods(type(self), names, self.__dict__)
        native = [n for n in names if n in _PASS_ATTRS and n != "cpu_percent" and n in mine]
        _, info = _tasksnap.process(self._pid, native, ad_value, True, self._start_ns, self._name)
        for n in names:
            if n not in info:
                _call_into(self, n, info, ad_value, bool(attrs))
        name = info.get("name")
        if isinstance(name, str):
            # What name() would have kept: the name this object's exceptions carry.
            self._name = name
        return info

    def is_running(self) -> bool:
        """Whether the process still exists and is the same process (not a reused pid).
        A zombie is running, as in psutil."""
        try:
            _tasksnap.process(self._pid, ["pid"], None, True, self._start_ns)
            return True
        except NoSuchProcess:
            return False

    # -- psutil's getters

    def name(self) -> str:
        """The process name: its comm, or the base name of its first argument when the comm
        was cut at 15 bytes and that name starts with it."""
        name = self._get("name")
        self._name = name
        return name

    def ppid(self) -> int:
        """The parent's pid."""
        return self._get("ppid")

    def parent(self) -> Optional["Process"]:
        """The parent as a ``Process``, or None when it is gone or this is pid 0/1's parent."""
        ppid = self.ppid()
        if ppid <= 0:
            return None
        try:
            parent = Process(ppid)
        except NoSuchProcess:
            return None
        # Started before this one (a process whose parent exited was given another): the
        # start times in clock ticks, as the kernel keeps them, not the seconds made of them.
        if _tasksnap.start_ticks(parent._start_ns) <= _tasksnap.start_ticks(self._start_ns):
            return parent
        return None

    def parents(self) -> List["Process"]:
        """The parent, its parent, and so on up to the first process, as ``Process``es."""
        out = []
        proc = self.parent()
        while proc is not None:
            out.append(proc)
            proc = proc.parent()
        return out

    def status(self) -> str:
        """One of the ``STATUS_*`` strings."""
        return self._get("status")

    def username(self) -> str:
        """The name of the process's real user (the uid as text when it has no name)."""
        return self._get("username")

    def uids(self) -> puids:
        """Real, effective and saved user ids."""
        return self._get("uids")

    def gids(self) -> pgids:
        """Real, effective and saved group ids."""
        return self._get("gids")

    def cmdline(self) -> List[str]:
        """The command line as a list (split as psutil splits it); a zombie raises
        ``ZombieProcess``."""
        return self._get("cmdline")

    def exe(self) -> str:
        """The executable's path ("" for a kernel thread); for another user's process, the
        first argument when it is an absolute path to an executable file, as psutil
        guesses, else ``AccessDenied``. Kept after the first answer, as psutil keeps it."""
        exe = getattr(self, "_exe", None)
        if exe is None:
            exe = self._get("exe")
            self._exe = exe
        return exe

    def environ(self) -> Dict[str, str]:
        """The environment the process started with (``AccessDenied`` for another user's),
        as a dict."""
        return self._get("environ")

    def num_fds(self) -> int:
        """How many file descriptors the process has open (``AccessDenied`` for another
        user's, as psutil)."""
        return self._get("num_fds")

    def cpu_times(self) -> pcputimes:
        """CPU seconds (``iowait`` is always 0.0: see docs/python.md)."""
        return self._get("cpu_times")

    def cpu_percent(self, interval: Optional[float] = None) -> float:
        """The process's CPU use in percent of one CPU (over 100 for several threads on
        several CPUs), as psutil: over ``interval`` seconds (blocking) when it is positive,
        else since the last call on this object (or its last ``process_iter`` with
        ``cpu_percent``), 0.0 the first time."""
        if interval is not None and interval < 0:
            raise ValueError(f"interval is not positive (got {interval!r})")

        def sample() -> Tuple[float, float]:
            t = self.cpu_times()
            return _timer(), t.user + t.system

        if interval is not None and interval > 0.0:
            st1, pt1 = sample()
            time.sleep(interval)
            st2, pt2 = sample()
        else:
            last = getattr(self, "_cpu_last", None)
            st2, pt2 = sample()
            self._cpu_last = (st2, pt2)
            if last is None:
                return 0.0
            st1, pt1 = last
        self._cpu_last = (st2, pt2)
        return _tasksnap.cpu_percent(pt2 - pt1, st2 - st1, _num_cpus())

    def memory_info(self) -> pmem:
        """Memory in bytes, as /proc/PID/statm gives it."""
        return self._get("memory_info")

    def memory_percent(self, memtype: str = "rss") -> float:
        """``memtype`` (a field of ``memory_full_info()``) as a percentage of physical
        memory."""
        valid = pfullmem._fields
        if memtype not in valid:
            raise ValueError(f"invalid memtype {memtype!r}; valid types are {tuple(valid)!r}")
        if memtype == "rss":
            return self._get("memory_percent")
        metrics = self.memory_info() if memtype in pmem._fields else self.memory_full_info()
        total = _tasksnap.mem_total_bytes()
        if not total > 0:
            raise ValueError(
                "can't calculate process memory percent because total physical system "
                f"memory is not positive ({total!r})"
            )
        return (getattr(metrics, memtype) / float(total)) * 100

    def num_threads(self) -> int:
        """Number of threads."""
        return self._get("num_threads")

    def create_time(self) -> float:
        """Start time, seconds since the epoch (boot time + start ticks, as psutil), known
        from the moment this object was made (so also once the process has gone, as
        psutil's)."""
        ct = getattr(self, "_create_time", None)
        if ct is None:
            ct = _tasksnap.create_time(self._start_ns)
            self._create_time = ct
        return ct

    def io_counters(self) -> pio:
        """I/O counters; another user's process raises ``AccessDenied`` unless root."""
        return self._get("io_counters")

    def nice(self, value: Optional[int] = None) -> Optional[int]:
        """The nice value; with ``value``, sets it (after checking the pid was not reused)."""
        if value is None:
            return self._get("nice")
        self._check_same()
        with self._os_errors():
            os.setpriority(os.PRIO_PROCESS, self._pid, value)
        return None

    def cpu_num(self) -> int:
        """The CPU the process last ran on."""
        return self._get("cpu_num")

    def cpu_affinity(self, cpus: Optional[Iterable[int]] = None) -> Optional[List[int]]:
        """The CPUs the process may run on, ascending; with ``cpus``, sets them (an empty
        list: every CPU), after checking the pid was not reused."""
        if cpus is None:
            return self._get("cpu_affinity")
        self._check_same()
        cpus = list(set(cpus)) or list(range(_num_cpus()))
        try:
            with self._os_errors():
                os.sched_setaffinity(self._pid, cpus)
        except (OSError, ValueError) as e:
            if isinstance(e, ValueError) or getattr(e, "errno", None) == errno.EINVAL:
                allowed = list(range(_num_cpus()))
                for cpu in cpus:
                    if cpu not in allowed:
                        raise ValueError(f"invalid CPU {cpu!r}; choose between {allowed!r}") from None
            raise
        return None

    def rlimit(self, resource: int, limits: Optional[Tuple[int, int]] = None) -> Optional[Tuple[int, int]]:
        """The (soft, hard) limit of ``resource`` (a ``RLIMIT_*``); with ``limits``, sets
        them (after checking the pid was not reused)."""
        if limits is None:
            self._check_same()
            with self._os_errors():
                return _resource.prlimit(self._pid, resource)
        self._check_same()
        if len(limits) != 2:
            raise ValueError(f"second argument must be a (soft, hard) tuple, got {limits!r}")
        with self._os_errors():
            _resource.prlimit(self._pid, resource, limits)
        return None

    def num_ctx_switches(self) -> pctxsw:
        """Voluntary and involuntary context switches."""
        return self._get("num_ctx_switches")

    def threads(self) -> List[pthread]:
        """Each thread's id and CPU seconds."""
        return _tasksnap.threads(self._pid, self._start_ns, self._name)

    def children(self, recursive: bool = False) -> List["Process"]:
        """The children (every descendant when ``recursive``), from one whole-system pass."""
        kids = _tasksnap.children(self._pid, recursive, self._start_ns, self._name, _BACKEND)
        return [Process._from(pid, start) for pid, start in kids]

    # -- actions

    def _os_errors(self):
        """psutil's translation of a system call's errors: no such process (or a zombie),
        permission denied."""
        return _OsErrors(self)

    def send_signal(self, sig: int) -> None:
        """Sends ``sig`` to the process, after checking the pid was not reused, through a
        pidfd (so a pid reused after the check cannot receive it)."""
        pid = self._pid
        if pid == 0:
            raise ValueError(
                "preventing sending signal to process with PID 0 as it would affect every "
                "process in the process group of the calling process (os.getpid()) instead "
                "of PID 0"
            )
        self._check_same()
        with self._os_errors():
            fd = _pidfd_open(pid)
            if fd is None:
                os.kill(pid, sig)
                return
            try:
                # The pidfd names one process for good: if it is still the one this object
                # was made for, the signal cannot reach another.
                self._check_same()
                signal.pidfd_send_signal(fd, sig)
            finally:
                os.close(fd)

    def suspend(self) -> None:
        """``SIGSTOP``, after checking the pid was not reused."""
        self.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """``SIGCONT``, after checking the pid was not reused."""
        self.send_signal(signal.SIGCONT)

    def terminate(self) -> None:
        """``SIGTERM``, after checking the pid was not reused."""
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """``SIGKILL``, after checking the pid was not reused."""
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        """Waits for the process to end, as psutil: its exit code when it is a child of
        this process (a negative ``Negsignal`` when a signal ended it), else None (also
        when it has already gone); ``TimeoutExpired`` after ``timeout`` seconds (0: do not
        wait)."""
        if self._pid == 0:
            raise ValueError("can't wait for PID 0")
        if timeout is not None:
            if not isinstance(timeout, (int, float)):
                raise TypeError(f"timeout must be an int or float (got {type(timeout)})")
            if timeout < 0:
                raise ValueError(f"timeout must be positive or zero (got {timeout})")
        done = getattr(self, "_exitcode", _UNSET)
        if done is not _UNSET:
            return done
        try:
            code = _wait_pid(self._pid, timeout)
        except TimeoutExpired:
            raise TimeoutExpired(timeout, pid=self._pid, name=self._name) from None
        self._exitcode = code
        return code


def _own_methods(cls: type, names: List[str], own: Optional[Dict[str, Any]] = None) -> set:
    """The attributes among ``names`` whose method is tasksnap's own for objects of ``cls``
    (with ``own``, an object's ``__dict__``: not set on the object either), which the native
    half may read in one go; the others are asked of their method, as psutil asks every
    one. A look up per name and call: nothing per process."""
    return {
        n for n in names
        if n == "pid" or (getattr(cls, n, None) is _OWN_METHODS[n] and not (own and n in own))
    }


def _call_into(p: Process, name: str, info: Dict[str, Any], ad_value: Any, explicit: bool) -> None:
    """``info[name] = p.name()`` as psutil's ``as_dict`` makes it: ``ad_value`` for an
    attribute denied or a zombie's; ``NotImplementedError`` raised only for an attribute asked
    for by name; ``NoSuchProcess`` raised."""
    try:
        info[name] = getattr(p, name)()
    except (AccessDenied, ZombieProcess):
        info[name] = ad_value
    except NotImplementedError:
        if explicit:
            raise


#: ``Process``'s own method of each attribute, to tell a subclass's or a patched one.
_OWN_METHODS: Dict[str, Any] = {n: getattr(Process, n) for n in ATTRS if n != "pid"}
_OWN_AS_DICT = Process.as_dict


class _OsErrors:
    """Turns a system call's ``ProcessLookupError`` into ``NoSuchProcess`` (``ZombieProcess``
    for a zombie) and ``PermissionError`` into ``AccessDenied``, as psutil does."""

    __slots__ = ("p",)

    def __init__(self, p: Process) -> None:
        self.p = p

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, err, tb) -> bool:
        p = self.p
        if kind is not None and issubclass(kind, PermissionError):
            raise AccessDenied(p._pid, p._name) from err
        if kind is not None and issubclass(kind, ProcessLookupError):
            try:
                zombie = p.status() == STATUS_ZOMBIE
            except Error:
                zombie = False
            if zombie:
                raise ZombieProcess(p._pid, p._name, None) from err
            raise NoSuchProcess(p._pid, p._name) from err
        return False


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
Negsignal = enum.IntEnum("Negsignal", {s.name: -s.value for s in signal.Signals})


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


def process_iter(attrs: Optional[Iterable[str]] = None, ad_value: Any = None) -> Iterator[Process]:
    """Every process, sorted by pid, as ``psutil.process_iter``: all of them are read in one
    pass of tasksnap's library when the iterator is created, and when ``attrs`` is given
    (an empty list: every attribute), each ``Process`` has them in ``.info``, an attribute
    the caller may not read (or a zombie's) being ``ad_value``.

    As psutil, the ``Process`` objects are kept between calls (``process_iter.cache_clear()``
    forgets them): a process still running (same pid and start time) is the same object,
    with a new ``info``, and its ``cpu_percent`` is since the last call. Every ``info``
    dict is made from the pass in the call. The attributes a pass does not answer
    (``_METHOD_ATTRS``: cwd, open files, maps, connections, ionice) are read per
    process as the iterator reaches it, as psutil does, and a process gone by then is
    skipped.

    As psutil's, it asks each process's ``as_dict`` when that is not tasksnap's own (a
    subclass's, or patched on the class), and the method of an attribute patched on the
    class; otherwise no method is called.
    """
    cls = Process
    if attrs is None:
        names: List[str] = []
    else:
        names = _check_attrs(attrs)
        if cls.as_dict is not _OWN_AS_DICT:
            # psutil's process_iter asks each process's as_dict: a subclass's or a patched
            # one is asked here too.
            objs = _tasksnap.process_objects(cls, ["name"], ad_value, False, _pmap, _BACKEND)
            return _via_as_dict(objs, attrs, ad_value)
    mine = _own_methods(cls, names)
    native = [n for n in names if n in _PASS_ATTRS and n in mine]
    objs = _tasksnap.process_objects(
        cls, native if attrs is not None else ["name"], ad_value, attrs is not None,
        _pmap, _BACKEND, _num_cpus() if "cpu_percent" in native else None,
    )
    per_process = [n for n in names if n in _METHOD_ATTRS or n not in mine]
    if not per_process:
        return iter(objs)
    return _read_per_process(objs, per_process, ad_value, bool(attrs))


def _read_per_process(
    objs: List[Process], names: List[str], ad_value: Any, explicit: bool
) -> Iterator[Process]:
    for p in objs:
        extra: Dict[str, Any] = {}
        try:
            for n in names:
                _call_into(p, n, extra, ad_value, explicit)
        except NoSuchProcess:
            _pmap.pop(p._pid, None)
            continue
        p.info.update(extra)
        yield p


def _via_as_dict(objs: List[Process], attrs: Iterable[str], ad_value: Any) -> Iterator[Process]:
    for p in objs:
        try:
            p.info = p.as_dict(attrs=attrs, ad_value=ad_value)
        except NoSuchProcess:
            _pmap.pop(p._pid, None)
            continue
        yield p


#: process_iter's Process objects by pid, from its last call (psutil's ``_pmap``, by its
#: name: psutil's test helpers empty it by assigning ``psutil._pmap = {}``).
_pmap: Dict[int, Process] = {}

process_iter.cache_clear = lambda: _pmap.clear()  # type: ignore[attr-defined]  # noqa: E731


def wait_procs(
    procs: Iterable[Process], timeout: Optional[float] = None, callback: Any = None
) -> Tuple[List[Process], List[Process]]:
    """Waits for ``procs`` to end, as psutil's: ``(gone, alive)``, each gone one with a
    ``returncode`` (None unless it was a child), ``callback(proc)`` called as each goes;
    no ``TimeoutExpired``: after ``timeout`` seconds the rest are ``alive``."""
    if timeout is not None and not timeout >= 0:
        raise ValueError(f"timeout must be a positive integer, got {timeout}")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback {callback!r} is not a callable")
    gone: set = set()
    alive = set(procs)

    def check(proc: Process, wait_s: float) -> None:
        try:
            code = proc.wait(timeout=wait_s)
        except TimeoutExpired:
            return
        if code is not None or not proc.is_running():
            proc.returncode = code
            gone.add(proc)
            if callback is not None:
                callback(proc)

    deadline = None if timeout is None else time.monotonic() + timeout
    while alive:
        if timeout is not None and timeout <= 0:
            break
        for proc in alive:
            # Each round over every process lasts at most a second, so that one slow to
            # end does not keep the others' ends unseen (and their pids reusable).
            wait_s = 1.0 / len(alive)
            if deadline is not None:
                wait_s = min(deadline - time.monotonic(), wait_s)
                if wait_s <= 0:
                    break
            check(proc, wait_s)
        alive = alive - gone
        if deadline is not None and time.monotonic() >= deadline:
            break
    if alive:
        for proc in alive:
            check(proc, 0)
        alive = alive - gone
    return list(gone), list(alive)


def pids() -> List[int]:
    """The pids of every process, sorted: those /proc lists, as psutil's."""
    return _tasksnap.pids()


def pid_exists(pid: int) -> bool:
    """Whether a process with this pid exists (a thread id is not a process). As psutil on
    Linux: False for a negative pid and for 0 (not a process /proc shows, so
    ``Process(0)`` raises ``NoSuchProcess``); False for a pid beyond pid_t too (psutil
    raises ``OverflowError`` there)."""
    if isinstance(pid, bool) or not isinstance(pid, int):
        raise TypeError(f"pid must be an integer (got {pid!r})")
    if pid <= 0 or pid > _PID_MAX:
        return False
    try:
        _tasksnap.process(pid, ["pid"], None, True, thread_ids=False)
        return True
    except NoSuchProcess:
        return False


def boot_time() -> float:
    """Boot time, seconds since the epoch."""
    return _tasksnap.boot_time()


# --- what psutil lacks ---------------------------------------------------------------------


def snapshot(
    attrs: Optional[Iterable[str]] = None, threads: bool = False, *, arrow: Optional[bool] = None
) -> Any:
    """Every process (every thread when ``threads``) as columns, in one call, without an
    object per process: a ``pyarrow.Table`` when pyarrow (14 or later) is installed
    (``arrow=None``) or asked for (``arrow=True``), else a dict of lists. The Table holds
    the Arrow arrays the library built, imported through the Arrow C data interface
    without a copy; the dict is made from the same arrays.

    ``attrs`` are psutil's names (``ATTRS``) or the model's fields (``FIELDS``, each a
    column of its name, in its unit); a named tuple becomes one column per field
    (``cpu_times`` -> ``cpu_user``, ``cpu_system``, ``cpu_children_user``,
    ``cpu_children_system``; ``memory_info`` -> ``rss``, ``vms``, ``shared``, ``text``,
    ``data``; see ``column_names``). With ``threads``, ``pid`` is the process and a ``tid``
    column follows it. An unreadable value is None (null).

    Text columns (``name``, ``username``, ``cmdline``) are valid UTF-8 whatever the bytes
    (invalid ones replaced by U+FFFD); each has a sibling (``name_bytes``,
    ``username_bytes``, ``cmdline_bytes``: ``bytes``, Arrow binary) holding the exact bytes
    where they were not valid UTF-8, None otherwise.
    """
    names = _check_columns(attrs)
    # The columns are Arrow arrays built by the library (`_tasksnap.Columns`): pyarrow
    # imports them through the Arrow C data interface without a copy; the dict form is
    # made from the same arrays.
    cols = _tasksnap.snapshot(names, bool(threads), _BACKEND)
    if arrow is False:
        return cols.to_pydict()
    try:
        import pyarrow as pa
    except ImportError:
        if arrow:
            raise
        return cols.to_pydict()
    return pa.Table.from_batches([pa.record_batch(cols)])


def column_names(attrs: Optional[Iterable[str]] = None, threads: bool = False) -> List[str]:
    """The columns ``snapshot(attrs, threads)`` returns, in order."""
    return _tasksnap.column_names(_check_columns(attrs), bool(threads))


def _check_columns(attrs: Optional[Iterable[str]]) -> List[str]:
    """``_check_attrs`` for ``snapshot``: ``COLUMN_ATTRS`` and the names of ``FIELDS``."""
    if attrs is None:
        return list(COLUMN_ATTRS)
    if not isinstance(attrs, (list, tuple, set, frozenset)):
        raise TypeError(f"invalid attrs type {type(attrs)}")
    names = list(dict.fromkeys(attrs)) if isinstance(attrs, (list, tuple)) else sorted(set(attrs))
    if not names:
        return list(COLUMN_ATTRS)
    bad = [a for a in names if a not in _COLUMNS_SET]
    not_columns = [a for a in bad if a in _ATTRS_SET]
    if not_columns:
        raise ValueError(
            "snapshot() has no column for {}: ask process_iter() for {}".format(
                ", ".join(map(repr, not_columns)), "them" if len(not_columns) > 1 else "it"
            )
        )
    if bad:
        raise ValueError(
            "invalid attr name{} {}".format("s" if len(bad) > 1 else "", ", ".join(map(repr, bad)))
        )
    return names


class ThreadStates(NamedTuple):
    """One thread over one ``states()`` interval: percentages of the time it was alive in
    the interval (they sum to 100 within rounding) and why it waited most."""

    pid: int
    tid: int
    name: str
    running: float
    runnable: float
    sleeping: float
    disk: float
    stopped: float
    other: float
    #: The state of the top off-CPU reason ("sleeping", "disk", ...), None when none.
    wait_state: Optional[str]
    #: Its kernel frames, innermost first (empty when unknown).
    wait_reason: Tuple[str, ...]
    #: The thread exited during the interval.
    exited: bool


def states(pids: Optional[Iterable[int]] = None, interval: float = 1.0) -> List[ThreadStates]:
    """Per-thread scheduler states over ``interval`` seconds (blocking that long; Ctrl-C
    interrupts it at once): for each thread of ``pids`` (every thread when None, none when
    empty), the share of time running, runnable
    (waiting for a CPU), sleeping, in disk sleep (D), stopped, or other, and the top reason
    it was off the CPU. As root the BPF accounting answers (exact); otherwise /proc, where
    running is exact and the rest sampled at 20 Hz. ``last_report()`` says which.
    """
    want: Optional[List[int]] = None
    if pids is not None:
        if isinstance(pids, int):
            pids = [pids]
        # A pid beyond pid_t names no thread: it selects nothing, as one that exited.
        want = [p for p in map(_check_pid, pids) if p <= _PID_MAX]
    if isinstance(interval, bool) or not isinstance(interval, (int, float)):
        raise TypeError(f"interval must be a number of seconds (got {interval!r})")
    _, rows = _tasksnap.states(want, float(interval), _BACKEND)
    out = []
    for pid, tid, name, pct, reason, exited in rows:
        wait_state, frames = reason if reason is not None else (None, ())
        out.append(ThreadStates(pid, tid, name, *pct, wait_state, tuple(frames), exited))
    out.sort(key=lambda r: (r.pid, r.tid))
    return out


class PassReport(NamedTuple):
    """What answered the last whole-system call and what it cost."""

    #: "bpf" (the kernel's task iterator, root only) or "procfs".
    backend: str
    #: Why that backend (the library's rule), e.g. "procfs: BPF unavailable: ...".
    why: str
    #: The BPF programs were pinned (``tasksnap pin``): no load time.
    pinned: bool
    #: Seconds the call spent in the library (opening a collector included).
    seconds: float
    #: (phase, seconds) as the collector measured them.
    phases: Tuple[Tuple[str, float], ...]


def last_report() -> Optional[PassReport]:
    """The backend and cost of the last ``process_iter``, ``snapshot``, ``children`` or
    ``states`` call; None before the first."""
    r = _tasksnap.last_report()
    if r is None:
        return None
    return PassReport(r["backend"], r["why"], r["pinned"], r["seconds"], tuple(r["phases"]))


# --- psutil's Popen -----------------------------------------------------------------------


class Popen(Process):
    """``subprocess.Popen`` and ``Process`` in one object, as ``psutil.Popen``: the child is
    started by ``subprocess.Popen(*args, **kwargs)``; its attributes and methods
    (``stdin``, ``communicate``, ``returncode``...) are the Popen's, the others the
    Process's, and ``wait`` is subprocess's (it sets ``returncode``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.__subproc = subprocess.Popen(*args, **kwargs)
        Process.__init__(self, self.__subproc.pid)

    def __dir__(self) -> List[str]:
        return sorted(set(dir(Popen) + dir(subprocess.Popen)))

    def __enter__(self) -> "Popen":
        if hasattr(self.__subproc, "__enter__"):
            self.__subproc.__enter__()
        return self

    def __exit__(self, *args: Any, **kwargs: Any) -> Any:
        if hasattr(self.__subproc, "__exit__"):
            return self.__subproc.__exit__(*args, **kwargs)
        if self.stdout:
            self.stdout.close()
        if self.stderr:
            self.stderr.close()
        try:
            if self.stdin:
                self.stdin.close()
        finally:
            self.wait()
        return None

    def __getattribute__(self, name: str) -> Any:
        try:
            return object.__getattribute__(self, name)
        except AttributeError:
            try:
                return object.__getattribute__(self.__subproc, name)
            except AttributeError:
                raise AttributeError(f"{self.__class__!r} has no attribute {name!r}") from None

    def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        if self.__subproc.returncode is not None:
            return self.__subproc.returncode
        ret = Process.wait(self, timeout)
        self.__subproc.returncode = ret
        return ret


# --- what stays psutil's --------------------------------------------------------------------

#: psutil's names for disks, network interfaces, sensors and Windows, which tasksnap does
#: not answer (docs/python.md): asking tasksnap for one gives psutil's when psutil is
#: installed, so a script whose import was swapped keeps working.
_PSUTIL_ELSEWHERE = frozenset(
    {
        "disk_usage", "disk_partitions", "disk_io_counters", "net_io_counters",
        "net_if_addrs", "net_if_stats", "sensors_temperatures", "sensors_fans",
        "sensors_battery", "cpu_freq", "heap_info", "heap_trim", "AF_LINK",
        "NIC_DUPLEX_FULL", "NIC_DUPLEX_HALF", "NIC_DUPLEX_UNKNOWN", "POWER_TIME_UNKNOWN",
        "POWER_TIME_UNLIMITED", "win_service_iter", "win_service_get",
    }
)


_PSUTIL: Any = None


def _psutil() -> Any:
    """psutil itself, also where the caller's import is swapped (``sys.modules["psutil"]`` is
    this module: ``import psutil`` would give tasksnap back). Then psutil is imported aside,
    with its name free for the time of the import (its modules already loaded are used
    again), and the swap is put back."""
    global _PSUTIL
    if _PSUTIL is not None:
        return _PSUTIL
    me = sys.modules[__name__]
    if sys.modules.get("psutil") is not me:
        import psutil

        return psutil
    import importlib

    del sys.modules["psutil"]
    try:
        _PSUTIL = importlib.import_module("psutil")
    finally:
        sys.modules["psutil"] = me
    return _PSUTIL


def __getattr__(name: str) -> Any:
    if name in _PSUTIL_ELSEWHERE:
        try:
            psutil = _psutil()
        except ImportError:
            raise AttributeError(
                f"tasksnap does not provide {name!r} (disks, network interfaces and sensors "
                "are psutil's): install psutil to have it here"
            ) from None
        return getattr(psutil, name)
    raise AttributeError(f"module 'tasksnap' has no attribute {name!r}")


# psutil's namespace holds its API, every public name of it in __all__ (its test__all__):
# the typing names the annotations use are not tasksnap's (the annotations are strings).
del Any, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union
del annotations
