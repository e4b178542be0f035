"""As a user without privileges: the procfs backend answers (a BPF iterator would bypass
procfs permission checks), another user's unreadable files are AccessDenied (or ad_value),
as psutil does. Run as root, the test re-runs its checks as nobody (uid 65534)."""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

CHECKS = textwrap.dedent(
    """
    import os, psutil, tasksnap
    assert os.geteuid() != 0
    # The copies made for this run, not whatever else is on the path.
    assert tasksnap.__file__.startswith(SITE) and psutil.__file__.startswith(SITE), (
        tasksnap.__file__, psutil.__file__)
    procs = list(tasksnap.process_iter(["pid", "name", "io_counters", "username"], ad_value="AD"))
    assert tasksnap.last_report().backend == "procfs", tasksnap.last_report()
    ours = {p.pid: p.info for p in procs}
    theirs = {p.pid: p.info for p in psutil.process_iter(["pid", "io_counters"], ad_value="AD")}
    # pid 1 is root's: its I/O counters are not ours to read, for both libraries.
    assert ours[1]["io_counters"] == theirs[1]["io_counters"] == "AD", (ours[1], theirs[1])
    assert ours[os.getpid()]["io_counters"] != "AD"
    try:
        tasksnap.Process(1).io_counters()
        raise SystemExit("io_counters of pid 1 was readable")
    except tasksnap.AccessDenied as e:
        assert e.pid == 1
    try:
        psutil.Process(1).io_counters()
        raise SystemExit("psutil read pid 1's io_counters")
    except psutil.AccessDenied:
        pass
    try:
        tasksnap._BACKEND = "bpf"
        tasksnap.snapshot(["pid"], arrow=False)
        raise SystemExit("the BPF backend answered an unprivileged caller")
    except RuntimeError:
        pass
    print("ok")
    """
)


def _nobody_can_run(argv_prefix, python):
    """Whether `python`, run as nobody, starts and is the caller's Python version."""
    try:
        r = subprocess.run(
            [*argv_prefix, python, "-s", "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True, text=True, timeout=60, cwd="/",
        )
    except OSError:
        return False
    return r.returncode == 0 and r.stdout.strip() == str(tuple(sys.version_info[:2]))


def _nobody_python(argv_prefix):
    """The interpreter nobody runs: the virtualenv's when nobody can reach it, else the one
    it was made from (a virtualenv inside a 0700 checkout is out of nobody's reach); None
    when none is."""
    candidates = dict.fromkeys(
        [sys.executable, os.path.realpath(sys.executable),
         getattr(sys, "_base_executable", sys.executable),
         shutil.which(f"python{sys.version_info[0]}.{sys.version_info[1]}") or "",
         *(f"{d}/python{sys.version_info[0]}.{sys.version_info[1]}"
           for d in ("/usr/bin", "/usr/local/bin"))])
    return next((c for c in candidates if c and _nobody_can_run(argv_prefix, c)), None)


def _reachable_copy(dest):
    """Copies the two packages the checks import (tasksnap as built here, and psutil) into
    `dest`, readable by everyone: the checkout and its virtualenv may sit in a directory
    nobody cannot enter (a clone under /root, mode 0700)."""
    import psutil
    import tasksnap

    for mod in (tasksnap, psutil):
        src = os.path.dirname(os.path.abspath(mod.__file__))
        shutil.copytree(src, os.path.join(dest, os.path.basename(src)),
                        ignore=shutil.ignore_patterns("__pycache__"))
    for root, dirs, files in os.walk(dest):
        os.chmod(root, 0o755)
        for f in files:
            path = os.path.join(root, f)
            os.chmod(path, os.stat(path).st_mode | 0o444)


def test_unprivileged_caller_gets_procfs_and_access_denied():
    prefix = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv (util-linux) is needed to drop to nobody")
        prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]
    # A directory every user can enter (pytest's tmp_path is under /tmp/pytest-of-USER,
    # mode 0700), removed at the end.
    work = tempfile.mkdtemp(prefix="tasksnap-nobody-")
    try:
        os.chmod(work, 0o755)
        site = os.path.join(work, "site")
        home = os.path.join(work, "home")
        os.mkdir(home)
        os.chmod(home, 0o777)
        _reachable_copy(site)
        python = _nobody_python(prefix)
        if python is None:
            msg = f"no Python {sys.version_info[:2]} that user nobody can run: {list(candidates)}"
            if os.environ.get("TASKSNAP_REQUIRE_PRIVILEGED") == "1":
                pytest.fail(msg)
            pytest.skip(msg)
        checks = f"import sys; SITE = {site!r}\n" + CHECKS
        env = dict(os.environ, HOME=home, PYTHONPATH=site)
        env.pop("VIRTUAL_ENV", None)
        r = subprocess.run([*prefix, python, "-s", "-c", checks], capture_output=True,
                           text=True, env=env, cwd=home, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.strip() == "ok"
    finally:
        shutil.rmtree(work, ignore_errors=True)
