//! `tasksnap top`: a live view that stays light at 100,000 tasks.
//!
//! Each refresh takes one snapshot of every thread (base, effective credentials, CPU times
//! and scheduler counters: with the BPF backend that is one iterator pass, no /proc file per
//! task), turns it into rates against the previous one ([`view`]), sorts and filters them by
//! its columns ([`arrange`]), and formats only the rows that are shown ([`columns`]: one row
//! per column; [`render`]: the header lines and the figures): shared memory (statm) and
//! command lines are read for those rows only, command lines cached by task identity. The header adds the machine's figures
//! ([`system`]) and tasksnap's own CPU use and per-refresh cost. `-b` prints frames in
//! procps `top -b`'s layout ([`batch`]); otherwise a terminal UI runs ([`tui`]), with the
//! collection on a thread of its own ([`worker`]) that sends it ready pages, so that keys are
//! answered while a refresh or a slow read is under way. The processes that exited during the
//! interval (root: BPF, else taskstats; or a recording that kept them) are counted in the header and,
//! with the exited view on (`e`, `--exited`), listed as atop lists them ([`exited`]).

mod arrange;
mod batch;
mod cgroup_view;
mod columns;
mod exited;
mod options;
pub(crate) mod render;
mod replay;
mod session;
mod system;
mod tui;
mod view;
mod waits;
mod worker;

use std::ffi::OsString;
use std::process::ExitCode;

use options::{parse_args, USAGE};
use session::Top;

/// Entry point for `tasksnap top ARGS...`.
pub fn main(argv: &[OsString]) -> ExitCode {
    let opts = match parse_args(argv) {
        Ok(o) => o,
        Err(e) if e.is_empty() => return crate::output::print(USAGE),
        Err(e) => {
            // procps top: the message, exit status 1.
            warn!("tasksnap top: {e}\n(tasksnap top -h for usage)");
            return ExitCode::from(1);
        }
    };
    if let Some(dir) = opts.replay.clone() {
        // Everything that can be wrong with the recording or the time is said here, before
        // the terminal is touched.
        let rp = match replay::Replay::open(&dir, opts.at) {
            Ok(r) => r,
            Err(e) => {
                warn!("tasksnap top: {e}");
                return ExitCode::from(1);
            }
        };
        let r = if opts.batch {
            batch::run(Top::replay(opts, rp))
        } else {
            tui::run(opts, Some(rp))
        };
        return crate::output::exit_code(r.map(|()| ExitCode::SUCCESS));
    }
    let r = if opts.batch {
        match Top::new(opts) {
            Ok(top) => batch::run(top),
            Err(e) => {
                warn!("tasksnap top: {e:#}");
                return ExitCode::from(1);
            }
        }
    } else {
        // The collector is made on the live view's collection thread (keys are answered
        // while it loads); a failure to start comes back from there.
        tui::run(opts, None)
    };
    crate::output::exit_code(r.map(|()| ExitCode::SUCCESS))
}

#[cfg(test)]
mod proptests;
