#!/usr/bin/env bash
# Benchmark: what the query service gives a user without privileges (docs/service.md), side
# by side in one run with N sleeping processes from tasksnap-loadgen, everything as nobody:
#   - hyperfine medians of procps `ps -ef` / `ps aux`, tasksnap through the service, and
#     tasksnap with TASKSNAP_NO_SERVICE=1 (/proc, for reference), with the ratios;
#   - `top -d 1` (procps, tasksnap through the service, tasksnap on /proc), each in its own
#     terminal: CPU use over a window (as bench/top.sh measures it) and, for the service's
#     row, the service's own CPU in the same window;
#   - Python `list(process_iter(["pid", "name", "username", "cmdline"]))` against psutil
#     (bench/python.py), through the service and on /proc.
#
#   bench/service.sh [N]            default 50000
#   RUNS=10 PY_RUNS=5 WINDOW=30 bench/service.sh 50000
#   PYTHON=0 TOP=0 ...              skip the Python or the top rows
#
# Runs as root: it raises the task limits, starts the service (`tasksnap serve --no-metrics
# --query-socket`, its socket in a root-owned 0755 directory under /tmp) and drops to nobody
# (setpriv) for every measured command. The binaries are copied where nobody can run them.
set -euo pipefail
cd "$(dirname "$0")/.."
TS_BUILD=$PWD/target/release/tasksnap
LG=$PWD/target/release/tasksnap-loadgen
N=${1:-50000}
RUNS=${RUNS:-10}
PY_RUNS=${PY_RUNS:-5}
WINDOW=${WINDOW:-30}
PYTHON=${PYTHON:-1}
TOP=${TOP:-1}
OUT=${OUT:-target/bench}
# A virtualenv of its own, made from a Python nobody can run (one under /root is not).
VENV=target/py-service-bench
if [ "$(id -u)" != 0 ]; then
  echo "bench/service.sh runs as root (it starts the service and measures as nobody)" >&2
  exit 1
fi
for t in hyperfine setpriv python3; do
  command -v "$t" >/dev/null || { echo "bench/service.sh needs $t" >&2; exit 1; }
done
[ "$TOP" = 0 ] || command -v tmux >/dev/null || { echo "bench/service.sh needs tmux" >&2; exit 1; }
[ -x "$TS_BUILD" ] && [ -x "$LG" ] || cargo build --release -p tasksnap -p tasksnap-loadgen --quiet
mkdir -p "$OUT"

if [ "$PYTHON" = 1 ]; then
  if [ ! -x "$VENV/bin/python" ]; then
    base=""
    for c in python3 /usr/bin/python3 /usr/local/bin/python3; do
      c=$(command -v "$c") || continue
      if setpriv --reuid=65534 --regid=65534 --clear-groups "$c" -c \
        'import sys, venv; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
        base=$c
        break
      fi
    done
    [ -n "$base" ] || { echo "no Python 3.9+ that nobody can run (PYTHON=0 skips)" >&2; exit 1; }
    "$base" -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check psutil pyarrow maturin
  fi
  (cd python && CARGO_TARGET_DIR="$PWD/../target" "../$VENV/bin/maturin" build --release --quiet \
    -o ../target/wheels >&2)
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps \
    target/wheels/tasksnap-*-abi3-*.whl
fi

. bench/lib.sh
raise_limits

