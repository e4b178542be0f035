"""What psutil lacks: every process as columns in one call (``snapshot``, ``column_names``:
psutil's attributes that have columns, and any field of the model's table by name), thread
states over an interval (``states``), the host's cgroups with their own counters
(``cgroups``, ``cgroups_table``: the fields of the model's cgroup table), and what answered the
last whole-system call and what it cost (``last_report``).

Each call asks for the backend the package's ``_BACKEND`` names, read when it is made (tests
assign it).
"""

from __future__ import annotations

import collections
import sys
from typing import Any, Iterable, List, NamedTuple, Optional, Tuple

from . import _tasksnap
from ._common import _ATTRS_SET, _NATIVE_ATTRS, _PID_MAX, _check_pid

#: The attributes ``snapshot`` has columns for (psutil's names; see ``column_names``).
COLUMN_ATTRS: Tuple[str, ...] = tuple(n for n, columnar in _NATIVE_ATTRS if columnar)

#: The model's task fields ``snapshot`` and ``column_names`` also take by name, beyond
#: ``COLUMN_ATTRS``: each a column of its name, in the unit its name says (``utime_ns``,
#: ``shared_bytes``, ``egid``...); a bytes field (``exe``, ``wchan``, ``cgroup_v2_path``,
#: ``label``, ``systemd_unit``...) is text with a ``_bytes`` sibling, as ``name`` is.
#: A field added to tasksnap's table is here without a change to the binding.
FIELDS: Tuple[str, ...] = tuple(n for n, _, _ in _tasksnap.field_names())
_COLUMNS_SET = frozenset(COLUMN_ATTRS) | frozenset(FIELDS)


def _backend() -> str:
    """The backend every call asks for: the package's ``_BACKEND``."""
    return sys.modules[__package__]._BACKEND


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
    cols = _tasksnap.snapshot(names, bool(threads), _backend())
    return _table(cols, arrow)


def _table(cols: Any, arrow: Optional[bool]) -> Any:
    """The library's columns (``_tasksnap.Columns``) as a ``pyarrow.Table`` (imported without
    a copy) when pyarrow is installed (``arrow=None``) or asked for (``arrow=True``), else a
    dict of lists made from the same arrays."""
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
    #: Runnable but held back by its cgroup's CPU quota (``cpu.cfs_quota_us``, ``cpu.max``):
    #: the part of the wait for a CPU that was the quota rather than other threads.
    throttled: float
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
    (waiting for a CPU behind other threads), throttled (held back by its cgroup's CPU
    quota), sleeping, in disk sleep (D), stopped, or other, and the top reason it was off
    the CPU. As root the BPF accounting answers (exact); otherwise /proc, where
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
    _, rows = _tasksnap.states(want, float(interval), _backend())
    out = []
    for pid, tid, name, pct, reason, exited in rows:
        wait_state, frames = reason if reason is not None else (None, ())
        out.append(ThreadStates(pid, tid, name, *pct, wait_state, tuple(frames), exited))
    out.sort(key=lambda r: (r.pid, r.tid))
    return out


#: The counters ``cgroups()`` gives each cgroup, in order: the fields of tasksnap's cgroup
#: table (``tasksnap_model::CGROUP_FIELDS``, the counters ``tasksnap cgroups --output json``
#: writes), each named with its unit (``cpu_usage_ns``, ``memory_limit_bytes``...). A field
#: added to that table is here, and in ``Cgroup``, without a change to the binding.
CGROUP_FIELDS: Tuple[str, ...] = tuple(f[0] for f in _tasksnap.cgroup_fields())

Cgroup = collections.namedtuple(  # type: ignore[misc]
    "Cgroup",
    ("path", "hierarchy", "controllers") + CGROUP_FIELDS + tuple(_tasksnap.cgroup_rate_names()),
)
Cgroup.__doc__ = """One cgroup (``cgroups()``): ``path`` below its hierarchy's root (``/`` is the
root; a ``str``, surrogate-escaped where the name is not UTF-8, as process names),
``hierarchy`` (``"v2"`` or ``"v1"``), ``controllers`` (a v1 path's controllers, merged over
the v1 hierarchies that have it; ``()`` for v2), then each of ``CGROUP_FIELDS``: an ``int``
in the unit its name says, ``math.inf`` for a limit that is none (``max``, ``-1``), None
when not read (the file is not there: another hierarchy's controller, a kernel without it).
Then the rates over ``cgroups(interval=...)``'s interval, floats, None without an interval
or when a counter is missing or went backwards: ``cpu_percent`` (CPU time used, % of one
CPU, as psutil's ``Process.cpu_percent``), ``throttled_percent`` (time held back by the CPU
quota, % of the interval) and ``psi_cpu_some_percent`` (growth of ``cpu.pressure``'s
``some`` total, % of the interval; v2 only)."""


def _cgroup_args(depth: Any, interval: Any) -> Tuple[int, Optional[float]]:
    """``depth`` and ``interval`` checked as ``states()`` checks an interval."""
    if isinstance(depth, bool) or not isinstance(depth, int):
        raise TypeError(f"depth must be an int (got {depth!r})")
    if depth < 0:
        raise ValueError(f"depth must be 0 or more (got {depth})")
    if interval is None:
        return depth, None
    if isinstance(interval, bool) or not isinstance(interval, (int, float)):
        raise TypeError(f"interval must be a number of seconds (got {interval!r})")
    return depth, float(interval)


def cgroups(depth: int = 3, interval: Optional[float] = None) -> List[Cgroup]:
    """The host's cgroups down to ``depth`` (the root is 0, at most 64) with their own
    counters, as the kernel's control files give them: one ``Cgroup`` per cgroup of the v2
    hierarchy and one per path of the v1 hierarchies (their controllers merged by path),
    v2 first, each hierarchy parents before children. With ``interval`` (seconds), the
    cgroups are read twice that far apart (blocking; Ctrl-C interrupts it at once): the
    counters are the second reading's, and ``cpu_percent``, ``throttled_percent`` and
    ``psi_cpu_some_percent`` the rates between the two, as ``tasksnap cgroups`` shows them.
    Files are read relative to directory descriptors, following no link; without root, what
    cgroupfs lets the caller read."""
    d, i = _cgroup_args(depth, interval)
    return [Cgroup._make(r) for r in _tasksnap.cgroups(d, i)]


def cgroups_table(depth: int = 3, interval: Optional[float] = None, *,
                  arrow: Optional[bool] = None) -> Any:
    """``cgroups()`` as columns: a ``pyarrow.Table`` when pyarrow is installed (as
    ``snapshot()``'s, the library's Arrow arrays imported without a copy), else a dict of
    lists. The columns are ``Cgroup``'s fields, typed: ``path`` (string, valid UTF-8, invalid
    bytes replaced by U+FFFD) and beside it ``path_bytes`` (binary: the exact bytes where the
    path is not UTF-8, null otherwise), ``hierarchy`` (string), ``controllers``
    (list<string>), each of ``CGROUP_FIELDS`` (int64, uint64 when a value is beyond it; a
    limit float64, inf for none), the rates (double). Not read is null."""
    d, i = _cgroup_args(depth, interval)
    return _table(_tasksnap.cgroups_columns(d, i), arrow)


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


for _obj in (snapshot, column_names, ThreadStates, states, Cgroup, cgroups, cgroups_table,
             PassReport, last_report):
    _obj.__module__ = "tasksnap"
del _obj
