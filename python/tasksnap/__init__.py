"""tasksnap: Linux processes and threads read in one pass, with psutil's shape.

Three ways in:

* psutil's API where it exists: ``process_iter(attrs, ad_value)`` and ``Process(pid)``
  with ``as_dict()``, ``name()``, ``ppid()``, ``status()``, ``username()``, ``cmdline()``,
  ``cpu_times()``, ``memory_info()``, ``num_threads()``, ``create_time()``,
  ``io_counters()``, ``threads()``, ``children()``..., the same named tuples and the same
  exceptions (``NoSuchProcess``, ``ZombieProcess``, ``AccessDenied``). Switching from psutil
  is a change of the import line for these calls.
* ``snapshot(attrs, threads=False)``: the same attributes as columns in one call (a
  ``pyarrow.Table`` when pyarrow is installed, else a dict of lists), no object per process.
* ``states(pids=None, interval=1.0)``: the share of an interval each thread spent running,
  waiting for a CPU, sleeping, in D, stopped or otherwise, and why it waited most.

``last_report()`` says which backend answered the last whole-system call (the BPF task
iterator as root on a large host, else /proc) and what it cost. See docs/python.md.
"""

from __future__ import annotations

import collections
import os
import sys
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

__all__ = [
    "Error",
    "NoSuchProcess",
    "ZombieProcess",
    "AccessDenied",
    "TimeoutExpired",
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
]

__version__ = "0.1.0"

STATUS_RUNNING = "running"
STATUS_SLEEPING = "sleeping"
STATUS_DISK_SLEEP = "disk-sleep"
STATUS_STOPPED = "stopped"
STATUS_TRACING_STOP = "tracing-stop"
STATUS_ZOMBIE = "zombie"
STATUS_DEAD = "dead"
STATUS_IDLE = "idle"
STATUS_PARKED = "parked"


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
    """Kept for psutil's names; tasksnap has no ``wait()``."""

    def __init__(self, seconds: float, pid: Optional[int] = None, name: Optional[str] = None):
        Error.__init__(self)
        self.seconds = seconds
        self.pid = pid
        self.name = name
        self.msg = f"timeout after {seconds} seconds"


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
    }
)

#: Every attribute ``process_iter``, ``as_dict`` and ``snapshot`` accept, psutil's names.
ATTRS: Tuple[str, ...] = tuple(_tasksnap.attr_names())
_ATTRS_SET = frozenset(ATTRS)

#: The model's task fields ``snapshot`` and ``column_names`` also take by name, beyond
#: ``ATTRS``: each a column of its name, in the unit its name says (``utime_ns``,
#: ``shared_bytes``, ``egid``...); a bytes field (``exe``, ``wchan``, ``cgroup_v2_path``,
#: ``label``, ``systemd_unit``...) is text with a ``_bytes`` sibling, as ``name`` is.
#: A field added to tasksnap's table is here without a change to the binding.
FIELDS: Tuple[str, ...] = tuple(n for n, _, _ in _tasksnap.field_names())

# Attributes psutil has that tasksnap does not answer (yet): asking for one is a ValueError
# that says so, rather than psutil's "invalid attr name".
_PSUTIL_ONLY = frozenset(
    {
        "cpu_affinity", "cpu_percent", "cwd", "environ", "exe", "ionice", "memory_full_info",
        "memory_maps", "memory_percent", "net_connections", "num_fds", "open_files",
        "rlimit", "terminal", "threads", "info",
    }
)


def _check_attrs(attrs: Optional[Iterable[str]]) -> List[str]:
    """psutil's checks: a list, tuple or set of known names; None or empty means all."""
    if attrs is None:
        return list(ATTRS)
    if not isinstance(attrs, (list, tuple, set, frozenset)):
        raise TypeError(f"invalid attrs type {type(attrs)}")
    names = set(attrs)
    bad = names - _ATTRS_SET
    if bad:
        unsupported = bad & _PSUTIL_ONLY
        if unsupported:
            raise ValueError(
                "attr{} {} not provided by tasksnap (psutil has {}); tasksnap provides: {}".format(
                    "s" if len(unsupported) > 1 else "",
                    ", ".join(map(repr, sorted(unsupported))),
                    "them" if len(unsupported) > 1 else "it",
                    ", ".join(ATTRS),
                )
            )
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


_BACKEND = os.environ.get("TASKSNAP_BACKEND", "auto")


# --- Process -----------------------------------------------------------------------------


