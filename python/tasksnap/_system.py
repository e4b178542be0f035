"""psutil's host helpers: CPU counts and times, CPU use since the last call, memory and swap,
load averages and the users logged in, with psutil 7's fields, formulas, rounding and
argument checks (Linux).

The figures come from the library (``_tasksnap``: /proc/stat, meminfo, zoneinfo, vmstat,
loadavg, sysfs topology, utmp, on the tree the binding reads, a fake one in tests); what
psutil computes from them is computed here, in Python floats, as psutil does, so the
results are the same numbers. ``cpu_percent`` and ``cpu_times_percent`` keep psutil's
state: the times of the last call, per calling thread, each function its own, taken at
import for the importing thread.

Where this differs from psutil (docs/python.md says so too):

* ``swap_memory().sin``/``sout``: pages swapped times the page size; psutil multiplies by
  4096 whatever the page size (the same on 4 KiB pages, 4x or 16x too small on 16 or
  64 KiB pages).
* A figure whose file cannot be read raises ``OSError`` with the library's message, not the
  ``FileNotFoundError`` of an ``open``. On a fake tree (``TASKSNAP_PROC_ROOT``), meminfo
  without ``SwapTotal`` gives 0 and ``getloadavg()`` the tree's /proc/loadavg: psutil's
  ``sysinfo(2)`` would answer for the running kernel, not the tree.
"""

from __future__ import annotations

import collections
import os
import threading
import time
import warnings
from typing import Dict, List, Optional, Tuple, Union

from . import _tasksnap

__all__ = [
    "cpu_count",
    "cpu_times",
    "cpu_percent",
    "cpu_times_percent",
    "cpu_stats",
    "virtual_memory",
    "swap_memory",
    "getloadavg",
    "users",
    "scputimes",
    "scpustats",
    "svmem",
    "sswap",
    "suser",
]

# --- named tuples: psutil's names and fields --------------------------------------------

_CPU_FIELDS = (
    "user",
    "nice",
    "system",
    "idle",
    "iowait",
    "irq",
    "softirq",
    "steal",  # Linux 2.6.11
    "guest",  # Linux 2.6.24
    "guest_nice",  # Linux 3.2
)


def _cpu_field_count() -> int:
    # As psutil: as many fields as the kernel prints on the aggregate line (at least 7).
    try:
        return max(7, min(len(_tasksnap.cpu_times(False)[1]), len(_CPU_FIELDS)))
    except Exception:  # noqa: BLE001 - nothing may fail at import; the calls will say
        return len(_CPU_FIELDS)


scputimes = collections.namedtuple("scputimes", _CPU_FIELDS[: _cpu_field_count()])
scpustats = collections.namedtuple(
    "scpustats", ("ctx_switches", "interrupts", "soft_interrupts", "syscalls")
)
svmem = collections.namedtuple(
    "svmem",
    (
        "total",
        "available",
        "percent",
        "used",
        "free",
        "active",
        "inactive",
        "buffers",
        "cached",
        "shared",
        "slab",
    ),
)
sswap = collections.namedtuple("sswap", ("total", "used", "free", "percent", "sin", "sout"))
suser = collections.namedtuple("suser", ("name", "terminal", "host", "started", "pid"))


def _usage_percent(used: float, total: float) -> float:
    try:
        return round((float(used) / total) * 100, 1)
    except ZeroDivisionError:
        return 0.0


# --- CPU ---------------------------------------------------------------------------------


def cpu_count(logical: bool = True) -> Optional[int]:
    """The number of logical CPUs online (as ``os.cpu_count()``), or with ``logical=False``
    the physical cores (the distinct core sibling lists of sysfs, else /proc/cpuinfo's cores
    per package); None when it cannot be told."""
    ret = _tasksnap.cpu_count(bool(logical))
    if ret is not None and ret < 1:
        ret = None
    return ret


def _times(values: List[int], ticks: int) -> scputimes:
    n = len(scputimes._fields)
    values = (list(values) + [0] * n)[:n]
    return scputimes(*[float(v) / ticks for v in values])


def cpu_times(percpu: bool = False) -> Union[scputimes, List[scputimes]]:
    """Seconds the CPUs spent in each mode since boot (/proc/stat): one ``scputimes`` for the
    whole machine, or with ``percpu=True`` one per online CPU, in /proc/stat's order."""
    ticks, total, per = _tasksnap.cpu_times(bool(percpu))
    if not percpu:
        return _times(total, ticks)
    return [_times(v, ticks) for v in per]


def _tid() -> Optional[int]:
    return threading.current_thread().ident


# The times of the last call per thread, taken at import for the importing thread (so the
# first call measures since import, as psutil's); cpu_times_percent() keeps its own.
try:
    _last_cpu_times: Dict[Optional[int], scputimes] = {_tid(): cpu_times()}
