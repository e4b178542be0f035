#!/usr/bin/env bash
# Benchmark: the cost of recording history at N processes, side by side in one run on the
# same load and interval, one after the other: `tasksnap record` and Debian's `atop -w`
# (both writing SAMPLES samples to a file). Reports, per sample, the CPU time (user+system of
# the recorder process, start-up included, from /usr/bin/time), the bytes written and the
# recorder's peak RSS (/usr/bin/time's maximum resident set size), and the ratios; with DAY=1
# also the projection to a day at that interval.
#
#   bench/record.sh [N]                     default 5000 processes, INTERVAL=1, SAMPLES=60
#   INTERVAL=10 SAMPLES=30 bench/record.sh 50000
#   TOOLS="tasksnap" bench/record.sh 50000  only tasksnap (e.g. for the 1%-of-a-CPU check)
#   LOAD=threads INTERVAL=2 SAMPLES=10 bench/record.sh 100000
#                                           N threads (in one process) instead of N
#                                           processes
#   TS_A=/path/to/older/tasksnap TOOLS="tasksnap-a tasksnap atop" bench/record.sh 50000
#                                           an older build too, on the same load (A/B)
#   TIMINGS=1 ...                           record with --timings, and print the last
#                                           samples' "held" lines (the memory by part)
#   INTERVAL=0 SAMPLES=8640 COLLECTL_SAMPLES=864 TOOLS="tasksnap collectl" bench/record.sh 1000
#                                           collectl's day test (a day of samples at interval 0,
#                                           timed); collectl -sZ takes 1/10 of the samples, as
#                                           collectl's author did, and is scaled to a day
#
# Needs root (the BPF backend, and room for 50,000 processes). atop comes from Debian
# (apt-get install atop collectl); their daemons are not needed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
release_binaries
N=${1:-5000}
INTERVAL=${INTERVAL:-1}
SAMPLES=${SAMPLES:-60}
TOOLS=${TOOLS:-"tasksnap atop"}
[ -x /usr/bin/time ] || { echo "bench/record.sh needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
for t in atop collectl; do
  case " $TOOLS " in *" $t "*) command -v $t >/dev/null || { echo "needs $t (apt-get install $t)" >&2; exit 1; } ;; esac
done

raise_limits

work=$(mktemp -d /var/tmp/tasksnap-record-bench.XXXXXX)
cleanup() {
  stop_load
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

case ${LOAD:-procs} in
  procs) coproc LOAD { exec "$LG" --procs "$N" --until-stdin-eof; } ;;
  threads) coproc LOAD { exec "$LG" --threads "$N" --until-stdin-eof; } ;;
  *) echo "LOAD is procs or threads" >&2; exit 1 ;;
esac
load_pid=$LOAD_PID
read -r _ <&"${LOAD[0]}"
echo "load ready: $(ls /proc | grep -c '^[0-9]') processes, $(awk '{print $4}' /proc/loadavg | cut -d/ -f2) tasks; interval ${INTERVAL}s, $SAMPLES samples per tool"

# prints "cpu_ms_per_sample bytes_per_sample wall_s_per_day_of_samples peak_rss_mb"
measure() {
  local name=$1 bytes_of=$2 n=$3; shift 3
  /usr/bin/time -f "%e %U %S %M" -o "$work/$name.time" "$@" >/dev/null 2>"$work/$name.err" || {
    echo "$name failed:" >&2; cat "$work/$name.err" >&2; exit 1; }
  read -r wall user sys maxrss_kb <"$work/$name.time"
  local bytes
  bytes=$(du -sb "$bytes_of" | cut -f1)
  awk -v u="$user" -v s="$sys" -v b="$bytes" -v n="$n" -v w="$wall" -v m="$maxrss_kb" \
    'BEGIN { printf "%.1f %.0f %.1f %.1f\n", (u + s) * 1000 / n, b / n, w * 8640 / n, m / 1024 }'
}

declare -A cpu bytes
printf '%-10s %8s %14s %16s %18s %16s\n' tool samples "CPU ms/sample" "bytes/sample" "wall s per 8640" "peak RSS MiB"
for tool in $TOOLS; do
  case $tool in
    tasksnap|tasksnap-a)
      n=$SAMPLES
      bin=$TS
      [ "$tool" = tasksnap ] || bin=${TS_A:?TS_A names the other build}
      read -r c b w m < <(measure "$tool" "$work/$tool" "$n" "$bin" record --dir "$work/$tool" \
        --interval "$INTERVAL" --count "$n" ${TIMINGS:+--timings})
      grep 'own CPU' "$work/$tool.err" | sed 's/^/  /' >&2 || true
      [ -z "${TIMINGS:-}" ] || grep 'held' "$work/$tool.err" | tail -n 2 | sed "s/^/  $tool: /" >&2 || true ;;
    atop)
      n=$SAMPLES
      read -r c b w m < <(measure atop "$work/atop.raw" "$n" atop -w "$work/atop.raw" "$INTERVAL" "$n") ;;
    collectl)
      n=${COLLECTL_SAMPLES:-$SAMPLES}
      mkdir -p "$work/collectl"
      read -r c b w m < <(measure collectl "$work/collectl" "$n" collectl -sZ -i"$INTERVAL" -c "$n" \
        -f "$work/collectl") ;;
  esac
  cpu[$tool]=$c; bytes[$tool]=$b
  printf '%-10s %8s %14s %16s %18s %16s\n' "$tool" "$n" "$c" "$b" "$w" "$m"
done
if [ -n "${cpu[atop]:-}" ] && [ -n "${cpu[tasksnap]:-}" ]; then
  awk -v tc="${cpu[tasksnap]}" -v ac="${cpu[atop]}" -v tb="${bytes[tasksnap]}" -v ab="${bytes[atop]}" \
    'BEGIN { printf "tasksnap/atop: CPU %.3f (1/%.1f), bytes %.3f (1/%.1f)\n", tc/ac, ac/tc, tb/ab, ab/tb }'
fi
if [ -n "${cpu[tasksnap-a]:-}" ] && [ -n "${cpu[tasksnap]:-}" ]; then
  awk -v tc="${cpu[tasksnap]}" -v ac="${cpu[tasksnap-a]}" \
    'BEGIN { printf "tasksnap/tasksnap-a: CPU %.3f\n", tc/ac }'
fi
if [ -n "${cpu[collectl]:-}" ] && [ -n "${cpu[tasksnap]:-}" ]; then
  awk -v tc="${cpu[tasksnap]}" -v cc="${cpu[collectl]}" -v tb="${bytes[tasksnap]}" -v cb="${bytes[collectl]}" \
    'BEGIN { printf "tasksnap/collectl: CPU %.3f (1/%.1f), bytes %.3f (1/%.1f)\n", tc/cc, cc/tc, tb/cb, cb/tb }'
fi
if [ -n "${cpu[tasksnap]:-}" ]; then
  awk -v c="${cpu[tasksnap]}" -v b="${bytes[tasksnap]}" -v i="$INTERVAL" \
    'BEGIN { if (i > 0) printf "tasksnap at this interval: %.2f%% of a CPU, %.2f GB per day\n", c / (i * 10), b * 86400 / i / 1e9 }'
fi
