//! What ps says rather than lists: `--help`, `--version` and `L` (the specifiers it knows,
//! procps's `print_format_specifiers`), and the usage procps prints after an error.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use crate::ps::fields::Source;
use crate::ps::format;

/// What follows a usage error's message.
pub const USAGE_TAIL: &str = "\nUsage:\n ps [options]\n\n Try 'ps --help <simple|list|output|threads|misc|all>'\n  or 'ps --help <s|l|o|t|m|a>'\n for additional help text.\n\nFor more details see ps(1).\n";

const HELP: &str = "\
Usage:
 tasksnap ps [options]

procps-ng 4.0 compatible options, for example:
  -e, -A          all processes          -f, -F, -l, -j   full, extra full, long, jobs formats
  aux, ax, axjf   BSD forms              -L, -T           show threads
  -p, -q LIST     by pid                 -u, -U LIST      by effective / real user
  -C LIST         by command name        -t LIST          by terminal
  -o, -O FORMAT   user-defined format    --sort KEYS      sort (e.g. -pcpu,pid)
  --forest, -H    process tree           --no-headers     no header line
  -w, -ww         wider output           L                list format specifiers
tasksnap extensions:
  --output json|csv   machine-readable rows
  --delimiter C       separate columns with C instead of padding (newer procps)
  --verbose           say which backend ran, why, and what it could not read
  --backend B         auto (default), bpf or procfs
  --replay DIR        list what a recording (tasksnap record) held, as ps would have then
  --at TIME           with --replay: when (RFC 3339 UTC, epoch seconds, -10m; default: its end)
";

/// Text printed on stdout for `--version`, `--help` and `L` (exit 0).
pub fn info_text(argv: &[OsString]) -> Option<String> {
    let has = |s: &str| argv.iter().any(|a| a.as_bytes() == s.as_bytes());
    if has("--version") || has("-V") || has("V") {
        return Some(format!(
            "tasksnap ps {} (procps-ng 4.0 compatible)\n",
            env!("CARGO_PKG_VERSION")
        ));
    }
    if argv.iter().any(|a| a.as_bytes().starts_with(b"--help")) {
        return Some(HELP.to_string());
    }
    if has("L") {
        let mut s = String::new();
        // procps leaves out the specifiers that only ever print `-` (its pr_nop ones);
        // 4.0.2 has no fds.
        for spec in format::SPECS
            .iter()
            .filter(|s| !matches!(s.value, Source::Nop) && s.name != "fds")
        {
            s.push_str(&format!("{:<12.12} {:<8.8}\n", spec.name, spec.head));
        }
        return Some(s);
    }
    None
}
