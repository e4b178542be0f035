"""Python as psutil behaves: Ctrl-C interrupts a long call at once, an empty selection
selects nothing, and pids psutil refuses or does not find are refused or not found alike."""

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

import tasksnap

# Waits in CALL (an interval of 10 s) and says how it ended.
INTERRUPTED = (
    "import os, sys, time, tasksnap\n"
    "sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
    "try:\n"
    "    CALL\n"
    "    print('finished', flush=True)\n"
    "except KeyboardInterrupt:\n"
    "    print('interrupted', time.monotonic(), flush=True)\n"
)
STATES_CALL = INTERRUPTED.replace("CALL", "tasksnap.states([os.getpid()], interval=10)")
CGROUPS_CALL = INTERRUPTED.replace("CALL", "tasksnap.cgroups(interval=10)")


def _sigint_as_a_terminal_leaves_it():
    """In the child before it runs Python: SIGINT at its default action, as a shell with a
    terminal starts a program. A suite started in the background of a shell without job
    control (`./x test &` in a script) inherits SIGINT ignored (POSIX: an asynchronous
    command ignores SIGINT and SIGQUIT), and a Python that starts with SIGINT ignored
    installs no KeyboardInterrupt handler: Ctrl-C then reaches no program at all, and the
    call ran its 10 s to "finished"."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupted_within_half_a_second(call=STATES_CALL):
    p = subprocess.Popen([sys.executable, "-c", call], stdout=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True,
                         preexec_fn=_sigint_as_a_terminal_leaves_it)
    try:
        assert p.stdout.readline() == "ready\n"
        # Into the interval: the source is open and the first sample taken.
        time.sleep(1.5)
        assert p.poll() is None
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().split()
        assert p.wait(timeout=15) == 0
        assert line[0] == "interrupted", line
        # CLOCK_MONOTONIC is the same clock in both processes.
        assert float(line[1]) - sent < 0.5, float(line[1]) - sent
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_states_interrupted_by_ctrl_c_within_half_a_second():
    """states(interval=10) ignored Ctrl-C until the interval ended."""
    _interrupted_within_half_a_second()


def test_cgroups_interrupted_by_ctrl_c_within_half_a_second():
    """cgroups(interval=10) waits on a call thread of its own, as states() does."""
    _interrupted_within_half_a_second(CGROUPS_CALL)


def test_states_interrupted_by_ctrl_c_in_a_suite_started_in_the_background():
    """The test above printed "finished" when the suite ran in the background of a script:
    its child inherited SIGINT ignored. Here the suite's SIGINT is ignored as it is then."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _interrupted_within_half_a_second()
    finally:
        signal.signal(signal.SIGINT, before)


def test_states_of_no_pids_is_empty():
    """states(pids=[]) returned every thread of the host."""
    started = time.monotonic()
    assert tasksnap.states(pids=[], interval=0.2) == []
    # Still one interval long, as a call whose pids all exited.
    assert time.monotonic() - started >= 0.2
    # A pid beyond pid_t names no thread either.
    assert tasksnap.states(pids=[2**31], interval=0.1) == []
    me = tasksnap.states(pids=[os.getpid()], interval=0.1)
    assert me and {r.pid for r in me} == {os.getpid()}


def test_pid_exists_and_process_on_zero_negative_and_huge_pids_as_psutil():
    """pid_exists(0) was True while Process(0) raised; pid_exists(-1) raised ValueError;
    Process(2**31) raised OverflowError."""
    for pid in (0, -1, -(2**40)):
        assert tasksnap.pid_exists(pid) is psutil.pid_exists(pid) is False
    for pid in (2**31, 2**63):
        # psutil raises OverflowError here (os.kill); a pid that cannot exist does not.
        assert tasksnap.pid_exists(pid) is False
    for pid in (0, 2**31 - 1, 2**31, 2**64):
        with pytest.raises(psutil.NoSuchProcess) as theirs:
            psutil.Process(pid)
        with pytest.raises(tasksnap.NoSuchProcess) as ours:
            tasksnap.Process(pid)
        assert ours.value.pid == theirs.value.pid == pid
        assert ours.value.msg == theirs.value.msg, pid
        assert str(ours.value) == str(theirs.value)
    for lib in (psutil, tasksnap):
        with pytest.raises(ValueError):
            lib.Process(-1)
        with pytest.raises(TypeError):
            lib.pid_exists("1")
    assert tasksnap.pid_exists(os.getpid()) and tasksnap.pid_exists(1)
