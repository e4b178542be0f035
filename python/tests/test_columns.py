"""What psutil lacks: snapshot() columns, states(), last_report()."""

import os
import sys

import pytest

import tasksnap

from conftest import SLEEPER

ATTRS = ["pid", "ppid", "name", "username", "status", "cpu_times", "memory_info", "cmdline",
         "num_threads", "create_time"]


def _rows(cols, pids):
    names = list(cols)
    at = {pid: i for i, pid in enumerate(cols["pid"])}
    return {p: {n: cols[n][at[p]] for n in names} for p in pids if p in at}


@pytest.mark.parametrize("arrow", [False, True])
def test_snapshot_columns_match_process_iter(family, backend, arrow):
    if arrow:
        pa = pytest.importorskip("pyarrow")
        table = tasksnap.snapshot(ATTRS, arrow=True)
        assert isinstance(table, pa.Table)
        assert table.column_names == tasksnap.column_names(ATTRS)
        cols = table.to_pydict()
    else:
        cols = tasksnap.snapshot(ATTRS, arrow=False)
        assert isinstance(cols, dict)
        assert list(cols) == tasksnap.column_names(ATTRS)
    assert tasksnap.last_report().backend == backend
    assert len({len(v) for v in cols.values()}) == 1
    rows = _rows(cols, family)
    info = {p.pid: p.info for p in tasksnap.process_iter(ATTRS) if p.pid in family}
    assert sorted(rows) == sorted(family)
    for pid in family:
        r, i = rows[pid], info[pid]
        assert r["ppid"] == i["ppid"] == os.getpid()
        assert r["username"] == i["username"]
        assert r["status"] == i["status"]
        assert r["cmdline"] == i["cmdline"]
        assert r["num_threads"] == i["num_threads"]
        assert r["create_time"] == i["create_time"]
        assert r["vms"] == i["memory_info"].vms
        assert r["cpu_user"] == pytest.approx(i["cpu_times"].user, abs=0.011)
        # name: the comm (15 bytes at most), not completed from the command line.
        assert i["name"].startswith(r["name"])


def test_snapshot_threads_has_a_row_per_thread(family, backend):
    cols = tasksnap.snapshot(["pid", "name", "num_threads", "memory_info"], threads=True,
                             arrow=False)
    assert list(cols) == ["pid", "tid", "name", "name_bytes", "num_threads", "rss", "vms",
                          "shared", "text", "data"]
    threaded = family[1]
    rows = [i for i, p in enumerate(cols["pid"]) if p == threaded]
    tids = [cols["tid"][i] for i in rows]
    assert len(tids) == 5 and threaded in tids
    # Threads share the process's memory: each row has the process's statm figures.
    vms = tasksnap.Process(threaded).memory_info().vms
    assert [cols["vms"][i] for i in rows] == [vms] * 5
    assert all(cols["num_threads"][i] == 5 for i in rows)
    assert sorted(tids) == sorted(t.id for t in tasksnap.Process(threaded).threads())


def test_thread_table_equals_the_process_api(family, backend):
    """The Table of every thread (its columns built as the library hands each task over)
    says, column by column, for every thread of the processes this test spawned, what the
    per-process API says of it: `Process(tid)` for what is the thread's own (name, status,
    start time), `Process(pid)` for what is the process's (parent, user, memory, command
    line, thread count), `Process(pid).threads()` for the thread's CPU times."""
    pa = pytest.importorskip("pyarrow")
    table = tasksnap.snapshot(ATTRS, threads=True)
    assert isinstance(table, pa.Table)
    assert tasksnap.last_report().backend == backend
    assert table.column_names == tasksnap.column_names(ATTRS, threads=True)
    cols = table.to_pydict()
    rows = {}
    for i, (pid, tid) in enumerate(zip(cols["pid"], cols["tid"])):
        if pid in family:
            rows[tid] = {c: cols[c][i] for c in cols}
    for pid in family:
        proc = tasksnap.Process(pid)
        threads = {t.id: t for t in proc.threads()}
        mine = {tid for tid, r in rows.items() if r["pid"] == pid}
        assert mine == set(threads), pid
        mem = proc.memory_info()
        for tid in mine:
            r, thread = rows[tid], tasksnap.Process(tid)
            assert r["ppid"] == proc.ppid() == os.getpid()
            assert r["name"] == thread.name()[:15]
            assert r["name_bytes"] is None and r["username_bytes"] is None
            assert r["username"] == proc.username()
            assert r["status"] == thread.status()
            assert r["create_time"] == thread.create_time()
            assert r["cmdline"] == proc.cmdline()
            assert r["cmdline_bytes"] is None
            assert r["num_threads"] == proc.num_threads()
            assert (r["rss"], r["vms"], r["shared"], r["text"], r["data"]) == (
                mem.rss, mem.vms, mem.shared, mem.text, mem.data)
            # Nanoseconds against /proc's clock ticks: within a tick.
            assert r["cpu_user"] == pytest.approx(threads[tid].user_time, abs=0.011)
            assert r["cpu_system"] == pytest.approx(threads[tid].system_time, abs=0.011)
    assert len(rows) == sum(tasksnap.Process(p).num_threads() for p in family)


