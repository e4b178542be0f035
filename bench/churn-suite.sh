#!/usr/bin/env bash
# Runs the whole test suite under churn: `tasksnap-loadgen --churn --busy` (every CPU
# spinning, ~200 short-lived processes and ~500 short-lived threads a second) in the
# background while `cargo test --workspace --no-fail-fast` runs RUNS times (default 2; every
# failing test of every binary is reported, not only the first binary's); the churn's
# process group is SIGKILLed on exit (trap), whatever happens.
#
#   bench/churn-suite.sh [RUNS] [-- ARGS for cargo test]
#
# Environment: CHURN_ARGS (loadgen flags; default "--churn --busy --zoo": the hostile zoo too), LOG_DIR (where the
# runs' output goes; default a new temporary directory). Everything is built before the
# churn starts, so it loads the tests' execution, not the compiler. Prints each run's
# failed tests at the end; exits 1 when any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."

runs=${1:-2}
shift || true
[ "${1:-}" = "--" ] && shift
churn_args=${CHURN_ARGS:---churn --busy --zoo}
log_dir=${LOG_DIR:-$(mktemp -d /tmp/churn-suite.XXXXXX)}
mkdir -p "$log_dir"
target=${CARGO_TARGET_DIR:-target}

# The real components ./x test installed (DuckDB, prometheus_client, Prometheus, promtool),
# so that the tests that use them run here too instead of skipping.
target=$(realpath -m -- "$target")
if [ -x "$target/py-test/bin/python" ]; then
  export TASKSNAP_DUCKDB_PYTHON="$target/py-test/bin/python"
  export TASKSNAP_PROMETHEUS_PYTHON="$target/py-test/bin/python"
fi
if [ -x "$target/tools/debian/usr/bin/prometheus" ]; then
  export TASKSNAP_PROMETHEUS="$target/tools/debian/usr/bin/prometheus"
  export TASKSNAP_PROMTOOL="$target/tools/debian/usr/bin/promtool"
fi

echo "churn-suite: building (logs in $log_dir)" >&2
cargo build --workspace --quiet || exit 1
cargo test --workspace --no-run --quiet 2>"$log_dir/build.log" || {
  cat "$log_dir/build.log" >&2
  exit 1
}

churn_pid=
churn_pgid=
stop_churn() {
  # The loadgen leads its own process group (pgid = its pid once it reported); one SIGKILL
  # to the group ends it and every task it made.
  if [ -n "$churn_pgid" ]; then
    kill -KILL -- "-$churn_pgid" 2>/dev/null
  elif [ -n "$churn_pid" ]; then
    kill -KILL "$churn_pid" 2>/dev/null
  fi
  [ -n "$churn_pid" ] && wait "$churn_pid" 2>/dev/null
  # Killed tasks still need a CPU to die: wait (up to 30 s) until the group is empty.
  if [ -n "$churn_pgid" ]; then
    for _ in $(seq 300); do
      kill -0 -- "-$churn_pgid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  churn_pid=
  churn_pgid=
}
trap stop_churn EXIT
trap 'exit 130' INT TERM HUP

# shellcheck disable=SC2086 # CHURN_ARGS is a list of flags
"$target/debug/tasksnap-loadgen" $churn_args </dev/null >"$log_dir/churn.json" &
churn_pid=$!
for _ in $(seq 100); do
  [ -s "$log_dir/churn.json" ] && break
  sleep 0.05
done
churn_pgid=$(sed -n 's/^{"pgid":\([0-9]*\),.*/\1/p' "$log_dir/churn.json")
if [ -z "$churn_pgid" ]; then
  echo "churn-suite: the loadgen did not report" >&2
  exit 1
fi
echo "churn-suite: churn running: $(cat "$log_dir/churn.json")" >&2

forks() { sed -n 's/^processes //p' /proc/stat; }
status=0
for i in $(seq "$runs"); do
  f0=$(forks)
  t0=$(date +%s)
  cargo test --workspace --no-fail-fast "$@" >"$log_dir/run-$i.log" 2>&1
  rc=$?
  echo "churn-suite: run $i: exit $rc, $(($(date +%s) - t0)) s, $(($(forks) - f0)) tasks forked on the host" >&2
  [ "$rc" = 0 ] || status=1
done
stop_churn

for i in $(seq "$runs"); do
  echo "== run $i: $(grep -c '^test result' "$log_dir/run-$i.log") test binaries"
  grep -E '^test .* FAILED$|^error: test failed|^test result: FAILED' "$log_dir/run-$i.log"
  # The messages of the failures.
  awk '/^---- .* stdout ----$/ {p = 1; n = 0} p && n++ < 12 {print} /^failures:$/ && p {p = 0}' \
    "$log_dir/run-$i.log"
done
exit "$status"
