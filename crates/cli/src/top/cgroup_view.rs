//! top's cgroup view (`g`, `--cgroups`): a row per cgroup instead of per task, the rows and
//! columns of `tasksnap cgroups` ([`crate::cgroups::rows`], [`crate::cgroups::print`]: one
//! definition of each), in tree order (each cgroup followed by its children, busiest first),
//! the rates over the time since the previous refresh. Reads every cgroup's control files
//! each refresh (`Host::cgroups`) and no task's file: the processes, threads and state mix
//! columns are `-` here (`tasksnap cgroups` has them).

use std::time::Instant;

use tasksnap_model::{CgroupCounters, CgroupListing};

use crate::cgroups::{print, rows};
use crate::ps::text::Locale;

/// How deep the view goes (the root is 0), as `tasksnap cgroups`' default.
pub const DEPTH: usize = 8;

/// The last reading, the start of the next interval.
#[derive(Default)]
pub struct CgroupView {
    prev: Option<(Instant, Vec<CgroupCounters>)>,
}

impl CgroupView {
    /// The text of each row for `listing`, read at `now` (no rates on the first).
    pub fn lines(&mut self, listing: CgroupListing, now: Instant, loc: Locale) -> Vec<String> {
        let (since, before) = self.prev.take().unwrap_or((now, Vec::new()));
        let out = {
            let rows = rows::between(&before, &listing.cgroups, &[], now - since);
            rows::tree_order(rows)
                .iter()
                .map(|r| print::text_line(r, loc))
                .collect()
        };
        self.prev = Some((now, listing.cgroups));
        out
    }
}

/// The column header.
pub fn header() -> String {
    print::HEADER.to_string()
}
