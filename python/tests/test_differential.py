"""psutil as the oracle, attribute by attribute: for the processes the zoo spawns (one of
each shape: see zoo.py), every `Process` method psutil has on Linux, `as_dict()`,
`process_iter`'s `info` and the module's process helpers give the same values (within the
tolerances below, for counters that move between two reads) and raise the same exceptions,
through psutil_script.py run once as it is and once with `tasksnap` imported as `psutil`.
As root, and again as nobody (which meets root's processes, another user's, and its own).

The actions (signals, wait, wait_procs, the pid-reuse refusal) and a process that exits
mid-call are tested beside it, on processes each test starts."""

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import psutil
import pytest

import tasksnap

import nobody

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "psutil_script.py")
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


@pytest.fixture(scope="module")
def zoo():
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "zoo.py")], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, start_new_session=True)
    roles = {}
    try:
        line = p.stdout.readline()
        assert line, "zoo.py did not start"
        roles = json.loads(line)
        pids = [v for k, v in roles.items() if k != "workdir"]
        _settle(pids)
        yield roles
    finally:
        # End of input: the zoo kills its animals and removes its directory; whatever is
        # left of its process group after that is killed.
        p.stdin.close()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        if roles.get("workdir"):
            shutil.rmtree(roles["workdir"], ignore_errors=True)


