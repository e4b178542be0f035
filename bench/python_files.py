"""One process's file methods (cwd, open_files, memory_maps, memory_full_info,
net_connections, ionice, terminal) and the module-level net_connections, tasksnap against
psutil in one Python process, alternating the two on the same target.

  python bench/python_files.py [--calls N]

The target is a child this script spawns with files open, a TCP listener and a connected
pair, UDP and unix sockets and a mapped file. Prints, per method, the median microseconds
of N calls of each library (in rounds of 20, alternating), the ratio (psutil / tasksnap)
and the load average before and after.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

import tasksnap
from tasksnap import _files

CHILD = """
import mmap, os, socket, sys, time
os.chdir(sys.argv[1])
r = open("plain", "wb+"); r.write(b"x" * 4096); r.flush()
m = mmap.mmap(r.fileno(), 4096)
lst = socket.socket(); lst.bind(("127.0.0.1", 0)); lst.listen()
cli = socket.create_connection(lst.getsockname()); srv, _ = lst.accept()
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); udp.bind(("127.0.0.1", 0))
ux = socket.socket(socket.AF_UNIX); ux.bind("sock"); ux.listen()
sys.stdout.write("ready\\n"); sys.stdout.flush()
time.sleep(3600)
"""


class P(getattr(tasksnap, "Process"), getattr(_files, "_FilesMixin")):
    """tasksnap's Process with the file methods (whether or not it has them already)."""

    __slots__ = ()


def median_us(f, calls):
    ts = []
    for _ in range(calls):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return ts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="tasksnap-bench-files-")
    child = subprocess.Popen([sys.executable, "-c", CHILD, work], stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline().strip() == b"ready"
        ours, theirs = P(child.pid), psutil.Process(child.pid)
        cases = [
            ("cwd()", ours.cwd, theirs.cwd),
            ("open_files()", ours.open_files, theirs.open_files),
            ("memory_maps()", ours.memory_maps, theirs.memory_maps),
            ("memory_maps(grouped=False)", lambda: ours.memory_maps(False),
             lambda: theirs.memory_maps(False)),
            ("memory_full_info()", ours.memory_full_info, theirs.memory_full_info),
            ("net_connections('all')", lambda: ours.net_connections("all"),
             lambda: theirs.net_connections("all")),
            ("ionice()", ours.ionice, theirs.ionice),
            ("terminal()", ours.terminal, theirs.terminal),
            ("module net_connections('all')", lambda: _files.net_connections("all"),
             lambda: psutil.net_connections("all")),
        ]
        print(f"load average before: {os.getloadavg()}; root: {os.geteuid() == 0}")
        print(f"{'method':32} {'tasksnap µs':>12} {'psutil µs':>10} {'ratio':>6}")
        for name, a, b in cases:
            calls = max(args.calls // 10, 10) if name.startswith("module") else args.calls
            ta, tb = [], []
            for _ in range(max(calls // 20, 1)):
                ta += median_us(a, 20)
                tb += median_us(b, 20)
            ma, mb = statistics.median(ta) * 1e6, statistics.median(tb) * 1e6
            print(f"{name:32} {ma:12.1f} {mb:10.1f} {mb / ma:6.2f}")
        print(f"load average after: {os.getloadavg()}")
    finally:
        child.kill()
        child.wait()
        for f in ("plain", "sock"):
            try:
                os.unlink(os.path.join(work, f))
            except OSError:
                pass
        os.rmdir(work)


if __name__ == "__main__":
    main()