except Exception:  # noqa: BLE001 - nothing may fail at import
    _last_cpu_times = {}
try:
    _last_per_cpu_times: Dict[Optional[int], List[scputimes]] = {_tid(): cpu_times(percpu=True)}
except Exception:  # noqa: BLE001
    _last_per_cpu_times = {}
_last_cpu_times_2 = _last_cpu_times.copy()
_last_per_cpu_times_2 = _last_per_cpu_times.copy()


def _total(t: scputimes) -> float:
    # guest and guest_nice are counted in user and nice already (kernel/sched/cputime.c).
    return sum(t) - getattr(t, "guest", 0) - getattr(t, "guest_nice", 0)


def _busy(t: scputimes) -> float:
    # iowait is idle time the kernel counts apart.
    return _total(t) - t.idle - getattr(t, "iowait", 0)


def _deltas(t1: scputimes, t2: scputimes) -> scputimes:
    # A counter that went back (seen on Linux, psutil #392, #645, #1210) counts as 0, as top.
    return scputimes(*[max(0, b - a) for a, b in zip(t1, t2)])


def _check_interval(interval: Optional[float], fmt: str) -> bool:
    if interval is not None and interval < 0:
        raise ValueError(fmt.format(interval))
    return interval is not None and interval > 0.0


def _percent(t1: scputimes, t2: scputimes) -> float:
    d = _deltas(t1, t2)
    try:
        return round((_busy(d) / _total(d)) * 100, 1)
    except ZeroDivisionError:
        return 0.0


def _times_percent(t1: scputimes, t2: scputimes) -> scputimes:
    d = _deltas(t1, t2)
    # psutil's scale: 100 over the total, but never over less than 1 (second): an interval
    # of less than a CPU-second in all scales as if it were one, as psutil does.
    scale = 100.0 / max(1, _total(d))
    return scputimes(*[min(max(0.0, round(v * scale, 1)), 100.0) for v in d])


def _since_last(interval, percpu, last, last_per, calculate):
    tid = _tid()
    blocking = interval is not None and interval > 0.0
    if not percpu:
        if blocking:
            t1 = cpu_times()
            time.sleep(interval)
        else:
            t1 = last.get(tid) or cpu_times()
        last[tid] = cpu_times()
        return calculate(t1, last[tid])
    if blocking:
        tot1 = cpu_times(percpu=True)
        time.sleep(interval)
    else:
        tot1 = last_per.get(tid) or cpu_times(percpu=True)
    last_per[tid] = cpu_times(percpu=True)
    return [calculate(a, b) for a, b in zip(tot1, last_per[tid])]


def cpu_percent(interval: Optional[float] = None, percpu: bool = False) -> Union[float, List[float]]:
    """The share of CPU time that was busy, percent (one decimal): over ``interval`` seconds
    (blocking) when it is above 0, else since this thread's last call (or the import): the
    first call then says 0.0 or little. ``percpu=True``: one figure per CPU."""
    _check_interval(interval, "interval is not positive (got {})")
    return _since_last(interval, percpu, _last_cpu_times, _last_per_cpu_times, _percent)


def cpu_times_percent(
    interval: Optional[float] = None, percpu: bool = False
) -> Union[scputimes, List[scputimes]]:
    """As ``cpu_percent`` for each mode of ``cpu_times()``: an ``scputimes`` of percentages
    (one decimal, 0 to 100), with its own "since the last call" state."""
    _check_interval(interval, "interval is not positive (got {!r})")
    return _since_last(
        interval, percpu, _last_cpu_times_2, _last_per_cpu_times_2, _times_percent
    )


def cpu_stats() -> scpustats:
    """Context switches, interrupts and soft interrupts since boot (/proc/stat); system
    calls are not counted on Linux (0), as in psutil."""
    ctx, intr, soft = _tasksnap.cpu_stats()
    return scpustats(ctx, intr, soft, 0)


# --- memory ------------------------------------------------------------------------------


def _available_estimate(mems: Dict[str, int], page: int) -> int:
    # The kernel's own estimate (si_mem_available, Linux 3.14), for kernels without
    # MemAvailable or where it reads 0 (psutil #1915): free memory above the low
    # watermarks, plus the page cache and reclaimable slab each less what the watermarks
    # keep (at most half of each).
    free = mems["MemFree"]
    fallback = free + mems.get("Cached", 0)
    try:
        lru_active_file = mems["Active(file)"]
        lru_inactive_file = mems["Inactive(file)"]
        slab_reclaimable = mems["SReclaimable"]
    except KeyError:
        return fallback
    low_pages = _tasksnap.zoneinfo_low_pages()
    if low_pages is None:  # no /proc/zoneinfo (before 2.6.13)
        return fallback
    watermark_low = low_pages * page
    avail = free - watermark_low
    pagecache = lru_active_file + lru_inactive_file
    pagecache -= min(pagecache / 2, watermark_low)
    avail += pagecache
    avail += slab_reclaimable - min(slab_reclaimable / 2.0, watermark_low)
    return int(avail)


