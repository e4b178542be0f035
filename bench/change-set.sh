#!/usr/bin/env bash
# Benchmark: what the change set (crates/bpf/src/c/changes.bpf.c) costs per context switch.
# While `tasksnap top -b -d 1` (pinned to CPU 0) holds a change set: perf's pipe round trip
# on CPU 1 without and with that top (RUNS each), then one more run with
# kernel.bpf_stats_enabled on (its own clock reads make it an upper bound): run time per
# call of changes_switch and changes_wakeup, and of the thread states' on_switch, which top
# also attaches.
#
#   bench/change-set.sh            TS=/path/to/tasksnap LOOPS=200000 RUNS=3
#
# Needs root (BPF, bpf_stats), perf and bpftool. On a shared machine, under the lock:
#   flock /work/bench.lock bench/change-set.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TS=${TS:-target/release/tasksnap}
LOOPS=${LOOPS:-200000}
RUNS=${RUNS:-3}
pipe() { taskset -c 1 perf bench sched pipe -l "$LOOPS" 2>/dev/null | awk '/Total time/ {print $3}'; }
was=$(cat /proc/sys/kernel/bpf_stats_enabled)
top_pid=""
json=$(mktemp)
cleanup() {
  sysctl -qw kernel.bpf_stats_enabled="$was"
  [ -n "$top_pid" ] && kill "$top_pid" 2>/dev/null && wait "$top_pid" 2>/dev/null
  rm -f "$json"
}
trap cleanup EXIT INT TERM
for _ in $(seq "$RUNS"); do echo "pipe without: $(pipe) s"; done
taskset -c 0 "$TS" top -b -d 1 -n 1000 >/dev/null 2>&1 &
top_pid=$!
sleep 3
for _ in $(seq "$RUNS"); do echo "pipe with top: $(pipe) s"; done
sysctl -qw kernel.bpf_stats_enabled=1
pipe >/dev/null
bpftool prog show -j >"$json"
sysctl -qw kernel.bpf_stats_enabled="$was"
python3 - "$json" <<'PY'
import json, sys
progs = json.load(open(sys.argv[1]))
for name in ("changes_switch", "changes_wakeup", "on_switch"):
    ps = [p for p in progs if p.get("name") == name]
    ns = sum(p.get("run_time_ns", 0) for p in ps)
    n = sum(p.get("run_cnt", 0) for p in ps)
    print(f"{name}: {len(ps)} loaded, {n} runs, {ns / max(n, 1):.0f} ns per run (bpf_stats on)")
PY
