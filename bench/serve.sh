#!/usr/bin/env bash
# Benchmark: `tasksnap serve` against Debian's prometheus-process-exporter (grouped by comm)
# and prometheus-node-exporter's processes collector, side by side on the same load, scraped
# by the same Prometheus in one run (docs/serve-bench.md). For each size:
#   1. a tasksnap-loadgen load (N sleeping processes, or N threads in one process);
#   2. the three exporters on free loopback ports, and one Prometheus (scrape_interval 15s,
#      scrape_timeout 14s) scraping all three for DURATION seconds;
#   3. from Prometheus's HTTP API, per job: median and max scrape_duration_seconds,
#      avg_over_time(up), scrape_samples_scraped; from /proc, each exporter's CPU over the
#      same window (utime+stime delta / wall, % of one CPU) and its RSS; for tasksnap also
#      rate(tasksnap_collect_cpu_seconds_total) and the median tasksnap_collect_seconds;
#   4. with Prometheus and the other exporters stopped (the load still up): ROUNDS rounds of
#      `ab -n REQUESTS -c CONCURRENCY` against tasksnap serve's /metrics (OpenMetrics), with
#      tasksnap's VmRSS before and after each round;
#   5. teardown (SIGTERM to tasksnap serve for its summary line, then SIGKILL to the process
#      group of everything this script started, the load included).
# Prints a markdown table on stdout and writes target/bench/serve-<UTC time>.json, .txt (TSV) and .md.
#
#   bench/serve.sh [SIZE...]       default: procs:20000 procs:50000 threads:100000
#   DURATION=45 bench/serve.sh procs:2000              a quick smoke run
#   DURATION=150 ROUNDS=3 REQUESTS=1000 CONCURRENCY=50 (the defaults)
#   PE_FLAGS="-threads=false" (the default: process-exporter without per-thread-name metrics)
#   SCRAPE_INTERVAL=1 OTHERS=0 BASELINE=/work/bin/tasksnap-C bench/serve.sh procs:50000
#       the scrape tail: Prometheus scrapes every second (timeout 1 s) tasksnap alone
#       (OTHERS=0: no process-exporter or node_exporter, which cannot answer in a second
#       here) and, with BASELINE, a second tasksnap serve from that binary on the same load,
#       side by side (job "baseline"); each job's p50/p99/max scrape_duration_seconds. The
#       exporters still collect every INTERVAL (15) seconds.
#
# Needs root (BPF, room for 50,000 processes and 100,000 threads), curl, jq, python3, ab
# (apache2-utils). Debian's prometheus, prometheus-process-exporter and
# prometheus-node-exporter are unpacked into target/tools/debian as ./x does (apt-get
# download + dpkg-deb -x) unless TASKSNAP_PROMETHEUS, TASKSNAP_PROCESS_EXPORTER and
# TASKSNAP_NODE_EXPORTER point at them. On a shared machine, run it under a lock, e.g.
#   flock /work/bench.lock bench/serve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TS=${TS:-$PWD/target/release/tasksnap}
LG=$PWD/target/release/tasksnap-loadgen
DURATION=${DURATION:-150}
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-1000}
CONCURRENCY=${CONCURRENCY:-50}
INTERVAL=15
SCRAPE_INTERVAL=${SCRAPE_INTERVAL:-15}
OTHERS=${OTHERS:-1}
BASELINE=${BASELINE:-}
# A scrape may take at most the interval (Prometheus refuses a longer timeout), 14 s at most.
SCRAPE_TIMEOUT=$(( SCRAPE_INTERVAL < 15 ? SCRAPE_INTERVAL : 14 ))
PE_FLAGS=${PE_FLAGS:--threads=false}
QUIET_MAX=${QUIET_MAX:-5000}
OUT=${OUT:-target/bench}
[ $# -gt 0 ] || set -- procs:20000 procs:50000 threads:100000
for s in "$@"; do
  case $s in procs:[0-9]*|threads:[0-9]*) ;; *) echo "bench/serve.sh: bad size '$s' (procs:N or threads:N)" >&2; exit 2 ;; esac
done
[ "$(id -u)" = 0 ] || { echo "bench/serve.sh needs root (BPF, 50,000 processes)" >&2; exit 1; }
[ -x "$TS" ] && [ -x "$LG" ] || cargo build --release --workspace --quiet

need=()
command -v curl >/dev/null || need+=(curl)
command -v jq >/dev/null || need+=(jq)
command -v python3 >/dev/null || need+=(python3)
command -v ab >/dev/null || need+=(apache2-utils)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi

