"""psutil's ``Process`` methods that read one process's files or make a system call no
snapshot carries: ``cwd()``, ``open_files()``, ``memory_maps()``, ``memory_full_info()``,
``net_connections()`` (and its deprecated alias ``connections()``), ``ionice()`` and
``terminal()``; and the module-level ``net_connections(kind)``.

They live in :class:`_FilesMixin`, which ``Process`` inherits; the values and exceptions are
psutil 7.2.2's (the named tuples below, ``CONN_*``, ``IOPRIO_CLASS_*``). The reading is the
library's (``tasksnap._tasksnap``: never a /proc path here).
"""

from __future__ import annotations

import enum
import socket
import warnings
from typing import Any, List, NamedTuple, Optional, Union

from . import _tasksnap

__all__ = [
    "popenfile",
    "pmmap_grouped",
    "pmmap_ext",
    "pfullmem",
    "pconn",
    "sconn",
    "pionice",
    "addr",
    "IOPriority",
    "IOPRIO_CLASS_NONE",
    "IOPRIO_CLASS_RT",
    "IOPRIO_CLASS_BE",
    "IOPRIO_CLASS_IDLE",
    "CONN_ESTABLISHED",
    "CONN_SYN_SENT",
    "CONN_SYN_RECV",
    "CONN_FIN_WAIT1",
    "CONN_FIN_WAIT2",
    "CONN_TIME_WAIT",
    "CONN_CLOSE",
    "CONN_CLOSE_WAIT",
    "CONN_LAST_ACK",
    "CONN_LISTEN",
    "CONN_CLOSING",
    "CONN_NONE",
    "net_connections",
]

CONN_ESTABLISHED = "ESTABLISHED"
CONN_SYN_SENT = "SYN_SENT"
CONN_SYN_RECV = "SYN_RECV"
CONN_FIN_WAIT1 = "FIN_WAIT1"
CONN_FIN_WAIT2 = "FIN_WAIT2"
CONN_TIME_WAIT = "TIME_WAIT"
CONN_CLOSE = "CLOSE"
CONN_CLOSE_WAIT = "CLOSE_WAIT"
CONN_LAST_ACK = "LAST_ACK"
CONN_LISTEN = "LISTEN"
CONN_CLOSING = "CLOSING"
CONN_NONE = "NONE"


class IOPriority(enum.IntEnum):
    """I/O scheduling classes (``ioprio_set(2)``), as psutil names them."""

    IOPRIO_CLASS_NONE = 0
    IOPRIO_CLASS_RT = 1
    IOPRIO_CLASS_BE = 2
    IOPRIO_CLASS_IDLE = 3


IOPRIO_CLASS_NONE = IOPriority.IOPRIO_CLASS_NONE
IOPRIO_CLASS_RT = IOPriority.IOPRIO_CLASS_RT
IOPRIO_CLASS_BE = IOPriority.IOPRIO_CLASS_BE
IOPRIO_CLASS_IDLE = IOPriority.IOPRIO_CLASS_IDLE


class popenfile(NamedTuple):
    """A regular file a process has open (``Process.open_files()``)."""

    path: str
    fd: int
    position: int
    mode: str
    flags: int


class pmmap_grouped(NamedTuple):
    """A process's mappings of one path, summed, bytes (``memory_maps(grouped=True)``)."""

    path: str
    rss: int
    size: int
    pss: int
    shared_clean: int
    shared_dirty: int
    private_clean: int
    private_dirty: int
    referenced: int
    anonymous: int
    swap: int


class pmmap_ext(NamedTuple):
    """One mapping, bytes (``memory_maps(grouped=False)``)."""

    addr: str
    perms: str
    path: str
    rss: int
    size: int
    pss: int
    shared_clean: int
    shared_dirty: int
    private_clean: int
    private_dirty: int
    referenced: int
    anonymous: int
    swap: int


class pfullmem(NamedTuple):
    """``memory_info()``'s figures plus USS, PSS and swap, bytes (``memory_full_info()``)."""

    rss: int
    vms: int
    shared: int
    text: int
    lib: int
    data: int
    dirty: int
    uss: int
    pss: int
    swap: int


class addr(NamedTuple):
    """An IP address and port of a connection."""

    ip: str
    port: int


class pconn(NamedTuple):
    """A socket of a process (``Process.net_connections()``)."""

    fd: int
    family: Any
    type: Any
    laddr: Any
    raddr: Any
    status: str


class sconn(NamedTuple):
    """A socket of the host and the process holding it (``net_connections()``)."""

    fd: int
    family: Any
    type: Any
    laddr: Any
    raddr: Any
    status: str
    pid: Optional[int]


class pionice(NamedTuple):
    """I/O scheduling class and level (``Process.ionice()``)."""

    ioclass: Any
    value: int


