#!/usr/bin/env bash
# Benchmark: cost against activity. Holds N processes (tasksnap-loadgen --procs N) of which
# K wake every PERIOD_MS milliseconds (--wakers K: clock_nanosleep, almost nothing, sleep
# again), for each K of BUSY, and measures side by side on that same load the CPU per sample
# of the three always-on parts:
#   record  `tasksnap record -i 1 -n SAMPLES --timings`: total = user+sys from /usr/bin/time
#           (start-up included) / SAMPLES; steady = median of the per-sample "CPU" that
#           --timings prints, the first (key) sample left out;
#   serve   `tasksnap serve --interval 1`: total = utime+stime from /proc/PID/stat since its
#           start / tasksnap_collections_total at the end of the window; steady = the
#           utime+stime delta over a SERVE_S window (from its 2nd collection on, as
#           bench/serve.sh does) / the collections in the window;
#   top     `tasksnap top -b -d 1 -n SAMPLES` (output read and dropped): total = user+sys
#           from /usr/bin/time / SAMPLES; steady = the utime+stime delta between its 2nd and
#           last frame (read from /proc/PID/stat as each frame's header arrives) / the
#           frames between;
#   top (terminal)  `tasksnap top -d 1` in a tmux terminal of 160x50 (TOP_TUI=0: not
#           measured): CPU per refresh over SAMPLES seconds after its first screen + 3 s
#           (steady) and from its start (total; one refresh a second);
#   busy tasks  the wakers' own CPU (sum of /proc/PID/schedstat run time over the whole
#           measurement of that K) per second, i.e. per sample at 1 s: the floor.
# Writes WORK/curve.csv (busy,tool,cpu_ms_per_sample_total,cpu_ms_per_sample_steady),
# WORK/load.csv (what the load did: wake-ups per second asked and got, tasks on the
# machine) and the plot OUT (bench/curve-plot.py, matplotlib in a venv under target/).
#
#   bench/curve.sh                               N=50000 BUSY="0 100 1000 10000", ~12 min
#   N=5000 BUSY="0 100" bench/curve.sh           a quick dry run
#   TS=/path/to/tasksnap OUT=/tmp/c.png SAMPLES=10 SERVE_S=10 PERIOD_MS=10 WORK=DIR
#   QUIET_MAX=5000   wait (3 min at most) until the machine holds at most this many tasks
#                    before each load, as bench/serve.sh does; another load would count
#   PLOT_ONLY=WORK/curve.csv bench/curve.sh      redraw the plot from a CSV
#
# Needs root (BPF, room for 50,000 processes), /usr/bin/time, curl, python3 (python3-venv;
# pip fetches matplotlib from PyPI once). On a shared machine, run it under a lock, e.g.
#   flock /work/bench.lock bench/curve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TS=${TS:-target/release/tasksnap}
TS=$(realpath "$TS")
LG=$PWD/target/release/tasksnap-loadgen
N=${N:-50000}
BUSY=${BUSY:-"0 100 1000 10000"}
SAMPLES=${SAMPLES:-10}
SERVE_S=${SERVE_S:-10}
PERIOD_MS=${PERIOD_MS:-10}
QUIET_MAX=${QUIET_MAX:-5000}
TOP_TUI=${TOP_TUI:-1}
OUT=${OUT:-docs/img/cost-curve.png}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
WORK=${WORK:-target/bench/curve-$stamp}
VENV=target/curve-venv

plot() {
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import matplotlib' 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q matplotlib
  fi
  mkdir -p "$(dirname "$OUT")"
  "$VENV/bin/python" bench/curve-plot.py "$1" "$OUT" "$2"
}
if [ -n "${PLOT_ONLY:-}" ]; then
  plot "$PLOT_ONLY" "${PLOT_TITLE:-}"
  exit 0
fi

[ "$(id -u)" = 0 ] || { echo "bench/curve.sh needs root (BPF, 50,000 processes)" >&2; exit 1; }
# At 10,000 busy tasks the wakers ask for a million wake-ups a second, more than 2 CPUs give:
# every nice-0 task waits behind thousands of runnable wakers, this script included. So the
# measuring side (this script and the tools it measures) runs at SCHED_FIFO 1 and the load
# at SCHED_OTHER: CPU time per sample is what is measured, and it does not depend on the
# policy; the wall time of a run does. RT=0: everything at SCHED_OTHER.
if [ "${RT:-1}" != 0 ] && [ -z "${CURVE_RT:-}" ] && command -v chrt >/dev/null; then
  CURVE_RT=1 exec chrt -f 1 "$0" "$@"
