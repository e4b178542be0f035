"""Through root's query service (`tasksnap serve --no-metrics --query-socket PATH`), as a
user without privileges (nobody): `process_iter` over every attribute gives, for the
processes the test spawned (nobody's own, a non-dumpable one of nobody's, another user's,
root's), what psutil reads from /proc as the same user, AccessDenied where psutil gets it,
and `last_report()` says the service answered; with TASKSNAP_NO_SERVICE=1 the same values
from /proc. Needs root (it starts the service and drops to nobody) and the CLI built
(`cargo build`, which `./x test` does first; or TASKSNAP_CLI naming one)."""

import os
import shutil
import socket
import subprocess
import tempfile
import textwrap
import time

import pytest

import build
import nobody

CLI = os.environ.get("TASKSNAP_CLI") or build.debug_binary("tasksnap")
NOBODY = nobody.NOBODY
OTHER = 4242

CHECKS = textwrap.dedent(
    """
    import json, os, sys, psutil, tasksnap
    assert os.geteuid() != 0
    assert tasksnap.__file__.startswith(SITE) and psutil.__file__.startswith(SITE)
    PIDS = {int(k): v for k, v in json.loads(sys.argv[1]).items()}
    WANT = sys.argv[2]
    TICK = 1.0 / os.sysconf("SC_CLK_TCK")
    attrs = list(tasksnap.COLUMN_ATTRS)
    ours = {p.pid: p.info for p in tasksnap.process_iter(attrs, ad_value="AD") if p.pid in PIDS}
    rep = tasksnap.last_report()
    assert rep.backend == WANT, (rep.backend, rep.why)
    theirs = {p.pid: p.info for p in psutil.process_iter(attrs, ad_value="AD") if p.pid in PIDS}
    assert sorted(ours) == sorted(theirs) == sorted(PIDS), (sorted(ours), sorted(theirs), PIDS)
    bad = []
    for pid in PIDS:
        a, b = ours[pid], theirs[pid]
        for k in attrs:
            x, y = a[k], b[k]
            if k == "create_time" and x != "AD" and y != "AD":
                same = abs(x - y) <= 0.010
            elif k == "cpu_times" and x != "AD" and y != "AD":
                same = x._fields == y._fields and all(
                    abs(getattr(x, f) - getattr(y, f)) <= TICK + 1e-9 for f in x._fields)
            else:
                same = x == y
            if not same:
                bad.append((PIDS[pid], k, x, y))
    assert not bad, bad
    # Root's process: its gated attributes are denied, as psutil is denied them; nobody's
    # own are read (a comparison of AD with AD alone would prove nothing).
    root_pid = int(sys.argv[3]); own_pid = int(sys.argv[4])
    assert ours[root_pid]["io_counters"] == "AD", ours[root_pid]
    assert ours[own_pid]["io_counters"] != "AD", ours[own_pid]
    print("ok", rep.backend)
    """
)


def _privileged_or_skip(msg):
    if os.environ.get("TASKSNAP_REQUIRE_PRIVILEGED") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture
def service():
    """The CLI's query service on a socket of its own, in a root-owned 0755 directory."""
    if os.geteuid() != 0:
        _privileged_or_skip("the query service test needs root")
    if not os.access(CLI, os.X_OK):
        _privileged_or_skip(f"no tasksnap CLI at {CLI} (cargo build, or TASKSNAP_CLI)")
    work = tempfile.mkdtemp(prefix="tasksnap-pysvc-", dir=nobody.reachable_tmp())
    os.chmod(work, 0o755)
    path = os.path.join(work, "query.sock")
    log = open(os.path.join(work, "serve.log"), "wb")
    proc = subprocess.Popen([CLI, "serve", "--no-metrics", "--query-socket", path],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, open(log.name).read()
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(path)
                break
            except OSError:
                assert time.monotonic() < deadline, open(log.name).read()
                time.sleep(0.05)
        yield path
    finally:
        proc.kill()
        proc.wait()
        log.close()
        shutil.rmtree(work, ignore_errors=True)


def _settled(pid, timeout=30.0):
    """Waits until every thread of `pid` sleeps."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            states = [open(f"/proc/{pid}/task/{t}/stat", "rb").read().rsplit(b")", 1)[1].split()[0]
                      for t in os.listdir(f"/proc/{pid}/task")]
            if states and all(s == b"S" for s in states):
                return
        except (OSError, IndexError):
            pass
        time.sleep(0.02)
    raise RuntimeError(f"process {pid} did not settle")


def test_process_iter_through_the_service_matches_psutil_as_nobody(service):
    as_user = nobody.prefix
    python = nobody.python(as_user(NOBODY))
    procs = []

    def start(argv, what):
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, cwd="/")
        procs.append(p)
        return p.pid, what

    try:
        spawned = dict([
            start(as_user(NOBODY) + ["sleep", "1000"], "nobody's sleep"),
            start(as_user(NOBODY) + [python, "-c", "import ctypes, time; "
                                     "ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); time.sleep(1000)"],
                  "nobody's non-dumpable process"),
            start(as_user(OTHER) + ["sleep", "1000"], "another user's sleep"),
            start(["sleep", "1000"], "root's sleep"),
        ])
        own_pid, root_pid = list(spawned)[0], list(spawned)[3]
        for pid in spawned:
            _settled(pid)
        # Until the non-dumpable one has run its prctl: /proc/PID/stat is then root's.
        deadline = time.monotonic() + 30
        nd = list(spawned)[1]
        while os.stat(f"/proc/{nd}/stat").st_uid != 0:
            assert time.monotonic() < deadline, "the non-dumpable process never became so"
            time.sleep(0.02)
        _settled(nd)

        import json
        with nobody.Workdir() as w:
            checks = f"import sys; SITE = {w.site!r}\n" + CHECKS
            for want, extra in (("service", {}), ("procfs", {"TASKSNAP_NO_SERVICE": "1"})):
                env = w.env(TASKSNAP_QUERY_SOCKET=service, **extra)
                if not extra:
                    env.pop("TASKSNAP_NO_SERVICE", None)
                r = subprocess.run(
                    [*as_user(NOBODY), python, "-s", "-c", checks,
                     json.dumps({str(k): v for k, v in spawned.items()}), want, str(root_pid),
                     str(own_pid)],
                    capture_output=True, text=True, env=env, cwd=w.home, timeout=120)
                assert r.returncode == 0, (want, r.stdout + r.stderr)
                assert r.stdout.strip() == f"ok {want}", r.stdout
    finally:
        for p in procs:
            p.kill()
            p.wait()
