#!/usr/bin/env python3
"""Runs the workspace's test binaries in parallel lanes (what `./x test` does with no test
arguments; `cargo test` runs them one after another).

    cargo test --workspace --no-run --message-format=json | python3 tests/lanes.py [LANES]

Most of the suite's time is spent waiting: on the processes a test spawns, on sampling
intervals, on procps. Run one binary at a time, the suite takes some six minutes of which
the CPU is busy for a fraction; in LANES lanes (default 2, `TASKSNAP_TEST_LANES`) it takes
about half, each binary still running its own tests as `cargo test` would (in the package's
directory, its tests on threads of its own). Binaries that change what the whole host does
for every other test (EXCLUSIVE: `tasksnap pin` makes every `auto` run choose the pinned
programs) run alone, after the lanes.

Each binary's output is printed whole when it ends, so lanes never interleave lines; the
run fails when any binary fails, and says which.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time

# Binaries (cargo's target names) that change the host for other tests: run alone.
EXCLUSIVE = {"pin"}
# The slowest binaries first, so that no lane is left with a long one at the end.
SLOW_FIRST = [
    "ps_specifiers", "top", "roundtrip", "states_bpf_workloads", "serve_exits", "ps_oracle",
    "serve_prometheus", "service", "record", "states", "states_procfs_workloads", "live",
]


def binaries(messages):
    """(name, package directory, executable) of each test binary cargo built."""
    out = []
    for line in messages:
        line = line.strip()
        if not line.startswith("{"):
            continue
        m = json.loads(line)
        if m.get("reason") != "compiler-artifact" or not m.get("executable"):
            continue
        if not m.get("profile", {}).get("test"):
            continue
        out.append((m["target"]["name"], os.path.dirname(m["manifest_path"]), m["executable"]))
    return out


def order(found):
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    return sorted(found, key=lambda b: (rank.get(b[0], len(rank)), b[0], b[2]))


class Lanes:
    def __init__(self):
        self.lock = threading.Lock()
        self.failed = []

    def run(self, name, cwd, exe):
        started = time.monotonic()
        with tempfile.TemporaryFile() as log:
            env = dict(os.environ, CARGO_MANIFEST_DIR=cwd)
            rc = subprocess.call([exe], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
            log.seek(0)
            text = log.read()
        took = time.monotonic() - started
        with self.lock:
            sys.stdout.flush()
            print(f"     Running {os.path.relpath(exe)} ({name}, {took:.1f} s)", flush=True)
            sys.stdout.buffer.write(text)
            sys.stdout.buffer.flush()
            if rc != 0:
                self.failed.append(f"{name} ({exe}): exit {rc}")

    def lane(self, queue):
        while True:
            with self.lock:
                if not queue:
                    return
                name, cwd, exe = queue.pop(0)
            self.run(name, cwd, exe)


def main():
    lanes = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ.get("TASKSNAP_TEST_LANES", "2"))
    found = order(binaries(sys.stdin))
    if not found:
        print("lanes: no test binaries in cargo's messages", file=sys.stderr)
        return 1
    shared = [b for b in found if b[0] not in EXCLUSIVE]
    alone = [b for b in found if b[0] in EXCLUSIVE]
    runner = Lanes()
    threads = [threading.Thread(target=runner.lane, args=(shared,)) for _ in range(max(1, lanes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for b in alone:
        runner.run(*b)
    if runner.failed:
        print("\nlanes: failed:\n  " + "\n  ".join(runner.failed), file=sys.stderr)
        return 1
    print(f"\nlanes: {len(found)} test binaries passed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
