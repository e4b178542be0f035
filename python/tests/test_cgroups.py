"""tasksnap.cgroups() and cgroups_table(): the Cgroup named tuple's fields are the model's
cgroup field table (read here from its Rust source, so a field typed out by hand or left out
fails), the table has the same rows with typed columns, a caller without privileges gets a
listing, and, as root on a host with v1 CPU cgroups, a spinner in a cgroup this test makes
with a 20% quota shows its quota, CPU% about 20, throttling, and counters that lie between
the kernel's own files read before and after the call (and equal them once it is stopped).
On a fake tree of real kernel files, limits that are none are math.inf and a cgroup name that
is not UTF-8 is surrogate-escaped in the named tuple, and text with its bytes in the table."""

import math
import os
import pickle
import re
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest

import tasksnap

import build
import nobody

MODEL = os.path.join(build.REPO, "crates", "model", "src", "cgroup_fields.rs")
HEAD = ("path", "hierarchy", "controllers")
RATES = ("cpu_percent", "throttled_percent", "psi_cpu_some_percent")


def _model_fields():
    """The names of `CGROUP_FIELDS` in crates/model/src/cgroup_fields.rs, in order."""
    with open(MODEL) as f:
        src = f.read()
    table = src[src.index("pub static CGROUP_FIELDS"):]
    return tuple(re.findall(r'field!\(\s*"([a-z0-9_]+)"', table))


def test_the_fields_are_the_model_table():
    names = _model_fields()
    assert len(names) >= 20 and "cpu_throttled_ns" in names, names
    assert tasksnap.CGROUP_FIELDS == names
    assert tasksnap.Cgroup._fields == HEAD + names + RATES


def _check_row(c):
    assert isinstance(c, tasksnap.Cgroup)
    assert isinstance(c.path, str) and c.path.startswith("/"), c
    assert c.hierarchy in ("v1", "v2"), c
    assert isinstance(c.controllers, tuple) and all(isinstance(x, str) for x in c.controllers)
    assert (c.controllers == ()) == (c.hierarchy == "v2"), c
    for name in tasksnap.CGROUP_FIELDS:
        v = getattr(c, name)
        assert v is None or (isinstance(v, int) and v >= 0) or v == math.inf, (name, c)


def _same_rows(table, rows, key):
    """The table's row for `key` (hierarchy, path) equals the named tuple's."""
    want = next(r for r in rows if (r.hierarchy, r.path) == key)
    d = table.to_pydict()
    i = next(i for i in range(table.num_rows) if (d["hierarchy"][i], d["path"][i]) == key)
    got = {name: d[name][i] for name in table.column_names}
    assert got["path_bytes"] is None
    assert tuple(got["controllers"]) == want.controllers
    for name in tasksnap.Cgroup._fields:
        if name != "controllers":
            assert got[name] == getattr(want, name), (name, got, want)


def test_a_listing_and_its_table():
    rows = tasksnap.cgroups()
    assert rows, "no cgroup at all"
    for c in rows:
        _check_row(c)
    roots = [c for c in rows if c.path == "/"]
    assert roots and all(c.cpu_percent is None for c in rows), "no interval, no rate"
    assert pickle.loads(pickle.dumps(roots[0])) == roots[0]
    assert max(c.path.count("/") for c in rows) <= 3, "depth 3 by default"
    assert {c.path for c in tasksnap.cgroups(depth=0)} == {"/"}
    t = tasksnap.cgroups_table(depth=0, arrow=True)
    assert isinstance(t, pa.Table)
    assert t.column_names == ["path", "path_bytes"] + list(tasksnap.Cgroup._fields[1:])
    types = dict(zip(t.column_names, t.schema.types))
    assert types["path"] == pa.string() and types["path_bytes"] == pa.binary()
    assert types["controllers"] == pa.list_(pa.string())
    for f in tasksnap.CGROUP_FIELDS:
        assert types[f] in (pa.int64(), pa.uint64(), pa.float64()), (f, types[f])
    assert types["memory_limit_bytes"] == types["cpu_quota_us"] == pa.float64(), "a limit"
    assert types["cpu_usage_ns"] in (pa.int64(), pa.uint64())
    for r in RATES:
        assert types[r] == pa.float64()
    plain = tasksnap.cgroups_table(depth=0, arrow=False)
    assert list(plain) == t.column_names
    with pytest.raises(ValueError):
        tasksnap.cgroups(depth=-1)
    with pytest.raises(TypeError):
        tasksnap.cgroups(interval="1")
    with pytest.raises(ValueError):
        tasksnap.cgroups(interval=0)