def _warn_zeroed(names: List[str], stacklevel: int = 3) -> None:
    if names:
        warnings.warn(
            "tasksnap: " + ", ".join(names) + " not in this kernel's files: reported as 0",
            RuntimeWarning,
            stacklevel=stacklevel,
        )


def _or_missing(value: Optional[int], name: str, missing: List[str]) -> int:
    """``value``, or 0 with ``name`` noted in ``missing`` when the kernel does not have it."""
    if value is None:
        missing.append(name)
        return 0
    return value


def virtual_memory() -> svmem:
    """Memory in bytes as psutil reports it (and ``free(1)``): ``available`` is MemAvailable
    (the kernel's estimate where it is missing or 0), ``percent`` = (total - available) /
    total, ``used`` = total - available, ``cached`` = Cached + SReclaimable, ``shared`` =
    Shmem; a field the kernel does not have is 0, with a ``RuntimeWarning``."""
    raw = _tasksnap.meminfo()
    page = raw.pop("page_size")
    mems = {k: v * 1024 for k, v in raw.items()}
    missing: List[str] = []
    total = mems["MemTotal"]
    free = mems["MemFree"]
    buffers = _or_missing(mems.get("Buffers"), "buffers", missing)
    cached = mems.get("Cached")
    if cached is not None:
        # free(1) counts reclaimable slab as cache (procps-ng 3.3.10 on).
        cached += mems.get("SReclaimable", 0)
    cached = _or_missing(cached, "cached", missing)
    shared = _or_missing(mems.get("Shmem", mems.get("MemShared")), "shared", missing)
    active = _or_missing(mems.get("Active"), "active", missing)
    inactive = mems.get("Inactive")
    if inactive is None:
        parts = [mems.get(k) for k in ("Inact_dirty", "Inact_clean", "Inact_laundry")]
        if None not in parts:
            inactive = sum(parts)
    inactive = _or_missing(inactive, "inactive", missing)
    slab = mems.get("Slab", 0)
    avail = mems.get("MemAvailable")
    if not avail:
        avail = _available_estimate(mems, page)
    if avail < 0:
        avail = 0
        missing.append("available")
    elif avail > total:
        # A container's meminfo mixing its own and the host's figures: free(1) falls back
        # to the free memory too.
        avail = free
    used = total - avail
    percent = _usage_percent(total - avail, total)
    _warn_zeroed(missing)
    return svmem(total, avail, percent, used, free, active, inactive, buffers, cached, shared, slab)


def swap_memory() -> sswap:
    """Swap in bytes (/proc/meminfo) and the bytes swapped in and out since boot
    (/proc/vmstat's pswpin and pswpout, pages, times the page size)."""
    raw = _tasksnap.meminfo()
    page = raw["page_size"]
    missing: List[str] = []
    if "SwapTotal" in raw and "SwapFree" in raw:
        total, free = raw["SwapTotal"] * 1024, raw["SwapFree"] * 1024
    else:
        # psutil's fallback: sysinfo(2), which answers for the running kernel only.
        answer = _tasksnap.sysinfo_swap_bytes()
        if answer is None:  # a fake tree: the running kernel's swap is not its
            answer = (0, 0)
            missing.append("total/free")
        total, free = answer
    used = total - free
    percent = _usage_percent(used, total)
    io = _tasksnap.swap_io_pages()
    if io is None:
        sin = sout = 0
        missing.append("sin/sout")
    else:
        sin, sout = io[0] * page, io[1] * page
    _warn_zeroed(missing)
    return sswap(total, used, free, percent, sin, sout)


def getloadavg() -> Tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages, as ``os.getloadavg()`` (``sysinfo(2)``'s
    fixed point, more digits than /proc/loadavg shows; on a fake tree, its loadavg)."""
    try:
        return _tasksnap.getloadavg()
    except OSError as e:
        raise OSError("Load averages are unobtainable") from e


# --- users -------------------------------------------------------------------------------


def users() -> List[suser]:
    """The users logged in: the USER_PROCESS records of utmp, in its order. ``terminal`` is
    None when the record has none; an X display ``:0`` or ``:0.0`` is the host
    ``localhost``; ``started`` is the login time in seconds since the epoch (a float);
    names are decoded as file names (``os.fsdecode``), so no bytes make it raise."""
    out = []
    for user, line, host, started, pid in _tasksnap.users():
        terminal = os.fsdecode(line) or None
        host = "localhost" if host in (b":0", b":0.0") else os.fsdecode(host)
        out.append(suser(os.fsdecode(user), terminal, host, float(started), pid))
    return out
