#!/usr/bin/env bash
# A/B benchmark: two tasksnap builds and procps `ps`, side by side in one run, on N sleeping
# processes spawned by tasksnap-loadgen: hyperfine medians of `ps -ef`, `ps -e -o
# pid,ppid,user,stat,comm` and `ps aux` for procps, build A and build B (each with --backend
# auto, loading its own BPF programs as an unpinned run does), interleaved by hyperfine in
# one session so that drift hits all of them. Used to show that a change costs nothing.
#
#   bench/ab.sh A_BIN B_BIN [N]      default N 50000; needs root above ~30k processes
#   RUNS=10 bench/ab.sh ...          hyperfine runs per command
#   SETTLE=60 bench/ab.sh ...        seconds to wait after the load is up
#
# Build A from an older commit, e.g.:
#   git worktree add /tmp/old <commit> && CARGO_TARGET_DIR=/tmp/old-target \
#     cargo build --release -p tasksnap --manifest-path /tmp/old/Cargo.toml
set -euo pipefail
cd "$(dirname "$0")/.."
A=${1:?usage: bench/ab.sh A_BIN B_BIN [N]}
B=${2:?usage: bench/ab.sh A_BIN B_BIN [N]}
N=${3:-50000}
RUNS=${RUNS:-10}
LG=./target/release/tasksnap-loadgen
OUT=${OUT:-target/bench}
mkdir -p "$OUT"
[ -x "$LG" ] || cargo build --release -p tasksnap-loadgen --quiet
command -v hyperfine >/dev/null || { echo "bench/ab.sh needs hyperfine" >&2; exit 1; }

. bench/lib.sh
raise_limits

trap stop_load EXIT INT TERM

coproc LOAD { exec "$LG" --procs "$N" --until-stdin-eof; }
load_pid=$LOAD_PID
read -r _ <&"${LOAD[0]}"
echo "load ready: $(ls /proc | grep -c '^[0-9]') processes on the machine"
# Creating tens of thousands of processes leaves the machine busy for a while after the last
# one is up (load average in the hundreds, reclaim): measured then, the first command set
# varied by ±150 ms. Let it settle first.
sleep "${SETTLE:-60}"

for args in "-ef" "-e -o pid,ppid,user,stat,comm" "aux"; do
  tag=$(echo "$args" | tr -c 'a-z0-9' '_')
  hyperfine -N -w 2 -r "$RUNS" --export-json "$OUT/ab-$tag.json" \
    -n "procps ps $args" "ps $args" \
    -n "A ps $args" "$A ps $args" \
    -n "B ps $args" "$B ps $args" >/dev/null
  python3 - "$OUT/ab-$tag.json" <<'EOF'
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
procps = rs[0]["median"]
for r in rs:
    print(f'{r["command"]:<45} median {r["median"]*1e3:9.1f} ms  '
          f'(procps/this {procps / r["median"]:5.1f}x)')
EOF
done
