"""psutil's host helpers (tasksnap._system) against psutil 7.2.2, side by side.

Two kinds of comparison:

* On this machine: static figures exactly (cpu_count, total memory, the tuple fields);
  moving ones read psutil, tasksnap, psutil, and tasksnap must lie within the two psutil
  readings' spread plus a small margin (counters only grow; memory moves on a busy host,
  so a comparison is tried a few times and one clean pass is enough).
* On a fake tree, exactly: a subprocess points psutil (``psutil.PROCFS_PATH``, glibc's
  ``utmpxname``) and tasksnap (``TASKSNAP_PROC_ROOT``) at the same files, rewrites them
  between calls, and compares every value: the meminfo variants of old and odd kernels,
  CPU use since the last call, swap, utmp's records.
"""

import os
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest

from tasksnap import _system as ts


def _between(v, a, b, margin):
    return min(a, b) - margin <= v <= max(a, b) + margin


def _sandwich(read_ts, read_ps, fields, margin, tries=5):
    """tasksnap's reading within the spread of two psutil readings around it, field by
    field; returns the failures of the last try (empty when one try passed)."""
    bad = []
    for _ in range(tries):
        p1 = read_ps()
        t = read_ts()
        p2 = read_ps()
        bad = [
            (f, getattr(p1, f), getattr(t, f), getattr(p2, f))
            for f in fields
            if not _between(getattr(t, f), getattr(p1, f), getattr(p2, f), margin(f))
        ]
        if not bad:
            return []
    return bad


# --- this machine -------------------------------------------------------------------------


def test_cpu_count_is_psutils():
    assert ts.cpu_count() == psutil.cpu_count() == os.cpu_count()
    assert ts.cpu_count(logical=True) == psutil.cpu_count(logical=True)
    assert ts.cpu_count(logical=False) == psutil.cpu_count(logical=False)
    assert ts.cpu_count(False) >= 1


def test_tuple_types_have_psutils_names_and_fields():
    assert ts.scputimes._fields == psutil.cpu_times()._fields
    assert ts.svmem._fields == psutil.virtual_memory()._fields
    assert ts.sswap._fields == psutil.swap_memory()._fields
    assert ts.scpustats._fields == psutil.cpu_stats()._fields
    assert ts.suser._fields == psutil._ntuples.suser._fields
    for ours, theirs in [
        (ts.cpu_times(), psutil.cpu_times()),
        (ts.virtual_memory(), psutil.virtual_memory()),
        (ts.swap_memory(), psutil.swap_memory()),
        (ts.cpu_stats(), psutil.cpu_stats()),
    ]:
        assert type(ours).__name__ == type(theirs).__name__
        assert [type(v) for v in ours] == [type(v) for v in theirs], (ours, theirs)


def test_cpu_times_lie_between_two_psutil_readings():
    fields = ts.scputimes._fields
    # One clock tick of margin: both divide the same tick counts by CLK_TCK.
    tick = 1.0 / os.sysconf("SC_CLK_TCK")
    assert _sandwich(ts.cpu_times, psutil.cpu_times, fields, lambda f: tick) == []

    def per(lib):
        return lambda: lib.cpu_times(percpu=True)

    for _ in range(5):
        p1, t, p2 = psutil.cpu_times(percpu=True), ts.cpu_times(percpu=True), psutil.cpu_times(
            percpu=True
        )
        assert len(t) == len(p1) == ts.cpu_count()
        bad = [
            (i, f)
            for i in range(len(t))
            for f in fields
            if not _between(getattr(t[i], f), getattr(p1[i], f), getattr(p2[i], f), tick)
        ]
        if not bad:
            break
    assert bad == []


def test_cpu_stats_lie_between_two_psutil_readings():
    bad = _sandwich(ts.cpu_stats, psutil.cpu_stats, ts.scpustats._fields, lambda f: 0)
    assert bad == []
    assert ts.cpu_stats().syscalls == 0


def _memory_margin(field):
    """Bytes move by pages while the host builds: 8 MiB of margin, 0.1 point of percent."""
    return 0.1 if field == "percent" else 8 << 20


def test_virtual_memory_is_psutils():
    assert ts.virtual_memory().total == psutil.virtual_memory().total
    bad = _sandwich(ts.virtual_memory, psutil.virtual_memory, ts.svmem._fields, _memory_margin)
    assert bad == []


def test_swap_memory_is_psutils():
    bad = _sandwich(ts.swap_memory, psutil.swap_memory, ts.sswap._fields, _memory_margin)
    assert bad == []
    s = ts.swap_memory()
    assert s.used == s.total - s.free


