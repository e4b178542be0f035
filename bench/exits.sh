#!/usr/bin/env bash
# Benchmark: processes that live between two samples, side by side in one run.
#
#   bench/exits.sh [N]        short-lived mode (default 300 processes): N processes of about
#                             40 ms of CPU each, forked one after another (exit codes 0-6,
#                             every tenth killed by SIGKILL), while `atop -w` (with Debian's
#                             atopacctd: process accounting), `tasksnap record` and
#                             `tasksnap serve` run at INTERVAL (default 1 s). Compares what
#                             each lists (processes, command lines, CPU, exit codes) with the
#                             truth: the exit statuses the parent's waitpid got and its
#                             getrusage(RUSAGE_CHILDREN).
#   bench/exits.sh storm      exit storm: RATE (default 20,000) forks+exits a second for
#                             SECONDS (10) under `tasksnap record --interval 1`; reports the
#                             rate reached, the recorder's CPU per sample, the exits stored and
#                             the records the kernel dropped (from `dump --what system`).
#
# Needs root (BPF), atop (apt-get install atop), python3, curl. Start-up of atopacctd is done
# here when it is not running (and it is stopped again).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
release_binaries
INTERVAL=${INTERVAL:-1}
MODE=${1:-300}
[ "$(id -u)" = 0 ] || { echo "bench/exits.sh needs root (the exit records are BPF)" >&2; exit 1; }

work=$(mktemp -d /var/tmp/tasksnap-exits-bench.XXXXXX)
pids=()
acctd=""
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  [ -z "$acctd" ] || kill -TERM "$acctd" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