NOBODY_CHECKS = textwrap.dedent(
    """
    import os, tasksnap
    assert os.geteuid() != 0
    assert tasksnap.__file__.startswith(SITE), tasksnap.__file__
    rows = tasksnap.cgroups(interval=0.2)
    assert any(r.path == "/" for r in rows), rows
    assert any(r.cpu_percent is not None for r in rows), rows
    # The copies hold no pyarrow: the same columns as a dict of lists.
    t = tasksnap.cgroups_table(arrow=False)
    assert "/" in t["path"] and list(t)[:2] == ["path", "path_bytes"]
    print("ok")
    """
)


def test_a_caller_without_privileges_gets_a_listing():
    if os.geteuid() != 0:
        site = os.path.dirname(os.path.dirname(tasksnap.__file__))
        exec(NOBODY_CHECKS, {"SITE": site})
        return
    with nobody.Workdir() as w:
        r = w.run(["-c", f"import sys; SITE = {w.site!r}\n" + NOBODY_CHECKS], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "ok"


# --- as root: a spinner in a cgroup with a 20% quota ----------------------------------------


def _v1_mounts():
    """{controller: mount point} of the v1 hierarchies in /proc/self/mountinfo."""
    out = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            fstype, _, opts = right.split()[:3]
            if fstype == "cgroup":
                for o in opts.split(","):
                    out.setdefault(o, left.split()[4])
    return out


class QuotaGroup:
    """cpu/NAME with a 20% quota, and cpuacct/NAME where cpuacct is a hierarchy of its own (so
    that the group's usage is counted), with a spinning child (its own process group) in
    both."""

    def __init__(self):
        if os.geteuid() != 0:
            nobody.require("making a cgroup needs root")
        self.mounts = mounts = _v1_mounts()
        if "cpu" not in mounts:
            pytest.skip("no v1 cpu hierarchy (cgroup v2 only)")
        self.name = f"tasksnap-pytest-{os.getpid()}"
        self.cpu = os.path.join(mounts["cpu"], self.name)
        acct_root = mounts.get("cpuacct")
        self.acct = None
        if acct_root and acct_root != mounts["cpu"]:
            self.acct = os.path.join(acct_root, self.name)
        self.spinner = None
        self.made = []

    def __enter__(self):
        for d in (self.cpu, self.acct):
            if d:
                os.mkdir(d)
                self.made.append(d)
        with open(os.path.join(self.cpu, "cpu.cfs_period_us"), "w") as f:
            f.write("100000")
        with open(os.path.join(self.cpu, "cpu.cfs_quota_us"), "w") as f:
            f.write("20000")
        self.spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                        start_new_session=True, stdin=subprocess.DEVNULL)
        for d in self.made:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(self.spinner.pid))
        return self

    def __exit__(self, *exc):
        if self.spinner is not None:
            try:
                os.killpg(self.spinner.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.spinner.wait()
        for d in reversed(self.made):
            for _ in range(100):
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.01)

    def kernel(self):
        """The kernel's usage_ns, throttled_ns, periods, throttled periods of the group."""
        with open(os.path.join(self.cpu, "cpu.stat")) as f:
            stat = dict(line.split() for line in f)
        usage_file = os.path.join(self.acct or self.cpu, "cpuacct.usage")
        with open(usage_file) as f:
            usage = int(f.read())
        return (usage, int(stat["throttled_time"]), int(stat["nr_periods"]),
                int(stat["nr_throttled"]))

    def row(self, rows):
        path = "/" + self.name
        found = [r for r in rows if r.path == path and r.hierarchy == "v1"]
        assert len(found) == 1, f"{path} once in {[r.path for r in rows]}"
        return found[0]


def _fields(r):
    return (r.cpu_usage_ns, r.cpu_throttled_ns, r.cpu_periods, r.cpu_throttled_periods)


