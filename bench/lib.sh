# Shared by the bench scripts (sourced, not run): the start at the repository's root with
# the release binaries, the host limits a big load needs, the one way a load generator's
# tasks are stopped, and Debian packages unpacked where a script wants them.

# Goes to the repository's root (above the sourcing script's bench/), and sets TS (the
# tasksnap measured: the environment's, or this tree's) and LG (the load generator), built
# first when either is missing.
release_binaries() {
  cd "$(dirname "$0")/.."
  TS=${TS:-$PWD/target/release/tasksnap}
  LG=$PWD/target/release/tasksnap-loadgen
  [ -x "$TS" ] && [ -x "$LG" ] || cargo build --release --workspace --quiet
}

# As root: room for 50,000 processes or 100,000 threads (pid_max, threads-max, RLIMIT_NPROC).
raise_limits() {
  [ "$(id -u)" = 0 ] || return 0
  [ "$(cat /proc/sys/kernel/pid_max)" -ge 4194304 ] || sysctl -qw kernel.pid_max=4194304
  [ "$(cat /proc/sys/kernel/threads-max)" -ge 200000 ] || sysctl -qw kernel.threads-max=200000
  ulimit -u unlimited 2>/dev/null || true
}

# The process group id of the running load (tasksnap-loadgen puts it in a group of its own).
load_pid=""

# Kills the load: one SIGKILL to its process group reaches every task (stopped ones too);
# then waits until every one has exited, so that tens of thousands of exiting tasks do not
# distort what is measured next.
stop_load() {
  if [ -n "$load_pid" ]; then
    kill -KILL -- "-$load_pid" 2>/dev/null || true
    wait "$load_pid" 2>/dev/null || true
    while pgrep -g "$load_pid" >/dev/null 2>&1; do sleep 0.2; done
  fi
  load_pid=""
}

# Unpacks the Debian packages PKG... that ROOT does not have yet into ROOT (apt-get download
# and dpkg-deb -x, as ./x does for Prometheus: nothing is installed system-wide), marking each
# with ROOT/.PKG.
debian_unpack() {
  local root=$1 missing=() p dl
  shift
  for p in "$@"; do
    [ -f "$root/.$p" ] || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  dl=$(mktemp -d)
  chmod 755 "$dl"
  if ! (cd "$dl" && apt-get download "${missing[@]}" >/dev/null 2>&1); then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    (cd "$dl" && apt-get download "${missing[@]}" >&2)
  fi
  mkdir -p "$root"
  for p in "${missing[@]}"; do
    dpkg-deb -x "$dl/${p}"_*.deb "$root"
    touch "$root/.$p"
  done
  rm -rf "$dl"
}
