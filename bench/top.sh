#!/usr/bin/env bash
# Benchmark: the cost of a live top at N processes, side by side in one run: procps `top`
# and `tasksnap top` (BPF loading its own programs, BPF with pinned programs, and procfs),
# each in its own terminal (a private tmux server), refreshing every second. Reports the
# time until the first screen shows the task table, CPU use over a 30 s window after a 5 s
# warm-up (utime+stime of the top process, % of one CPU), and peak RSS.
#
#   bench/top.sh [N]          default 50000; needs root above ~30k processes and for BPF
#   WINDOW=60 bench/top.sh    seconds measured per command
#   TS_A=/path/to/old/tasksnap bench/top.sh
#                             A/B: each tasksnap command runs with the older build A too,
#                             right before the current one, in the same run (see bench/ab.sh)
#   NO_PIN=1 bench/top.sh     no pinned row, and the machine's pins left alone (no `tasksnap
#                             pin` or `unpin`: they are machine-wide, another user's may be
#                             there); PROCFS=0 leaves out the procfs row too
set -euo pipefail
. "$(dirname "$0")/lib.sh"
release_binaries
N=${1:-50000}
WINDOW=${WINDOW:-30}
command -v tmux >/dev/null || { echo "bench/top.sh needs tmux" >&2; exit 1; }
SOCK=tasksnap-bench-$$
HZ=$(getconf CLK_TCK)

raise_limits

was_pinned=0
cleanup() {
  tmux -L "$SOCK" kill-server 2>/dev/null || true
  stop_load
  if [ "$(id -u)" = 0 ] && [ "$was_pinned" = 0 ] && [ -z "${NO_PIN:-}" ]; then "$TS" unpin >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT INT TERM

coproc LOAD { exec "$LG" --procs "$N" --until-stdin-eof; }
load_pid=$LOAD_PID
read -r _ <&"${LOAD[0]}"
echo "load ready: $(ls /proc | grep -c '^[0-9]') processes"
if [ "$(id -u)" = 0 ]; then
  [ -d /sys/fs/bpf/tasksnap ] && was_pinned=1
fi

cpu_ticks() { awk '{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }

printf '%-52s %14s %10s %12s\n' command first_screen_ms cpu_pct peak_rss_kb
# BPF twice: loading its own programs (nothing pinned), then with `tasksnap pin`'s set.
cmds=("top -d 1")
variants=("top -d 1 --backend bpf")
[ -n "${NO_PIN:-}" ] || variants+=(pin "top -d 1 --backend bpf")
[ "${PROCFS:-1}" = 0 ] || variants+=("top -d 1 --backend procfs")
for variant in "${variants[@]}"; do
  if [ "$variant" = pin ]; then cmds+=(pin); continue; fi
  [ -n "${TS_A:-}" ] && cmds+=("$TS_A $variant")
  cmds+=("$TS $variant")
done
for cmd in "${cmds[@]}"; do
  if [ "$cmd" = pin ]; then
    if [ "$(id -u)" = 0 ]; then "$TS" unpin >/dev/null 2>&1 || true; "$TS" pin >/dev/null; fi
    pinned=" (pinned)"
    continue
  fi
  if [ "$(id -u)" = 0 ] && [ -z "${pinned:-}" ] && [ "$cmd" != "top -d 1" ] && [ -z "${NO_PIN:-}" ]; then
    "$TS" unpin >/dev/null 2>&1 || true
  fi
  start=$(date +%s%N)
  tmux -L "$SOCK" new-session -d -s b -x 160 -y 50 "exec $cmd"
  first=""
  for _ in $(seq 1 3000); do
    if tmux -L "$SOCK" capture-pane -t b -p 2>/dev/null | grep -q 'PID USER'; then
      first=$(( ($(date +%s%N) - start) / 1000000 )); break
    fi
    sleep 0.005
  done
  pid=$(tmux -L "$SOCK" list-panes -t b -F '#{pane_pid}')
  sleep 5
  t0=$(cpu_ticks "$pid"); sleep "$WINDOW"; t1=$(cpu_ticks "$pid")
  rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  pct=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" -v w="$WINDOW" 'BEGIN { printf "%.1f", (b - a) / hz / w * 100 }')
  label="${cmd/$TS/tasksnap}"
  [ -n "${TS_A:-}" ] && label="${cmd/$TS_A/tasksnap-A}" && label="${label/$TS/tasksnap-B}"
  case "$cmd" in *"backend bpf"*) label="$label${pinned:- (loads its programs)}" ;; esac
  printf '%-52s %14s %10s %12s\n' "$label" "${first:-never}" "$pct" "$rss"
  tmux -L "$SOCK" kill-server 2>/dev/null || true
  sleep 1
done