# In psutil's order (its error message lists them so).
_KINDS = ("all", "tcp", "tcp4", "udp", "udp4", "inet", "inet4", "inet6", "tcp6", "udp6", "unix")


def _check_kind(kind: Any) -> None:
    if kind not in _KINDS:
        raise ValueError(f"invalid kind argument {kind!r}; valid ones are: {_KINDS}")


def _enum(convert: Any, value: int) -> Any:
    try:
        return convert(value)
    except ValueError:
        return value


def _end(a: Any) -> Any:
    # An inet end is a (ip, port) pair, or () for none; a unix one a str.
    if isinstance(a, tuple) and a:
        return addr(*a)
    return a


def _conn(raw: tuple) -> tuple:
    fd, family, type_, laddr, raddr, status = raw[:6]
    return (
        fd,
        _enum(socket.AddressFamily, family),
        _enum(socket.SocketKind, type_),
        _end(laddr),
        _end(raddr),
        status,
    )


def net_connections(kind: str = "inet") -> List[sconn]:
    """Every socket of the host (of the caller's network namespace) as ``sconn``; ``fd`` -1
    and ``pid`` None for one no process the caller may look into holds (psutil's)."""
    _check_kind(kind)
    return [sconn(*_conn(r), r[6]) for r in _tasksnap.all_net_connections(kind)]


class _FilesMixin:
    """The methods; the class that inherits it sets ``_pid``, ``_start_ns`` and ``_name``."""

    __slots__ = ()
    _pid: int
    _start_ns: Optional[int]
    _name: Optional[str]

    def cwd(self) -> str:
        """The working directory ("" when the kernel has none to show, a kernel thread's)."""
        return _tasksnap.cwd(self._pid, self._start_ns, self._name)

    def open_files(self) -> List[popenfile]:
        """The regular files the process has open, with position, mode and flags. A stat of
        a path blocked on a file system (a FUSE server that does not answer) past the
        library's deadline raises ``ReadTimeout``."""
        return [popenfile(*f) for f in _tasksnap.open_files(self._pid, self._start_ns, self._name)]

    def memory_maps(self, grouped: bool = True) -> Union[List[pmmap_grouped], List[pmmap_ext]]:
        """The mappings of /proc/PID/smaps, grouped by path (figures summed) or one each
        with address and permissions; bytes. A read blocked on the process's mmap lock past
        the library's deadline raises ``ReadTimeout``."""
        rows = _tasksnap.memory_maps(self._pid, bool(grouped), self._start_ns, self._name)
        cls = pmmap_grouped if grouped else pmmap_ext
        return [cls(*r) for r in rows]

    def memory_full_info(self) -> pfullmem:
        """``memory_info()`` plus USS, PSS and swap (smaps_rollup, else smaps)."""
        uss, pss, swap = _tasksnap.memory_extras(self._pid, self._start_ns, self._name)
        return pfullmem(*tuple(self.memory_info()), uss, pss, swap)  # type: ignore[attr-defined]

    def net_connections(self, kind: str = "inet") -> List[pconn]:
        """The process's sockets of ``kind`` ('inet', 'tcp4', 'unix', 'all'...)."""
        _check_kind(kind)
        rows = _tasksnap.net_connections(self._pid, kind, self._start_ns, self._name)
        return [pconn(*_conn(r)) for r in rows]

    def connections(self, kind: str = "inet") -> List[pconn]:
        """Deprecated alias of ``net_connections()`` (psutil warns too)."""
        warnings.warn(
            "connections() is deprecated and will be removed; use net_connections() instead",
            category=DeprecationWarning,
            stacklevel=2,
        )
        return self.net_connections(kind=kind)

    def ionice(self, ioclass: Optional[int] = None, value: Optional[int] = None) -> Optional[pionice]:
        """Get (no argument) or set the I/O scheduling class and level (0-7)."""
        if ioclass is None:
            if value is not None:
                raise ValueError("'ioclass' argument must be specified")
            c, v = _tasksnap.ionice_get(self._pid, self._start_ns, self._name)
            return pionice(_enum(IOPriority, c), v)
        if value is None:
            value = 0
        if value and ioclass in {IOPriority.IOPRIO_CLASS_IDLE, IOPriority.IOPRIO_CLASS_NONE}:
            raise ValueError(f"{ioclass!r} ioclass accepts no value")
        if value < 0 or value > 7:
            raise ValueError("value not in 0-7 range")
        _tasksnap.ionice_set(self._pid, int(ioclass), int(value), self._start_ns, self._name)
        return None

    def terminal(self) -> Optional[str]:
        """The path of the controlling terminal, or None."""
        return _tasksnap.terminal(self._pid, self._start_ns, self._name)
