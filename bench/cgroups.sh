#!/usr/bin/env bash
# What reading the cgroups costs `tasksnap serve` per collection (docs/benchmarks.md):
#   1. N cgroups made under the v1 `cpu` hierarchy (/sys/fs/cgroup/cpu/tasksnap-bench-PID-I/J:
#      N/100 parents of 99 children each, within serve's default --cgroup-depth 3);
#   2. two exporters at once on the same host, one with the default --cgroup-depth and one
#      with --cgroup-depth 0, each collecting every second with --timings for ROUNDS
#      collections (the first one left out);
#   3. per exporter, the medians of each collection's CPU time, of its cgroups phase (the
#      walk and the fold) and of its encoding (wall), and its series, side by side; and the
#      directories the walk has to read, per hierarchy (other cgroups on the host count too);
#   4. the exporters stopped (SIGKILL to each one's pid) and the cgroups removed, children
#      first.
#
#   bench/cgroups.sh            N=1000 ROUNDS=30
#   N=2000 ROUNDS=60 TS=target/release/tasksnap bench/cgroups.sh
#
# Root only (cgroupfs). On a shared machine, run it under a lock, e.g.
#   flock /work/bench.lock bench/cgroups.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000}
ROUNDS=${ROUNDS:-30}
TS=${TS:-target/release/tasksnap}
[ -x "$TS" ] || cargo build --release -q -p tasksnap
[ "$(id -u)" = 0 ] || { echo "bench/cgroups.sh: root only (cgroupfs)" >&2; exit 1; }
cpu=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ {print $2; exit}' /proc/mounts)
[ -n "$cpu" ] || { echo "bench/cgroups.sh: no v1 cpu hierarchy" >&2; exit 1; }

work=$(mktemp -d)
parents=()
servers=()
cleanup() {
  for p in "${servers[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for p in "${parents[@]}"; do
    find "$p" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

made=0
i=0
while [ "$made" -lt "$N" ]; do
  p="$cpu/tasksnap-bench-$$-$i"
  mkdir "$p"
  parents+=("$p")
  made=$((made + 1))
  for j in $(seq 1 99); do
    [ "$made" -lt "$N" ] || break
    mkdir "$p/$j"
    made=$((made + 1))
  done
  i=$((i + 1))
done
echo "made $made cgroups under $cpu/tasksnap-bench-$$-*"
# What serve walks at its default depth: every hierarchy with a counter controller.
for h in $(awk '$3 == "cgroup2" || ($3 == "cgroup" && $4 ~ /(^|,)(cpu|cpuacct|memory|pids|blkio)(,|$)/) {print $2}' /proc/mounts); do
  echo "  $h: $(find "$h" -maxdepth 3 -type d | wc -l) directories down to depth 3"
done

for mode in default off; do
  extra=()
  [ "$mode" = off ] && extra=(--cgroup-depth 0)
  "$TS" serve --listen 127.0.0.1:0 --no-query-socket --backend procfs --interval 1 \
    --timings "${extra[@]}" 2>"$work/$mode.err" &
  servers+=($!)
done
# Both collect side by side: the same host, the same moments.
sleep $((ROUNDS + 2))
for p in "${servers[@]}"; do
  kill -KILL "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
done
servers=()

python3 - "$work" "$ROUNDS" <<'EOF'
import re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for mode in ("default", "off"):
    lines = [l for l in open(f"{work}/{mode}.err") if " CPU " in l and "series" in l]
    lines = lines[1:rounds + 1]  # the first collection reads everything anew
    cpu = [float(re.search(r"CPU ([0-9.]+) ms", l).group(1)) for l in lines]
    cg = [float(re.search(r"cgroups ([0-9.]+) ms", l).group(1)) for l in lines]
    enc = [float(re.search(r"encode ([0-9.]+) ms", l).group(1)) for l in lines]
    series = [int(re.search(r"; ([0-9]+) series", l).group(1)) for l in lines]
    med = statistics.median
    rows[mode] = (len(lines), med(cpu), med(cg), med(enc), series[-1])
print("| serve | collections | CPU per collection | cgroups (read, fold), wall | encode, wall | series |")
print("|---|---|---|---|---|---|")
for mode, label in (("default", "--cgroup-depth 3 (default)"), ("off", "--cgroup-depth 0")):
    n, cpu, cg, enc, s = rows[mode]
    print(f"| {label} | {n} | {cpu:.1f} ms | {cg:.1f} ms | {enc:.1f} ms | {s} |")
print("(medians)")
print(f"\nadded CPU per collection: {rows['default'][1] - rows['off'][1]:.1f} ms")
EOF
