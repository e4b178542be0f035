"""Fixtures: the processes the tests spawn (only these are compared, so the tests hold on a
busy host), and the backends to run each comparison with."""

import os
import shutil
import subprocess
import sys
import time

import pytest

import build

import tasksnap


def _wait_sleeping(pids, timeout=10.0):
    """Waits until every pid is asleep (its figures then stay put while both libraries read)."""
    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if all(psutil.Process(p).status() == psutil.STATUS_SLEEPING for p in pids):
                return
        except psutil.NoSuchProcess:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"processes {pids} did not settle")


SLEEPER = "import sys, time; sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(600)"
THREADS = (
    "import sys, threading, time\n"
    "ts = [threading.Thread(target=time.sleep, args=(600,), daemon=True) for _ in range(4)]\n"
    "[t.start() for t in ts]\n"
    "sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(600)\n"
)
BURN_THEN_SLEEP = (
    "import sys, time\n"
    "end = time.process_time() + 0.3\n"
    "while time.process_time() < end: pass\n"
    "sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(600)\n"
)


class Spawned:
    """Processes started for one test, killed at its end."""

    def __init__(self):
        self.procs = []

    def start(self, argv, wait_ready=True):
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.procs.append(p)
        if wait_ready:
            assert p.stdout.readline() == b"ready\n"
        return p

    def python(self, code, *args):
        return self.start([sys.executable, "-c", code, *args])

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()


@pytest.fixture
def spawned():
    s = Spawned()
    yield s
    s.close()


REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture
def loadgen():
    """The path of tasksnap-loadgen, which makes fake /proc trees (`fake-proc DIR PAGE_SIZE`,
    the tree the binary's tests read too); skips without it."""
    for path in (
        os.environ.get("TASKSNAP_LOADGEN_BIN"),
        build.debug_binary("tasksnap-loadgen"),
        shutil.which("tasksnap-loadgen"),
    ):
        if path and os.access(path, os.X_OK):
            return path
    pytest.skip("tasksnap-loadgen is not built (cargo build -p tasksnap-loadgen)")


@pytest.fixture
def family(spawned, tmp_path):
    """A few processes of different shapes, asleep: plain, with threads, with CPU time, with
    odd arguments, and with a name longer than the kernel's 15 bytes."""
    long_exe = tmp_path / "a-program-with-a-long-name"
    shutil.copy(sys.executable, long_exe)
    procs = [
        spawned.python(SLEEPER, "plain"),
        spawned.python(THREADS),
        spawned.python(BURN_THEN_SLEEP),
        spawned.python(SLEEPER, "an argument with spaces", "ünïcödé", ""),
        spawned.start([str(long_exe), "-c", SLEEPER]),
    ]
    pids = [p.pid for p in procs]
    _wait_sleeping(pids)
    return pids


def _bpf_loads():
    if os.geteuid() != 0:
        return False
    try:
        tasksnap._BACKEND = "bpf"
        tasksnap.snapshot(["pid"], arrow=False)
        return True
    except RuntimeError:
        return False
    finally:
        tasksnap._BACKEND = "auto"


@pytest.fixture(params=["procfs", "bpf"])
def backend(request):
    """Runs a test with each backend that can run here. Under TASKSNAP_REQUIRE_PRIVILEGED=1
    (CI, as root) the BPF one must run: a skip is a failure."""
    if request.param == "bpf" and not _bpf_loads():
        if os.environ.get("TASKSNAP_REQUIRE_PRIVILEGED") == "1":
            pytest.fail("the BPF backend must run here (TASKSNAP_REQUIRE_PRIVILEGED=1)")
        pytest.skip("the BPF backend needs root and a BPF-capable build")
    old = tasksnap._BACKEND
    tasksnap._BACKEND = request.param
    yield request.param
    tasksnap._BACKEND = old
