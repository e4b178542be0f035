"""tasksnap against psutil (from PyPI) on processes the tests spawn: same pids, names, ppids,
statuses, thread counts, command lines, users, memory (statm, every field), create times
(within 10 ms), CPU times (within a tick), same exceptions."""

import gc
import os

import psutil
import pytest

import tasksnap

ATTRS = [
    "pid",
    "ppid",
    "name",
    "username",
    "status",
    "cpu_times",
    "memory_info",
    "cmdline",
    "num_threads",
    "create_time",
]
TICK = 1.0 / os.sysconf("SC_CLK_TCK")


def assert_same(ours, theirs, pid):
    """One process's info from both libraries, field by field, with the issue's tolerances."""
    assert set(ours) == set(theirs), pid
    for k in ("pid", "ppid", "name", "username", "status", "num_threads", "cmdline"):
        if k in theirs:
            assert ours[k] == theirs[k], (pid, k, ours[k], theirs[k])
    if "memory_info" in theirs:
        assert type(ours["memory_info"]).__name__ == "pmem"
        assert ours["memory_info"]._fields == theirs["memory_info"]._fields
        # Exact: the BPF pass adds the per-CPU RSS deltas as statm does (docs/bpf.md).
        assert tuple(ours["memory_info"]) == tuple(theirs["memory_info"]), pid
    if "create_time" in theirs:
        assert abs(ours["create_time"] - theirs["create_time"]) <= 0.010, pid
    if "cpu_times" in theirs:
        assert ours["cpu_times"]._fields == theirs["cpu_times"]._fields
        for f in ("user", "system", "children_user", "children_system"):
            a, b = getattr(ours["cpu_times"], f), getattr(theirs["cpu_times"], f)
            assert abs(a - b) <= TICK + 1e-9, (pid, f, a, b)


def test_process_iter_matches_psutil(family, backend):
    theirs = {p.pid: p.info for p in psutil.process_iter(ATTRS) if p.pid in family}
    ours = {p.pid: p.info for p in tasksnap.process_iter(ATTRS) if p.pid in family}
    assert tasksnap.last_report().backend == backend
    assert sorted(ours) == sorted(theirs) == sorted(family)
    for pid in family:
        assert_same(ours[pid], theirs[pid], pid)
    # The spawned shapes are really there (a comparison of empty values proves nothing).
    assert ours[family[1]]["num_threads"] == 5
    assert ours[family[2]]["cpu_times"].user + ours[family[2]]["cpu_times"].system >= 0.2
    assert ours[family[3]]["cmdline"][-3:] == ["an argument with spaces", "ünïcödé", ""]
    assert ours[family[4]]["name"] == "a-program-with-a-long-name"
    assert all(ours[p]["ppid"] == os.getpid() for p in family)


def test_process_iter_yields_sorted_processes_with_info(family):
    procs = list(tasksnap.process_iter(["pid", "name"]))
    pids = [p.pid for p in procs]
    assert pids == sorted(pids)
    assert set(family) <= set(pids)
    assert all(p.info["pid"] == p.pid for p in procs)
    # Without attrs: an empty info (psutil leaves it unset).
    p = next(tasksnap.process_iter())
    assert p.info == {}


def test_process_iter_leaves_the_garbage_collector_as_it_was(family):
    # The objects are made with the cyclic collector paused (python/src/iter.rs).
    assert gc.isenabled()
    procs = list(tasksnap.process_iter(ATTRS))
    assert gc.isenabled()
    # Read before the next call: as psutil's, process_iter's objects are kept between calls,
    # and the next call gives them its own info.
    mem = next(p.info["memory_info"] for p in procs if p.pid in family)
    gc.disable()
    try:
        list(tasksnap.process_iter(["pid"]))
        assert not gc.isenabled()
    finally:
        gc.enable()
    # The named tuples are the classes tasksnap hands out, equal to ones made in Python.
    assert type(mem) is tasksnap.pmem and mem == tasksnap.pmem(*mem)
    assert mem._asdict()["rss"] == mem.rss > 0


