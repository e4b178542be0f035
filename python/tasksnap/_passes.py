"""What psutil lacks: every process as columns in one call (``snapshot``, ``column_names``:
psutil's attributes that have columns, and any field of the model's table by name), thread
states over an interval (``states``), and what answered the last whole-system call and what it
cost (``last_report``).

Each call asks for the backend the package's ``_BACKEND`` names, read when it is made (tests
assign it).
"""

from __future__ import annotations

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


for _obj in (snapshot, column_names, ThreadStates, states, PassReport, last_report):
    _obj.__module__ = "tasksnap"
del _obj