def _settle(pids, timeout_s=10.0):
    """Waits until every zoo process is asleep (or a zombie): their figures then stay put."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(psutil.Process(p).status() in (psutil.STATUS_SLEEPING, psutil.STATUS_ZOMBIE)
               for p in pids):
            return
        time.sleep(0.02)
    raise RuntimeError(f"zoo processes {pids} did not settle")


def _load(as_tasksnap):
    """psutil_script.py imported as it is, or with `psutil` meaning `tasksnap`."""
    name = "psutil_script_tasksnap" if as_tasksnap else "psutil_script_psutil"
    spec = importlib.util.spec_from_file_location(name, SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    saved = sys.modules.get("psutil")
    if as_tasksnap:
        sys.modules["psutil"] = tasksnap
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules["psutil"] = saved
    assert mod.psutil is (tasksnap if as_tasksnap else psutil)
    return mod


# --- tolerances ------------------------------------------------------------------------------

def _close(a, b, rel=0.0, abs_=0.0):
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


#: Fields that move between two reads of an idle process, and by how much they may.
MEMORY_FIELDS = {"rss", "vms", "shared", "text", "lib", "data", "dirty", "uss", "pss", "swap",
                 "size", "shared_clean", "shared_dirty", "private_clean", "private_dirty",
                 "referenced", "anonymous"}


def _same(label, a, b):
    """Whether psutil's value `a` and tasksnap's `b` (plain JSON, see psutil_script.plain)
    agree for `label` (a method or attribute name)."""
    base = label.split("_again")[0]
    if a == b:
        return True
    if isinstance(a, dict) and isinstance(b, dict) and ("tuple" in a or "tuple" in b):
        if a.keys() != b.keys() or a.get("tuple") != b.get("tuple"):
            return False
        return all(_same_field(base, k, a[k], b[k]) for k in a if k != "tuple")
    if base == "create_time":
        return _close(a, b, abs_=TICK_S + 1e-6)
    if base.startswith("cpu_percent"):
        return _close(a, b, abs_=1.0)
    if base.startswith("memory_percent"):
        return _close(a, b, rel=0.02, abs_=0.001)
    if base == "cpu_num":
        return isinstance(a, int) and isinstance(b, int)
    if base in ("open_files", "net_connections", "connections", "memory_maps",
                "memory_maps_flat") or base.startswith("net_connections"):
        if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
            return False
        key = (lambda x: json.dumps({k: v for k, v in x.items() if k not in MEMORY_FIELDS},
                                    sort_keys=True))
        return all(_same(base, x, y) for x, y in zip(sorted(a, key=key), sorted(b, key=key)))
    if base == "threads":
        return (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
                and all(_same("thread", x, y) for x, y in zip(a, b)))
    return a == b


def _same_field(label, field, x, y):
    if label in ("memory_info", "memory_full_info", "memory_maps", "memory_maps_flat") and field in MEMORY_FIELDS:
        return _close(x, y, rel=0.01, abs_=256 * 1024)
    if field in ("user", "system", "children_user", "children_system", "user_time",
                 "system_time", "iowait"):
        return _close(x, y, abs_=TICK_S + 1e-6)
    if label == "num_ctx_switches":
        return _close(x, y, abs_=2)
    return x == y


def _only(value, pids):
    """A list of Process values cut to `pids`, in its order: the rest of the machine (pid 1's
    descendants) changes between two reads."""
    return [p for p in value if p.get("Process") in pids]


def _diff(theirs, ours):
    """Every disagreement between two observations, as text."""
    out = []
    pids = {int(p) for p in theirs["process"]}
    for pid, calls in theirs["process"].items():
        mine = ours["process"].get(pid, {})
        for label, a in calls.items():
            b = mine.get(label)
            if label.startswith("children") and b is not None and "ok" in a and "ok" in b:
                a, b = {"ok": _only(a["ok"], pids)}, {"ok": _only(b["ok"], pids)}
            if b is None:
                out.append(f"{pid} {label}: missing in tasksnap")
            elif "err" in a or "err" in b:
                if a.get("err") != b.get("err"):
                    out.append(f"{pid} {label}: psutil {a} tasksnap {b}")
            elif label == "as_dict":
                x, y = a["ok"], b["ok"]
                if x.keys() != y.keys():
                    out.append(f"{pid} as_dict keys: {sorted(x.keys() ^ y.keys())}")
                out += [f"{pid} as_dict[{k}]: psutil {x[k]!r:.300} tasksnap {y[k]!r:.300}"
                        for k in x.keys() & y.keys() if not _same(k, x[k], y[k])]
            elif not _same(label, a["ok"], b["ok"]):
                out.append(f"{pid} {label}: psutil {a['ok']!r:.300} tasksnap {b['ok']!r:.300}")
    for pid, x in theirs["iter"].items():
        y = ours["iter"].get(pid)
        if y is None:
            out.append(f"{pid} process_iter: missing in tasksnap")
            continue
        if x.keys() != y.keys():
            out.append(f"{pid} process_iter keys: {sorted(x.keys() ^ y.keys())}")
        out += [f"{pid} process_iter[{k}]: psutil {x[k]!r:.300} tasksnap {y[k]!r:.300}"
                for k in x.keys() & y.keys() if not _same(k, x[k], y[k])]
    if theirs["module"] != ours["module"]:
        out.append(f"module: psutil {theirs['module']} tasksnap {ours['module']}")
    return out


def _zoo_pids(zoo):
    # Only the zoo's: another process (pid 1, this one) opens files, sockets and threads
    # and uses CPU between the two libraries' reads.
    return [v for k, v in zoo.items() if k != "workdir"]


# --- the comparisons ------------------------------------------------------------------------

@pytest.fixture(params=["auto", "bpf"])
def whole_pass(request):
    """The backend of tasksnap's whole-system passes: the library's choice (procfs below
    8,000 tasks), and as root the BPF iterator forced, so its values meet psutil too."""
    if request.param == "bpf" and os.geteuid() != 0:
        pytest.skip("the BPF backend needs root")
    old = tasksnap._BACKEND
    tasksnap._BACKEND = request.param
    yield request.param
    tasksnap._BACKEND = old


def test_every_method_as_psutil_as_the_caller(zoo, whole_pass):
    pids = _zoo_pids(zoo)
    theirs = _load(False).observe(pids)
    ours = _load(True).observe(pids)
    if whole_pass == "bpf":
        assert tasksnap.last_report().backend == "bpf", tasksnap.last_report()
    # The zoo's shapes show what they were made for (a test that cannot fail is no test).
    files = ours["process"][str(zoo["files"])]
    assert any(f["path"].endswith("data.bin") and f["position"] == 42
               for f in files["open_files"]["ok"])
    assert {c["status"] for c in files["net_connections"]["ok"]} >= {"LISTEN", "ESTABLISHED"}
    assert ours["process"][str(zoo["zombie"])]["cmdline"]["err"] == "ZombieProcess"
    if os.geteuid() == 0:
        assert ours["process"][str(zoo["niced"])]["nice"]["ok"] == 5
    diffs = _diff(theirs, ours)
    assert not diffs, "\n".join(diffs)


def test_every_method_as_psutil_as_nobody(zoo):
    if os.geteuid() != 0:
        pytest.skip("runs as nobody from root; this run is unprivileged already")
    pids = _zoo_pids(zoo)
    with nobody.Workdir([SCRIPT]) as w:
        script = os.path.join(w.site, "psutil_script.py")
        seen = {}
        for lib in ("psutil", "tasksnap"):
            r = w.run([script, lib, *map(str, pids)])
            assert r.returncode == 0, r.stderr
            seen[lib] = json.loads(r.stdout)
    theirs, ours = seen["psutil"], seen["tasksnap"]
    # As nobody, root's processes keep their files closed, nobody's own does not.
    assert ours["process"][str(zoo["files"])]["open_files"]["err"] == "AccessDenied"
    assert "ok" in ours["process"][str(zoo["nobody"])]["open_files"]
    diffs = _diff(theirs, ours)
    assert not diffs, "\n".join(diffs)


def test_a_process_gone_mid_call_is_no_such_process_for_both():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        theirs, ours = psutil.Process(sleeper.pid), tasksnap.Process(sleeper.pid)
        it = tasksnap.process_iter(["pid", "cwd", "open_files"])
    finally:
        sleeper.kill()
        sleeper.wait()
    script = _load(False)
    wrong = []
    for label, meth, args in script.CALLS + [("as_dict", "as_dict", ())]:
        outcomes = []
        for p in (theirs, ours):
            try:
                getattr(p, meth)(*args)
                outcomes.append("ok")
            except Exception as e:  # noqa: BLE001
                outcomes.append(type(e).__name__)
        if outcomes[0] != outcomes[1] or outcomes[1] not in ("NoSuchProcess", "ok"):
            wrong.append((label, outcomes))
    assert not wrong
    assert ours.is_running() is theirs.is_running() is False
    # The pass had it; its per-process reads came too late: skipped, as psutil skips.
    assert sleeper.pid not in [p.pid for p in it]


def _child(code="import time; time.sleep(600)"):
    return subprocess.Popen([sys.executable, "-c", code])


def test_signals_and_wait_as_psutil():
    for lib in (psutil, tasksnap):
        a, b = _child(), _child()
        try:
            _signals_and_wait(lib, a, b)
        finally:
            for k in (a, b):
                k.kill()
                k.wait()


def _signals_and_wait(lib, a, b):
    pa, pb = lib.Process(a.pid), lib.Process(b.pid)
    pa.suspend()
    _wait_for(lambda: pa.status() == lib.STATUS_STOPPED)
    pa.resume()
    _wait_for(lambda: pa.status() != lib.STATUS_STOPPED)
    with pytest.raises(lib.TimeoutExpired):
        pa.wait(timeout=0)
    with pytest.raises(lib.TimeoutExpired):
        pa.wait(timeout=0.05)
    pa.terminate()
    assert pa.wait(timeout=10) == -signal.SIGTERM
    assert pa.wait() == -signal.SIGTERM  # kept, as psutil keeps it
    pb.send_signal(signal.SIGUSR1)
    assert pb.wait(timeout=10) == -signal.SIGUSR1
    with pytest.raises(lib.NoSuchProcess):
        pb.kill()


def test_wait_for_a_process_that_is_not_a_child():
    for lib in (psutil, tasksnap):
        # A grandchild, adopted by init (or a subreaper) once its shell exits.
        out = subprocess.run(["sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!"],
                             capture_output=True, text=True, check=True).stdout
        p = lib.Process(int(out))
        try:
            with pytest.raises(lib.TimeoutExpired):
                p.wait(timeout=0.05)
        finally:
            p.kill()
        assert p.wait(timeout=10) is None


def test_wait_procs_as_psutil():
    for lib in (psutil, tasksnap):
        kids = [_child() for _ in range(3)]
        procs = [lib.Process(k.pid) for k in kids]
        ended = []
        procs[0].terminate()
        procs[1].kill()
        gone, alive = lib.wait_procs(procs, timeout=3, callback=ended.append)
        assert sorted(p.pid for p in gone) == sorted([kids[0].pid, kids[1].pid])
        assert [p.pid for p in alive] == [kids[2].pid]
        assert {p.pid: p.returncode for p in gone} == {
            kids[0].pid: -signal.SIGTERM, kids[1].pid: -signal.SIGKILL}
        assert sorted(p.pid for p in ended) == sorted(p.pid for p in gone)
        procs[2].kill()
        gone, alive = lib.wait_procs(procs[2:], timeout=3)
        assert [p.pid for p in gone] == [kids[2].pid] and not alive
        for k in kids:
            k.wait()
    with pytest.raises(ValueError):
        tasksnap.wait_procs([], timeout=-1)
    with pytest.raises(TypeError):
        tasksnap.wait_procs([], callback=3)


def test_an_action_on_a_reused_pid_is_refused():
    """The identity check psutil makes before an action (its is_running()): a Process whose
    pid now names another process (same pid, another start time) is NoSuchProcess, and the
    process that has the pid now receives nothing."""
    child = _child()
    try:
        p = tasksnap.Process(child.pid)
        p._start_ns += 10**9  # as if this object were made for an earlier process
        for act in (p.kill, p.terminate, p.suspend, p.resume, lambda: p.send_signal(0),
                    lambda: p.nice(1), lambda: p.cpu_affinity([0]),
                    lambda: p.rlimit(tasksnap.RLIMIT_CORE, (0, 0))):
            with pytest.raises(tasksnap.NoSuchProcess, match="reused"):
                act()
        time.sleep(0.1)
        assert child.poll() is None
        assert psutil.Process(child.pid).status() != psutil.STATUS_STOPPED
        assert psutil.Process(child.pid).nice() == 0
    finally:
        child.kill()
        child.wait()


def test_setters_as_psutil():
    for lib in (psutil, tasksnap):
        child = _child()
        try:
            p = lib.Process(child.pid)
            p.nice(3)
            assert p.nice() == 3
            p.cpu_affinity([0])
            assert p.cpu_affinity() == [0]
            p.cpu_affinity([])
            assert p.cpu_affinity() == list(range(os.cpu_count()))
            p.rlimit(lib.RLIMIT_NOFILE, (128, 256))
            assert p.rlimit(lib.RLIMIT_NOFILE) == (128, 256)
            with pytest.raises(ValueError):
                p.rlimit(lib.RLIMIT_NOFILE, (1, 2, 3))
            with pytest.raises(ValueError):
                p.cpu_affinity([10**6])
            with pytest.raises(ValueError):
                p.memory_percent("nope")
            with pytest.raises(ValueError):
                p.cpu_percent(-1)
        finally:
            child.kill()
            child.wait()


def test_process_iter_cpu_percent_is_since_the_last_call():
    burner = _child("while True: pass")
    try:
        tasksnap.process_iter.cache_clear()
        first = {p.pid: p for p in tasksnap.process_iter(["cpu_percent"])}
        assert first[burner.pid].info["cpu_percent"] == 0.0  # psutil's first call
        time.sleep(0.5)
        second = {p.pid: p for p in tasksnap.process_iter(["cpu_percent"])}
        assert second[burner.pid] is first[burner.pid]  # the same object, as psutil's
        assert second[burner.pid].info["cpu_percent"] > 20.0
        # The object's own cpu_percent() continues from the pass.
        time.sleep(0.3)
        assert second[burner.pid].cpu_percent() > 20.0
        tasksnap.process_iter.cache_clear()
        third = {p.pid: p for p in tasksnap.process_iter(["cpu_percent"])}
        assert third[burner.pid] is not first[burner.pid]
        assert third[burner.pid].info["cpu_percent"] == 0.0
    finally:
        burner.kill()
        burner.wait()


def test_popen_as_psutil():
    for lib in (psutil, tasksnap):
        with lib.Popen([sys.executable, "-c", "print('hi')"], stdout=subprocess.PIPE) as p:
            assert p.name().startswith("python")
            out, _ = p.communicate()
            assert out == b"hi\n"
            assert p.wait() == 0 == p.returncode


def _wait_for(cond, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)
