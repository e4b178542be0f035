#!/usr/bin/env bash
# Benchmark: the query service under a memory attack (docs/service.md, "Limits"),
# two builds side by side in one run on the same load:
#   - two unprivileged users (made for the run: tasksnap-atk1, tasksnap-atk2; removed after)
#     each run PROCS processes with ARG_BYTES of arguments and ARG_BYTES of environment
#     (tasksnap-loadgen --exec-children --arg-bytes);
#   - each user opens CONNS connections to `tasksnap serve`'s query socket, each asking a query
#     of its own (different columns, processes or threads: no two share a pass) for every
#     process's command line and environment, and reads nothing; after HOLD seconds they
#     close and open again, ROUNDS times;
#   - meanwhile a third user (nobody) runs `tasksnap ps -ef` again and again;
#   - reported per build: serve's RSS at rest, its peak (VmHWM) over the attack and QUIET
#     seconds after it, and the third user's `ps -ef` at rest and during the attack (median,
#     max).
# The requests are the ones `tasksnap ps` itself sends (captured by a stand-in listener of
# root's, from `ps -e[L] -o COLUMNS e`, each build's own ps), replayed by a small Python client
# that never reads.
#
#   bench/service-attack.sh BASE_TASKSNAP [NEW_TASKSNAP]   NEW: target/release/tasksnap
#   PROCS=300 ARG_BYTES=120000 CONNS=8 ROUNDS=3 HOLD=10 QUIET=20 bench/service-attack.sh ...
#
# e.g. the build before the budgets against this one:
#   git worktree add /work/baseline 2dc0493
#   CARGO_TARGET_DIR=/work/baseline/target cargo build --release -p tasksnap
#   bench/service-attack.sh /work/baseline/target/release/tasksnap
#
# Runs as root (users, setpriv, the service). Every process it starts is killed (SIGKILL to
# each load's process group) and the users it made are removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${1:?usage: bench/service-attack.sh BASE_TASKSNAP [NEW_TASKSNAP]}
NEW=${2:-$PWD/target/release/tasksnap}
LG=${LG:-$PWD/target/release/tasksnap-loadgen}
PROCS=${PROCS:-300}
ARG_BYTES=${ARG_BYTES:-120000}
CONNS=${CONNS:-8}
ROUNDS=${ROUNDS:-3}
HOLD=${HOLD:-10}
QUIET=${QUIET:-20}
USERS=(tasksnap-atk1 tasksnap-atk2)
if [ "$(id -u)" != 0 ]; then
  echo "bench/service-attack.sh runs as root (it makes users and starts the service)" >&2
  exit 1
fi
for t in setpriv python3 useradd userdel; do
  command -v "$t" >/dev/null || { echo "bench/service-attack.sh needs $t" >&2; exit 1; }
done
# The attackers' Python: one every user can run (root's own may live under /root).
PY=""
for c in python3 /usr/bin/python3 /usr/local/bin/python3; do
  c=$(command -v "$c") || continue
  if setpriv --reuid=65534 --regid=65534 --clear-groups "$c" -c '' 2>/dev/null; then
    PY=$c
    break
  fi
done
[ -n "$PY" ] || { echo "bench/service-attack.sh needs a python3 user nobody can run" >&2; exit 1; }
[ -x "$NEW" ] && [ -x "$LG" ] || cargo build --release -p tasksnap -p tasksnap-loadgen --quiet
[ -x "$BASE" ] || { echo "$BASE: no such tasksnap" >&2; exit 1; }

. bench/lib.sh

WORK=$(mktemp -d /tmp/tasksnap-attack.XXXXXX)
chmod 755 "$WORK"
install -m 755 "$LG" "$WORK/loadgen"
made_users=()
loads=()
svc_pid=""
cleanup() {
  if [ -n "$svc_pid" ]; then kill -KILL "$svc_pid" 2>/dev/null || true; wait "$svc_pid" 2>/dev/null || true; fi
  for l in "${loads[@]}"; do load_pid=$l; stop_load; done
  for u in "${made_users[@]}"; do userdel "$u" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

for u in "${USERS[@]}"; do
  if ! id "$u" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$u"
    made_users+=("$u")
  fi
done
as_user() { # as_user USER COMMAND...: no groups, no capabilities
  local u=$1
  shift
  setpriv --reuid="$(id -u "$u")" --regid="$(id -g "$u")" --clear-groups --inh-caps=-all "$@"
}

# The heavy processes: one load per attacker, each in a process group of its own (the one
# its line names), ready once it printed that line.
for u in "${USERS[@]}"; do
  as_user "$u" "$WORK/loadgen" --procs "$PROCS" --exec-children --arg-bytes "$ARG_BYTES" \
    >"$WORK/load-$u.json" &
  started=$!
  until [ -s "$WORK/load-$u.json" ]; do
    kill -0 "$started" 2>/dev/null || { echo "the load of $u did not start" >&2; exit 1; }
    sleep 0.1
  done
  loads+=("$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pgid"])' \
    "$WORK/load-$u.json")")
  disown "$started" # killed with its group at the end: nothing to report then
done
echo "load: ${#USERS[@]} users x $PROCS processes x ($ARG_BYTES bytes of arguments + $ARG_BYTES of environment); $(ls /proc | grep -c '^[0-9]') processes in all"
echo "host: $(nproc) CPUs, $(free -m | awk '/Mem:/ {print $2}') MiB, load average $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)"

