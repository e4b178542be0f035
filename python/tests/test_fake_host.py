"""The binding on a fake /proc tree (TASKSNAP_PROC_ROOT, read once by the library's
HostOptions::from_env, as the tasksnap binary does): every process and figure comes from
the tree, read by the procfs sources, in the tree's page size. The tree is
tasksnap-loadgen's (`tasksnap-loadgen fake-proc DIR PAGE_SIZE`), the one the binary's
tests use."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import build


def _loadgen():
    for path in (
        os.environ.get("TASKSNAP_LOADGEN_BIN"),
        build.debug_binary("tasksnap-loadgen"),
        shutil.which("tasksnap-loadgen"),
    ):
        if path and os.access(path, os.X_OK):
            return path
    pytest.skip("tasksnap-loadgen is not built (cargo build -p tasksnap-loadgen)")


CHECKS = textwrap.dedent(
    """
    import tasksnap
    cols = tasksnap.snapshot(["pid", "name", "memory_info"], arrow=False)
    assert cols["pid"] == [1, 4032, 6000], cols["pid"]
    assert cols["name"] == ["systemd", "bash", "worker"], cols["name"]
    bash = cols["pid"].index(4032)
    # stat's 1,280 resident pages of 64 KiB; statm's address space in pages of 64 KiB.
    assert cols["rss"][bash] == 1280 * 65536, cols["rss"][bash]
    assert cols["vms"][bash] == 2194 * 65536, cols["vms"][bash]
    r = tasksnap.last_report()
    assert r.backend == "procfs", r
    assert "not the running kernel's /proc" in r.why, r.why
    assert tasksnap.Process(6000).name() == "worker"
    assert sorted(t.id for t in tasksnap.Process(6000).threads()) == [6000, 6001]
    assert tasksnap.boot_time() == 1763784000
    print("ok")
    """
)


def test_the_binding_reads_a_fake_tree(tmp_path):
    root = tmp_path / "proc"
    root.mkdir()
    subprocess.run([_loadgen(), "fake-proc", str(root), "65536"], check=True)
    env = dict(os.environ, TASKSNAP_PROC_ROOT=str(root), TASKSNAP_PAGE_SIZE="65536")
    r = subprocess.run(
        [sys.executable, "-c", CHECKS], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
