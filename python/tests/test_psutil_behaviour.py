"""psutil's behaviour where its own test suite found tasksnap different (issue 42, item 9):
each test is named after the defect it guards against. psutil's suite itself runs against
tasksnap in python/tests/upstream/run.py."""

import os
import subprocess
import sys

import psutil

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
