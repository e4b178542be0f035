#!/usr/bin/env bash
# Benchmark: the Python binding against psutil (docs/python.md). With N sleeping processes
# from tasksnap-loadgen, one Python process alternates
# `list(process_iter(attrs=[pid, ppid, name, username, status, cpu_times, memory_info,
# cmdline, num_threads, create_time]))` of psutil and of tasksnap (bench/python.py iter),
# then psutil's most common idiom, `process_iter(["pid", "name", "cpu_percent",
# "memory_percent", "username", "cmdline"])` (IDIOM below), each library's cache of Process
# objects kept between runs as a monitoring loop keeps it.
# As root that runs twice, side by side on the same load: with the BPF programs not pinned
# (what a plain `pip install` gives: each Python process loads them once), then pinned
# (`tasksnap pin` before, `tasksnap unpin` after, with the release CLI of this tree; a set
# pinned before the run is left alone and only the pinned row runs); then again as an
# unprivileged user (nobody, procfs backend). Then `tasksnap.snapshot()` of the same
# columns over 100,000 threads, as a pyarrow Table and as a dict of lists.
#
#   bench/python.sh [N...]          default: 20000 50000
#   RUNS=5 THREADS=100000 bench/python.sh 20000
#   NOBODY=0 ...                    skip the unprivileged rows
#   PINNED=0 ...                    skip the pinned rows (root)
#   THREAD_LOADS=2 ...              the THREADS in two processes (default one)
#   BASE_PY=VENV/bin/python ...     also measure the tasksnap installed in another virtualenv
#                                   (a base build's wheel, with psutil and pyarrow), each
#                                   measurement right before this tree's, on the same load
#   LG=PATH CLI=PATH ...            the load generator and the CLI (for `pin`) to use
#
# Builds a release wheel into $CARGO_TARGET_DIR (default target)/py-bench (a virtualenv with
# psutil and pyarrow), and the release CLI for `pin` and the load generator unless given.
# Needs root for the load sizes (it raises kernel.pid_max and the task limits).
set -euo pipefail
cd "$(dirname "$0")/.."
TGT=${CARGO_TARGET_DIR:-$PWD/target}
RUNS=${RUNS:-5}
THREADS=${THREADS:-100000}
THREAD_LOADS=${THREAD_LOADS:-1}
VENV=$TGT/py-bench
NOBODY=${NOBODY:-1}
PINNED=${PINNED:-1}
BASE_PY=${BASE_PY:-}
IDIOM=pid,name,cpu_percent,memory_percent,username,cmdline
# Each measurement with the base build first (BASE_PY), then this tree's.
both_builds() {
  if [ -n "$BASE_PY" ]; then
    echo "   base ($BASE_PY):"
    "$@" "$BASE_PY"
    echo "   this tree:"
  fi
  "$@" "$PY"
}
# Both measurements of one context (root unpinned, root pinned, nobody): the ten attributes,
# then the idiom. `as` runs the Python given last (e.g. as_nobody, or plain).
iter_both() {
  local as=$1 py=$2
  "$as" "$py" "$SCRIPT" iter --runs "$RUNS"
  "$as" "$py" "$SCRIPT" iter --runs "$RUNS" --attrs "$IDIOM"
}
plain() { "$@"; }
if [ -z "${LG:-}" ] || { [ -z "${CLI:-}" ] && [ "$PINNED" = 1 ]; }; then
  CARGO_TARGET_DIR=$TGT cargo build --release -p tasksnap-loadgen -p tasksnap --quiet
fi
LG=${LG:-$TGT/release/tasksnap-loadgen}
CLI=${CLI:-$TGT/release/tasksnap}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check psutil pyarrow maturin
fi
# The wheel pip would install (release), built against the target directory.
(cd python && CARGO_TARGET_DIR="$TGT" "$VENV/bin/maturin" build --release --quiet \
  -o "$TGT/wheels" >&2)
"$VENV/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps \
  "$TGT"/wheels/tasksnap-*-abi3-*.whl
PY="$VENV/bin/python"
SCRIPT="$PWD/bench/python.py"

. bench/lib.sh
raise_limits
# Pinned by this script (and so unpinned by it): a set pinned before the run is left alone.
pinned_here=0
unpin_here() {
  if [ "$pinned_here" = 1 ]; then
    "$CLI" unpin >&2 || true
    pinned_here=0
  fi
}
trap 'stop_load; unpin_here' EXIT INT TERM
pinned_before=0
if [ "$(id -u)" = 0 ]; then
  pinned_before=$("$PY" -c 'import tasksnap; list(tasksnap.process_iter(["pid"]))
print(int(tasksnap.last_report().pinned))')
fi

as_nobody() {
  setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$@"
}

for n in ${@:-20000 50000}; do
  echo "== $n processes =="
  coproc LOAD { exec "$LG" --procs "$n" --until-stdin-eof; }
  load_pid=$LOAD_PID
  read -r _ <&"${LOAD[0]}"
  echo "load ready: pgid $load_pid, $(ls /proc | grep -c '^[0-9]') processes on the machine"
  if [ "$(id -u)" = 0 ]; then
    if [ "$pinned_before" = 0 ]; then
      echo "-- root, programs not pinned"
      both_builds iter_both plain
      if [ "$PINNED" = 1 ]; then
        "$CLI" pin >&2
        pinned_here=1
      fi
    fi
    if [ "$PINNED" = 1 ] || [ "$pinned_before" = 1 ]; then
      echo "-- root, programs pinned (tasksnap pin)"
      both_builds iter_both plain
    fi
    unpin_here
    if [ "$NOBODY" = 1 ]; then
      echo "-- nobody (procfs)"
      (cd /tmp && both_builds iter_both as_nobody)
    fi
  else
    both_builds iter_both plain
  fi
  stop_load
done

if [ "$THREADS" -gt 0 ]; then
  echo "== $THREADS threads =="
  # Four mappings per thread (stack and its guard, signal stack and its guard): one process
  # of 100,000 threads needs far more than the default 65,530.
  maps=$((THREADS * 4 / THREAD_LOADS + 10000))
  if [ "$(id -u)" = 0 ] && [ "$(cat /proc/sys/vm/max_map_count)" -lt "$maps" ]; then
    sysctl -qw vm.max_map_count="$maps"
  fi
  # THREAD_LOADS=2: two loads of THREADS/2 threads each (RLIMIT_NPROC, 96,364 on the
  # project's VM, caps one user's total, not one process's).
  first=$((THREADS / THREAD_LOADS))
  coproc LOAD { exec "$LG" --threads "$first" --until-stdin-eof; }
  load_pid=$LOAD_PID
  read -r _ <&"${LOAD[0]}"
  load2_pid=""
  if [ "$THREAD_LOADS" = 2 ]; then
    coproc LOAD2 { exec "$LG" --threads "$((THREADS - first))" --until-stdin-eof; }
    load2_pid=$LOAD2_PID
    read -r _ <&"${LOAD2[0]}"
  fi
  trap 'stop_load; load_pid=$load2_pid; stop_load; unpin_here' EXIT INT TERM
  echo "load ready: pgids $load_pid $load2_pid, $(awk -F'[ /]' '{print $5}' /proc/loadavg) tasks on the machine"
  snap() { "$1" "$SCRIPT" snapshot --runs "$RUNS"; }
  both_builds snap
  stop_load
  load_pid=$load2_pid
  stop_load
fi