cat >"$WORK/capture.py" <<'EOF'
# A stand-in listener of root's: takes one request, keeps its frame, answers Busy. The
# socket appears at PATH only once it listens, open to all.
import os, socket, sys
path, out = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path + ".new")
os.chmod(path + ".new", 0o666)
srv.listen(1)
os.rename(path + ".new", path)
c, _ = srv.accept()
c.settimeout(10)
def exact(n):
    b = b""
    while len(b) < n:
        got = c.recv(n - len(b))
        if not got:
            sys.exit("closed")
        b += got
    return b
head = exact(12)
body = exact(int.from_bytes(head[8:12], "little"))
open(out, "wb").write(head + body)
c.sendall(head[:4] + bytes([5, 0, 0, 0]) + (0).to_bytes(4, "little"))
EOF
cat >"$WORK/attack.py" <<'EOF'
# Sends each frame on a connection of its own and reads nothing; closes them after HOLD s.
import socket, sys, time
sock, hold = sys.argv[1], float(sys.argv[2])
held = []
for f in sys.argv[3:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock)
        s.sendall(open(f, "rb").read())
        held.append(s)
    except OSError:
        pass
time.sleep(hold)
EOF

# Column sets: each with the command line and (e) the environment, each a different query.
COLUMNS_SETS=(pid,args pid,rss,args pid,time,args pid,wchan,args pid,stat,args pid,nlwp,args
  pid,lstart,args pid,ni,args pid,vsz,args pid,user,args pid,tty,args pid,pri,args
  pid,rss,time,args pid,rss,wchan,args pid,time,wchan,args pid,stat,rss,args)

median_max() { # the median and max of the numbers in a file, ms
  python3 -c "import statistics,sys; v=[float(l) for l in open(sys.argv[1]) if l.strip()]; print('%.0f ms / %.0f ms (%d runs)' % (statistics.median(v), max(v), len(v)) if v else 'none')" "$1"
}
status_mib() { awk -v k="$2:" '$1 == k { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

run_build() { # run_build NAME TASKSNAP
  local name=$1 ts="$WORK/$1/tasksnap" dir="$WORK/$1" i u
  mkdir -m 755 "$dir" "$dir/run" "$dir/frames"
  install -m 755 "$2" "$ts"
  local sock=$dir/run/query.sock
  # The requests this build's ps sends.
  for i in "${!COLUMNS_SETS[@]}"; do
    local fake=$dir/fake.sock
    rm -f "$fake"
    python3 "$WORK/capture.py" "$fake" "$dir/frames/$i" &
    local cap=$!
    until [ -S "$fake" ]; do sleep 0.05; done
    local sel=-e
    [ $((i % 2)) = 1 ] && sel=-eL
    as_user nobody env TASKSNAP_QUERY_SOCKET="$fake" "$ts" ps "$sel" -o "${COLUMNS_SETS[$i]}" e >/dev/null 2>&1 || true
    wait "$cap" || { echo "$name: no request captured for ${COLUMNS_SETS[$i]}" >&2; exit 1; }
  done
  "$ts" serve --no-metrics --query-socket "$sock" 2>"$dir/serve.log" &
  svc_pid=$!
  for _ in $(seq 600); do
    as_user nobody env TASKSNAP_QUERY_SOCKET="$sock" "$ts" ps -p 1 --backend service >/dev/null 2>&1 && break
    kill -0 "$svc_pid" 2>/dev/null || { cat "$dir/serve.log" >&2; exit 1; }
    sleep 0.1
  done
  bystander() { # ms of one ps -ef as nobody
    local t0 t1
    t0=$(date +%s%N)
    as_user nobody env TASKSNAP_QUERY_SOCKET="$sock" "$ts" ps -ef >/dev/null 2>&1 || true
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
  }
  for i in $(seq 10); do bystander; done >"$dir/rest.ms"
  local rest_rss
  rest_rss=$(status_mib "$svc_pid" VmRSS)
  : >"$dir/attack.ms"
  for r in $(seq "$ROUNDS"); do
    local pids=()
    for u in 0 1; do
      local frames=()
      for i in $(seq 0 $((CONNS - 1))); do frames+=("$dir/frames/$(((u * CONNS + i) % ${#COLUMNS_SETS[@]}))"); done
      as_user "${USERS[$u]}" "$PY" "$WORK/attack.py" "$sock" "$HOLD" "${frames[@]}" &
      pids+=($!)
    done
    local until=$((SECONDS + HOLD))
    while [ "$SECONDS" -lt "$until" ]; do bystander >>"$dir/attack.ms"; done
    wait "${pids[@]}" || true
  done
  local peak
  peak=$(status_mib "$svc_pid" VmHWM)
  sleep "$QUIET"
  local after
  after=$(status_mib "$svc_pid" VmRSS)
  kill -TERM "$svc_pid"
  wait "$svc_pid" || true
  svc_pid=""
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rest_rss" "$peak" "$after" \
    "$(median_max "$dir/rest.ms")" "$(median_max "$dir/attack.ms")" >>"$WORK/results"
  echo "$name: $(tail -1 "$dir/serve.log")"
}

: >"$WORK/results"
run_build base "$BASE"
run_build new "$NEW"
echo
echo "attack: 2 users x $CONNS connections (distinct queries for command lines and environments, never read), $ROUNDS rounds of $HOLD s; RSS after: $QUIET s after the last round"
echo
echo "| serve (\`--no-metrics\`) | RSS at rest | peak RSS (attack) | RSS after | nobody's \`ps -ef\` at rest (median / max) | during the attack (median / max) |"
echo "|---|---|---|---|---|---|"
while IFS=$'\t' read -r name rest peak after r a; do
  label="$name ($BASE)"
  [ "$name" = new ] && label="new ($NEW)"
  echo "| $label | $rest MiB | $peak MiB | $after MiB | $r | $a |"
done <"$WORK/results"
