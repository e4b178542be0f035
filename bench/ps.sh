#!/usr/bin/env bash
# Benchmark: tasksnap ps (procfs backend) against procps ps, side by side in one run, with N
# sleeping processes spawned by tasksnap-loadgen. Reports hyperfine medians, syscall counts
# (strace -c -f) and peak RSS (/usr/bin/time -v) for each command.
#
#   bench/ps.sh [N...]          default: 10000 50000
#   RUNS=10 bench/ps.sh 50000   hyperfine runs per command
#
# Needs root for more than ~30k processes (it raises kernel.pid_max and the task limits), and
# for the --backend bpf rows.
set -euo pipefail
cd "$(dirname "$0")/.."
# The build `./x bench` made: in CARGO_TARGET_DIR when set, as cargo puts it.
target=${CARGO_TARGET_DIR:-./target}
TS=$target/release/tasksnap
LG=$target/release/tasksnap-loadgen
RUNS=${RUNS:-10}
OUT=${OUT:-$target/bench}
mkdir -p "$OUT"
[ -x "$TS" ] && [ -x "$LG" ] || cargo build --release --workspace --quiet

. bench/lib.sh
raise_limits

trap stop_load EXIT INT TERM

syscalls() { # total syscalls of a command, children included
  strace -f -c -o "$OUT/strace.txt" "$@" >/dev/null 2>&1 || true
  awk '/ total$/ {print $4}' "$OUT/strace.txt"
}
kernel_allocs() { # kmalloc + kmem_cache_alloc events of a command (kmem tracepoints)
  perf stat -x, -e kmem:kmalloc,kmem:kmem_cache_alloc -- "$@" 2>&1 >/dev/null |
    awk -F, '/kmem:/ {n += $1} END {print n+0}'
}
peak_rss_kb() {
  /usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -1
}
# One row of the table: a command's median from hyperfine's JSON $1, then its syscalls,
# kernel allocations and peak RSS, each from a run of its own.
row() {
  local json=$1 cmd=$2 median sc rss ka
  median=$(python3 -c "import json,sys; d=json.load(open('$json')); print(next('%.1f' % (r['median']*1000) for r in d['results'] if r['command']==sys.argv[1]))" "$cmd")
  # shellcheck disable=SC2086
  sc=$(syscalls $cmd)
  # shellcheck disable=SC2086
  rss=$(peak_rss_kb $cmd)
  # shellcheck disable=SC2086
  ka=$(kernel_allocs $cmd)
  printf '%-58s %10s %10s %12s %10s\n' "${cmd/$TS/tasksnap}" "$median" "$sc" "$ka" "$rss"
}

for N in "${@:-10000 50000}"; do
  for n in $N; do
    echo "== $n processes =="
    coproc LOAD { exec "$LG" --procs "$n" --until-stdin-eof; }
    load_pid=$LOAD_PID
    read -r info <&"${LOAD[0]}"
    total=$(ls /proc | grep -c '^[0-9]')
    echo "load ready: pgid $load_pid, $total processes on the machine"
    # The first BPF rows load the programs on every run, as an unpinned tasksnap does.
    was_pinned=0
    if [ -d /sys/fs/bpf/tasksnap ]; then was_pinned=1; "$TS" unpin >/dev/null; fi
    hyperfine --style basic --warmup 1 --runs "$RUNS" -N \
      --export-json "$OUT/ps-$n.json" \
      "ps -ef" "$TS ps -ef --backend procfs" \
      "ps -e -o pid,ppid,user,stat,comm" "$TS ps -e -o pid,ppid,user,stat,comm --backend procfs" \
      "ps aux" "$TS ps aux --backend procfs" \
      "$TS ps -ef --backend bpf" "$TS ps -e -o pid,ppid,user,stat,comm --backend bpf" >"$OUT/hyperfine-$n.txt"
    printf '%-58s %10s %10s %12s %10s\n' command median_ms syscalls kernel_allocs peak_rss_kb
    for cmd in "ps -ef" "$TS ps -ef --backend procfs" "$TS ps -ef --backend bpf" \
      "ps -e -o pid,ppid,user,stat,comm" "$TS ps -e -o pid,ppid,user,stat,comm --backend procfs" \
      "$TS ps -e -o pid,ppid,user,stat,comm --backend bpf" "ps aux" "$TS ps aux --backend procfs"; do
      row "$OUT/ps-$n.json" "$cmd"
    done
    if [ "$(id -u)" = 0 ]; then
      # The same BPF rows with the programs pinned (`tasksnap pin`): no load per run. Run
      # next to procps again, so the ratio comes from one run.
      "$TS" pin >/dev/null
      hyperfine --style basic --warmup 1 --runs "$RUNS" -N \
        --export-json "$OUT/ps-pinned-$n.json" \
        "ps -ef" "$TS ps -ef --backend bpf" \
        "ps -e -o pid,ppid,user,stat,comm" "$TS ps -e -o pid,ppid,user,stat,comm --backend bpf" \
        >"$OUT/hyperfine-pinned-$n.txt"
      echo "-- pinned (tasksnap pin) --"
      for cmd in "ps -ef" "$TS ps -ef --backend bpf" "ps -e -o pid,ppid,user,stat,comm" \
        "$TS ps -e -o pid,ppid,user,stat,comm --backend bpf"; do
        row "$OUT/ps-pinned-$n.json" "$cmd"
      done
      [ "$was_pinned" = 1 ] || "$TS" unpin >/dev/null
    elif [ "$was_pinned" = 1 ]; then
      "$TS" pin >/dev/null
    fi
    exec {LOAD[1]}>&-
    stop_load
  done
done