def test_a_spinner_with_a_20_percent_quota():
    with QuotaGroup() as g:
        time.sleep(0.3)
        before = g.kernel()
        rows = tasksnap.cgroups(interval=1.0)
        after = g.kernel()
        r = g.row(rows)
        assert r.cpu_quota_us == 20000 and r.cpu_period_us == 100000, r
        assert "cpu" in r.controllers and (g.acct is None or "cpuacct" in r.controllers), r
        if g.mounts.get("memory") != g.mounts["cpu"]:
            assert r.memory_current_bytes is None, f"no memory group of that path: {r}"
        assert 10.0 <= r.cpu_percent <= 30.0, r
        assert r.throttled_percent > 0.0, r
        assert r.psi_cpu_some_percent is None, "v1 has no per-cgroup pressure"
        for name, lo, v, hi in zip(("usage", "throttled", "periods", "throttled periods"),
                                   before, _fields(r), after):
            assert lo <= v <= hi, f"{name}: {lo} <= {v} <= {hi}"
        assert r.cpu_throttled_ns > before[1], "throttled time grew"

        # Stopped, the group's counters stand still: both forms read exactly the kernel's.
        os.kill(g.spinner.pid, signal.SIGSTOP)
        for _ in range(5):
            time.sleep(0.3)
            still = g.kernel()
            rows = tasksnap.cgroups()
            table = tasksnap.cgroups_table(arrow=True)
            if g.kernel() == still:
                break
        else:
            pytest.fail("the stopped group's counters kept moving")
        r = g.row(rows)
        assert _fields(r) == still, (r, still)
        assert r.cpu_quota_us == 20000 and r.cpu_percent is None
        _same_rows(table, rows, ("v1", "/" + g.name))
    assert not os.path.exists(g.cpu)


# --- a fake tree: limits, rates and a name that is not UTF-8 --------------------------------

FAKE_CHECKS = textwrap.dedent(
    """
    import math, tasksnap
    rows = {(r.hierarchy, r.path): r for r in tasksnap.cgroups(interval=0.05)}
    assert set(rows) == {("v2", "/"), ("v2", "/app"), ("v2", "/odd\\x1b\\udcff"), ("v1", "/")}, rows
    root, app = rows[("v2", "/")], rows[("v2", "/app")]
    assert root.cpu_usage_ns == 12171000 and root.psi_cpu_some_total_us == 37332, root
    assert root.cpu_percent == 0.0 and root.psi_cpu_some_percent == 0.0, "nothing grew"
    assert root.throttled_percent is None and root.memory_current_bytes is None, root
    assert (app.cpu_quota_us, app.cpu_period_us) == (20000, 100000), app
    assert app.memory_limit_bytes == math.inf and app.memory_current_bytes == 8192, app
    assert app.pids_current == 3 and app.cpu_percent is None and app.controllers == (), app
    v1 = rows[("v1", "/")]
    assert v1.controllers == ("cpu", "cpuacct") and v1.cpu_quota_us == math.inf, v1
    assert v1.cpu_usage_ns == 123 and v1.memory_limit_bytes is None, v1
    t = tasksnap.cgroups_table(interval=0.05, arrow=True)
    d = t.to_pydict()
    i = d["path"].index("/odd\\x1b\\ufffd")
    assert d["path_bytes"][i] == b"/odd\\x1b\\xff" and d["hierarchy"][i] == "v2", d
    j = d["path"].index("/app")
    assert d["path_bytes"][j] is None and d["memory_limit_bytes"][j] == math.inf, d
    assert d["cpu_quota_us"][j] == 20000.0 and d["pids_current"][j] == 3, d
    print("ok")
    """
)


def _files(d, files):
    d.mkdir(parents=True)
    (d / "cgroup.procs").write_text("")
    for name, text in files.items():
        (d / name).write_text(text)


def test_a_fake_tree(tmp_path):
    """Real kernel files in a fake tree (TASKSNAP_PROC_ROOT's mountinfo names the
    hierarchies): a v2 root with usage and pressure, a child with a quota and no memory
    limit, a child whose name is not UTF-8, and a v1 cpu,cpuacct root without a quota."""
    v2, v1 = tmp_path / "cg2", tmp_path / "cg1"
    _files(v2, {
        "cpu.stat": "usage_usec 12171\nuser_usec 0\nsystem_usec 12171\nnice_usec 0\n",
        "cpu.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=37332\n"
                        "full avg10=0.00 avg60=0.00 avg300=0.00 total=37282\n",
    })
    _files(v2 / "app", {"cpu.max": "20000 100000\n", "memory.current": "8192\n",
                        "memory.max": "max\n", "pids.current": "3\n"})
    _files(tmp_path / os.fsdecode(b"cg2/odd\x1b\xff"), {})
    _files(v1, {"cpu.cfs_quota_us": "-1\n", "cpu.cfs_period_us": "100000\n",
                "cpuacct.usage": "123\n"})
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text(
        f"41 31 0:38 / {v2} rw,relatime - cgroup2 cgroup2 rw\n"
        f"42 31 0:39 / {v1} rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    )
    env = dict(os.environ, TASKSNAP_PROC_ROOT=str(proc))
    r = subprocess.run([sys.executable, "-c", FAKE_CHECKS], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
