"""tasksnap's Python binding against psutil in one Python process, alternating the two.

  python bench/python.py iter [--runs N]        list(process_iter(ATTRS)), both libraries, and
                                                tasksnap's with every info read
  python bench/python.py iter --attrs pid,name  the same with other attributes
  python bench/python.py snapshot [--runs N]    tasksnap.snapshot(ATTRS, threads=True), as a
                                                pyarrow Table and as a dict of lists

Prints one line per measurement and a JSON summary (medians in ms, ratio, tasks, backend,
whether the caller is root). bench/python.sh spawns the load and runs this.
"""

import argparse
import json
import os
import statistics
import sys
import time

import tasksnap

ATTRS = ["pid", "ppid", "name", "username", "status", "cpu_times", "memory_info", "cmdline",
         "num_threads", "create_time"]


CPU = {}


def timed(f, key=None):
    """Wall-clock ms of f() (and, under `key`, the process's CPU ms: every thread's)."""
    c = time.process_time()
    t = time.perf_counter()
    r = f()
    wall = (time.perf_counter() - t) * 1e3
    if key:
        CPU.setdefault(key, []).append((time.process_time() - c) * 1e3)
    return wall, r


def read_infos():
    """process_iter with every info read (what a loop over it does)."""
    procs = list(tasksnap.process_iter(ATTRS))
    for p in procs:
        p.info
    return procs


def bench_iter(runs):
    import psutil

    first_ms, first = timed(lambda: list(tasksnap.process_iter(ATTRS)))
    first_report = tasksnap.last_report()
    psutil_first_ms, _ = timed(lambda: list(psutil.process_iter(ATTRS)))
    ours, theirs, read, n = [], [], [], 0
    for i in range(runs):
        # Alternate which goes first so neither always reads a warmer cache.
        order = ("tasksnap", "psutil") if i % 2 == 0 else ("psutil", "tasksnap")
        for lib in order:
            if lib == "tasksnap":
                ms, r = timed(lambda: list(tasksnap.process_iter(ATTRS)), "tasksnap")
                ours.append(ms)
                n = len(r)
            else:
                ms, _ = timed(lambda: list(psutil.process_iter(ATTRS)), "psutil")
                theirs.append(ms)
            print(f"run {i} {lib:8} {ms:9.1f} ms", file=sys.stderr, flush=True)
        ms, _ = timed(read_infos)
        read.append(ms)
        print(f"run {i} tasksnap, every info read {ms:9.1f} ms", file=sys.stderr, flush=True)
    rep = tasksnap.last_report()
    out = {
        "what": f"list(process_iter({ATTRS}))",
        "root": os.geteuid() == 0,
        "processes": n,
        "runs": runs,
        "psutil_version": psutil.__version__,
        "backend": rep.backend,
        "pinned": rep.pinned,
        "why": rep.why,
        "tasksnap_median_ms": round(statistics.median(ours), 1),
        "psutil_median_ms": round(statistics.median(theirs), 1),
        "ratio": round(statistics.median(theirs) / statistics.median(ours), 1),
        "tasksnap_every_info_read_median_ms": round(statistics.median(read), 1),
        "ratio_every_info_read": round(statistics.median(theirs) / statistics.median(read), 1),
        "tasksnap_first_call_ms": round(first_ms, 1),
        "first_call_backend": first_report.backend,
        "psutil_first_call_ms": round(psutil_first_ms, 1),
        "tasksnap_library_ms": round(rep.seconds * 1e3, 1),
        "tasksnap_library_phases_ms": {n: round(s * 1e3, 1) for n, s in rep.phases if s >= 1e-4},
        "tasksnap_cpu_median_ms": round(statistics.median(CPU["tasksnap"]), 1),
        "psutil_cpu_median_ms": round(statistics.median(CPU["psutil"]), 1),
    }
    return out


def bench_snapshot(runs):
    first_ms, _ = timed(lambda: tasksnap.snapshot(ATTRS, threads=True, arrow=False))
    res = {"arrow": [], "dict": []}
    rows = 0
    have_arrow = True
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        have_arrow = False
    for i in range(runs):
        for kind in ("dict", "arrow") if have_arrow else ("dict",):
            ms, t = timed(lambda: tasksnap.snapshot(ATTRS, threads=True, arrow=(kind == "arrow")))
            res[kind].append(ms)
            rows = t.num_rows if kind == "arrow" else len(t["pid"])
            print(f"run {i} snapshot {kind:5} {ms:9.1f} ms ({rows} rows)", file=sys.stderr, flush=True)
    rep = tasksnap.last_report()
    out = {
        "what": "snapshot(ATTRS, threads=True)",
        "root": os.geteuid() == 0,
        "threads": rows,
        "runs": runs,
        "backend": rep.backend,
        "first_call_ms": round(first_ms, 1),
        "dict_median_ms": round(statistics.median(res["dict"]), 1),
        "tasksnap_library_ms": round(rep.seconds * 1e3, 1),
        "tasksnap_library_phases_ms": {n: round(s * 1e3, 1) for n, s in rep.phases if s >= 1e-4},
    }
    if have_arrow:
        out["arrow_median_ms"] = round(statistics.median(res["arrow"]), 1)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["iter", "snapshot"])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--attrs", help="comma-separated attribute names instead of ATTRS")
    a = ap.parse_args()
    if a.attrs:
        ATTRS[:] = a.attrs.split(",")
    out = bench_iter(a.runs) if a.what == "iter" else bench_snapshot(a.runs)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