def test_getloadavg_is_psutils():
    # The kernel updates the averages every 5 s: equal unless an update fell in between.
    for _ in range(5):
        p1, t, p2 = psutil.getloadavg(), ts.getloadavg(), psutil.getloadavg()
        if p1 == p2:
            assert t == p1
            break
    assert isinstance(t, tuple) and len(t) == 3 and all(isinstance(v, float) for v in t)


def test_users_are_psutils():
    assert ts.users() == psutil.users()


# --- arguments, shapes, "since the last call" ----------------------------------------------


@pytest.mark.parametrize("fn", ["cpu_percent", "cpu_times_percent"])
def test_argument_errors_are_psutils(fn):
    ours, theirs = getattr(ts, fn), getattr(psutil, fn)
    for args, kwargs in [((-1,), {}), ((), {"interval": -0.5}), ((-1,), {"percpu": True})]:
        with pytest.raises(ValueError) as a:
            theirs(*args, **kwargs)
        with pytest.raises(ValueError) as b:
            ours(*args, **kwargs)
        assert str(a.value) == str(b.value)
    for bad in ["1", [1]]:
        with pytest.raises(TypeError):
            theirs(bad)
        with pytest.raises(TypeError):
            ours(bad)


def test_percpu_shapes_are_psutils():
    n = psutil.cpu_count()
    p = ts.cpu_percent(percpu=True)
    assert isinstance(p, list) and len(p) == n and all(isinstance(v, float) for v in p)
    t = ts.cpu_times_percent(percpu=True)
    assert len(t) == n and all(type(v) is ts.scputimes for v in t)
    assert type(ts.cpu_times_percent()) is ts.scputimes
    assert isinstance(ts.cpu_percent(), float)
    assert len(ts.cpu_percent(interval=0.05, percpu=True)) == n


def test_blocking_interval_blocks_and_none_does_not():
    t0 = time.monotonic()
    v = ts.cpu_percent(interval=0.2)
    assert time.monotonic() - t0 >= 0.2
    assert 0.0 <= v <= 100.0
    t0 = time.monotonic()
    ts.cpu_percent(interval=None)
    ts.cpu_percent(interval=0)
    ts.cpu_times_percent(interval=0.0)
    assert time.monotonic() - t0 < 0.2


def test_first_call_of_a_thread_and_since_the_last_call():
    """A thread's first call compares two reads a moment apart (psutil's "meaningless 0.0",
    or little); the next call measures since that one: a thread that burnt CPU in between
    sees it. cpu_percent and cpu_times_percent keep separate states."""
    out = {}

    def run():
        tid = threading.get_ident()
        assert tid not in ts._last_cpu_times
        out["first"] = ts.cpu_percent()
        assert tid in ts._last_cpu_times and tid not in ts._last_cpu_times_2
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        out["second"] = ts.cpu_percent()
        out["times"] = ts.cpu_times_percent()
        assert tid in ts._last_cpu_times_2

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert 0.0 <= out["first"] <= 100.0
    # 0.3 s of this thread's CPU over about 0.3 s of wall time on N CPUs.
    assert out["second"] >= 100.0 / ts.cpu_count() * 0.5, out
    assert all(0.0 <= v <= 100.0 for v in out["times"])


# --- a fake tree, psutil and tasksnap on the same files -------------------------------------

STAT = (
    "cpu  {u} 352086 1964720 {i} {w} 0 8778 8069 {g} 0\n"
    "cpu0 2456089 173162 968894 1652574 11664 0 2068 3941 0 0\n"
    "cpu1 2535481 178924 995825 1517150 31114 0 6709 4127 0 0\n"
    "intr 168436227 0 0 0\nctxt 562172362\nbtime 1763784000\nprocesses 16459857\n"
    "procs_running 2\nprocs_blocked 0\nsoftirq 38792987 0 4523426 4\n"
)
MEMINFO = (
    "MemTotal:       24684084 kB\nMemFree:        19313960 kB\nMemAvailable:   23356116 kB\n"
    "Buffers:          107760 kB\nCached:          3940500 kB\nSwapCached:            0 kB\n"
    "Active:          1923852 kB\nInactive:        2785672 kB\nActive(file):    1922272 kB\n"
    "Inactive(file):  2117068 kB\nSwapTotal:       4194300 kB\nSwapFree:        4190000 kB\n"
    "Shmem:              8872 kB\nSlab:             498032 kB\nSReclaimable:     404096 kB\n"
    "HugePages_Total:       0\n"
)
ZONEINFO = (
    "Node 0, zone      DMA\n  pages free     3840\n        min      10\n        low      13\n"
    "        high     16\nNode 0, zone   Normal\n  pages free     2000\n        low      20163\n"
)