fi
[ "$SAMPLES" -ge 4 ] || { echo "bench/curve.sh: SAMPLES must be at least 4" >&2; exit 2; }
for k in $BUSY; do
  case $k in *[!0-9]*|'') echo "bench/curve.sh: bad busy count '$k'" >&2; exit 2 ;; esac
  [ "$k" -le "$N" ] || { echo "bench/curve.sh: busy count $k > N=$N" >&2; exit 2; }
done
[ -x "$TS" ] && [ -x "$LG" ] || cargo build --release --workspace --quiet
[ "$TOP_TUI" = 0 ] || command -v tmux >/dev/null || { echo "bench/curve.sh: no tmux: TOP_TUI=0" >&2; TOP_TUI=0; }
for t in /usr/bin/time curl python3; do
  command -v "$t" >/dev/null || { echo "bench/curve.sh needs $t" >&2; exit 1; }
done

. bench/lib.sh
raise_limits

mkdir -p "$WORK"
csv=$WORK/curve.csv
loadcsv=$WORK/load.csv
echo "busy,tool,cpu_ms_per_sample_total,cpu_ms_per_sample_steady" >"$csv"
echo "busy,wakes_per_s_asked,wakes_per_s_got,busy_cpu_ms_per_s,machine_tasks,machine_tasks_end,cpu_pressure_pct,seconds" >"$loadcsv"
hz=$(getconf CLK_TCK)

