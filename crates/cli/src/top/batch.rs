//! `tasksnap top -b`: frames as procps `top -b` prints them (header, a blank line, the
//! column header, every task), for scripts and logs. `-n` frames, `-d` seconds apart; in a
//! replay (`--replay DIR`) one sample per frame, one after the other, without waiting, until
//! `-n` frames or the recording's end.
//!
//! With `--exited` each frame also lists the processes that exited during its interval
//! (`<name>`, an EXIT column); when there are none to list (not root, no BPF, a recording
//! that did not keep them) that is said once on stderr and the frames go on without them.

use std::io::Write;

use super::session::{self, Top};

/// Prints frames until `-n` is reached (forever without it).
pub fn run(mut top: Top) -> anyhow::Result<()> {
    let mut out = crate::output::buffered(64 * 1024);
    let replay = top.is_replay();
    if !replay {
        // A first sample that is not printed, so that the first frame's rates cover a real
        // interval (a quarter second, or -d if shorter) instead of showing zeros.
        top.refresh(&session::clock())?;
        std::thread::sleep(top.opts.delay.min(std::time::Duration::from_millis(250)));
    }
    let mut n = 0u64;
    let mut said_no_exits = false;
    loop {
        let mut frame = top.refresh(&session::clock())?;
        if top.opts.show_exited && !said_no_exits {
            if let Some(why) = top.exits_missing() {
                warn!("tasksnap top: --exited: no exited processes: {why}");
                said_no_exits = true;
            }
        }
        // Every line is cut at the width (-w or $COLUMNS), header included, as procps does.
        let width = top.opts.width.unwrap_or(usize::MAX);
        let line = |out: &mut dyn Write, text: &str| match text.char_indices().nth(width) {
            Some((end, _)) => writeln!(out, "{}", &text[..end]),
            None => writeln!(out, "{text}"),
        };
        for h in &frame.header {
            line(&mut out, h)?;
        }
        writeln!(out)?;
        if let Some(cgroups) = &frame.cgroups {
            line(&mut out, &super::cgroup_view::header())?;
            for row in cgroups {
                line(&mut out, &row.text)?;
            }
        } else {
            line(&mut out, &top.column_header())?;
            let all = frame.lines.len();
            for row in top.rows(&mut frame, 0..all) {
                line(&mut out, &row)?;
            }
        }
        if let Some(why) = top.rows_error() {
            // A frame without what it was asked for is not printed as if complete.
            out.flush()?;
            anyhow::bail!("{why}");
        }
        n += 1;
        // A replay ends with its recording (a step past the last sample is refused).
        if top.opts.iterations.is_some_and(|max| n >= max) || (replay && top.step(true).is_err()) {
            out.flush()?;
            return Ok(());
        }
        writeln!(out)?;
        out.flush()?;
        if !replay {
            std::thread::sleep(top.opts.delay);
        }
    }
}