def test_states_split_per_thread(spawned):
    burn = spawned.python(
        "import sys; sys.stdout.write('ready\\n'); sys.stdout.flush()\nwhile True: pass")
    sleep = spawned.python(
        "import sys, time; sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(600)")
    rows = tasksnap.states([burn.pid, sleep.pid], interval=0.5)
    r = tasksnap.last_report()
    assert r.backend in ("bpf", "procfs")
    if os.geteuid() == 0 and os.environ.get("TASKSNAP_REQUIRE_PRIVILEGED") == "1":
        assert r.backend == "bpf"
    by_pid = {x.pid: x for x in rows}
    assert set(by_pid) == {burn.pid, sleep.pid}
    b, s = by_pid[burn.pid], by_pid[sleep.pid]
    for x in (b, s):
        total = x.running + x.runnable + x.sleeping + x.disk + x.stopped + x.other + x.throttled
        assert total == pytest.approx(100, abs=1)
    # On a CPU or waiting for one the whole time, against asleep the whole time.
    assert b.running + b.runnable > 80
    assert s.sleeping > 80
    assert s.wait_state in ("sleeping", None)


def test_last_report_says_backend_and_cost(family, backend):
    list(tasksnap.process_iter(["pid"]))
    r = tasksnap.last_report()
    assert r.backend == backend
    assert r.seconds > 0
    assert r.why


