"""As a user without privileges: the procfs backend answers (a BPF iterator would bypass
procfs permission checks), another user's unreadable files are AccessDenied (or ad_value),
as psutil does. Run as root, the test re-runs its checks as nobody (uid 65534)."""

import textwrap

import nobody

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


def test_unprivileged_caller_gets_procfs_and_access_denied():
    with nobody.Workdir() as w:
        r = w.run(["-c", f"import sys; SITE = {w.site!r}\n" + CHECKS], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "ok"
