"""Running a Python script as user nobody (uid 65534), or another user, from a test running
as root: the packages it imports (tasksnap as built here, with its extension, and psutil)
staged where that user can read them, the interpreter that user can run, and `setpriv` to
drop every privilege. The one way every Python test that drops to another uid gets what it
runs: the checkout, its target/ and the virtualenv in it may sit in a directory only root
can enter (a clone under /root, mode 0700; CI builds in a fresh 0700 directory on purpose).
The Rust tests' counterpart is tasksnap_loadgen::reachable."""

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

NOBODY = 65534


def prefix(uid=NOBODY):
    """The argv prefix that runs a command as `uid` (its gid the same number, no groups, no
    capabilities); [] when already unprivileged."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        require("setpriv (util-linux) is needed to drop to another user")
    return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all"]


def require(msg):
    """Skips the test, or fails it under TASKSNAP_REQUIRE_PRIVILEGED=1 (CI)."""
    if os.environ.get("TASKSNAP_REQUIRE_PRIVILEGED") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


def _can_run(argv_prefix, python):
    try:
        r = subprocess.run(
            [*argv_prefix, python, "-s", "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True, text=True, timeout=60, cwd="/",
        )
    except OSError:
        return False
    return r.returncode == 0 and r.stdout.strip() == str(tuple(sys.version_info[:2]))


def python(argv_prefix):
    """The interpreter nobody runs (`find_python`); the test is skipped (failed in CI) when
    there is none."""
    found = find_python(argv_prefix)
    if found is None:
        require(f"no Python {sys.version_info[:2]} that user nobody can run")
    return found


def find_python(argv_prefix):
    """The interpreter `argv_prefix`'s user runs: the virtualenv's when that user can reach
    it, else the one it was made from (a virtualenv inside a 0700 checkout is out of
    nobody's reach); None when none is."""
    candidates = dict.fromkeys(
        [sys.executable, os.path.realpath(sys.executable),
         getattr(sys, "_base_executable", sys.executable),
         shutil.which(f"python{sys.version_info[0]}.{sys.version_info[1]}") or "",
         *(f"{d}/python{sys.version_info[0]}.{sys.version_info[1]}"
           for d in ("/usr/bin", "/usr/local/bin"))])
    return next((c for c in candidates if c and _can_run(argv_prefix, c)), None)


def _copy_packages(dest, files=()):
    """Copies the packages the checks import (tasksnap as built here, and psutil) and
    `files` into `dest`, readable by everyone."""
    import psutil

    import tasksnap

    for mod in (tasksnap, psutil):
        src = os.path.dirname(os.path.abspath(mod.__file__))
        shutil.copytree(src, os.path.join(dest, os.path.basename(src)),
                        ignore=shutil.ignore_patterns("__pycache__"))
    for f in files:
        shutil.copy(f, dest)
    for root, _, names in os.walk(dest):
        os.chmod(root, 0o755)
        for f in names:
            path = os.path.join(root, f)
            os.chmod(path, os.stat(path).st_mode | 0o444)


def reachable_tmp():
    """The first of $TMPDIR, /tmp, /var/tmp whose every ancestor others may search."""
    for base in (os.environ.get("TMPDIR"), "/tmp", "/var/tmp"):
        if not base or not os.path.isabs(base):
            continue
        path, ok = os.path.realpath(base), True
        while ok:
            try:
                ok = os.path.isdir(path) and os.stat(path).st_mode & 0o001 != 0
            except OSError:
                ok = False
            if path == "/":
                break
            path = os.path.dirname(path)
        if ok:
            return base
    require("no temporary directory every user can reach ($TMPDIR, /tmp, /var/tmp)")


class Workdir:
    """A directory every user can enter (root's, 0755, made by mkdtemp) holding copies of
    tasksnap (as built here), psutil and the given files in `site`, and a `home` the user
    may write in; removed on exit."""

    def __init__(self, files=()):
        self.files = files

    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix="tasksnap-nobody-", dir=reachable_tmp())
        os.chmod(self.path, 0o755)
        self.site = os.path.join(self.path, "site")
        self.home = os.path.join(self.path, "home")
        os.mkdir(self.home)
        os.chmod(self.home, 0o777)
        _copy_packages(self.site, self.files)
        return self

    def env(self, **extra):
        """The environment a Python run as another user gets: this site first, this home,
        no virtualenv."""
        env = dict(os.environ, HOME=self.home, PYTHONPATH=self.site, **extra)
        env.pop("VIRTUAL_ENV", None)
        return env

    def run(self, args, timeout=300, uid=NOBODY, **extra_env):
        """Runs `python -s ARGS` as `uid` in this directory; the CompletedProcess."""
        argv_prefix = prefix(uid)
        return subprocess.run([*argv_prefix, python(argv_prefix), "-s", *args],
                              capture_output=True, text=True, env=self.env(**extra_env),
                              cwd=self.home, timeout=timeout)

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)