def test_process_methods_match_psutil(family):
    for pid in family:
        a, b = tasksnap.Process(pid), psutil.Process(pid)
        assert a.pid == b.pid
        assert a.name() == b.name()
        assert a.ppid() == b.ppid() == os.getpid()
        assert a.status() == b.status() == tasksnap.STATUS_SLEEPING
        assert a.username() == b.username()
        assert a.uids() == b.uids()
        assert a.gids() == b.gids()
        assert a.cmdline() == b.cmdline()
        assert a.num_threads() == b.num_threads()
        assert abs(a.create_time() - b.create_time()) <= 0.010
        assert a.io_counters()._fields == b.io_counters()._fields
        assert a.nice() == b.nice()
        assert a.num_ctx_switches()._fields == b.num_ctx_switches()._fields
        assert sorted(t.id for t in a.threads()) == sorted(t.id for t in b.threads())
        assert type(a.threads()[0]).__name__ == "pthread"
        assert_same(
            a.as_dict(["pid", "name", "memory_info", "cpu_times", "create_time"]),
            b.as_dict(["pid", "name", "memory_info", "cpu_times", "create_time"]),
            pid,
        )
        assert a.is_running()
        assert a.parent().pid == os.getpid()


def test_children_match_psutil(family, backend):
    me_a, me_b = tasksnap.Process(), psutil.Process()
    ours = {p.pid for p in me_a.children()}
    theirs = {p.pid for p in me_b.children()}
    assert set(family) <= ours
    assert ours == theirs
    assert {p.pid for p in me_a.children(recursive=True)} == {
        p.pid for p in me_b.children(recursive=True)
    }


def test_as_dict_defaults_to_every_attr(family):
    d = tasksnap.Process(family[0]).as_dict()
    assert set(d) == set(tasksnap.ATTRS)


def test_process_equality_and_hash(family):
    a, b = tasksnap.Process(family[0]), tasksnap.Process(family[0])
    assert a == b and hash(a) == hash(b)
    assert a != tasksnap.Process(family[1])
    assert "pid=%d" % family[0] in repr(a)


def test_process_iter_keeps_its_objects_as_psutil(family, spawned):
    """As psutil's process_iter, a process still running is the same Process object on the
    next call, with the new call's info; a process that is gone is dropped; a new one is a
    new object."""
    from conftest import SLEEPER

    ours = {p.pid: p for p in tasksnap.process_iter(["pid", "name"])}
    theirs = {p.pid: p for p in psutil.process_iter(["pid", "name"])}
    late = spawned.python(SLEEPER).pid
    gone = family[0]
    spawned.procs[0].kill()
    spawned.procs[0].wait()
    ours2 = {p.pid: p for p in tasksnap.process_iter(["pid", "ppid"])}
    theirs2 = {p.pid: p for p in psutil.process_iter(["pid", "ppid"])}
    for pid in family[1:]:
        assert (ours2[pid] is ours[pid]) == (theirs2[pid] is theirs[pid]) == True  # noqa: E712
        assert ours[pid].info == {"pid": pid, "ppid": os.getpid()} == theirs[pid].info
    assert gone not in ours2 and gone not in theirs2
    assert late in ours2 and late not in ours
    assert ours2[late].info["ppid"] == os.getpid()
    assert ours2[late] == tasksnap.Process(late)


def test_process_iter_info_is_what_the_pass_read(spawned):
    """info is made on first read from the pass that made the object, not read again then:
    a process that exited after the pass still has the name and command line it had."""
    from conftest import SLEEPER

    p = spawned.python(SLEEPER, "an-argument")
    procs = {x.pid: x for x in tasksnap.process_iter(["name", "cmdline", "status"])}
    p.kill()
    p.wait()
    info = procs[p.pid].info
    assert info["cmdline"][-1] == "an-argument"
    assert info["status"] == tasksnap.STATUS_SLEEPING
    assert info["name"] == psutil.Process(os.getpid()).name()