# A directory nobody can enter holding what nobody runs; the socket's directory in it is
# made (root's, 0755) by the service.
WORK=$(mktemp -d /tmp/tasksnap-svc-bench.XXXXXX)
chmod 755 "$WORK"
mkdir -m 777 "$WORK/out"
install -m 755 "$TS_BUILD" "$WORK/tasksnap"
TS=$WORK/tasksnap
SOCK=$WORK/run/query.sock
TMUX_SOCK=tasksnap-svc-bench-$$
svc_pid=""
cleanup() {
  tmux -L "$TMUX_SOCK" kill-server 2>/dev/null || true
  if [ -n "$svc_pid" ]; then kill "$svc_pid" 2>/dev/null || true; wait "$svc_pid" 2>/dev/null || true; fi
  stop_load
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

as_nobody() {
  setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
    env TASKSNAP_QUERY_SOCKET="$SOCK" HOME="$WORK/out" "$@"
}
median_ms() { # the median of a command in a hyperfine JSON export
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(next('%.1f' % (r['median']*1e3) for r in d['results'] if r['command']==sys.argv[2]))" "$1" "$2"
}
ratio() { python3 -c "import sys; print('%.1f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2"; }
HZ=$(getconf CLK_TCK)
cpu_ticks() { awk '{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }

coproc LOAD { exec "$LG" --procs "$N" --until-stdin-eof; }
load_pid=$LOAD_PID
read -r _ <&"${LOAD[0]}"

"$TS" serve --no-metrics --query-socket "$SOCK" 2>"$WORK/serve.log" &
svc_pid=$!
for _ in $(seq 600); do
  as_nobody "$TS" ps -p 1 --backend service >/dev/null 2>&1 && break
  kill -0 "$svc_pid" 2>/dev/null || { cat "$WORK/serve.log" >&2; exit 1; }
  sleep 0.1
done
as_nobody "$TS" ps -p 1 --backend service >/dev/null
echo "load ready: pgid $load_pid, $(ls /proc | grep -c '^[0-9]') processes; service pid $svc_pid"
echo "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)"
as_nobody "$TS" ps -ef --backend service --verbose 2>&1 >/dev/null | sed 's/^/  /'

# ps: one hyperfine run, as nobody, all commands side by side.
cmds=(
  "ps -ef"
  "$TS ps -ef --backend service"
  "env TASKSNAP_NO_SERVICE=1 $TS ps -ef"
  "ps aux"
  "$TS ps aux --backend service"
  "env TASKSNAP_NO_SERVICE=1 $TS ps aux"
)
as_nobody hyperfine --style basic --warmup 1 --runs "$RUNS" -N \
  --export-json "$WORK/out/ps.json" "${cmds[@]}" >"$OUT/service-hyperfine-$N.txt"
cp "$WORK/out/ps.json" "$OUT/service-ps-$N.json"
echo "== ps as nobody, $N processes: hyperfine medians ($RUNS runs) =="
printf '%-44s %10s %14s\n' command median_ms procps/this
for fmt in "-ef" "aux"; do
  base=$(median_ms "$WORK/out/ps.json" "ps $fmt")
  for cmd in "ps $fmt" "$TS ps $fmt --backend service" "env TASKSNAP_NO_SERVICE=1 $TS ps $fmt"; do
    m=$(median_ms "$WORK/out/ps.json" "$cmd")
    printf '%-44s %10s %13sx\n' "${cmd/$TS/tasksnap}" "$m" "$(ratio "$base" "$m")"
  done
done

if [ "$TOP" = 1 ]; then
  echo "== top -d 1 as nobody, $N processes: CPU over ${WINDOW} s after 5 s =="
  printf '%-44s %10s %14s\n' command cpu_pct service_cpu_pct
  for cmd in "top -d 1" "$TS top -d 1" "env TASKSNAP_NO_SERVICE=1 $TS top -d 1"; do
    tmux -L "$TMUX_SOCK" new-session -d -s b -x 160 -y 50 \
      "exec setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all env TASKSNAP_QUERY_SOCKET=$SOCK HOME=$WORK/out $cmd"
    for _ in $(seq 3000); do
      tmux -L "$TMUX_SOCK" capture-pane -t b -p 2>/dev/null | grep -q 'PID USER' && break
      sleep 0.01
    done
    pid=$(tmux -L "$TMUX_SOCK" list-panes -t b -F '#{pane_pid}')
    sleep 5
    t0=$(cpu_ticks "$pid"); s0=$(cpu_ticks "$svc_pid")
    sleep "$WINDOW"
    t1=$(cpu_ticks "$pid"); s1=$(cpu_ticks "$svc_pid")
    pct=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" -v w="$WINDOW" 'BEGIN { printf "%.1f", (b - a) / hz / w * 100 }')
    spct=$(awk -v a="$s0" -v b="$s1" -v hz="$HZ" -v w="$WINDOW" 'BEGIN { printf "%.1f", (b - a) / hz / w * 100 }')
    printf '%-44s %10s %14s\n' "${cmd/$TS/tasksnap}" "$pct" "$spct"
    tmux -L "$TMUX_SOCK" kill-server 2>/dev/null || true
    sleep 1
  done
fi

if [ "$PYTHON" = 1 ]; then
  PY=$PWD/$VENV/bin/python
  attrs=pid,name,username,cmdline
  echo "== Python as nobody, $N processes: list(process_iter([$attrs])) against psutil =="
  for mode in service procfs; do
    env=()
    [ "$mode" = procfs ] && env=(TASKSNAP_NO_SERVICE=1)
    line=$(cd /tmp && as_nobody "${env[@]}" "$PY" "$OLDPWD/bench/python.py" iter \
      --runs "$PY_RUNS" --attrs "$attrs" 2>/dev/null | tail -1)
    echo "$line" >"$OUT/service-python-$mode-$N.json"
    python3 -c "import json,sys; d=json.loads(sys.argv[1]); print('%-10s backend %-8s tasksnap %8.1f ms  psutil %8.1f ms  psutil/tasksnap %5.1fx' % (sys.argv[2], d['backend'], d['tasksnap_median_ms'], d['psutil_median_ms'], d['ratio']))" "$line" "$mode"
  done
fi

echo "service: $(tail -n 3 "$WORK/serve.log" | tr '\n' ' ')"
