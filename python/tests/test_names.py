"""Names are the bytes they are: a process another user named with bytes that are not UTF-8
breaks nothing. snapshot() gives valid text plus the exact bytes in a `_bytes` sibling;
the Process API gives surrogate-escaped str, as psutil does, and never raises on them."""

import os
import shutil
import subprocess
import sys
import time

import psutil
import pytest

import tasksnap

ATTRS = ["pid", "ppid", "name", "username", "status", "cpu_times", "memory_info", "cmdline",
         "num_threads", "create_time"]


SLEEPER = "import sys, time; sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(600)"


@pytest.fixture
def hostile(spawned, tmp_path):
    """Python started through a link named `x\\xff`, with an argument that is not UTF-8
    either: its comm and command line hold invalid UTF-8."""
    link = os.path.join(os.fsencode(tmp_path), b"x\xff")
    os.symlink(os.path.realpath(sys.executable), link)
    p = spawned.start([link, b"-c", SLEEPER.encode(), b"\xfe"])
    deadline = time.monotonic() + 10
    while psutil.Process(p.pid).status() != psutil.STATUS_SLEEPING:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return p.pid, link


def test_snapshot_survives_a_name_that_is_not_utf8(hostile, backend):
    """snapshot() raised UnicodeEncodeError for every caller (pyarrow refused the
    surrogate-escaped name) because of one process another user named."""
    pid, link = hostile
    pa = pytest.importorskip("pyarrow")
    table = tasksnap.snapshot(ATTRS, arrow=True)
    assert table.column_names == tasksnap.column_names(ATTRS)
    assert table.schema.field("name").type == pa.string()
    assert table.schema.field("name_bytes").type == pa.binary()
    assert table.schema.field("cmdline_bytes").type == pa.list_(pa.binary())
    assert table.schema.field("username_bytes").type == pa.binary()
    cols = table.to_pydict()
    for source in (cols, tasksnap.snapshot(ATTRS, arrow=False)):
        row = source["pid"].index(pid)
        assert source["name"][row] == "x\ufffd"
        assert source["name_bytes"][row] == b"x\xff"
        assert source["cmdline"][row] == [link.decode(errors="replace"), "-c", SLEEPER, "\ufffd"]
        assert source["cmdline_bytes"][row] == [link, b"-c", SLEEPER.encode(), b"\xfe"]
        # A valid value has no bytes sibling.
        me = source["pid"].index(os.getpid())
        assert source["name_bytes"][me] is None
        assert source["username_bytes"][me] is None
        assert source["cmdline_bytes"][me] is None
    threads = tasksnap.snapshot(["pid", "name"], threads=True)
    row = threads.column("tid").to_pylist().index(pid)
    assert threads.column("name_bytes")[row].as_py() == b"x\xff"


def test_process_with_a_name_that_is_not_utf8_answers_as_psutil(hostile, backend):
    """Every method of such a process's Process raised UnicodeEncodeError (its name went
    back into Rust as text); psutil answers with surrogate-escaped str."""
    pid, link = hostile
    ours, theirs = tasksnap.Process(pid), psutil.Process(pid)
    assert ours.name() == theirs.name() == "x\udcff"
    assert ours.cmdline() == theirs.cmdline() == [os.fsdecode(link), "-c", SLEEPER, "\udcfe"]
    assert os.fsencode(ours.cmdline()[0]) == link
    for call in ("status", "ppid", "num_threads", "memory_info", "cpu_times", "create_time",
                 "username", "threads", "children", "is_running"):
        assert getattr(ours, call)() is not None, call
    assert ours.as_dict(["name", "cmdline"]) == theirs.as_dict(["name", "cmdline"])
    assert "x\\udcff" in str(ours)
    info = {p.pid: p.info for p in tasksnap.process_iter(ATTRS)}[pid]
    assert info["name"] == "x\udcff" and info["cmdline"][-1] == "\udcfe"
    [it] = [p for p in tasksnap.process_iter() if p.pid == pid]
    assert it.name() == "x\udcff"
    # Gone: NoSuchProcess carrying the name as psutil's does, from every method.
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    for p in (ours, it):
        for call in ("name", "cmdline", "status", "threads", "children"):
            with pytest.raises(tasksnap.NoSuchProcess) as e:
                getattr(p, call)()
            assert e.value.pid == pid and e.value.name == "x\udcff", call
        assert not p.is_running()


def test_zombie_with_a_name_that_is_not_utf8(spawned, tmp_path):
    """ZombieProcess names the process as psutil does (surrogate-escaped), without
    raising anything else."""
    link = os.path.join(os.fsencode(tmp_path), b"z\xff")
    os.symlink(shutil.which("true"), link)
    z = spawned.start([link], wait_ready=False)
    deadline = time.monotonic() + 10
    while psutil.Process(z.pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    known = psutil.Process(z.pid)
    known.name()  # psutil's exceptions carry the name once it was asked
    with pytest.raises(psutil.ZombieProcess) as theirs:
        known.cmdline()
    with pytest.raises(tasksnap.ZombieProcess) as ours:
        tasksnap.Process(z.pid).cmdline()
    assert ours.value.name == theirs.value.name == "z\udcff"


def test_states_names_a_thread_that_is_not_utf8_as_psutil_names_it(hostile, backend):
    """states() gave such a thread's name with U+FFFD: it is surrogate-escaped, as the
    Process API's names (os.fsencode gives the bytes back)."""
    pid, _ = hostile
    rows = tasksnap.states([pid], interval=0.2)
    assert tasksnap.last_report().backend == backend
    assert [r.name for r in rows] == ["x\udcff"]
    assert os.fsencode(rows[0].name) == b"x\xff"