stop() { # stops a tool started here (SIGTERM: each writes what it has and exits; a background
  # job of a script ignores SIGINT), then waits
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

if [ "$MODE" = storm ]; then
  RATE=${RATE:-20000}
  SECONDS_=${SECONDS_STORM:-10}
  "$TS" record --dir "$work/ts" --interval 1 2>"$work/record.err" &
  rec=$!; pids+=("$rec")
  sleep 2.5
  f0=$(awk '/^processes/ {print $2}' /proc/stat)
  "$LG" exit-storm "$RATE" "$SECONDS_" >/dev/null
  f1=$(awk '/^processes/ {print $2}' /proc/stat)
  sleep 2.5
  stop "$rec"
  "$TS" dump --dir "$work/ts" --what system --format csv --fields time,exits,exits_dropped \
    >"$work/system.csv"
  echo "exit storm: asked for $RATE forks/s for ${SECONDS_} s; the host forked $((f1 - f0)) processes ($(( (f1 - f0) / SECONDS_ ))/s, every process on the host)"
  python3 - "$work/system.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ex = sum(int(r["exits"] or 0) for r in rows)
dr = sum(int(r["exits_dropped"] or 0) for r in rows)
busiest = max(rows, key=lambda r: int(r["exits"] or 0) + int(r["exits_dropped"] or 0))
print(f"recorded: {len(rows)} samples, {ex} exits stored, {dr} lost "
      f"(busiest sample: {busiest['exits']} stored, {busiest['exits_dropped']} dropped)")
EOF
  grep -E 'own CPU|exit records|lost' "$work/record.err" | sed 's/^/  /'
  exit 0
fi

N=$MODE
LOOPS=${LOOPS:-60000}
command -v atop >/dev/null || { echo "needs atop (apt-get install atop)" >&2; exit 1; }
command -v curl >/dev/null || { echo "needs curl" >&2; exit 1; }
if ! pgrep -x atopacctd >/dev/null; then
  atopacctd
  sleep 0.5
  acctd=$(pgrep -x -n atopacctd)
fi
cp /bin/dash "$work/tsxburn" # comm "tsxburn": a name nothing else on the host has
port=$((20000 + RANDOM % 20000))

scrape() { # the tsxburn group's CPU seconds (user+system) and exits, from the exporter
  curl -sf "http://127.0.0.1:$port/metrics" | awk '
    /^tasksnap_group_cpu_seconds_total\{/ && /group="tsxburn"/ { c += $NF }
    /^tasksnap_group_exits_total\{/ && /group="tsxburn"/ { e += $NF }
    END { printf "%.3f %d\n", c, e }'
}

atop -w "$work/atop.raw" "$INTERVAL" >/dev/null 2>&1 &
pids+=($!); atop_pid=$!
"$TS" record --dir "$work/ts" --interval "$INTERVAL" 2>"$work/record.err" &
pids+=($!); rec=$!
"$TS" serve --listen "127.0.0.1:$port" --interval "$INTERVAL" -q 2>"$work/serve.err" &
pids+=($!); srv=$!
sleep $((2 * INTERVAL + 1))
read -r srv_cpu0 srv_exits0 < <(scrape)

python3 - "$work/tsxburn" "$N" "$LOOPS" >"$work/truth.json" <<'EOF'
import json, os, resource, sys
burn, n, loops = sys.argv[1], int(sys.argv[2]), sys.argv[3]
script = 'i=0; while [ $i -lt $1 ]; do i=$((i+1)); done; [ "$2" = kill ] && kill -9 $$; exit $2'
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
status = {}
for i in range(n):
    how = "kill" if i % 10 == 9 else str(i % 7)
    pid = os.fork()
    if pid == 0:
        os.execv(burn, ["tsxburn", "-c", script, "tsxburn", loops, how, f"seq={i}"])
    _, st = os.waitpid(pid, 0)
    status[pid] = 128 + os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
json.dump({"cpu_s": cpu, "status": status}, sys.stdout)
EOF
sleep $((2 * INTERVAL + 1))
read -r srv_cpu1 srv_exits1 < <(scrape)
stop "$atop_pid"; stop "$rec"; stop "$srv"

atop -r "$work/atop.raw" -P PRG,PRC >"$work/atop.txt" 2>/dev/null || true
"$TS" dump --dir "$work/ts" --what processes --format csv \
  --fields pid,comm,args,cpu_seconds,exit_code,exit_signal,exit_time >"$work/ts.csv"

python3 - "$work" "$srv_cpu1" "$srv_cpu0" "$srv_exits1" "$srv_exits0" "$INTERVAL" <<'EOF'
import csv, json, sys
work, c1, c0, e1, e0, interval = sys.argv[1:]
truth = json.load(open(f"{work}/truth.json"))
status = {int(p): s for p, s in truth["status"].items()}
cpu = truth["cpu_s"]
n = len(status)

# atop -P: PRG/PRC lines of exited ('E') tsxburn processes of our pids (label host epoch date
# time interval pid (name) state ...). PRG: ... ruid rgid tgid threads exitcode start (cmd);
# PRC: ... ticks/s utime stime (ticks).
a_cpu, a_code, a_cmd = {}, {}, {}
for line in open(f"{work}/atop.txt", errors="replace"):
    f = line.split()
    if len(f) < 14 or f[7] != "(tsxburn)" or f[8] != "E" or int(f[6]) not in status:
        continue
    pid = int(f[6])
    if f[0] == "PRC":
        a_cpu[pid] = a_cpu.get(pid, 0) + (int(f[10]) + int(f[11])) / int(f[9])
    elif f[0] == "PRG":
        a_code[pid] = int(f[13])
        a_cmd[pid] = line.split("(", 2)[2].split(")")[0] if line.count("(") >= 2 else ""

t_cpu, t_code, t_cmd, rows = {}, {}, {}, 0
for r in csv.DictReader(open(f"{work}/ts.csv", errors="replace")):
    if r["comm"] != "tsxburn" or not r["exit_time"] or int(r["pid"]) not in status:
        continue
    pid = int(r["pid"])
    rows += 1
    t_cpu[pid] = float(r["cpu_seconds"] or 0)
    t_code[pid] = int(r["exit_code"]) if r["exit_code"] else 128 + int(r["exit_signal"] or 0)
    t_cmd[pid] = r["args"]

def pct(x): return f"{100 * x / cpu:.1f}%"
def codes_right(codes):
    # atop's exit code of a killed process is the signal (process accounting's ac_exitcode
    # holds the wait status's low byte there): count either spelling as right.
    return sum(1 for p, c in codes.items() if c == status[p] or c + 128 == status[p])

print(f"workload: {n} processes, {cpu:.2f} s of CPU (getrusage of their parent), "
      f"{sum(1 for s in status.values() if s > 128)} killed by SIGKILL; interval {interval} s")
print(f"{'tool':<18}{'listed':>8}{'with cmdline':>14}{'CPU s':>9}{'of truth':>10}{'exit codes right':>18}")
print(f"{'atop -w (acct)':<18}{len(a_cpu):>8}{sum(1 for c in a_cmd.values() if c.strip()):>14}"
      f"{sum(a_cpu.values()):>9.2f}{pct(sum(a_cpu.values())):>10}{codes_right(a_code):>18}")
print(f"{'tasksnap record':<18}{len(t_cpu):>8}{sum(1 for c in t_cmd.values() if 'seq=' in c):>14}"
      f"{sum(t_cpu.values()):>9.2f}{pct(sum(t_cpu.values())):>10}"
      f"{sum(1 for p, c in t_code.items() if c == status[p]):>18}")
srv = float(c1) - float(c0)
print(f"{'tasksnap serve':<18}{int(e1) - int(e0):>8}{'-':>14}{srv:>9.2f}{pct(srv):>10}{'-':>18}")
if rows != len(t_cpu):
    print(f"tasksnap: {rows} exit rows for {len(t_cpu)} processes (should be one each)")
EOF
grep -E 'own CPU|exited stored' "$work/record.err" | sed 's/^/  /'