. bench/lib.sh
# The same unpacking as ./x's ensure_prometheus_tools bench.
ensure_debian_tools() {
  local root=target/tools/debian
  debian_unpack "$root" prometheus prometheus-process-exporter prometheus-node-exporter
  TASKSNAP_PROMETHEUS=${TASKSNAP_PROMETHEUS:-$PWD/$root/usr/bin/prometheus}
  TASKSNAP_PROCESS_EXPORTER=${TASKSNAP_PROCESS_EXPORTER:-$PWD/$root/usr/bin/prometheus-process-exporter}
  TASKSNAP_NODE_EXPORTER=${TASKSNAP_NODE_EXPORTER:-$PWD/$root/usr/bin/prometheus-node-exporter}
}
if [ ! -x "${TASKSNAP_PROMETHEUS:-}" ] || [ ! -x "${TASKSNAP_PROCESS_EXPORTER:-}" ] ||
   [ ! -x "${TASKSNAP_NODE_EXPORTER:-}" ]; then
  ensure_debian_tools
fi
raise_limits
# 100,000 threads: each has a stack, a guard page and an alternate signal stack with its own
# guard, i.e. about 4 mappings, in one process.
[ "$(cat /proc/sys/vm/max_map_count)" -ge 1048576 ] || sysctl -qw vm.max_map_count=1048576

mkdir -p "$OUT"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
result=$OUT/serve-$stamp
work=$(mktemp -d /var/tmp/tasksnap-serve-bench.XXXXXX)
: >"$work/results.jsonl"

