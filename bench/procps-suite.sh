#!/usr/bin/env bash
# Runs procps-ng's own DejaGnu `ps` suite (testsuite/ps.test of a procps-ng source tree)
# against any ps command, and prints each test's PASS/FAIL/UNSUPPORTED line and the totals.
# Nothing of procps-ng is copied into this repository: the suite is read from the given
# procps-ng checkout (or exported from a git repository of it) into a scratch directory at
# run time.
#
#   bench/procps-suite.sh [PROCPS_SRC [PS_COMMAND...]]
#   bench/procps-suite.sh /tmp/procps-head /usr/bin/ps
#   bench/procps-suite.sh /tmp/procps-head target/release/tasksnap ps
#   bench/procps-suite.sh /work/.mirror/procps-ng+procps/repo target/release/tasksnap ps
#
# PROCPS_SRC (default $PROCPS_SRC, else /tmp/procps-head) is a procps-ng source checkout
# (a directory holding testsuite/ps.test), or a git repository of procps-ng (bare or not):
# then testsuite/, src/tests/ and local/ of $PROCPS_REF (default HEAD) are exported.
# PS_COMMAND (default /usr/bin/ps) is the ps under test, with any leading arguments.
#
# The suite calls `${topdir}src/ps/pscommand` and spawns helper programs it expects the
# procps-ng build to have made; this script lays out that tree in a scratch directory
# (WORK_DIR, default a new /tmp/procps-suite.XXXXXX, kept for its logs testrun.sum,
# testrun.log): src/ps/pscommand is a wrapper that execs PS_COMMAND, src/tests/test_process
# and testsuite/test-{zombie,schedbatch,hugetlb} are compiled with gcc. DejaGnu (`runtest`)
# is installed with apt-get when missing (root only).
#
# ps_hugetlb.exp is reported UNSUPPORTED unless the host has free huge pages
# (`echo 2 > /proc/sys/vm/nr_hugepages`; this script does not change it).
# Exit status: runtest's (0 when every test passed, 1 when any failed).
set -euo pipefail
cd "$(dirname "$0")/.."

src=${1:-${PROCPS_SRC:-/tmp/procps-head}}
shift || true
[ $# -gt 0 ] || set -- /usr/bin/ps
ref=${PROCPS_REF:-HEAD}
work=${WORK_DIR:-$(mktemp -d /tmp/procps-suite.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)

# The ps under test: its program as an absolute path (the suite runs from $work/testsuite).
prog=$1
shift
case $prog in
  */*) prog=$(realpath "$prog") ;;
  *) prog=$(command -v "$prog") || { echo "procps-suite: no $1 on PATH" >&2; exit 2; } ;;
esac
[ -x "$prog" ] || { echo "procps-suite: $prog is not executable" >&2; exit 2; }

if ! command -v runtest >/dev/null; then
  [ "$(id -u)" = 0 ] || { echo "procps-suite: needs DejaGnu (apt-get install dejagnu)" >&2; exit 2; }
  apt-get install -y -q dejagnu >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null && apt-get install -y -q dejagnu >/dev/null; }
fi
command -v gcc >/dev/null || { echo "procps-suite: needs gcc" >&2; exit 2; }

# The suite's files, from a checkout or from a git repository.
if [ -d "$src/testsuite/ps.test" ]; then
  mkdir -p "$work/src"
  cp -r "$src/testsuite" "$work/"
  cp -r "$src/src/tests" "$work/src/"
  cp -r "$src/local" "$work/"
  origin="$src"
elif git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$src" archive "$ref" testsuite src/tests local | tar -x -C "$work"
  origin="$src at $(git -C "$src" rev-parse --short "$ref")"
else
  echo "procps-suite: $src is neither a procps-ng checkout nor a git repository of it" >&2
  exit 2
fi

# The helpers, as procps-ng's Makefiles would build them. local/c.h wants a config.h: the
# few glibc facts it asks about are given here instead of running configure.
cat >"$work/config.h" <<'EOF'
#define HAVE_ERR_H 1
#define HAVE_ERROR_H 1
#define HAVE_ERROR 1
#define HAVE_ERROR_AT_LINE 1
#define HAVE_PROGRAM_INVOCATION_SHORT_NAME 1
#define HAVE_SIGINFO_T_SI_INT 1
EOF
cc() { gcc -D_GNU_SOURCE -O1 -w -I"$work" -I"$work/local" -o "$@"; }
cc "$work/src/tests/test_process" "$work/src/tests/test_process.c"
for t in zombie schedbatch hugetlb; do
  cc "$work/testsuite/test-$t" "$work/testsuite/ps.test/test-$t.c"
done

mkdir -p "$work/src/ps"
{
  echo '#!/usr/bin/env bash'
  printf 'exec %q' "$prog"
  [ $# -eq 0 ] || printf ' %q' "$@"
  echo ' "$@"'
} >"$work/src/ps/pscommand"
chmod +x "$work/src/ps/pscommand"

# Whatever the suite leaves running (a test that times out skips its kill) is ours: every
# process whose executable lies in this run's scratch directory.
cleanup() {
  local p exe
  for p in /proc/[0-9]*; do
    exe=$(readlink "$p/exe" 2>/dev/null) || continue
    case $exe in "$work"/*) kill -KILL "${p#/proc/}" 2>/dev/null || true ;; esac
  done
}
trap cleanup EXIT

echo "procps-suite: suite from $origin; ps under test: $(sed -n 's/^exec //p' "$work/src/ps/pscommand"); logs in $work" >&2
rc=0
(
  cd "$work/testsuite"
  env -u PS_FORMAT -u PS_PERSONALITY -u CMD_ENV -u COLUMNS -u LINES \
    runtest --tool ps --srcdir "$work/testsuite" >"$work/runtest.out" 2>&1
) || rc=$?

sum="$work/testsuite/ps.sum"
[ -f "$sum" ] || sum="$work/testsuite/testrun.sum"
[ -f "$sum" ] || { cat "$work/runtest.out" >&2; exit 2; }
grep -E '^(PASS|FAIL|XPASS|XFAIL|UNRESOLVED|UNSUPPORTED|UNTESTED|ERROR|WARNING):' "$sum"
echo
sed -n '/=== ps Summary ===/,$p' "$sum"
exit "$rc"
