#!/usr/bin/env bash
# Benchmark: what one reading of every cgroup (`Host::cgroups`, the listing `tasksnap
# cgroups`, top's cgroup view, serve and record take) costs at N cgroups: N made for the run
# in every v1 hierarchy with a controller tasksnap reads (cpu, cpuacct, memory, pids, blkio;
# as a container runtime makes them: one directory per hierarchy), or in the v2 hierarchy,
# removed after. `tasksnap cgroups --states off -i 0.01` reads twice; perf stat's task-clock
# (20 runs) with the N cgroups and without, the difference halved is the cost of one
# reading of N. Root only.
#
#   bench/cgroups-listing.sh [N]      default 1000
set -euo pipefail
. "$(dirname "$0")/lib.sh"
release_binaries
N=${1:-1000}
[ "$(id -u)" = 0 ] || { echo "bench/cgroups-listing.sh: run as root (it makes cgroups)" >&2; exit 1; }
command -v perf >/dev/null || { echo "bench/cgroups-listing.sh needs perf" >&2; exit 1; }
roots=$(awk '$9 == "cgroup" && $NF ~ /(^|,)(cpu|cpuacct|memory|pids|blkio)(,|$)/ { print $5 }' /proc/self/mountinfo)
[ -n "$roots" ] || roots=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
made=()
cleanup() {
  for b in "${made[@]}"; do
    for d in "$b"/g*; do [ -d "$d" ] && rmdir "$d"; done 2>/dev/null || true
    rmdir "$b" 2>/dev/null || true
  done
}
trap cleanup EXIT INT TERM
clock_ms() {
  perf stat -x, -e task-clock -r 20 "$TS" cgroups --states off -i 0.01 --output csv 2>&1 >/dev/null |
    awk -F, '/task-clock/ { printf "%.2f\n", $1 }'
}
without=$(clock_ms)
for r in $roots; do
  b=$r/tasksnap-bench-ls-$$
  mkdir "$b"; made+=("$b")
  for i in $(seq 2 "$N"); do mkdir "$b/g$i"; done
done
rows=$("$TS" cgroups --states off -i 0.01 --output csv | tail -n +2 | wc -l)
with=$(clock_ms)
echo "hierarchies: $(echo "$roots" | wc -w); rows listed: $rows"
printf 'task-clock of two readings: %s ms without, %s ms with %s more cgroups\n' "$without" "$with" "$N"
awk -v a="$without" -v b="$with" -v n="$N" 'BEGIN { printf "one reading of %d cgroups: %.1f ms (%.1f us a cgroup)\n", n, (b - a) / 2, (b - a) / 2 / n * 1000 }'