# Process groups of the daemons this script started (each is started with setsid, so its pid
# is its process group id); only these and the load are ever killed.
started=()
kill_started() {
  local g
  for g in "${started[@]}"; do
    kill -KILL -- "-$g" 2>/dev/null || true
  done
  for g in "${started[@]}"; do
    wait "$g" 2>/dev/null || true
  done
  started=()
}
cleanup() {
  kill_started
  stop_load
  # The daemons' logs (and configs) are kept next to the results.
  mkdir -p "$result-logs"
  cp "$work"/*.log "$work"/*.yml "$work"/ab-*.txt "$work"/results.jsonl "$result-logs/" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start NAME CMD...: runs CMD in a new session (its own process group) with its output in
# $work/NAME.log; sets $last_pid.
start() {
  local name=$1; shift
  [ -e "$work/$name.log" ] && mv "$work/$name.log" "$work/$name.$(date +%s%N).log"
  setsid "$@" >"$work/$name.log" 2>&1 &
  last_pid=$!
  started+=("$last_pid")
}

# wait_http URL PID NAME: until URL answers 200 (60 s at most; fails if PID exits).
wait_http() {
  local url=$1 pid=$2 name=$3 i
  for i in $(seq 600); do
    if curl -sf -o /dev/null --max-time 30 "$url"; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$name exited before answering:" >&2; cat "$work/$name.log" >&2; exit 1
    fi
    sleep 0.1
  done
  echo "$name did not answer $url in 60 s" >&2; cat "$work/$name.log" >&2; exit 1
}

clk_tck=$(getconf CLK_TCK)
# CPU seconds (user+system, all threads) of PID so far.
# (null once PID has exited: an exporter may crash, and that is a result too.)
cpu_of() {
  awk -v t="$clk_tck" '{ sub(/^.*\) /, ""); if ($1 == "Z") print "null"; else printf "%.3f\n", ($12 + $13) / t }' \
    "/proc/$1/stat" 2>/dev/null || echo null
}
# VmRSS and VmHWM of PID in KiB.
rss_of() { awk '/^VmRSS:/ { v = $2 } END { print v == "" ? "null" : v }' "/proc/$1/status" 2>/dev/null || echo null; }
hwm_of() { awk '/^VmHWM:/ { v = $2 } END { print v == "" ? "null" : v }' "/proc/$1/status" 2>/dev/null || echo null; }

# prom QUERY: the first value of an instant query at $t1, or null.
prom() {
  curl -sf --data-urlencode "query=$1" --data-urlencode "time=$t1" \
    "http://127.0.0.1:$prom_port/api/v1/query" | jq -r '.data.result[0].value[1] // "null"'
}

# ab_round N: one ab round against tasksnap; prints a JSON object.
ab_round() {
  local n=$1 before after out
  before=$(rss_of "$ts_pid")
  out=$work/ab-$n.txt
  ab -q -n "$REQUESTS" -c "$CONCURRENCY" -H 'Accept: application/openmetrics-text;version=1.0.0' \
    "http://127.0.0.1:$ts_port/metrics" >"$out" 2>&1 || { echo "ab failed:" >&2; cat "$out" >&2; }
  after=$(rss_of "$ts_pid")
  python3 - "$out" "$before" "$after" "$n" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
def num(pat):
    m = re.search(pat, text, re.M)
    return float(m.group(1)) if m else None
pct = {m.group(1): float(m.group(2)) for m in re.finditer(r'^\s*(\d+)%\s+(\d+)', text, re.M)}
fail = re.search(r'^Failed requests:\s+(\d+)(?:\n\s+\((.*)\))?', text, re.M)
print(json.dumps({
    "round": int(sys.argv[4]),
    "complete": num(r'^Complete requests:\s+(\d+)'),
    "failed": int(fail.group(1)) if fail else None,
    "failed_detail": fail.group(2) if fail and fail.group(2) else "",
    "non_2xx": num(r'^Non-2xx responses:\s+(\d+)') or 0,
    "rps": num(r'^Requests per second:\s+([\d.]+)'),
    "doc_bytes": num(r'^Document Length:\s+(\d+)'),
    "p50_ms": pct.get("50"), "p90_ms": pct.get("90"), "p99_ms": pct.get("99"),
    "max_ms": pct.get("100"),
    "rss_before_kib": int(sys.argv[2]), "rss_after_kib": int(sys.argv[3]),
}))
EOF
}

run_size() {
  local size=$1 kind=${1%%:*} n=${1#*:}
  local t0 t1 w job
  # Another load on the machine would distort every figure: wait for it to go (3 minutes at
  # most, then go on and say so; the task counts at both ends of the window are recorded).
  local i busy
  for i in $(seq 180); do
    busy=$(awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg)
    [ "$busy" -le "$QUIET_MAX" ] && break
    [ "$i" = 1 ] && echo "   waiting for the machine to be quiet: $busy tasks (> $QUIET_MAX)" >&2
    sleep 1
  done
  [ "$busy" -le "$QUIET_MAX" ] || echo "   WARNING: still $busy tasks on the machine before the load" >&2
  local tasks_before=$busy
  echo "== $size: spawning the load" >&2
  if [ "$kind" = procs ]; then
    coproc LOAD { exec "$LG" --procs "$n" --until-stdin-eof; }
  else
    coproc LOAD { exec "$LG" --threads "$n" --until-stdin-eof; }
  fi
  load_pid=$LOAD_PID
  read -r _ <&"${LOAD[0]}"
  local nprocs nthreads
  nprocs=$(ls /proc | grep -c '^[0-9]')
  nthreads=$(awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg)
  echo "   load ready: $nprocs processes, $nthreads tasks on the machine" >&2

  ts_port=$(free_port)
  start tasksnap "$TS" serve --listen "127.0.0.1:$ts_port" --interval "$INTERVAL" -q
  ts_pid=$last_pid
  wait_http "http://127.0.0.1:$ts_port/metrics" "$ts_pid" tasksnap

  # Taken before the other exporters start (process-exporter takes more than an interval
  # to start at 50,000 processes: read later, the figures were a later collection's).
  # The window starts once tasksnap's second collection is out: the cost it exposes is the
  # last finished collection's, so until then the counters hold the first collection (which
  # meets every task for the first time); that one is recorded apart.
  # (On a host too busy for a scrape between the 2nd and 3rd collections it is a later one's:
  # `collections` says which.)
  local first="" 
  for i in $(seq 600); do
    first=$(curl -sf "http://127.0.0.1:$ts_port/metrics" | awk '
      /^tasksnap_collections_total[{ ]/ { n = $2 } /^tasksnap_collect_seconds[{ ]/ { s = $2 }
      /^tasksnap_collect_cpu_seconds_total[{ ]/ { c = $2 }
      END { if (n >= 2) printf "{\"collections\": %s, \"collect_s\": %s, \"cpu_s\": %s}", n, s, c }')
    [ -n "$first" ] && break
    sleep 0.1
  done
  [ -n "$first" ] || { echo "tasksnap serve made no second collection in 60 s" >&2; exit 1; }
  echo "   tasksnap's first collection: $first" >&2

  local bl_port="" bl_pid=""
  if [ -n "$BASELINE" ]; then
    bl_port=$(free_port)
    start baseline "$BASELINE" serve --listen "127.0.0.1:$bl_port" --interval "$INTERVAL" -q
    bl_pid=$last_pid
    wait_http "http://127.0.0.1:$bl_port/metrics" "$bl_pid" baseline
  fi

  local pe_port="" ne_port="" pe_pid="" ne_pid=""
  if [ "$OTHERS" = 1 ]; then
  pe_port=$(free_port)
  cat >"$work/process-exporter.yml" <<'EOF'
process_names:
  - name: "{{.Comm}}"
    cmdline:
    - '.+'
EOF
  # shellcheck disable=SC2086
  start process-exporter "$TASKSNAP_PROCESS_EXPORTER" -config.path "$work/process-exporter.yml" \
    -web.listen-address "127.0.0.1:$pe_port" $PE_FLAGS
  pe_pid=$last_pid
  ne_port=$(free_port)
  start node-exporter "$TASKSNAP_NODE_EXPORTER" --collector.disable-defaults --collector.processes \
    "--web.listen-address=127.0.0.1:$ne_port"
  ne_pid=$last_pid
  # Their landing pages, not /metrics: a scrape of process-exporter takes seconds here.
  wait_http "http://127.0.0.1:$pe_port/" "$pe_pid" process-exporter
  wait_http "http://127.0.0.1:$ne_port/" "$ne_pid" node-exporter
  fi


  prom_port=$(free_port)
  cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: ${SCRAPE_INTERVAL}s
  scrape_timeout: ${SCRAPE_TIMEOUT}s
scrape_configs:
  - job_name: tasksnap
    static_configs: [{targets: ["127.0.0.1:$ts_port"]}]
EOF
  local extra job_port
  for extra in baseline:$bl_port process-exporter:$pe_port node-exporter:$ne_port; do
    job_port=${extra#*:}
    [ -n "$job_port" ] || continue
    printf '  - job_name: %s\n    static_configs: [{targets: ["127.0.0.1:%s"]}]\n' \
      "${extra%%:*}" "$job_port" >>"$work/prometheus.yml"
  done
  rm -rf "$work/tsdb"
  start prometheus "$TASKSNAP_PROMETHEUS" --config.file "$work/prometheus.yml" \
    --storage.tsdb.path "$work/tsdb" --web.listen-address "127.0.0.1:$prom_port"
  prom_pid=$last_pid
  wait_http "http://127.0.0.1:$prom_port/-/ready" "$prom_pid" prometheus

  declare -A pid=([tasksnap]=$ts_pid [prometheus]=$prom_pid)
  [ -z "$bl_pid" ] || pid[baseline]=$bl_pid
  [ -z "$pe_pid" ] || pid[process-exporter]=$pe_pid
  [ -z "$ne_pid" ] || pid[node-exporter]=$ne_pid
  declare -A c0 c1
  for job in "${!pid[@]}"; do c0[$job]=$(cpu_of "${pid[$job]}"); done
  local ts_rss0
  ts_rss0=$(rss_of "$ts_pid")
  t0=$(date +%s.%N)
  echo "   Prometheus scraping the three exporters for ${DURATION}s" >&2
  sleep "$DURATION"
  t1=$(date +%s.%N)
  for job in "${!pid[@]}"; do c1[$job]=$(cpu_of "${pid[$job]}"); done
  # An exporter that died in the window is a result (its up falls to 0); tasksnap or
  # Prometheus dying ends the run.
  local died=""
  for job in "${!pid[@]}"; do
    if [ "${c1[$job]}" = null ]; then
      echo "   $job (pid ${pid[$job]}) DIED during the window; the end of its log:" >&2
      tail -n 12 "$work/$job.log" | sed 's/^/     /' >&2
      died="$died $job: $(grep -m1 -E '^panic|fatal|level=error' "$work/$job.log" || tail -n 1 "$work/$job.log");"
      case $job in tasksnap|prometheus) exit 1 ;; esac
    fi
  done
  w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", b - a }')
  local tasks_end
  tasks_end=$(awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg)

  local jobs_json="{}" cpu rss hwm
  for job in tasksnap baseline process-exporter node-exporter prometheus; do
    [ -n "${pid[$job]:-}" ] || continue
    cpu=$(awk -v a="${c0[$job]}" -v b="${c1[$job]}" -v s="$t0" -v e="$t1" \
      'BEGIN { if (b == "null") print "null"; else printf "%.4f", (b - a) * 100 / (e - s) }')
    rss=$(rss_of "${pid[$job]}"); hwm=$(hwm_of "${pid[$job]}")
    local sel="job=\"$job\""
    local o
    if [ "$job" = prometheus ]; then
      o=$(jq -n --arg cpu "$cpu" --arg rss "$rss" --arg hwm "$hwm" \
        '{cpu_pct: ($cpu|fromjson), rss_kib: ($rss|fromjson), hwm_kib: ($hwm|fromjson)}')
    else
      o=$(jq -n --arg cpu "$cpu" --arg rss "$rss" --arg hwm "$hwm" \
        --arg med "$(prom "quantile_over_time(0.5, scrape_duration_seconds{$sel}[${w}s])")" \
        --arg p99 "$(prom "quantile_over_time(0.99, scrape_duration_seconds{$sel}[${w}s])")" \
        --arg max "$(prom "max_over_time(scrape_duration_seconds{$sel}[${w}s])")" \
        --arg up "$(prom "avg_over_time(up{$sel}[${w}s])")" \
        --arg scrapes "$(prom "count_over_time(up{$sel}[${w}s])")" \
        --arg series "$(prom "scrape_samples_scraped{$sel}")" \
        --arg smin "$(prom "min_over_time(scrape_samples_scraped{$sel}[${w}s])")" \
        --arg smax "$(prom "max_over_time(scrape_samples_scraped{$sel}[${w}s])")" \
        '{cpu_pct: ($cpu|fromjson), rss_kib: ($rss|fromjson), hwm_kib: ($hwm|fromjson),
          scrape_median_s: ($med|fromjson), scrape_p99_s: ($p99|fromjson),
          scrape_max_s: ($max|fromjson), up: ($up|fromjson),
          scrapes: ($scrapes|fromjson), series: ($series|fromjson),
          series_min: ($smin|fromjson), series_max: ($smax|fromjson)}')
    fi
    jobs_json=$(jq -n --argjson a "$jobs_json" --argjson b "$o" --arg k "$job" '$a + {($k): $b}')
  done
  local ts_extra
  ts_extra=$(jq -n \
    --arg ccpu "$(prom "rate(tasksnap_collect_cpu_seconds_total{job=\"tasksnap\"}[${w}s]) * 100")" \
    --arg cmed "$(prom "quantile_over_time(0.5, tasksnap_collect_seconds{job=\"tasksnap\"}[${w}s])")" \
    --arg cmax "$(prom "max_over_time(tasksnap_collect_seconds{job=\"tasksnap\"}[${w}s])")" \
    --arg groups "$(prom "count(tasksnap_group_processes{job=\"tasksnap\"})")" \
    --arg lg "$(prom "count({job=\"tasksnap\", group=~\"lg-proc|lg-threads\"})")" \
    --arg lgp "$(prom "tasksnap_group_processes{job=\"tasksnap\", group=~\"lg-proc|lg-threads\"}")" \
    --arg pegroups "$(prom "count(namedprocess_namegroup_num_procs{job=\"process-exporter\"})")" \
    --arg rss0 "$ts_rss0" \
    '{collect_cpu_pct: ($ccpu|fromjson), collect_median_s: ($cmed|fromjson),
      collect_max_s: ($cmax|fromjson), groups: ($groups|fromjson), load_group_series: ($lg|fromjson),
      load_group_processes: ($lgp|fromjson), pe_groups: ($pegroups|fromjson),
      rss_window_start_kib: ($rss0|tonumber)}')
  # The series tasksnap exposed at the end of the window, for comparing sizes.
  curl -sf "http://127.0.0.1:$ts_port/metrics" | grep -v '^#' | sed 's/ [^ ]*$//' |
    sort >"$OUT/serve-$stamp-series-${kind}${n}.txt" || true

  # The load test: Prometheus and the other exporters stopped, the load still up.
  local other
  for other in "$prom_pid" "$bl_pid" "$pe_pid" "$ne_pid"; do
    [ -n "$other" ] || continue
    kill -KILL -- "-$other" 2>/dev/null || true
    wait "$other" 2>/dev/null || true
  done
  started=("$ts_pid")
  # One client alone: what answering a scrape costs tasksnap, without Prometheus's parsing
  # and storing (which scrape_duration_seconds includes). 20 requests one after the other.
  local single
  single=$(for i in $(seq 20); do
    curl -s -o /dev/null -w '%{time_total}\n' -H 'Accept-Encoding: gzip' \
      -H 'Accept: application/openmetrics-text;version=1.0.0' "http://127.0.0.1:$ts_port/metrics"
  done | sort -g | awk '{ v[NR] = $1 } END { printf "{\"median_s\": %s, \"max_s\": %s}", v[int((NR + 1) / 2)], v[NR] }')
  local source_info
  source_info=$(curl -sf "http://127.0.0.1:$ts_port/metrics" | grep '^tasksnap_source_info' | head -3 | tr '\n' ' ')
  echo "   one client: $single; $source_info" >&2
  echo "   load test: $ROUNDS x ab -n $REQUESTS -c $CONCURRENCY" >&2
  local rounds="[]" r i
  for i in $(seq "$ROUNDS"); do
    r=$(ab_round "$i")
    echo "   $r" >&2
    rounds=$(jq -n --argjson a "$rounds" --argjson b "$r" '$a + [$b]')
  done

  # tasksnap serve: SIGTERM, its exit status and summary line; then the group is killed.
  kill -TERM "$ts_pid" 2>/dev/null || true
  local rc=0
  for i in $(seq 50); do kill -0 "$ts_pid" 2>/dev/null || break; sleep 0.1; done
  wait "$ts_pid" 2>/dev/null || rc=$?
  kill_started
  local summary
  summary=$(tail -n 3 "$work/tasksnap.log")
  echo "   tasksnap serve exited $rc: $summary" >&2
  stop_load

  jq -cn --arg size "$size" --arg kind "$kind" --argjson n "$n" --argjson procs "$nprocs" \
    --argjson tasks "$nthreads" --argjson w "$w" --argjson jobs "$jobs_json" \
    --argjson ts "$ts_extra" --argjson ab "$rounds" --argjson rc "$rc" --arg summary "$summary" \
    --arg pe_flags "$PE_FLAGS" --argjson single "$single" --arg source_info "$source_info" \
    --arg died "$died" --argjson first "$first" --argjson tasks_before "$tasks_before" --argjson tasks_end "$tasks_end" \
    '{size: $size, kind: $kind, n: $n, machine_processes: $procs, machine_tasks: $tasks,
      window_s: $w, jobs: $jobs, tasksnap: $ts, ab: $ab, serve_exit: $rc, serve_log: $summary,
      process_exporter_flags: $pe_flags, single_client: $single, source_info: $source_info,
      first_collection: $first, tasks_before_load: $tasks_before, tasks_at_window_end: $tasks_end,
      died: $died}' >>"$work/results.jsonl"
}

for size in "$@"; do
  run_size "$size"
done

jq -s --arg when "$stamp" --arg kernel "$(uname -r)" --arg cpus "$(nproc)" \
  --arg ts "$("$TS" --version 2>/dev/null || true)" \
  --argjson si "$SCRAPE_INTERVAL" --argjson st "$SCRAPE_TIMEOUT" --arg bl "$BASELINE" \
  --argjson dur "$DURATION" --argjson rounds "$ROUNDS" --argjson req "$REQUESTS" --argjson conc "$CONCURRENCY" \
  '{when: $when, kernel: $kernel, cpus: ($cpus|tonumber), tasksnap: $ts, duration_s: $dur,
    scrape_interval_s: $si, scrape_timeout_s: $st, baseline: $bl, ab: {rounds: $rounds, requests: $req, concurrency: $conc},
    sizes: .}' "$work/results.jsonl" >"$result.json"
python3 bench/serve-report.py "$result.json" "$result.txt" | tee "$result.md"
# Series names tasksnap exposed at 20,000 and at 50,000 processes: what differs, by group.
a=$OUT/serve-$stamp-series-procs20000.txt b=$OUT/serve-$stamp-series-procs50000.txt
if [ -f "$a" ] && [ -f "$b" ]; then
  {
    echo
    echo "tasksnap series names, 20,000 -> 50,000 processes: $(wc -l <"$a") -> $(wc -l <"$b");" \
      "only at 20,000: $(comm -23 "$a" "$b" | wc -l), only at 50,000: $(comm -13 "$a" "$b" | wc -l)" \
      "(lg-proc's: $(comm -3 "$a" "$b" | grep -c 'group="lg-proc"' || true));" \
      "groups that differ: $(comm -3 "$a" "$b" | grep -o 'group="[^"]*"' | sort -u | tr '\n' ' ')"
  } | tee -a "$result.md"
fi
echo "(written: $result.json, $result.txt (TSV), $result.md)" >&2
