#!/usr/bin/env bash
# Benchmark: `tasksnap report` over a day. Builds a store of SAMPLES real readings of a host
# running N processes (the load generator's sleepers, and 1 spinner), stamped INTERVAL
# seconds apart (a day at 10 s: 8,640 samples; crates/cli/examples/day_store.rs, as
# bench/replay.sh does), then times `tasksnap report --dir STORE -o report.html` (RUNS runs,
# median), gives the page's size, opens it in Debian's Chromium, headless, driven by Selenium
# (crates/cli/tests/report_browser.py: the load event's time from navigation start, RUNS
# runs, median) and regenerates docs/img/report.png (chromium --screenshot).
#
#   flock /work/bench.lock bench/report.sh [N]   default 5000; SAMPLES=8640 INTERVAL=10 RUNS=3
#   PY: a Python with Selenium (default $CARGO_TARGET_DIR/py-test/bin/python, as ./x test makes)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-5000}
SAMPLES=${SAMPLES:-8640}
INTERVAL=${INTERVAL:-10}
RUNS=${RUNS:-3}
T=${CARGO_TARGET_DIR:-$PWD/target}
TS=${TS:-$T/release/tasksnap}
LG=${LG:-$T/release/tasksnap-loadgen}
DS=${DS:-$T/release/examples/day_store}
PY=${PY:-$T/py-test/bin/python}
[ -x "$TS" ] && [ -x "$LG" ] || cargo build --release --workspace --quiet
[ -x "$DS" ] || cargo build --release --quiet -p tasksnap --example day_store
"$PY" -c 'import selenium' || { echo "needs $PY with selenium (./x test sets it up)" >&2; exit 1; }
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] ||
  { echo "needs chromium and chromium-driver (apt-get install chromium chromium-driver)" >&2; exit 1; }

. bench/lib.sh
raise_limits
work=$(mktemp -d /var/tmp/tasksnap-report-bench.XXXXXX)
cleanup() { stop_load; rm -rf "$work"; }
trap cleanup EXIT INT TERM

coproc LOAD { exec "$LG" --procs "$N" --busy 1 --until-stdin-eof; }
load_pid=$LOAD_PID
read -r _ <&"${LOAD[0]}"
echo "load ready: $(ls /proc | grep -c '^[0-9]') processes; building $SAMPLES samples, ${INTERVAL}s apart"
start=$(date +%s.%N)
read -r first last < <("$DS" "$work/store" "$SAMPLES" "$INTERVAL")
echo "store built in $(awk "BEGIN {print $(date +%s.%N) - $start}") s: $(du -sh "$work/store" | cut -f1)"
stop_load

times=()
for i in $(seq "$RUNS"); do
  rm -f "$work/report.html"
  s=$(date +%s.%N)
  "$TS" report --dir "$work/store" -o "$work/report.html"
  times+=("$(awk "BEGIN {print $(date +%s.%N) - $s}")")
done
size=$(stat -c %s "$work/report.html")
loads=()
for i in $(seq "$RUNS"); do
  rm -rf "$work/profile"
  loads+=("$("$PY" crates/cli/tests/report_browser.py "$work/report.html" "$work/profile" |
    python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["load_ms"])')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "report: $(median "${times[@]}") s median of ${times[*]} (generation, $SAMPLES samples)"
echo "size: $size bytes"
echo "open: $(median "${loads[@]}") ms median of ${loads[*]} (load event, from navigation start)"

rm -rf "$work/profile"
chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$work/profile" \
  --window-size=1100,2400 --screenshot="$work/report.png" "file://$work/report.html" 2>/dev/null
cp "$work/report.png" docs/img/report.png
echo "screenshot: docs/img/report.png"
