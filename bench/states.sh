#!/usr/bin/env bash
# Benchmark: what `tasksnap states` costs (docs/states.md has the numbers of one run).
#   1. The BPF accounting's cost to a context-switch-heavy load: `perf bench sched pipe`,
#      both ends pinned to the last CPU so that every round trip is two context switches on
#      one CPU (unpinned, on a 2-core VM, the cross-CPU wake-ups dominate and vary by 10x with
#      other load), without and with `tasksnap states -i 60` running (pinned to CPU 0),
#      alternating so that drift in the machine's load hits both; and the programs' own run
#      time per call from kernel.bpf_stats_enabled.
#   2. Reading and printing one interval for 10,000 threads (tasksnap-loadgen --threads 10000),
#      as `tasksnap states --timings` reports it (sample + intervals + print, all rows).
#   3. The /proc fallback's CPU at 1,000 threads and 20 Hz: user+system over wall time of
#      `tasksnap states --mode procfs` over 10 intervals (/usr/bin/time).
#
#   bench/states.sh             RUNS=20 (pairs of pipe runs), LOOPS=50000 (round trips each),
#                               PHASES=123 (which of the three to run)
#
# Needs root (BPF, bpf_stats), perf, bpftool and /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
TS=${TS:-./target/release/tasksnap}
LG=./target/release/tasksnap-loadgen
RUNS=${RUNS:-20}
LOOPS=${LOOPS:-50000}
LAST_CPU=$(( $(nproc) - 1 ))
OUT=${OUT:-target/bench}
PHASES=${PHASES:-123}
mkdir -p "$OUT"
cargo build --release -p tasksnap -p tasksnap-loadgen --quiet

. bench/lib.sh
ts_pid=""
cleanup() {
  if [ -n "$ts_pid" ]; then kill -KILL "$ts_pid" 2>/dev/null || true; wait "$ts_pid" 2>/dev/null || true; fi
  stop_load
  ts_pid=""
}
trap cleanup EXIT INT TERM
# Starts a load of $1 threads (in one process, whose pid is then in tpid).
start_threads() {
  coproc LOAD { exec "$LG" --threads "$1" --until-stdin-eof; }
  load_pid=$LOAD_PID
  read -r info <&"${LOAD[0]}"
  tpid=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['threads_pid'])" "$info")
}

echo "host: $(uname -r), $(nproc) CPUs, $(ls /proc | grep -c '^[0-9]') processes, $(ps -eLo tid= | wc -l) threads"
echo
if [[ $PHASES == *1* ]]; then
echo "== 1. taskset -c $LAST_CPU perf bench sched pipe -l $LOOPS: $RUNS pairs, alternating"
echo "   without and with \`tasksnap states -i 60\` (pinned to CPU 0) running"
: >"$OUT/states-pipe.txt"
pipe_secs() { taskset -c "$LAST_CPU" perf bench sched pipe -l "$LOOPS" 2>/dev/null | awk '/Total time/ {print $3}'; }
stats_was=$(cat /proc/sys/kernel/bpf_stats_enabled)
for _ in $(seq "$RUNS"); do
  base=$(pipe_secs)
  taskset -c 0 "$TS" states --mode bpf -i 60 >/dev/null 2>&1 &
  ts_pid=$!
  # Attached once the first pass is done (a second at 50,000 tasks); then counted exactly.
  sleep 2
  with=$(pipe_secs)
  kill -KILL "$ts_pid"; wait "$ts_pid" 2>/dev/null || true; ts_pid=""
  echo "$base $with" >>"$OUT/states-pipe.txt"
done
# The programs' own run time per call, in one more run with kernel.bpf_stats_enabled (which
# adds its own clock reads to every call: an upper bound).
taskset -c 0 "$TS" states --mode bpf -i 60 >/dev/null 2>&1 &
ts_pid=$!
sleep 2
sysctl -qw kernel.bpf_stats_enabled=1
pipe_secs >/dev/null
bpftool prog show -j | python3 -c '
import json, sys
progs = [p for p in json.load(sys.stdin) if p.get("name") == "on_switch"]
print(sum(p.get("run_time_ns", 0) for p in progs), sum(p.get("run_cnt", 0) for p in progs))' >"$OUT/states-bpfstats.txt"
sysctl -qw kernel.bpf_stats_enabled="$stats_was"
kill -KILL "$ts_pid"; wait "$ts_pid" 2>/dev/null || true; ts_pid=""
python3 - "$OUT/states-pipe.txt" "$LOOPS" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
loops = int(sys.argv[2])
base = statistics.median(r[0] for r in rows)
with_ = statistics.median(r[1] for r in rows)
ratios = sorted(r[1] / r[0] for r in rows)
print(f"without: median {base*1e3:.1f} ms ({base/loops*1e6:.2f} us per round trip)")
print(f"with:    median {with_*1e3:.1f} ms ({with_/loops*1e6:.2f} us per round trip)")
print(f"ratio of medians {with_/base:.3f}; per-pair ratios min {ratios[0]:.3f} "
      f"median {statistics.median(ratios):.3f} max {ratios[-1]:.3f}")
run_ns, runs = map(int, open(sys.argv[1].replace("states-pipe.txt", "states-bpfstats.txt")).read().split())
per_run = run_ns / max(runs, 1)
trip = base / loops * 1e9
print(f"on_switch: {per_run:.0f} ns per run with bpf_stats on (an upper bound); two runs per "
      f"round trip = {2 * per_run / trip * 100:.1f}% of a {trip / 1e3:.2f} us round trip")
PY
fi

if [[ $PHASES == *2* ]]; then
echo
echo "== 2. one interval of 10,000 threads (BPF, all rows printed)"
start_threads 10000
"$TS" states --mode bpf -p "$tpid" -i 1 -n 11 -r 0 --timings 2>&1 >/dev/null | grep timings
echo "-- the same, /proc mode"
"$TS" states --mode procfs -p "$tpid" -i 1 -n 3 -r 0 --timings 2>&1 >/dev/null | grep timings
cleanup

fi

if [[ $PHASES == *3* ]]; then
echo
echo "== 3. /proc fallback CPU, 1,000 threads, 20 Hz, 10 intervals of 1 s"
start_threads 1000
/usr/bin/time -f "%U %S %e" -o "$OUT/states-fallback-time.txt" \
  "$TS" states --mode procfs --sample-hz 20 -p "$tpid" -i 1 -n 10 -r 0 >/dev/null
read -r user sys wall <"$OUT/states-fallback-time.txt"
python3 -c "import sys; u,s,w=map(float,sys.argv[1:]); print(f'user {u:.2f} s, system {s:.2f} s, wall {w:.2f} s: {100*(u+s)/w:.1f}% of one CPU')" "$user" "$sys" "$wall"
cleanup
fi