class Process:
    """A process, as ``psutil.Process``: made from a pid (the current process when None)
    and tied to its start time, so that a reused pid raises ``NoSuchProcess`` instead of
    answering for another process.

    Every method reads what it returns when called (no caching, as psutil on Linux), with
    one /proc read of this process through tasksnap's procfs collector.
    """

    # `_info` is the `info` dict once made; until then `_rows` (the pass of `process_iter`
    # that made this object, `_tasksnap.Infos`) makes it from row `_row` on first read.
    __slots__ = ("_pid", "_start_ns", "_name", "_info", "_rows", "_row", "__weakref__")

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
            raise NoSuchProcess(pid, msg=f"process PID not found") from None
        self._pid = pid
        self._start_ns = start_ns
        self._name = info.get("name")
        self._info: Optional[Dict[str, Any]] = {}
        self._rows = None
        self._row = 0

    @classmethod
    def _from(cls, pid: int, start_ns: int, name: Optional[str] = None) -> "Process":
        p = object.__new__(cls)
        p._pid = pid
        p._start_ns = start_ns
        p._name = name
        p._info = {}
        p._rows = None
        p._row = 0
        return p

    @property
    def info(self) -> Dict[str, Any]:
        """The attributes ``process_iter(attrs)`` read for this process (``{}`` without
        ``attrs``), as psutil's ``info``; made from that pass on first read."""
        info = self._info
        if info is None:
            info = self._rows.info(self._row)
            self._info = info
            self._rows = None
            if self._name is None:
                self._name = info.get("name")
        return info

    @info.setter
    def info(self, value: Dict[str, Any]) -> None:
        self._info = value
        self._rows = None

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
        return "tasksnap.Process({})".format(", ".join(f"{k}={v!r}" for k, v in info.items()))

    __repr__ = __str__

    def _get(self, attr: str) -> Any:
        _, info = _tasksnap.process(self._pid, [attr], None, False, self._start_ns, self._name)
        return info[attr]

    def oneshot(self):
        """psutil's context manager for grouped reads; a no-op here (``as_dict`` already
        reads each file once)."""
        import contextlib

        return contextlib.nullcontext()

    def as_dict(self, attrs: Optional[Iterable[str]] = None, ad_value: Any = None) -> Dict[str, Any]:
        """The attributes ``attrs`` (all of ``ATTRS`` when None) in one read; an attribute the
        caller may not read, or that a zombie no longer has, is ``ad_value``."""
        names = _check_attrs(attrs)
        _, info = _tasksnap.process(self._pid, names, ad_value, True, self._start_ns, self._name)
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
        if parent.create_time() <= self.create_time():
            return parent
        return None

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

    def cpu_times(self) -> pcputimes:
        """CPU seconds (``iowait`` is always 0.0: see docs/python.md)."""
        return self._get("cpu_times")

    def memory_info(self) -> pmem:
        """Memory in bytes, as /proc/PID/statm gives it."""
        return self._get("memory_info")

    def num_threads(self) -> int:
        """Number of threads."""
        return self._get("num_threads")

    def create_time(self) -> float:
        """Start time, seconds since the epoch (boot time + start ticks, as psutil)."""
        return self._get("create_time")

    def io_counters(self) -> pio:
        """I/O counters; another user's process raises ``AccessDenied`` unless root."""
        return self._get("io_counters")

    def nice(self) -> int:
        """The nice value (read only here)."""
        return self._get("nice")

    def cpu_num(self) -> int:
        """The CPU the process last ran on."""
        return self._get("cpu_num")

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


def process_iter(attrs: Optional[Iterable[str]] = None, ad_value: Any = None) -> Iterator[Process]:
    """Every process, sorted by pid, as ``psutil.process_iter``: all of them are read in one
    pass of tasksnap's library when the iterator is created, and when ``attrs`` is given
    (an empty list: every attribute), each ``Process`` has them in ``.info``, an attribute
    the caller may not read (or a zombie's) being ``ad_value``.

    As psutil, the ``Process`` objects are kept between calls: a process still running (same
    pid and start time) is the same object, with a new ``info``; a process that exits while
    the caller iterates is still yielded, with what the pass read. Each ``info`` dict is
    made from the pass when first read.
    """
    names = ATTRS if attrs is None else _check_attrs(attrs)
    return iter(
        _tasksnap.process_objects(
            Process, list(names) if attrs is not None else ["name"], ad_value, attrs is not None,
            _PMAP, _BACKEND,
        )
    )


#: process_iter's Process objects by pid, from its last call (psutil's ``_pmap``).
_PMAP: Dict[int, Process] = {}


def pids() -> List[int]:
    """The pids of every process, sorted."""
    return [pid for pid, _, _ in _tasksnap.processes(["pid"], None, _BACKEND)]


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
        _tasksnap.process(pid, ["pid"], None, True)
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
    """``_check_attrs`` for ``snapshot``: the names of ``FIELDS`` are valid too."""
    if isinstance(attrs, (list, tuple, set, frozenset)):
        fields = [a for a in attrs if a in FIELDS and a not in _ATTRS_SET]
        if fields:
            rest = [a for a in attrs if a not in fields]
            checked = _check_attrs(rest) if rest else []
            order = list(dict.fromkeys(attrs)) if isinstance(attrs, (list, tuple)) else sorted(set(attrs))
            return [a for a in order if a in fields or a in checked]
    return _check_attrs(attrs)


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
