#!/usr/bin/env python3
"""Runs psutil's own test suite against tasksnap (docs/python.md, "psutil's own tests").

    python python/tests/upstream/run.py [--against psutil] [PYTEST ARGS...]

The source distribution of the psutil python/tests/requirements.txt pins (7.2.2) is fetched
from PyPI with pip (once: it is kept in the target directory's psutil-upstream/, checked against its
SHA-256), its tests/ extracted beside it, and
its Linux process and system API modules (MODULES) run with pytest under the plugin
tasksnap_upstream.py, which puts tasksnap in ``sys.modules["psutil"]`` and deselects the
tests not_applicable.txt lists (each with why it cannot apply). Any other failure fails the
run. ``--against psutil`` runs the same modules against psutil itself (nothing swapped or
deselected), to compare the counts. Other arguments go to pytest; those that start with
``tests/`` name what to run instead of MODULES (``tests/test_process.py::TestProcess``).

Run with the Python that has tasksnap, that psutil and pytest (target/py-test/bin/python;
./x test does).
"""

import hashlib
import os
import subprocess
import sys
import sysconfig
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))
import build  # noqa: E402  (python/tests/build.py: the one rule for the target directory)

CACHE = os.path.join(build.target_dir(), "psutil-upstream")


def pinned_psutil():
    """The psutil version python/tests/requirements.txt pins (the tests' one definition)."""
    with open(os.path.join(os.path.dirname(HERE), "requirements.txt"), encoding="utf-8") as f:
        for line in f:
            name, _, version = line.split("#")[0].strip().partition("==")
            if name == "psutil" and version:
                return version
    raise SystemExit("python/tests/requirements.txt pins no psutil version")


VERSION = pinned_psutil()
SDIST = f"psutil-{VERSION}.tar.gz"
#: The SHA-256 of PyPI's sdist of each version this runs (pip checks the index's hash on
#: download; this pins it). A new pin needs its line, and a look at not_applicable.txt.
SDIST_SHA256 = {"7.2.2": "0746f5f8d406af344fd547f1c8daa5f5c33dbc293bb8d6a16d80b4bb88f59372"}

#: psutil's test modules that test its Linux process and system API. Left out: the other
#: platforms' (test_aix, test_bsd, test_osx, test_sunos, test_windows); psutil's own
#: machinery (test_memleaks: its C extension's leaks; test_heap: its allocator's
#: heap_info, which tasksnap hands to psutil; test_testutils: the suite's own helpers);
#: test_scripts (runs the example scripts of psutil's sdist in new interpreters, which
#: import psutil itself); test_sudo (sets the machine's clock, as root: not on a shared
#: machine).
MODULES = (
    "test_process.py",
    "test_process_all.py",
    "test_system.py",
    "test_misc.py",
    "test_contracts.py",
    "test_connections.py",
    "test_posix.py",
    "test_linux.py",
    "test_unicode.py",
)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch():
    """The sdist in CACHE, downloaded from PyPI by pip when it is not there."""
    path = os.path.join(CACHE, SDIST)
    if not os.path.exists(path):
        os.makedirs(CACHE, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
             "--no-binary", ":all:", "--no-deps", "--dest", CACHE, f"psutil=={VERSION}"],
            check=True,
        )
    want = SDIST_SHA256.get(VERSION)
    if want is None:
        raise SystemExit(f"run.py knows no SHA-256 of psutil {VERSION}'s sdist (SDIST_SHA256)")
    got = sha256(path)
    if got != want:
        os.unlink(path)
        raise SystemExit(f"{path}: SHA-256 {got}, want {want} (removed; run again)")
    return path


def extract(sdist):
    """psutil's tests/ from the sdist, in CACHE/psutil-VERSION (once)."""
    root = os.path.join(CACHE, f"psutil-{VERSION}")
    done = os.path.join(root, ".extracted")
    if os.path.exists(done):
        return root
    prefix = f"psutil-{VERSION}/tests/"
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix) and m.isfile()]
        kwargs = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(CACHE, members=members, **kwargs)
    open(done, "w").close()
    return root


def main(argv):
    against = "tasksnap"
    if argv[:1] == ["--against"]:
        against, argv = argv[1], argv[2:]
    root = extract(fetch())
    import psutil

    if psutil.__version__ != VERSION:
        raise SystemExit(f"psutil {psutil.__version__} is installed; the suite is {VERSION}'s")
    targets = [a for a in argv if a.startswith("tests/")]
    options = [a for a in argv if not a.startswith("tests/")]
    if not targets:
        targets = [os.path.join("tests", m) for m in MODULES]
    env = dict(os.environ, TASKSNAP_UPSTREAM_AGAINST=against)
    # The suite starts Python scripts with the real path of sys.executable: in a virtualenv,
    # the base interpreter, which finds psutil (and tasksnap) through PYTHONPATH only.
    paths = sysconfig.get_paths()
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (HERE, paths["purelib"], paths["platlib"], env.get("PYTHONPATH")) if p
    )
    cmd = [
        sys.executable, "-m", "pytest", "-p", "tasksnap_upstream", "-p", "no:cacheprovider",
        "-c", os.path.join(HERE, "pytest.ini"), "--rootdir", root, "-q", "-rfE",
        *options, *targets,
    ]
    return subprocess.run(cmd, cwd=root, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
