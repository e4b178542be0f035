"""psutil's behaviour where its own test suite found tasksnap different (issue 42, item 9):
each test is named after the defect it guards against. psutil's suite itself runs against
tasksnap in python/tests/upstream/run.py."""

import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
from unittest import mock

import psutil
import pytest

import tasksnap

def run_python(code):
    """Runs ``code`` in a new interpreter (an import swap, or a module-level setting, must not
    leak into this one) and returns its stdout."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_delegated_name_with_the_import_swapped_is_not_a_recursion_error():
    """With ``sys.modules["psutil"] = tasksnap`` (the swap a user makes, and the one psutil's
    own suite runs under), a name tasksnap hands to psutil (``disk_usage``) looked psutil up
    with ``import psutil``, found tasksnap, and asked it again: RecursionError. Both orders:
    the swap before psutil was ever imported, and after (its modules loaded)."""
    want = psutil.disk_usage("/").total
    for before in ("", "import psutil as real; "):
        got = run_python(
            before + "import sys, tasksnap; sys.modules['psutil'] = tasksnap; import psutil; "
            "assert psutil is tasksnap; print(psutil.disk_usage('/').total); "
            "assert sys.modules['psutil'] is tasksnap"
        )
        assert int(got) == want, before


def test_reloaded_module_raises_the_exceptions_it_catches():
    """``importlib.reload(tasksnap)`` (psutil's suite reloads psutil) made new exception
    classes, but the native half kept raising the first ones: ``pid_exists`` of a pid that
    does not exist let a ``NoSuchProcess`` of the old class through, and ``except
    tasksnap.NoSuchProcess`` missed it."""
    got = run_python(
        "import importlib, tasksnap; importlib.reload(tasksnap)\n"
        "assert tasksnap.pid_exists(2**31 - 1) is False\n"
        "try:\n"
        "    tasksnap.Process(2**31 - 1)\n"
        "except tasksnap.NoSuchProcess as e:\n"
        "    print(type(e) is tasksnap.NoSuchProcess)\n"
    )
    assert got.split() == ["True"]


@pytest.fixture
def a_thread():
    """A thread of this process that is not its main thread: its id, while it runs."""
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="psutil-687", daemon=True)
    t.start()
    try:
        assert t.native_id != os.getpid()
        yield t.native_id
    finally:
        stop.set()
        t.join()


def test_thread_id_is_a_process_as_psutils(a_thread):
    """``Process(tid)`` of a thread that is not its process's main thread raised
    ``NoSuchProcess``; psutil reads /proc/TID, which exists though /proc does not list it
    (its test_issue_687): a process whose pid is the tid. ``pid_exists(tid)`` stays False and
    ``pids()`` does not list it, as psutil's."""
    tid = a_thread
    theirs = psutil.Process(tid)
    ours = tasksnap.Process(tid)
    assert ours.pid == theirs.pid == tid
    assert ours.name() == theirs.name()
    assert ours.ppid() == theirs.ppid() == os.getppid()
    assert ours.cmdline() == theirs.cmdline()
    assert ours.create_time() == theirs.create_time()
    assert ours.is_running()
    d = ours.as_dict(["pid", "name", "status", "num_threads", "exe"])
    assert d["pid"] == tid and d["exe"] == theirs.exe(), d
    assert ours == tasksnap.Process(tid) != tasksnap.Process()
    assert tasksnap.pid_exists(tid) is psutil.pid_exists(tid) is False
    assert tid not in tasksnap.pids()


FAKE_TREE_CHECKS = """
import os, sys, tasksnap
root, empty = sys.argv[1], sys.argv[2]
assert tasksnap.PROCFS_PATH == "/proc"
assert os.getpid() in tasksnap.pids()
tasksnap.PROCFS_PATH = root
assert tasksnap.pids() == [1, 4032, 6000], tasksnap.pids()
assert [p.pid for p in tasksnap.process_iter()] == [1, 4032, 6000]
assert tasksnap.Process(6000).name() == "worker"
assert tasksnap.boot_time() == 1763784000
tasksnap.PROCFS_PATH = empty
for f in (tasksnap.Process, tasksnap.virtual_memory, tasksnap.cpu_times, tasksnap.boot_time):
    try:
        f()
    except (OSError, tasksnap.NoSuchProcess):
        pass
    else:
        raise AssertionError(f"{f.__name__}() read an empty /proc")
tasksnap.PROCFS_PATH = "/proc"
assert os.getpid() in tasksnap.pids()
assert tasksnap.Process().pid == os.getpid()
print("ok")
"""


def test_procfs_path_assigned_is_where_the_next_call_reads(tmp_path, loadgen):
    """Assigning ``tasksnap.PROCFS_PATH`` (psutil's way of pointing it at another /proc: a
    container watching its host's) changed nothing: every call still read /proc."""
    root = tmp_path / "proc"
    root.mkdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    subprocess.run([loadgen, "fake-proc", str(root), "4096"], check=True)
    env = {k: v for k, v in os.environ.items() if k != "TASKSNAP_PROC_ROOT"}
    r = subprocess.run(
        [sys.executable, "-c", FAKE_TREE_CHECKS, str(root), str(empty)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


class Renamed(tasksnap.Process):
    def name(self):
        return "renamed"


def test_as_dict_and_process_iter_ask_overridden_methods():
    """``as_dict()`` and ``process_iter()`` read their attributes in one pass and never
    called the object's methods, so a subclass's override, a method patched on the class
    (psutil's tests do ``mock.patch.object(psutil.Process, "name", ...)``) or on one object
    was ignored; psutil's ``as_dict`` calls the methods, and its ``process_iter`` calls
    ``as_dict``."""
    me = os.getpid()
    assert Renamed(me).as_dict(["pid", "name"]) == {"pid": me, "name": "renamed"}
    p = tasksnap.Process()
    with mock.patch.object(p, "name", return_value="on the object"):
        assert p.as_dict(["name"])["name"] == "on the object"
    with mock.patch.object(tasksnap.Process, "nice", side_effect=tasksnap.AccessDenied(me)):
        assert p.as_dict(["nice", "pid"], ad_value="ad") == {"nice": "ad", "pid": me}
    with mock.patch.object(tasksnap.Process, "nice", side_effect=tasksnap.NoSuchProcess(me)):
        with pytest.raises(tasksnap.NoSuchProcess):
            p.as_dict(["nice"])
    with mock.patch.object(tasksnap.Process, "name", return_value="patched") as m:
        infos = [q.info for q in tasksnap.process_iter(["pid", "name"])]
        assert m.called
    assert infos and all(i["name"] == "patched" for i in infos)
    with mock.patch.object(tasksnap.Process, "as_dict", side_effect=tasksnap.NoSuchProcess(me)):
        assert list(tasksnap.process_iter(["cpu_times"])) == []
    with mock.patch.object(tasksnap.Process, "as_dict", side_effect=tasksnap.AccessDenied(me)):
        with pytest.raises(tasksnap.AccessDenied):
            list(tasksnap.process_iter(["cpu_times"]))
    # Unpatched again: the pass answers, and the methods are not called.
    assert next(q for q in tasksnap.process_iter(["name"]) if q.pid == me).info["name"] != "patched"


def test_process_iter_and_as_dict_without_overrides_call_no_method():
    """The fast path stays: with nothing overridden, neither ``process_iter(attrs)`` nor
    ``as_dict()`` runs a single Python method of ``Process`` per attribute."""
    methods = {getattr(tasksnap.Process, a).__code__ for a in tasksnap.ATTRS
               if a in tasksnap.COLUMN_ATTRS and a not in ("pid", "cpu_percent")}

    def calls(f, codes):
        called = []

        def profile(frame, event, arg):
            if event == "call" and frame.f_code in codes:
                called.append(frame.f_code.co_name)

        sys.setprofile(profile)
        try:
            out = f()
        finally:
            sys.setprofile(None)
        return out, called

    attrs = ["pid", "name", "ppid", "cmdline", "memory_info", "status"]
    procs, called = calls(lambda: list(tasksnap.process_iter(attrs)),
                          methods | {tasksnap.Process.as_dict.__code__})
    assert len(procs) > 1
    assert called == [], sorted(set(called))
    info, called = calls(lambda: tasksnap.Process().as_dict(attrs), methods)
    assert info["pid"] == os.getpid()
    assert called == [], sorted(set(called))


SLEEPER = "import sys, time; sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(600)"

ENVIRON_OF = """
import sys, tasksnap, psutil
pid = int(sys.argv[1])
for lib in (psutil, tasksnap):
    try:
        lib.Process(pid).environ()
    except lib.AccessDenied:
        print(lib.__name__, "AccessDenied")
    except Exception as e:
        print(lib.__name__, type(e).__module__, type(e).__name__)
    else:
        print(lib.__name__, "read")
print(tasksnap.Process(pid).as_dict(["environ"], ad_value="ad")["environ"])
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="root, unshare")
def test_environ_refused_to_root_is_access_denied(spawned):
    """Root is refused a process's environment when the kernel's ptrace check fails: here the
    reader is root in a user namespace of its own (``unshare -U -r``), which holds no
    CAP_SYS_PTRACE over the target's (cap_ptrace_access_check: EPERM, made EACCES by
    mm_access); a sandbox's pid 1 refuses root the same way. tasksnap took a root caller's
    unread environment for a read given up on the target's mmap lock and raised
    ``TimeoutError``; psutil raises ``AccessDenied``."""
    target = spawned.python(SLEEPER)
    r = subprocess.run(
        ["unshare", "--user", "--map-root-user", sys.executable, "-c", ENVIRON_OF,
         str(target.pid)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == ["psutil AccessDenied", "tasksnap AccessDenied", "ad"], r.stdout


STUCK = """
import pickle, tasksnap
p = tasksnap.Process(4244)
for name in ("environ", "memory_maps", "memory_full_info"):
    try:
        getattr(p, name)()
    except Exception as e:
        kinds = [isinstance(e, k) for k in (tasksnap.Error, tasksnap.AccessDenied, TimeoutError)]
        assert all(kinds), (name, type(e).__mro__)
        assert e.pid == 4244 and e.name == "stuck", (e.pid, e.name)
        assert "given up" in str(e), str(e)
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e), (back, e)
    else:
        raise AssertionError(name + " of a blocked process returned")
assert p.as_dict(["environ", "name"], ad_value="ad") == {"environ": "ad", "name": "stuck"}
print("ok")
"""


def test_read_given_up_is_a_tasksnap_error(tmp_path):
    """A read given up at the library's deadline (the target's mmap lock held, here a FIFO
    that never answers) raised ``builtins.TimeoutError``, which psutil code's ``except
    psutil.Error`` (or ``except psutil.AccessDenied``) does not catch: psutil has no such
    case (it waits). It is now ``tasksnap.ReadTimeout``: an ``AccessDenied`` (the value is
    not to be had, as ``as_dict`` already treated it: ``ad_value``) and a ``TimeoutError``."""
    root = tmp_path / "proc"
    stuck = root / "4244"
    stuck.mkdir(parents=True)
    (stuck / "stat").write_text(
        "4244 (stuck) S 1 4244 4244 0 -1 4194304 98 0 0 0 0 0 0 0 20 0 1 0 5338170 3133440 362 "
        "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
    for name in ("environ", "smaps", "smaps_rollup"):
        os.mkfifo(stuck / name)
    env = dict(os.environ, TASKSNAP_PROC_ROOT=str(root))
    r = subprocess.run([sys.executable, "-c", STUCK], env=env, capture_output=True,
                       text=True, timeout=120, check=False)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_timeout_expired_pickles():
    """``pickle.loads(pickle.dumps(TimeoutExpired(5, pid=1)))`` raised ``TypeError`` (no
    ``__reduce__``: the exception was rebuilt from its empty args); psutil's pickles, as
    tasksnap's other exceptions do."""
    e = pickle.loads(pickle.dumps(tasksnap.TimeoutExpired(5, pid=321, name="x")))
    assert isinstance(e, tasksnap.TimeoutExpired)
    assert (e.seconds, e.pid, e.name, e.msg) == (5, 321, "x", "timeout after 5 seconds")
    assert str(e) == str(psutil.TimeoutExpired(5, pid=321, name="x"))