serve_pid=""
cleanup() {
  tmux -L "tasksnap-curve-$$" kill-server 2>/dev/null || true
  # serve runs in a session of its own (setsid): its pid is its process group.
  if [ -n "$serve_pid" ]; then
    kill -KILL -- "-$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
  fi
  stop_load
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tasks_now() { awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg; }
# utime+stime of PID in clock ticks.
ticks_of() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
# Sum over the wakers of run time (ns, schedstat) and of voluntary context switches.
wakers_ns() {
  [ -s "$WORK/wakers" ] || { echo 0; return; }
  { sed 's|.*|/proc/&/schedstat|' "$WORK/wakers" | xargs cat 2>/dev/null || true; } |
    awk '{ s += $1 } END { printf "%.0f\n", s }'
}
wakers_switches() {
  [ -s "$WORK/wakers" ] || { echo 0; return; }
  { sed 's|.*|/proc/&/status|' "$WORK/wakers" | xargs grep -h '^voluntary_ctxt_switches' 2>/dev/null || true; } |
    awk '{ s += $2 } END { printf "%.0f\n", s }'
}
# /proc/pressure/cpu "some" total, µs: the time at least one task waited for a CPU.
cpu_pressure_us() { awk '/^some/ { sub(/.*total=/, ""); print; f = 1 } END { if (!f) print 0 }' /proc/pressure/cpu 2>/dev/null || echo 0; }
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# metric NAME: its value in serve's /metrics, or nothing.
metric() { curl -sf --max-time 30 "http://127.0.0.1:$serve_port/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }

measure_record() {
  local k=$1 wall user sys
  rm -rf "$WORK/rec"
  /usr/bin/time -f "%e %U %S" -o "$WORK/record-$k.time" \
    "$TS" record --dir "$WORK/rec" -i 1 -n "$SAMPLES" --timings 2>"$WORK/record-$k.err" >/dev/null || {
    echo "record failed:" >&2; cat "$WORK/record-$k.err" >&2; exit 1; }
  read -r wall user sys <"$WORK/record-$k.time"
  local steady
  steady=$(grep -v 'record: key:' "$WORK/record-$k.err" | sed -n 's/.*; CPU \([0-9.]*\) ms$/\1/p' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  awk -v u="$user" -v s="$sys" -v n="$SAMPLES" -v k="$k" -v st="$steady" \
    'BEGIN { printf "%d,record,%.2f,%s\n", k, (u + s) * 1000 / n, st }' >>"$csv"
  rm -rf "$WORK/rec"
}

measure_serve() {
  local k=$1 i n0="" n1="" t0 t1
  serve_port=$(free_port)
  setsid "$TS" serve --listen "127.0.0.1:$serve_port" --interval 1 -q >"$WORK/serve-$k.log" 2>&1 &
  serve_pid=$!
  # From its 2nd collection on (the first meets every task for the first time). Its
  # collection thread runs at nice 10: on a host saturated by the busy tasks it may wait.
  for i in $(seq 1800); do
    n0=$(metric tasksnap_collections_total || true)
    [ -n "$n0" ] && [ "${n0%.*}" -ge 2 ] && break
    kill -0 "$serve_pid" 2>/dev/null || { echo "serve exited:" >&2; cat "$WORK/serve-$k.log" >&2; exit 1; }
    sleep 0.1
  done
  if [ -n "$n0" ] && [ "${n0%.*}" -ge 2 ]; then
    t0=$(ticks_of "$serve_pid")
    sleep "$SERVE_S"
    # At least 3 collections in the window (2 minutes more at most).
    for i in $(seq 120); do
      n1=$(metric tasksnap_collections_total || true)
      [ -n "$n1" ] && [ "${n1%.*}" -ge $(( ${n0%.*} + 3 )) ] && break
      sleep 1
    done
    t1=$(ticks_of "$serve_pid")
  else
    echo "   serve made no 2nd collection in 3 minutes" >&2
  fi
  kill -KILL -- "-$serve_pid" 2>/dev/null || true
  wait "$serve_pid" 2>/dev/null || true
  serve_pid=""
  awk -v k="$k" -v t0="${t0:-0}" -v t1="${t1:-0}" -v n0="${n0:-0}" -v n1="${n1:-0}" -v hz="$hz" 'BEGIN {
    if (n1 <= n0 || n1 == 0) { printf "%d,serve,nan,nan\n", k; exit }
    printf "%d,serve,%.2f,%.2f\n", k, t1 * 1000 / hz / n1, (t1 - t0) * 1000 / hz / (n1 - n0) }' >>"$csv"
}

measure_top() {
  local k=$1 wall user sys steady
  rm -f "$WORK/top.pid"
  # sh writes its pid, then becomes top: the reader finds top's /proc/PID/stat from it.
  steady=$(/usr/bin/time -f "%e %U %S" -o "$WORK/top-$k.time" \
    sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$WORK/top.pid" \
    "$TS" top -b -d 1 -n "$SAMPLES" 2>"$WORK/top-$k.err" |
    awk -v pidfile="$WORK/top.pid" -v hz="$hz" '
      /^top - / {
        n++
        if (pid == "") { getline pid < pidfile; close(pidfile) }
        f = "/proc/" pid "/stat"
        if ((getline line < f) > 0) { sub(/^.*\) /, "", line); split(line, a, " "); t[n] = a[12] + a[13] }
        close(f)
      }
      END { if (n >= 3 && (2 in t) && (n in t)) printf "%.2f\n", (t[n] - t[2]) * 1000 / hz / (n - 2); else print "nan" }')
  read -r wall user sys <"$WORK/top-$k.time" || { echo "top failed:" >&2; cat "$WORK/top-$k.err" >&2; exit 1; }
  awk -v u="$user" -v s="$sys" -v n="$SAMPLES" -v k="$k" -v st="$steady" \
    'BEGIN { printf "%d,top,%.2f,%s\n", k, (u + s) * 1000 / n, st }' >>"$csv"
}

# `tasksnap top -d 1` in a terminal (a private tmux server, 160x50, as bench/top.sh): what a
# user watching it pays; unlike -b it formats only the rows on screen. One refresh a second:
# total = its CPU from start to the end of the window / the seconds since its start (the
# refreshes, start-up included); steady = the CPU over SAMPLES seconds after its first
# screen and 3 s more / SAMPLES.
measure_top_tui() {
  local k=$1 sock=tasksnap-curve-$$ pid i start t0 t1 s1
  start=$(date +%s.%N)
  tmux -L "$sock" new-session -d -s c -x 160 -y 50 "exec $TS top -d 1"
  pid=$(tmux -L "$sock" list-panes -t c -F '#{pane_pid}')
  for i in $(seq 600); do
    tmux -L "$sock" capture-pane -t c -p 2>/dev/null | grep -q 'PID USER' && break
    sleep 0.1
  done
  sleep 3
  t0=$(ticks_of "$pid")
  sleep "$SAMPLES"
  t1=$(ticks_of "$pid")
  s1=$(date +%s.%N)
  tmux -L "$sock" kill-server 2>/dev/null || true
  awk -v k="$k" -v t0="$t0" -v t1="$t1" -v n="$SAMPLES" -v hz="$hz" -v a="$start" -v b="$s1" \
    'BEGIN { printf "%d,top (terminal),%.2f,%.2f\n", k, t1 * 1000 / hz / (b - a), (t1 - t0) * 1000 / hz / n }' >>"$csv"
}

run_busy() {
  local k=$1 i busy
  for i in $(seq 180); do
    busy=$(tasks_now)
    [ "$busy" -le "$QUIET_MAX" ] && break
    [ "$i" = 1 ] && echo "   waiting for the machine to be quiet: $busy tasks (> $QUIET_MAX)" >&2
    sleep 1
  done
  [ "$busy" -le "$QUIET_MAX" ] || echo "   WARNING: still $busy tasks on the machine before the load" >&2
  echo "== $k of $N processes waking every $PERIOD_MS ms" >&2
  coproc LOAD { exec chrt -o 0 "$LG" --procs "$N" --wakers "$k" --wake-period-ms "$PERIOD_MS" --until-stdin-eof; }
  load_pid=$LOAD_PID
  local report
  read -r report <&"${LOAD[0]}"
  printf '%s' "$report" | python3 -c 'import json, sys; [print(p) for p in json.load(sys.stdin).get("wakers", [])]' >"$WORK/wakers"
  local tasks tasks_end ns0 sw0 s0 p0 ns1 sw1 s1 p1
  tasks=$(tasks_now)
  echo "   load ready: $tasks tasks on the machine" >&2
  # The wakers' clocks start at once; give the load a moment to settle.
  sleep 2
  ns0=$(wakers_ns); sw0=$(wakers_switches); s0=$(date +%s.%N); p0=$(cpu_pressure_us)
  measure_record "$k"
  measure_serve "$k"
  measure_top "$k"
  [ "$TOP_TUI" = 0 ] || measure_top_tui "$k"
  ns1=$(wakers_ns); sw1=$(wakers_switches); s1=$(date +%s.%N); p1=$(cpu_pressure_us)
  tasks_end=$(tasks_now)
  awk -v k="$k" -v a="$ns0" -v b="$ns1" -v s0="$s0" -v s1="$s1" \
    'BEGIN { printf "%d,busy tasks,%.2f,%.2f\n", k, (b - a) / 1e6 / (s1 - s0), (b - a) / 1e6 / (s1 - s0) }' >>"$csv"
  awk -v k="$k" -v p="$PERIOD_MS" -v a="$sw0" -v b="$sw1" -v s0="$s0" -v s1="$s1" -v ns0="$ns0" -v ns1="$ns1" -v t="$tasks" \
    -v p0="$p0" -v p1="$p1" -v te="$tasks_end" \
    'BEGIN { printf "%d,%.0f,%.0f,%.2f,%d,%d,%.1f,%.0f\n", k, k * 1000 / p, (b - a) / (s1 - s0),
             (ns1 - ns0) / 1e6 / (s1 - s0), t, te, (p1 - p0) / 1e4 / (s1 - s0), s1 - s0 }' >>"$loadcsv"
  # Another load that came or went meanwhile makes the figures of this K another machine's.
  if [ $((tasks_end - tasks)) -gt $((tasks / 10 + 1000)) ] || [ $((tasks - tasks_end)) -gt $((tasks / 10 + 1000)) ]; then
    echo "   WARNING: the machine went from $tasks to $tasks_end tasks during the measurement" >&2
  fi
  stop_load
  grep "^$k," "$csv" | sed 's/^/   /' >&2
  tail -n 1 "$loadcsv" | sed 's/^/   load: /' >&2
}

echo "tasksnap: $("$TS" --version 2>/dev/null || echo "$TS"); N=$N, BUSY=$BUSY, period ${PERIOD_MS} ms," \
  "$SAMPLES samples, serve window ${SERVE_S}s; results in $WORK" >&2
for k in $BUSY; do
  run_busy "$k"
done

column -s, -t "$csv"
plot "$csv" "$N processes, K of them waking every $PERIOD_MS ms ($(nproc) CPUs, $(uname -r))"
echo "(written: $csv, $loadcsv, $OUT)" >&2
