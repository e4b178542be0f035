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
* ``cgroups(depth=3, interval=None)``: the host's cgroups (v2, and v1 merged by path) with
  their own counters (CPU, quota, throttling, memory, I/O, pressure) and, over an interval,
  CPU% and throttled %; ``cgroups_table()`` the same as a ``pyarrow.Table``.

``last_report()`` says which backend answered the last whole-system call (the BPF task
iterator as root on a large host, else /proc) and what it cost. See docs/python.md.
"""

from __future__ import annotations

import collections
import errno
import os
import resource as _resource
import signal
import subprocess
import sys
import time
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

if not sys.platform.startswith("linux"):  # pragma: no cover - exercised on other systems
    # psutil's answer on a platform it does not support.
    raise NotImplementedError(f"platform {sys.platform} is not supported")

from . import _tasksnap

# The package along psutil's own seams: this module holds ``Process``, ``Popen``,
# ``process_iter``, ``wait_procs`` and the module's face; ``_common`` psutil's constants,
# exceptions and named tuples; ``_posix`` waiting and signalling (psutil's ``_psposix``);
# ``_files`` one process's files; ``_system`` the host figures; ``_passes`` what psutil
# lacks (``snapshot``, ``states``, ``last_report``). Every public name is ``tasksnap``'s.
from ._common import (  # noqa: E402 - psutil's constants, exceptions and named tuples
    AIX,
    ATTRS,
    BSD,
    FREEBSD,
    LINUX,
    MACOS,
    NETBSD,
    OPENBSD,
    OSX,
    POSIX,
    STATUS_DEAD,
    STATUS_DISK_SLEEP,
    STATUS_IDLE,
    STATUS_LOCKED,
    STATUS_PARKED,
    STATUS_RUNNING,
    STATUS_SLEEPING,
    STATUS_STOPPED,
    STATUS_TRACING_STOP,
    STATUS_WAITING,
    STATUS_WAKING,
    STATUS_ZOMBIE,
    SUNOS,
    WINDOWS,
    AccessDenied,
    Error,
    NoSuchProcess,
    ReadTimeout,
    TimeoutExpired,
    ZombieProcess,
    _ATTRS_SET,
    _METHOD_ATTRS,
    _PASS_ATTRS,
    _PID_MAX,
    _check_attrs,
    _check_pid,
    pcputimes,
    pctxsw,
    pgids,
    pio,
    pmem,
    pthread,
    puids,
)
from ._files import *  # noqa: E402,F401,F403 - psutil's tuples and constants of one process's files
from ._files import __all__ as _files_all  # noqa: E402
from ._files import _FilesMixin  # noqa: E402
from ._passes import (  # noqa: E402 - what psutil lacks
    CGROUP_FIELDS,
    COLUMN_ATTRS,
    FIELDS,
    Cgroup,
    PassReport,
    ThreadStates,
    cgroups,
    cgroups_table,
    column_names,
    last_report,
    snapshot,
    states,
)
from ._posix import _UNSET, Negsignal, _pidfd_open, _wait_pid  # noqa: E402
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
    "cgroups",
    "cgroups_table",
    "Cgroup",
    "CGROUP_FIELDS",
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
del Any, Dict, Iterable, Iterator, List, Optional, Tuple
del annotations
