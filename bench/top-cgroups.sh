#!/usr/bin/env bash
# Benchmark: what top's cgroup view (`--cgroups`, the g key) adds per refresh, at N cgroups
# (default 1000, made in the cpu hierarchy for the run and removed after) and P processes
# (default 50000, tasksnap-loadgen): the live view (in a terminal of its own, a private tmux
# server, refreshing every D seconds) without and with `--cgroups`, alternating, ROUNDS
# times; CPU (utime+stime of top) over WINDOW seconds after a WARMUP, per refresh, medians.
# The live view formats only the rows on screen: the cgroup view reads every cgroup's files
# each refresh where the task view reads the tasks (which it still does, for the header).
# Root only (cgroups are made).
#
#   bench/top-cgroups.sh [N] [P]      D=1 WINDOW=20 WARMUP=5 ROUNDS=3 by default
set -euo pipefail
. "$(dirname "$0")/lib.sh"
release_binaries
N=${1:-1000}
P=${2:-50000}
D=${D:-1}
WINDOW=${WINDOW:-20}
WARMUP=${WARMUP:-5}
ROUNDS=${ROUNDS:-3}
command -v tmux >/dev/null || { echo "bench/top-cgroups.sh needs tmux" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench/top-cgroups.sh: run as root (it makes cgroups)" >&2; exit 1; }
raise_limits
root=$(awk '$9 == "cgroup" && $NF ~ /(^|,)cpu(,|$)/ { print $5; exit }' /proc/self/mountinfo)
if [ -z "$root" ]; then
  root=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
fi
base=$root/tasksnap-bench-top-$$
cleanup() {
  tmux -L "$SOCK" kill-server 2>/dev/null || true
  stop_load
  for d in "$base"/g*; do [ -d "$d" ] && rmdir "$d"; done 2>/dev/null || true
  [ -d "$base" ] && rmdir "$base" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
mkdir "$base"
for i in $(seq 2 "$N"); do mkdir "$base/g$i"; done
echo "cgroups: $(find "$root" -mindepth 1 -type d | wc -l) below $root (this run's: $N)"

coproc LOAD { exec "$LG" --procs "$P" --until-stdin-eof; }
load_pid=$LOAD_PID
read -r _ <&"${LOAD[0]}"
echo "load ready: $(ls /proc | grep -c '^[0-9]') processes"

HZ=$(getconf CLK_TCK)
SOCK=tasksnap-bench-cg-$$
cpu_ticks() { awk '{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }
# The live view in a terminal of its own (a private tmux server), as bench/top.sh runs it:
# CPU over WINDOW seconds after a warm-up, ms per refresh (-d D).
live_ms_per_refresh() {
  tmux -L "$SOCK" new-session -d -s b -x 160 -y 50 "exec $TS top -d $D $*"
  local pid
  pid=$(tmux -L "$SOCK" list-panes -t b -F '#{pane_pid}')
  sleep "$WARMUP"
  local t0 t1
  t0=$(cpu_ticks "$pid"); sleep "$WINDOW"; t1=$(cpu_ticks "$pid")
  tmux -L "$SOCK" kill-server 2>/dev/null || true
  sleep 1
  awk -v a="$t0" -v b="$t1" -v hz="$HZ" -v w="$WINDOW" -v d="$D" \
    'BEGIN { printf "%.1f\n", (b - a) / hz * 1000 / (w / d) }'
}
plain=()
view=()
for _ in $(seq "$ROUNDS"); do
  plain+=("$(live_ms_per_refresh)")
  view+=("$(live_ms_per_refresh --cgroups)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
printf '%-36s %s\n' "variant (live view, tmux)" "cpu_ms_per_refresh (median; all)"
printf '%-36s %s (%s)\n' "top -d $D" "$(median "${plain[@]}")" "${plain[*]}"
printf '%-36s %s (%s)\n' "top -d $D --cgroups" "$(median "${view[@]}")" "${view[*]}"