def _utmp_record(kind, pid, line, user, host, sec):
    r = bytearray(384)
    r[0:2] = kind.to_bytes(2, sys.byteorder, signed=True)
    r[4:8] = pid.to_bytes(4, sys.byteorder, signed=True)
    r[8 : 8 + len(line)] = line
    r[44 : 44 + len(user)] = user
    r[76 : 76 + len(host)] = host
    r[340:344] = sec.to_bytes(4, sys.byteorder, signed=True)
    return bytes(r)


UTMP = b"".join(
    [
        _utmp_record(2, 0, b"~", b"reboot", b"6.18.0", 1763784000),
        _utmp_record(7, 4242, b"pts/3", b"alice", b"10.0.0.7", 1763789000),
        _utmp_record(6, 555, b"tty1", b"LOGIN", b"", 1763784100),
        _utmp_record(7, 777, b"tty2", b"bob", b":0", 1763785000),
        _utmp_record(7, 778, b"", b"carol", b":0.0", 1763785001),
        _utmp_record(7, 779, b"pts/9", b"d\xe9j\xe0\xff", b"h\xffst", 1763785002),
        _utmp_record(8, 4000, b"pts/1", b"", b"", 0),
    ]
)

FAKE = textwrap.dedent(
    r"""
    import ctypes, os, sys, warnings
    import psutil
    from tasksnap import _system as ts
    root = os.environ["TASKSNAP_PROC_ROOT"]
    psutil.PROCFS_PATH = root
    STAT, MEMINFO = sys.argv[1], sys.argv[2]

    def write(name, text):
        with open(os.path.join(root, name), "w") as f:
            f.write(text)

    def shape(v):
        # A named tuple by its class name and fields, a list item by item, else the type.
        if isinstance(v, list):
            return [shape(x) for x in v]
        if isinstance(v, tuple):
            return (type(v).__name__, getattr(v, "_fields", None), [type(x) for x in v])
        return type(v)

    def same(what, a, b):
        assert a == b and shape(a) == shape(b), (what, a, b)

    def both(fn, *args, **kw):
        with warnings.catch_warnings(record=True) as w1:
            warnings.simplefilter("always")
            a = getattr(psutil, fn)(*args, **kw)
        with warnings.catch_warnings(record=True) as w2:
            warnings.simplefilter("always")
            b = getattr(ts, fn)(*args, **kw)
        assert [w.category for w in w1] == [w.category for w in w2], (fn, w1, w2)
        same(fn, a, b)
        return b

    # Memory: this machine's meminfo, then the fallbacks of older and odd kernels.
    mem = both("virtual_memory")
    assert mem.available == 23356116 * 1024 and mem.cached == (3940500 + 404096) * 1024
    variants = {
        "no MemAvailable (before 3.14)": MEMINFO.replace("MemAvailable:   23356116 kB\n", ""),
        "MemAvailable 0 (psutil #1915)": MEMINFO.replace("23356116", "0"),
        "no Active(file) either": MEMINFO.replace("MemAvailable:   23356116 kB\n", "")
            .replace("Active(file):    1922272 kB\n", ""),
        "available above total (a container)": MEMINFO.replace("23356116", "99999999"),
        "2.4's fields": "MemTotal: 1000 kB\nMemFree: 100 kB\nMemShared: 5 kB\n"
            "Inact_dirty: 1 kB\nInact_clean: 2 kB\nInact_laundry: 3 kB\nMemAvailable: 500 kB\n"
            "SwapTotal: 0 kB\nSwapFree: 0 kB\n",
        "fields missing, warned": "MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 500 kB\n"
            "SwapTotal: 10 kB\nSwapFree: 4 kB\n",
        "watermarks above free: available below 0": MEMINFO
            .replace("MemAvailable:   23356116 kB\n", "").replace("19313960", "10")
            .replace("1922272", "1").replace("2117068", "1").replace("404096", "1"),
    }
    for what, text in variants.items():
        write("meminfo", text)
        both("virtual_memory")
    os.remove(os.path.join(root, "zoneinfo"))
    write("meminfo", variants["no MemAvailable (before 3.14)"])
    both("virtual_memory")  # no zoneinfo (before 2.6.13): free + cached
    write("meminfo", MEMINFO)

    # Swap, in 4 KiB pages (the tree's page size here is psutil's fixed 4096).
    s = both("swap_memory")
    assert (s.sin, s.sout) == (12 * 4096, 34 * 4096), s
    write("vmstat", "nr_free_pages 1\npswpin 12\n")
    both("swap_memory")  # pswpout missing: both 0, warned

    # CPU: times, stats, and use since the last call as the tree's stat moves.
    write("stat", STAT.format(u=4991571, i=3169725, w=42778, g=0))
    both("cpu_times")
    same("percpu", psutil.cpu_times(percpu=True), ts.cpu_times(percpu=True))
    both("cpu_stats")
    for fn in ["cpu_percent", "cpu_times_percent"]:  # both start from the same stat
        for percpu in (False, True):
            getattr(psutil, fn)(percpu=percpu), getattr(ts, fn)(percpu=percpu)
    steps = [
        dict(u=4991671, i=3169825, w=42878, g=0),   # a third busy, a third waiting for I/O
        dict(u=4991671, i=3169825, w=42878, g=0),   # nothing moved: 0.0
        dict(u=4991600, i=3169900, w=42878, g=0),   # user went back: counted as 0
        dict(u=4992671, i=3169925, w=42878, g=400), # guest time inside user, not counted twice
        dict(u=4992672, i=3169925, w=42878, g=400), # one tick: less than a CPU-second in all
    ]
    for step in steps:
        write("stat", STAT.format(**step))
        same("cpu_percent", psutil.cpu_percent(), ts.cpu_percent())
        same("cpu_percent percpu", psutil.cpu_percent(percpu=True), ts.cpu_percent(percpu=True))
        same("cpu_times_percent", psutil.cpu_times_percent(), ts.cpu_times_percent())
        same(
            "cpu_times_percent percpu",
            psutil.cpu_times_percent(percpu=True),
            ts.cpu_times_percent(percpu=True),
        )

    # utmp: glibc's reader, told to read the tree's file, against tasksnap's.
    libc = ctypes.CDLL(None)
    assert libc.utmpxname(os.path.join(root, "utmp").encode()) == 0
    users = psutil.users()
    same("users", users, ts.users())
    assert [u.name for u in users] == ["alice", "bob", "carol", "d\udce9j\udce0\udcff"]
    assert users[1].host == "localhost" and users[2].terminal is None

    # Counts from the tree's sysfs (psutil reads the machine's, so no comparison here).
    assert (ts.cpu_count(), ts.cpu_count(logical=False)) == (4, 2), (
        ts.cpu_count(), ts.cpu_count(logical=False))
    assert ts.getloadavg() == (0.52, 0.33, 0.2)
    print("ok")
    """
)


