#!/bin/bash
# Why a thread waits for a CPU (docs/states.md): `tasksnap states` on spinners in CPU cgroups
# this script makes and removes, with the kernel's own throttled time (cpu.stat) beside it.
#   quota:     one spinner allowed 20% of a CPU      -> RUN ~20, THR ~80, RUNQ ~0 (idle host)
#   contended: two spinners pinned to one CPU, one allowed 50% of it
#                                                    -> each names the other as its holder
# Usage: bench/throttle.sh [SECONDS]  (root; cgroup v1 `cpu`, or v2 with the cpu controller)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-3}
ts=${TS:-target/release/tasksnap}
[ -x "$ts" ] || cargo build --release -q -p tasksnap
[ "$(id -u)" = 0 ] || { echo "throttle.sh: root only (cgroups, BPF)" >&2; exit 1; }

v1=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ {print $2; exit}' /proc/mounts)
v2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
groups=()
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
  sleep 0.3
  for g in "${groups[@]}"; do rmdir "$g" 2>/dev/null || true; done
}
trap cleanup EXIT

# A cgroup allowed $2 percent of a CPU per 100 ms: its directory in $G.
quota_group() {
  local g
  if [ -n "$v1" ]; then
    g="$v1/tasksnap-bench-$$-$1"
    mkdir "$g"
    echo 100000 > "$g/cpu.cfs_period_us"
    echo $(($2 * 1000)) > "$g/cpu.cfs_quota_us"
  elif [ -n "$v2" ] && grep -qw cpu "$v2/cgroup.controllers"; then
    echo +cpu > "$v2/cgroup.subtree_control"
    g="$v2/tasksnap-bench-$$-$1"
    mkdir "$g"
    echo "$(($2 * 1000)) 100000" > "$g/cpu.max"
  else
    echo "throttle.sh: no cgroup hierarchy with the cpu controller" >&2
    exit 1
  fi
  groups+=("$g")
  G=$g
}

# A spinner in its own process group, in cgroup $1 (none when empty), on CPU $2 (any when
# empty): its pid in $P.
spinner() {
  local cmd='exec sh -c "while :; do :; done"'
  [ -n "$1" ] && cmd="echo 0 > $1/cgroup.procs; $cmd"
  [ -n "$2" ] && cmd="taskset -cp $2 \$\$ > /dev/null; $cmd"
  setsid sh -c "$cmd" &
  pids+=("$!")
  P=$!
}

throttled_ms() {
  awk '/^throttled_time/ {print int($2 / 1e6)} /^throttled_usec/ {print int($2 / 1e3)}' "$1/cpu.stat"
}

echo "== one spinner allowed 20% of a CPU, $secs s"
quota_group quota 20
spinner "$G" ""
sleep 0.3
t0=$(throttled_ms "$G")
"$ts" states -p "$P" -i "$secs" -n 1 --mode bpf
echo "cpu.stat throttled time grew $(($(throttled_ms "$G") - t0)) ms (over the command's whole run)"

last=$(($(nproc) - 1))
echo "== two spinners on CPU $last, the first allowed 50% of it, $secs s"
quota_group half 50
spinner "$G" "$last"
a=$P
spinner "" "$last"
sleep 0.3
"$ts" states -p "$a,$P" -i "$secs" -n 1 --mode bpf
