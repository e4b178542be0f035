#!/usr/bin/env bash
# Benchmark: seeking in a day-long recording. Builds a store of SAMPLES real readings of a host
# running N processes, stamped INTERVAL seconds apart (a day at 10 s: 8,640 samples in 24
# hourly segments; crates/cli/examples/day_store.rs), then times `tasksnap ps --replay DIR
# --at T` (open the store, find the segment and key frame, decode the key, the names frames
# and the sample, list the processes) at times spread over the day, with hyperfine.
#
#   bench/replay.sh [N]          default 1000 processes; SAMPLES=8640 INTERVAL=10 RUNS=20
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
SAMPLES=${SAMPLES:-8640}
INTERVAL=${INTERVAL:-10}
RUNS=${RUNS:-20}
TS=${TS:-$PWD/target/release/tasksnap}
LG=$PWD/target/release/tasksnap-loadgen
DS=$PWD/target/release/examples/day_store
[ -x "$TS" ] && [ -x "$LG" ] || cargo build --release --workspace --quiet
[ -x "$DS" ] || cargo build --release --quiet -p tasksnap --example day_store
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }

. bench/lib.sh
raise_limits
work=$(mktemp -d /var/tmp/tasksnap-replay-bench.XXXXXX)
cleanup() { stop_load; rm -rf "$work"; }
trap cleanup EXIT INT TERM

coproc LOAD { exec "$LG" --procs "$N" --until-stdin-eof; }
load_pid=$LOAD_PID
read -r _ <&"${LOAD[0]}"
echo "load ready: $(ls /proc | grep -c '^[0-9]') processes; building $SAMPLES samples, ${INTERVAL}s apart"
read -r first last < <("$DS" "$work/store" "$SAMPLES" "$INTERVAL")
stop_load
echo "store: $(du -sh "$work/store" | cut -f1), $(ls "$work/store" | grep -c '\.tsf$') segments, $first .. $last"
span=$((last - first))
args=()
for frac in 1 37 50 83 99; do
  at=$((first + span * frac / 100 + 7))
  args+=("$TS ps --replay $work/store --at $at -e -o pid,user,stat,comm")
done
hyperfine -N -w 3 -r "$RUNS" --style none --export-json "$work/seek.json" "${args[@]}" >/dev/null
python3 - "$work/seek.json" "$first" <<'PY'
import json, sys
first = int(sys.argv[2])
for r in json.load(open(sys.argv[1]))["results"]:
    at = int(r["command"].split("--at ")[1].split()[0])
    print(f"--at +{(at - first) / 3600:5.2f} h: median {r['median'] * 1e3:6.1f} ms "
          f"(min {r['min'] * 1e3:.1f}, max {r['max'] * 1e3:.1f}; {len(r['times'])} runs)")
PY
