#!/usr/bin/env bash
# Benchmark: what `tasksnap states` costs (docs/states.md has the numbers of one run).
#   1. The BPF accounting's cost to a context-switch-heavy load: `perf bench sched pipe`
#      (hyperfine medians), both ends pinned to the last CPU so that every round trip is two
#      context switches on one CPU (unpinned, on a 2-core VM, the cross-CPU wake-ups dominate
#      and vary by 10x with other load), without tasksnap, with `tasksnap states -i 60`
#      running (the tracepoints alone) and with `-i 1` (plus one iterator pass a second);
#      tasksnap itself is pinned to CPU 0.
#   2. Reading and printing one interval for 10,000 threads (tasksnap-loadgen --threads 10000),
#      as `tasksnap states --timings` reports it (sample + intervals + print, all rows).
#   3. The /proc fallback's CPU at 1,000 threads and 20 Hz: user+system over wall time of
#      `tasksnap states --mode procfs` over 10 intervals (/usr/bin/time).
#
#   bench/states.sh             RUNS=10 (hyperfine runs), LOOPS=100000 (pipe round trips)
#
# Needs root (BPF), perf, hyperfine and /usr/bin/time (./x installs them for `./x bench`).
set -euo pipefail
cd "$(dirname "$0")/.."
TS=./target/release/tasksnap
LG=./target/release/tasksnap-loadgen
RUNS=${RUNS:-10}
LOOPS=${LOOPS:-100000}
LAST_CPU=$(( $(nproc) - 1 ))
OUT=${OUT:-target/bench}
mkdir -p "$OUT"
cargo build --release -p tasksnap -p tasksnap-loadgen --quiet

load_pid=""
ts_pid=""
cleanup() {
  if [ -n "$ts_pid" ]; then kill -KILL "$ts_pid" 2>/dev/null || true; wait "$ts_pid" 2>/dev/null || true; fi
  if [ -n "$load_pid" ]; then
    kill -KILL -- "-$load_pid" 2>/dev/null || true
    wait "$load_pid" 2>/dev/null || true
    while pgrep -g "$load_pid" >/dev/null 2>&1; do sleep 0.2; done
  fi
  load_pid=""
  ts_pid=""
}
trap cleanup EXIT INT TERM

median_ms() { # hyperfine JSON -> median of its one command, ms
  python3 -c "import json,sys; print('%.1f' % (json.load(open(sys.argv[1]))['results'][0]['median']*1000))" "$1"
}

echo "host: $(uname -r), $(nproc) CPUs, $(ls /proc | grep -c '^[0-9]') processes, $(ps -eLo tid= | wc -l) threads"
echo
echo "== 1. taskset -c $LAST_CPU perf bench sched pipe -l $LOOPS, $RUNS runs each"
pipe() { # label, then hyperfine
  hyperfine --runs "$RUNS" --warmup 1 --export-json "$OUT/states-pipe-$1.json" \
    "taskset -c $LAST_CPU perf bench sched pipe -l $LOOPS" >/dev/null 2>&1
  echo "$1: median $(median_ms "$OUT/states-pipe-$1.json") ms"
}
pipe baseline
taskset -c 0 "$TS" states --mode bpf -i 60 >/dev/null 2>&1 &
ts_pid=$!
sleep 2
pipe accounting-i60
kill -KILL "$ts_pid"; wait "$ts_pid" 2>/dev/null || true; ts_pid=""
taskset -c 0 "$TS" states --mode bpf -i 1 -r 0 >/dev/null 2>&1 &
ts_pid=$!
sleep 2
pipe accounting-i1
kill -KILL "$ts_pid"; wait "$ts_pid" 2>/dev/null || true; ts_pid=""
pipe baseline-again
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
m = {k: json.load(open(f"{out}/states-pipe-{k}.json"))["results"][0]["median"]
     for k in ["baseline", "accounting-i60", "accounting-i1", "baseline-again"]}
base = (m["baseline"] + m["baseline-again"]) / 2
for k in ["accounting-i60", "accounting-i1"]:
    print(f"{k}: {m[k] / base:.3f}x the mean of the two baselines")
PY

echo
echo "== 2. one interval of 10,000 threads (BPF, all rows printed)"
coproc LOAD { exec "$LG" --threads 10000 --until-stdin-eof; }
load_pid=$LOAD_PID
read -r info <&"${LOAD[0]}"
tpid=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['threads_pid'])" "$info")
"$TS" states --mode bpf -p "$tpid" -i 1 -n 11 -r 0 --timings 2>&1 >/dev/null | grep timings
echo "-- the same, /proc mode"
"$TS" states --mode procfs -p "$tpid" -i 1 -n 3 -r 0 --timings 2>&1 >/dev/null | grep timings
cleanup

echo
echo "== 3. /proc fallback CPU, 1,000 threads, 20 Hz, 10 intervals of 1 s"
coproc LOAD { exec "$LG" --threads 1000 --until-stdin-eof; }
load_pid=$LOAD_PID
read -r info <&"${LOAD[0]}"
tpid=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['threads_pid'])" "$info")
/usr/bin/time -f "%U %S %e" -o "$OUT/states-fallback-time.txt" \
  "$TS" states --mode procfs --sample-hz 20 -p "$tpid" -i 1 -n 10 -r 0 >/dev/null
read -r user sys wall <"$OUT/states-fallback-time.txt"
python3 -c "import sys; u,s,w=map(float,sys.argv[1:]); print(f'user {u:.2f} s, system {s:.2f} s, wall {w:.2f} s: {100*(u+s)/w:.1f}% of one CPU')" "$user" "$sys" "$wall"
cleanup