def test_snapshot_without_pyarrow_is_a_dict_of_lists(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` now fails
    cols = tasksnap.snapshot(["pid", "name"])
    assert isinstance(cols, dict)
    assert os.getpid() in cols["pid"]
    with pytest.raises(ImportError):
        tasksnap.snapshot(["pid"], arrow=True)


def test_snapshot_takes_the_model_fields_by_name(family, backend):
    """A field of tasksnap's table (tasksnap.FIELDS) is a column of its name, in its unit, with
    psutil's attributes beside it; a bytes field brings its _bytes sibling."""
    assert "utime_ns" in tasksnap.FIELDS and "exe" in tasksnap.FIELDS
    assert not set(tasksnap.FIELDS) & set(tasksnap.COLUMN_ATTRS)
    asked = ["pid", "utime_ns", "egid", "exe", "ppid"]
    names = tasksnap.column_names(asked)
    assert names == ["pid", "utime_ns", "egid", "exe", "exe_bytes", "ppid"]
    cols = tasksnap.snapshot(asked, arrow=False)
    assert list(cols) == names
    rows = _rows(cols, family)
    assert sorted(rows) == sorted(family)
    for pid in family:
        r = rows[pid]
        assert r["ppid"] == os.getpid()
        assert r["egid"] == os.getegid()
        assert isinstance(r["utime_ns"], int) and r["utime_ns"] >= 0
        assert r["exe"] == os.readlink(f"/proc/{pid}/exe")
        assert r["exe_bytes"] is None
    # Every field is a column name.
    assert tasksnap.column_names(list(tasksnap.FIELDS))[0] == tasksnap.FIELDS[0]
    pa = pytest.importorskip("pyarrow")
    table = tasksnap.snapshot(["pid", "wchan"], arrow=True)
    assert table.schema.field("wchan_bytes").type == pa.binary()


# Every kind of column: ints, floats, text with its bytes sibling, lists of text, a table
# field by name (bytes), and a tid per thread.
ARROW_ATTRS = ATTRS + ["uids", "io_counters", "utime_ns", "exe", "wchan"]


def test_arrow_table_equals_the_dict_form(family, backend, spawned):
    """The Table pyarrow imports through the C data interface and the dict form hold the
    same values, column by column, for the processes this test spawned (a name and an
    argument that are not UTF-8 among them)."""
    pa = pytest.importorskip("pyarrow")
    odd = spawned.start([sys.executable, "-c", SLEEPER, b"\xfe"]).pid
    family = family + [odd]
    for threads in (False, True):
        table = tasksnap.snapshot(ARROW_ATTRS, threads=threads, arrow=True)
        cols = tasksnap.snapshot(ARROW_ATTRS, threads=threads, arrow=False)
        assert isinstance(table, pa.Table)
        assert table.column_names == list(cols) == tasksnap.column_names(ARROW_ATTRS, threads)
        from_arrow = table.to_pydict()
        key = "tid" if threads else "pid"
        for c in from_arrow:
            mine = {from_arrow[key][i]: from_arrow[c][i] for i, p in enumerate(from_arrow["pid"])
                    if p in family}
            theirs = {cols[key][i]: cols[c][i] for i, p in enumerate(cols["pid"]) if p in family}
            assert sorted(mine) == sorted(theirs), c
            assert len(mine) >= len(family), c
            for k, v in mine.items():
                if c.startswith("cpu_") or c in ("utime_ns", "wchan", "wchan_bytes"):
                    continue  # may move between the two passes
                assert v == theirs[k], (c, k)
        row = from_arrow["pid"].index(odd)
        assert from_arrow["cmdline_bytes"][row][-1] == b"\xfe"
        assert from_arrow["cmdline"][row][-1] == "\ufffd"
        assert table.schema.field("pid").type == pa.int64()
        assert table.schema.field("cpu_user").type == pa.float64()
        assert table.schema.field("exe_bytes").type == pa.binary()


def test_arrow_table_shares_the_library_buffers(monkeypatch):
    """snapshot() hands pyarrow the arrays the library built: the Table's buffers are at the
    addresses the library exported. Going through Python lists (the dict form, then
    pa.table) builds new buffers elsewhere and fails this."""
    pytest.importorskip("pyarrow")
    made = []
    native = tasksnap._tasksnap.snapshot

    def keep(*args):
        cols = native(*args)
        made.append(cols)
        return cols

    monkeypatch.setattr(tasksnap._tasksnap, "snapshot", keep)
    table = tasksnap.snapshot(["pid", "name", "create_time"], arrow=True)
    (cols,) = made
    assert table.num_rows == cols.num_rows > 0
    for name, values_buffer in (("pid", 1), ("create_time", 1), ("name", 2)):
        (chunk,) = table.column(name).chunks
        assert chunk.buffers()[values_buffer].address == cols.values_address(name), name


def test_programs_load_once_for_the_groups_asked(backend):
    """The whole-system host stays open across calls of other attributes: with BPF, the
    programs loaded for a call with command lines serve calls without them (and with other
    groups) without loading again; `why` names the load (its duration), so a new load shows.
    Asking for command lines after a load without them loads the command-line iterator."""
    if backend != "bpf":
        pytest.skip("the procfs backend loads nothing")
    # Start from a host loaded without command lines: a pass of the other backend drops
    # the one earlier tests left.
    tasksnap._BACKEND = "procfs"
    tasksnap.snapshot(["pid"], arrow=False)
    tasksnap._BACKEND = "bpf"
    tasksnap.snapshot(["pid"], arrow=False)
    first = tasksnap.last_report().why
    assert tasksnap.last_report().backend == "bpf"
    tasksnap.snapshot(["pid", "io_counters", "uids"], arrow=False)
    assert tasksnap.last_report().why == first
    list(tasksnap.process_iter(["pid", "cmdline"]))
    with_cmdline = tasksnap.last_report().why
    if not tasksnap.last_report().pinned:
        assert with_cmdline != first
    for attrs in (["pid"], ["pid", "memory_info", "cmdline"], ["name", "io_counters"]):
        list(tasksnap.process_iter(attrs))
        assert tasksnap.last_report().why == with_cmdline, attrs