def test_a_fake_tree_gives_psutils_numbers_exactly(tmp_path):
    root = tmp_path / "proc"
    root.mkdir()
    (root / "stat").write_text(STAT.format(u=4991571, i=3169725, w=42778, g=0))
    (root / "meminfo").write_text(MEMINFO)
    (root / "zoneinfo").write_text(ZONEINFO)
    (root / "vmstat").write_text("nr_free_pages 4828490\npswpin 12\npswpout 34\n")
    (root / "loadavg").write_text("0.52 0.33 0.20 3/210 12345\n")
    (root / "utmp").write_bytes(UTMP)
    cpu = root / "sys" / "devices" / "system" / "cpu"
    for n in range(4):
        (cpu / f"cpu{n}" / "topology").mkdir(parents=True)
        # Two cores of two hyperthreads each.
        (cpu / f"cpu{n}" / "topology" / "core_cpus_list").write_text(
            "0-1\n" if n < 2 else "2-3\n"
        )
    (cpu / "online").write_text("0-3\n")
    env = dict(
        os.environ,
        TASKSNAP_PROC_ROOT=str(root),
        TASKSNAP_PAGE_SIZE="4096",
        LC_ALL="C.UTF-8",
        PYTHONUTF8="1",
    )
    r = subprocess.run(
        [sys.executable, "-c", FAKE, STAT, MEMINFO],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


# --- as user nobody --------------------------------------------------------------------------

AS_NOBODY = textwrap.dedent(
    """
    import os, psutil
    from tasksnap import _system as ts
    assert os.geteuid() == 65534
    assert (ts.cpu_count(), ts.cpu_count(False)) == (psutil.cpu_count(), psutil.cpu_count(False))
    assert ts.virtual_memory().total == psutil.virtual_memory().total
    assert ts.swap_memory().total == psutil.swap_memory().total
    assert ts.users() == psutil.users()
    assert ts.cpu_times()._fields == psutil.cpu_times()._fields
    assert len(ts.cpu_percent(interval=0.05, percpu=True)) == psutil.cpu_count()
    assert ts.cpu_stats().ctx_switches <= psutil.cpu_stats().ctx_switches
    print("ok")
    """
)


def test_the_same_figures_as_nobody():
    """Every file these read is world-readable: an unprivileged caller gets the same."""
    import nobody

    with nobody.Workdir() as w:
        r = w.run(["-c", AS_NOBODY])
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
