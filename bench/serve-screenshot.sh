#!/usr/bin/env bash
# Regenerates the pictures of docs/serve.md: Prometheus's own graph page (Debian's
# Prometheus, its classic web UI) drawing panels of the Grafana dashboard
# (packaging/grafana/tasksnap.json, the queries read from it) on the series of a real
# `tasksnap serve`. No Grafana can be installed here (Debian 12 does not package it), so
# these are not Grafana's rendering of the dashboard: they are its queries, answered by a
# real Prometheus on a load this script spawns.
#   1. a tasksnap-loadgen load, in a process group of its own: a CPU hog (lg-busy), a task in
#      D (lg-dstate), a process of 3 threads (lg-threads), 20 processes a second forked and
#      ending (lg-ch-*), as crates/cli/tests/serve_dashboard.rs spawns it;
#   2. `tasksnap serve --interval 1 --backend bpf` on a free loopback port, and Prometheus
#      scraping it every second into a temporary directory, for DURATION seconds;
#   3. once the last MINUTES minutes had no other lg- load on the machine (another user's
#      test: its groups would be drawn too; it waits up to MAX_WAIT seconds for such a
#      window), serve-screenshot.py opens the graph page for each panel (over those
#      minutes, the Group variable set to the load's groups) in headless Chromium
#      and saves it; docs/img/serve-*.png are replaced once all are taken;
#   4. on exit, failure included, SIGKILL to the process group of everything it started.
#
#   flock /work/bench.lock bench/serve-screenshot.sh   DURATION=150 MINUTES=2 MAX_WAIT=1200 (the defaults)
#   PY: a Python with Selenium (default $CARGO_TARGET_DIR/py-test/bin/python, as ./x test
#   makes). Needs root (BPF), Debian's chromium and chromium-driver; Prometheus and the
#   JavaScript its web UI loads are unpacked from their Debian packages into
#   $CARGO_TARGET_DIR/tools/debian (nothing is installed system-wide).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-150}
MINUTES=${MINUTES:-2}
MAX_WAIT=${MAX_WAIT:-1200}
T=${CARGO_TARGET_DIR:-$PWD/target}
TS=${TS:-$T/release/tasksnap}
LG=${LG:-$T/release/tasksnap-loadgen}
PY=${PY:-$T/py-test/bin/python}
TOOLS=$T/tools/debian
[ "$(id -u)" = 0 ] || { echo "bench/serve-screenshot.sh needs root (BPF)" >&2; exit 1; }
[ -x "$TS" ] && [ -x "$LG" ] || cargo build --release --quiet -p tasksnap -p tasksnap-loadgen
"$PY" -c 'import selenium' || { echo "needs $PY with selenium (./x test sets it up)" >&2; exit 1; }
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] ||
  { echo "needs chromium and chromium-driver (apt-get install chromium chromium-driver)" >&2; exit 1; }

. bench/lib.sh
# Prometheus, and what its package depends on for the classic UI's pages: its static files
# are links to these packages' files under /usr/share/javascript and /usr/share/fonts.
debian_unpack "$TOOLS" prometheus libjs-jquery libjs-popper.js libjs-bootstrap4 libjs-d3 \
  libjs-rickshaw libjs-moment libjs-moment-timezone libjs-eonasdan-bootstrap-datetimepicker \
  libjs-mustache libjs-jquery-hotkeys fonts-glyphicons-halflings

