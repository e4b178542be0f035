"""pytest plugin that runs psutil's own test suite against tasksnap (loaded by run.py with
``-p tasksnap_upstream``; docs/python.md, "psutil's own tests").

With ``TASKSNAP_UPSTREAM_AGAINST=tasksnap`` (run.py's default):

* psutil is imported first, so that its private modules (``psutil._common``,
  ``psutil._psposix``, ``psutil._pslinux``...) are loaded: the suite's helpers
  (``tests/__init__.py``) import them, and they are not psutil's API;
* then ``sys.modules["psutil"]`` is tasksnap: every ``import psutil`` of the suite, and every
  ``psutil.X`` it calls, is tasksnap's;
* tasksnap is given, in this process only, the names of psutil's private modules and its
  debug switch (``psutil._psplatform``, ``psutil._set_debug``...), which the suite's helpers
  read (``_psplatform.open_text`` of a /proc file to compare a method with) or patch (a test
  patching one of them is in not_applicable.txt: tasksnap does not go through them);
* three helpers that lean on psutil's private ``Process`` attributes are given tasksnap's
  ways: ``process_namespace.clear_cache`` (psutil re-runs its private ``Process._init``,
  which forgets every cached value; tasksnap forgets the one it keeps, ``exe``);
  ``process_namespace.iter`` with ``clear_cache`` leaves ``create_time`` out (psutil's
  ``_init`` forgets its create time too, so its helper then finds a gone process's
  ``create_time()`` raising ``NoSuchProcess``; tasksnap's, like psutil's between two
  ``_init``s, is kept from the object's making); ``PsutilTestCase._check_proc_exc``
  (psutil compares a ``ZombieProcess``'s ``ppid`` with ``Process._ppid``, always None on
  Linux; tasksnap's carries the parent's pid, checked to be a pid);
* test_process_all's processes are read in this process, not by a pool of processes, as
  psutil's own CI does, and a name may be empty (see ``patch_helpers``).

The tests listed in not_applicable.txt (one per line: a node id, or a class's, then why) are
deselected; for a reason that starts with "env:" (the test depends on the machine: psutil
fails it here too), run as expected failures that may pass; for one that starts with
"race:" (the test races the machine's other processes, as psutil's own run does), run up to
RACE_TRIES times until one passes (a defect fails every time). A line that matches no
collected test is an error, so the list cannot outlive its tests (among the modules run).
With ``TASKSNAP_UPSTREAM_AGAINST=psutil`` nothing is swapped or deselected: the
same modules run against psutil itself, for comparison.
"""

import os
import sys

import pytest

AGAINST = os.environ.get("TASKSNAP_UPSTREAM_AGAINST", "tasksnap")
LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "not_applicable.txt")

#: How many times a test marked "race:" runs before its failure counts.
RACE_TRIES = 3

#: The node ids of the tests marked "race:" (filled at collection).
RACES = set()

#: psutil's private names the suite's helpers use, given to tasksnap in this process.
PRIVATE = ("_common", "_psplatform", "_pslinux", "_psposix", "_psutil_linux", "_ntuples")

if AGAINST == "tasksnap":
    import psutil as _psutil

    import tasksnap

    for _name in PRIVATE:
        setattr(tasksnap, _name, getattr(_psutil, _name))
    tasksnap._set_debug = _psutil._set_debug
    sys.modules["psutil"] = tasksnap
elif AGAINST != "psutil":
    raise SystemExit(f"TASKSNAP_UPSTREAM_AGAINST={AGAINST!r}: tasksnap or psutil")


def read_list(path=LIST):
    """The not-applicable entries: (node id or prefix, reason), in file order."""
    entries = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 1)
            if len(parts) != 2 or "::" not in parts[0]:
                raise pytest.UsageError(f"{path}:{n}: want 'NODEID  why it cannot apply'")
            entries.append((parts[0], parts[1]))
    return entries


def matches(nodeid, entry):
    return nodeid == entry or nodeid.startswith(entry + "::") or nodeid.startswith(entry + "[")


def patch_helpers():
    """The suite's helpers that lean on psutil's private Process attributes (see above)."""
    import tests

    ns = tests.process_namespace

    def clear_cache(self):
        try:
            del self._proc._exe
        except AttributeError:
            pass

    def iter_(self, ls, clear_cache=True, _iter=ns.iter):
        if clear_cache:
            ls = [x for x in ls if x[0] != "create_time"]
        return _iter(self, ls, clear_cache)

    def check_proc_exc(self, proc, exc, _check=tests.PsutilTestCase._check_proc_exc):
        if isinstance(exc, tasksnap.ZombieProcess):
            assert exc.ppid is None or exc.ppid >= 0
            exc = tasksnap.NoSuchProcess(exc.pid, exc.name, exc.msg)
        return _check(self, proc, exc)

    ns.clear_cache = clear_cache
    ns.iter = iter_
    tests.PsutilTestCase._check_proc_exc = check_proc_exc
    every = sys.modules.get("tests.test_process_all")
    if every is not None:
        # Its pool of processes hangs the run when terminated while a worker holds the pool's
        # queue lock (psutil's issue 2104; psutil's own CI does without the pool, as here).
        every.USE_PROC_POOL = False

        def name(self, ret, info):
            # psutil's check also wants the name not empty; a process may name itself ""
            # (prctl(PR_SET_NAME, "")), as one of the hostile zoo ./x test keeps alive does.
            assert isinstance(ret, str)

        every.TestFetchAllProcesses.name = name


def pytest_configure(config):
    config.addinivalue_line("markers", "xdist_group(name): psutil's marker for pytest-xdist")


def pytest_collection_modifyitems(session, config, items):
    if AGAINST != "tasksnap":
        return
    patch_helpers()
    entries = read_list()
    used = set()
    keep, dropped = [], []
    for item in items:
        hit = next(((e, why) for e, why in entries if matches(item.nodeid, e)), None)
        if hit is None:
            keep.append(item)
            continue
        used.add(hit[0])
        if hit[1].startswith("env:"):
            item.add_marker(pytest.mark.xfail(reason=hit[1], strict=False))
            keep.append(item)
        elif hit[1].startswith("race:"):
            RACES.add(item.nodeid)
            keep.append(item)
        else:
            dropped.append(item)
    # Only the modules that ran can tell (run.py may be given a few).
    files = {item.nodeid.split("::", 1)[0] for item in items}
    stale = [e for e, _ in entries if e not in used and e.split("::", 1)[0] in files]
    if stale:
        raise pytest.UsageError(
            "not_applicable.txt names tests psutil's suite does not have: " + ", ".join(stale)
        )
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """A "race:" test: run again (its function-level set-up and tear-down included) until
    one run passes, at most RACE_TRIES times; the last run's reports are the test's."""
    if item.nodeid not in RACES:
        return None
    from _pytest.runner import runtestprotocol

    say = item.config.pluginmanager.get_plugin("terminalreporter").write_line
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for attempt in range(1, RACE_TRIES + 1):
        # Torn down as before the next test each time: a run again sets up what it needs.
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        if attempt == RACE_TRIES or not any(r.failed for r in reports):
            break
        why = next(str(r.longrepr) for r in reports if r.failed)
        say(f"\n{item.nodeid}: failed ({attempt}/{RACE_TRIES}), run again; it said:")
        say("\n".join(why.splitlines()[-12:]))
    for r in reports:
        item.ihook.pytest_runtest_logreport(report=r)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
