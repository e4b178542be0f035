#!/usr/bin/env bash
# Benchmark: what recording the cgroups table costs `tasksnap record`, at N cgroups this
# script makes (default 1000) under the v1 `cpu` hierarchy (/sys/fs/cgroup/cpu/
# tasksnap-bench-rec-PID-I, removed at the end). BUSY of them (default 10) hold a shell that
# wakes every 0.1 s (a `sleep` a time) under a 50% quota, so their counters move; the rest are
# idle. In one run, ROUNDS times (default 3), two recorders at once, each into its own store
# (so both see the same host): `tasksnap record` with the default `--cgroup-depth 3` and with
# `--cgroup-depth 0` (no table), SAMPLES samples (default 60, one key frame: `--key-every`
# 60) INTERVAL apart (default 0.5 s). Reports the medians of the recorder's own CPU per
# sample (its closing line: the samples' CPU, start-up excluded), of the time `--timings`
# gives reading the cgroups, and of the store's bytes per sample, side by side, and how many
# cgroup rows a sample holds.
#
#   bench/record-cgroups.sh [N]
#   BUSY=0 ROUNDS=5 bench/record-cgroups.sh 1000
#   TS=/path/to/tasksnap bench/record-cgroups.sh       another build
#
# Root only (making cgroups; the recorder runs as root, with BPF where it loads, as a
# service would); cgroup v1 with the `cpu` controller.
set -euo pipefail
cd "$(dirname "$0")/.."
TS=${TS:-$PWD/target/release/tasksnap}
[ -x "$TS" ] || cargo build --release --quiet -p tasksnap
N=${1:-1000}
BUSY=${BUSY:-10}
ROUNDS=${ROUNDS:-3}
SAMPLES=${SAMPLES:-60}
INTERVAL=${INTERVAL:-0.5}
[ "$(id -u)" = 0 ] || { echo "record-cgroups.sh: root only (it makes cgroups)" >&2; exit 1; }
cpu=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ {print $2; exit}' /proc/mounts)
[ -n "$cpu" ] || { echo "record-cgroups.sh: no v1 hierarchy with the cpu controller" >&2; exit 1; }

work=$(mktemp -d /var/tmp/tasksnap-record-cgroups.XXXXXX)
groups=()
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for g in "${groups[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$g" 2>/dev/null && break; sleep 0.1; done
  done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

for i in $(seq 1 "$N"); do
  g="$cpu/tasksnap-bench-rec-$$-$i"
  mkdir "$g"
  groups+=("$g")
done
for i in $(seq 1 "$BUSY"); do
  g=${groups[$((i - 1))]}
  echo 100000 > "$g/cpu.cfs_period_us"
  echo 50000 > "$g/cpu.cfs_quota_us"
  # A process group of its own, moved into the cgroup before it starts its loop.
  setsid sh -c "echo \$\$ > '$g/cgroup.procs'; exec sh -c 'while :; do sleep 0.1; done'" &
  pids+=($!)
done
echo "$N cgroups under $cpu ($BUSY busy); $ROUNDS rounds of $SAMPLES samples ${INTERVAL}s apart"

# One recording into $work/d$1-r$2, in the background (its pid in $rec_pid).
start() {
  local depth=$1 round=$2 dir="$work/d$1-r$2"
  "$TS" record --dir "$dir" --interval "$INTERVAL" --count "$SAMPLES" --key-every 60 \
    --cgroup-depth "$depth" --timings 2>"$dir.err" >/dev/null &
  rec_pid=$!
}

# What a finished recording cost: prints "cpu_ms_per_sample bytes_per_sample
# cgroup_rows_per_sample cgroups_read_ms" (the median of --timings' cgroups phase).
cost() {
  local depth=$1 round=$2 dir="$work/d$1-r$2"
  local cpu_ms bytes rows read_ms
  cpu_ms=$(sed -n 's/.*own CPU \([0-9.]*\) ms per sample.*/\1/p' "$dir.err")
  bytes=$(du -sb "$dir" | cut -f1)
  rows=$("$TS" dump --dir "$dir" --what cgroups --fields path 2>/dev/null | tail -n +2 | wc -l)
  read_ms=$(sed -n 's/.* cgroups \([0-9.]*\) ms,.*/\1/p' "$dir.err" | median)
  awk -v c="$cpu_ms" -v b="$bytes" -v r="$rows" -v n="$SAMPLES" -v m="$read_ms" \
    'BEGIN { printf "%s %.0f %.0f %s\n", c, b / n, r / n, m }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

: >"$work/results"
for r in $(seq 1 "$ROUNDS"); do
  # Both at once, so that both stores hold the same host (its tasks come and go alike).
  start 3 "$r"; p3=$rec_pid
  start 0 "$r"; p0=$rec_pid
  wait "$p3" || { echo "record failed:" >&2; cat "$work/d3-r$r.err" >&2; exit 1; }
  wait "$p0" || { echo "record failed:" >&2; cat "$work/d0-r$r.err" >&2; exit 1; }
  for depth in 3 0; do
    read -r c b rows m < <(cost "$depth" "$r")
    echo "$depth $c $b $rows $m" >>"$work/results"
    printf 'round %d, --cgroup-depth %d: %s ms CPU (cgroups read: %s ms), %s bytes, %s cgroup rows per sample\n' \
      "$r" "$depth" "$c" "$m" "$b" "$rows"
  done
done

col() { awk -v d="$1" -v k="$2" '$1 == d { print $k }' "$work/results" | median; }
c3=$(col 3 2); c0=$(col 0 2); b3=$(col 3 3); b0=$(col 0 3); rows=$(col 3 4); m3=$(col 3 5)
echo
printf '%-22s %14s %16s %18s %18s\n' "" "CPU ms/sample" "bytes/sample" "cgroup rows/sample" "cgroups read ms"
printf '%-22s %14s %16s %18s %18s\n' "--cgroup-depth 3" "$c3" "$b3" "$rows" "$m3"
printf '%-22s %14s %16s %18s %18s\n' "--cgroup-depth 0" "$c0" "$b0" 0 -
awk -v c3="$c3" -v c0="$c0" -v b3="$b3" -v b0="$b0" \
  'BEGIN { printf "%-22s %14.1f %16.0f\n", "the table costs", c3 - c0, b3 - b0 }'