work=$(mktemp -d /var/tmp/tasksnap-serve-screenshot.XXXXXX)
# The process groups started here (setsid makes each its own), killed whole on exit.
groups=()
nap=""
cleanup() {
  local g
  [ -z "$nap" ] || kill -KILL "$nap" 2>/dev/null || true
  for g in "${groups[@]}"; do kill -KILL -- "-$g" 2>/dev/null || true; done
  for g in "${groups[@]}"; do wait "$g" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
# A sleep that a signal to this script ends at once (bash runs a trap only after a foreground
# command returns, and `wait` returns on a signal).
pause() { sleep "$1" & nap=$!; wait "$nap"; nap=""; }
# The groups (comms) of this load's processes. Not `lg-.*`: the exporter keeps a group's
# counters after its processes are gone, so another user's load seen at any time since serve
# started (lg-proc, lg-zombie...) would be drawn as a flat line.
GROUPS_OF_THE_LOAD='lg-(busy|dstate|vfork-child|threads|churn|ch-.*)'
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# 1. The load (the loadgen leads a process group of its own; it prints a line when ready).
# --seconds: gone by itself should this script be killed without its cleanup.
setsid "$LG" --busy 1 --dstate --threads 3 --churn --procs-per-sec 20 --threads-per-sec 0 \
  --seconds $(( DURATION + MAX_WAIT + 600 )) \
  </dev/null >"$work/load.out" &
groups+=($!)
for _ in $(seq 300); do [ -s "$work/load.out" ] && break; sleep 0.1; done
[ -s "$work/load.out" ] || { echo "the load did not start" >&2; exit 1; }
load_pgid=${groups[0]}
# Another load generator on the machine (another user's test) would draw its lg- groups into
# the pictures: the time any of its processes was last seen (a process named lg-* outside
# this load's process group), polled twice a second.
setsid bash -c 'while :; do
  ps -eo pgid=,comm= | awk -v me="$1" '"'"'$2 ~ /^lg-/ && $1 != me {f = 1} END {exit !f}'"'"' &&
    date +%s >"$2.new" && mv "$2.new" "$2"
  sleep 0.5
done' _ "$load_pgid" "$work/foreign" </dev/null &
groups+=($!)

# 2. The exporter, which says its address once its first collection is done.
setsid "$TS" serve --listen 127.0.0.1:0 --no-query-socket --interval 1 --backend bpf \
  </dev/null >/dev/null 2>"$work/serve.err" &
groups+=($!)
for _ in $(seq 300); do grep -qs 'http://' "$work/serve.err" && break; sleep 0.1; done
target=$(grep -o 'http://[^/]*/metrics' "$work/serve.err" | head -1 | sed 's|http://||; s|/metrics||')
[ -n "$target" ] || { echo "tasksnap serve did not start:" >&2; cat "$work/serve.err" >&2; exit 1; }

port=$(free_port)
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: tasksnap
    static_configs:
      - targets: ['$target']
EOF
setsid "$TOOLS/usr/bin/prometheus" --config.file="$work/prometheus.yml" \
  --storage.tsdb.path="$work/data" --web.listen-address="127.0.0.1:$port" \
  --web.local-assets="$TOOLS/usr/share/prometheus/web/" --log.level=warn \
  </dev/null >/dev/null 2>"$work/prometheus.err" &
groups+=($!)
for _ in $(seq 300); do
  curl -fs "http://127.0.0.1:$port/-/ready" >/dev/null && break
  sleep 0.2
done
curl -fs "http://127.0.0.1:$port/-/ready" >/dev/null ||
  { echo "prometheus did not get ready:" >&2; cat "$work/prometheus.err" >&2; exit 1; }
echo "load, tasksnap serve ($target) and prometheus (127.0.0.1:$port) up; ${DURATION}s of data"
pause "$DURATION"
# The pictures' window (the last MINUTES, and the 5 s a rate reaches back) with no other load.
window=$(( MINUTES * 60 + 10 ))
waited=0
while [ -s "$work/foreign" ] && [ $(( $(date +%s) - $(cat "$work/foreign") )) -lt "$window" ]; do
  [ "$waited" -lt "$MAX_WAIT" ] ||
    { echo "another lg- load ran in each ${window}s window for ${MAX_WAIT}s; try later" >&2; exit 1; }
  [ "$waited" != 0 ] || echo "another lg- load ran in the window: waiting for ${window}s without one"
  pause 5
  waited=$(( waited + 5 ))
done

# 3. The pictures (Chromium runs under the Python driver, in a process group of its own).
setsid "$PY" bench/serve-screenshot.py "http://127.0.0.1:$port" packaging/grafana/tasksnap.json \
  "$work/profile" "${MINUTES}m" "$GROUPS_OF_THE_LOAD" \
  "CPU by group=$work/serve-cpu.png" \
  "Thread states of the selected groups=$work/serve-states.png" \
  "D time by wait reason=$work/serve-d-reasons.png" \
  "Exits by group=$work/serve-exits.png" &
groups+=($!)
wait $!
cp "$work"/serve-*.png docs/img/
echo "written: $(cd "$work" && echo serve-*.png) in docs/img/"
