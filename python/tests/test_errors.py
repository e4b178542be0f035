"""Bad input gets psutil's exceptions, never a crash: a pid that does not exist or exits
mid-call, a reused pid, a bad attribute name, a zombie, a wrong type."""

import os
import subprocess
import sys
import time

import psutil
import pytest

import tasksnap


def gone_pid():
    """A pid that just exited and was reaped."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_nonexistent_pid_raises_no_such_process():
    pid = gone_pid()
    with pytest.raises(psutil.NoSuchProcess):
        psutil.Process(pid)
    with pytest.raises(tasksnap.NoSuchProcess) as e:
        tasksnap.Process(pid)
    assert e.value.pid == pid
    assert "not found" in str(e.value)
    assert not tasksnap.pid_exists(pid)
    assert tasksnap.pid_exists(os.getpid())


def test_process_exiting_mid_use_raises_no_such_process(spawned):
    p = spawned.python("import sys, time; sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(600)")
    a, b = tasksnap.Process(p.pid), psutil.Process(p.pid)
    assert a.name() == b.name()
    p.kill()
    p.wait()
    for call in ("name", "cmdline", "memory_info", "cpu_times", "status", "threads", "children"):
        with pytest.raises(psutil.NoSuchProcess):
            getattr(b, call)()
        with pytest.raises(tasksnap.NoSuchProcess) as e:
            getattr(a, call)()
        assert e.value.pid == p.pid
        assert not isinstance(e.value, tasksnap.ZombieProcess)
    assert not a.is_running()
    with pytest.raises(tasksnap.NoSuchProcess):
        a.as_dict(["pid", "name"])


def test_reused_pid_is_detected_by_start_time(spawned):
    p = spawned.python("import sys, time; sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(600)")
    real = tasksnap.Process(p.pid)
    # The same pid with another start time: what a Process made before a reuse holds.
    stale = tasksnap.Process._from(p.pid, real._start_ns - 10**9)
    with pytest.raises(tasksnap.NoSuchProcess) as e:
        stale.name()
    assert "reused" in e.value.msg
    assert not stale.is_running()
    assert real.is_running()
    assert stale != real


def test_bad_attr_name_raises_value_error():
    for lib in (psutil, tasksnap):
        with pytest.raises(ValueError):
            list(lib.process_iter(["pid", "no_such_attr"]))
        with pytest.raises(ValueError):
            lib.Process().as_dict(["bogus"])
        with pytest.raises(TypeError):
            lib.Process().as_dict("name")
    # Every name psutil's as_dict() gives is one tasksnap takes; snapshot() says which it
    # has no column for.
    assert set(psutil.Process().as_dict()) == set(tasksnap.ATTRS)
    with pytest.raises(ValueError, match="no column for 'cwd'"):
        tasksnap.snapshot(["pid", "cwd"])
    with pytest.raises(ValueError):
        tasksnap.snapshot(["pid", "nope"])


def test_bad_pid_types_and_values():
    for lib in (psutil, tasksnap):
        with pytest.raises(ValueError):
            lib.Process(-1)
        with pytest.raises(TypeError):
            lib.Process("1")
    with pytest.raises(ValueError):
        tasksnap.states([-5], 0.1)
    with pytest.raises(ValueError):
        tasksnap.states(None, -1.0)


def test_zombie_as_psutil(spawned):
    # A child that exits and is not reaped (until the fixture's wait): a zombie of ours.
    z = spawned.start([sys.executable, "-c", "pass"], wait_ready=False)
    deadline = time.monotonic() + 10
    while psutil.Process(z.pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    a, b = tasksnap.Process(z.pid), psutil.Process(z.pid)
    assert a.status() == b.status() == tasksnap.STATUS_ZOMBIE
    assert a.name() == b.name()
    assert a.ppid() == b.ppid() == os.getpid()
    assert a.is_running() and b.is_running()
    # psutil raises ZombieProcess for a zombie's command line; so does tasksnap.
    with pytest.raises(psutil.ZombieProcess):
        b.cmdline()
    with pytest.raises(tasksnap.ZombieProcess) as e:
        a.cmdline()
    assert e.value.pid == z.pid and e.value.ppid == os.getpid()
    assert isinstance(e.value, tasksnap.NoSuchProcess)
    # In process_iter and as_dict it becomes ad_value, as in psutil.
    ours = {p.pid: p.info for p in tasksnap.process_iter(["cmdline", "status"], ad_value="AD")}
    theirs = {p.pid: p.info for p in psutil.process_iter(["cmdline", "status"], ad_value="AD")}
    assert ours[z.pid] == theirs[z.pid] == {"cmdline": "AD", "status": "zombie"}
    assert a.as_dict(["cmdline"], ad_value=0) == b.as_dict(["cmdline"], ad_value=0)


def test_exceptions_look_like_psutils():
    e = tasksnap.ZombieProcess(5, "x", 1)
    assert isinstance(e, tasksnap.NoSuchProcess) and isinstance(e, tasksnap.Error)
    assert str(e) == str(psutil.ZombieProcess(5, "x", 1))
    assert str(tasksnap.NoSuchProcess(7)) == str(psutil.NoSuchProcess(7))
    assert str(tasksnap.AccessDenied(7, "n")) == str(psutil.AccessDenied(7, "n"))
    import pickle

    assert pickle.loads(pickle.dumps(e)).ppid == 1