def test_every_public_name_is_in_all():
    """psutil's namespace holds its API only, all of it in ``__all__`` (its test__all__):
    tasksnap's showed typing's names (``Any``, ``Optional``...) and left its platform flags
    (``WINDOWS``, ``MACOS``...) out of ``__all__``."""
    public = {n for n in dir(tasksnap) if not n.startswith("_")}
    modules = {n for n in public if isinstance(getattr(tasksnap, n), type(os))}
    assert public - modules - set(tasksnap.__all__) == set()
    assert set(tasksnap.__all__) >= {"AIX", "BSD", "FREEBSD", "MACOS", "NETBSD", "OPENBSD",
                                     "OSX", "SUNOS", "WINDOWS", "LINUX", "POSIX"}


RENAMES_ITSELF = (
    "import sys, time\n"
    "sys.stdout.write('ready\\n'); sys.stdout.flush(); sys.stdin.readline()\n"
    "open('/proc/self/comm', 'w').write('renamed')\n"
    "sys.stdout.write('renamed\\n'); sys.stdout.flush(); time.sleep(600)\n"
)


def test_exception_names_the_process_as_its_object_knows_it():
    """psutil's exceptions carry the name its object knows (its last ``name()``); tasksnap's
    carried the name read when raising, so a process that renamed itself in between (a
    kernel worker does as it takes other work: psutil's test_all caught it) raised with a
    name the caller never saw."""
    child = subprocess.Popen([sys.executable, "-c", RENAMES_ITSELF], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b"ready\n"
        ours, theirs = tasksnap.Process(child.pid), psutil.Process(child.pid)
        known = ours.name()
        assert theirs.name() == known != "renamed"
        child.stdin.write(b"go\n")
        child.stdin.flush()
        assert child.stdout.readline() == b"renamed\n"
        child.kill()
        deadline = time.monotonic() + 10
        while ours.status() != "zombie" and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(tasksnap.ZombieProcess) as e:
            ours.cmdline()
        with pytest.raises(psutil.ZombieProcess) as e2:
            theirs.cmdline()
        assert e.value.name == e2.value.name == known
    finally:
        child.kill()
        child.wait()
