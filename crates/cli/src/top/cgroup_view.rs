//! top's cgroup view (`g`, `--cgroups`): a row per cgroup instead of per task, the rows and
//! columns of `tasksnap cgroups` ([`crate::cgroups::rows`], [`crate::cgroups::print`]: one
//! definition of each), in tree order (each cgroup followed by its children, busiest first),
//! the rates over the time since the previous refresh. Reads every cgroup's control files
//! each refresh (`Host::cgroups`) and no task's file: the processes, threads and state mix
//! columns are `-` here (`tasksnap cgroups` has them). Enter on the top row drills into the
//! cgroup: the task view with the `CGROUP` filter that keeps its processes ([`Row::filter`]).

use std::time::Instant;

use tasksnap_model::{CgroupCounters, CgroupHierarchy, CgroupListing};

use crate::cgroups::{print, rows};
use crate::ps::text::Locale;

/// How deep the view goes (the root is 0), as `tasksnap cgroups`' default.
pub const DEPTH: usize = 8;

/// One row of the view.
#[derive(Debug, Clone)]
pub struct Row {
    /// As `tasksnap cgroups` writes it.
    pub text: String,
    /// What the task view's `CGROUP` filter keeps for its processes (a substring of `ps -o
    /// cgroup`'s text: `:PATH` for v1, `::PATH` for v2; its descendants match too);
    /// empty for a hierarchy's root, whose processes are every process (ps leaves root paths
    /// out of its text).
    pub filter: String,
}

/// The last reading, the start of the next interval.
#[derive(Default)]
pub struct CgroupView {
    prev: Option<(Instant, Vec<CgroupCounters>)>,
}

impl CgroupView {
    /// The rows for `listing`, read at `now` (no rates on the first).
    pub fn rows(&mut self, listing: CgroupListing, now: Instant, loc: Locale) -> Vec<Row> {
        let (since, before) = self.prev.take().unwrap_or((now, Vec::new()));
        let out = {
            let rows = rows::between(&before, &listing.cgroups, &[], now - since);
            rows::tree_order(rows)
                .iter()
                .map(|r| Row {
                    text: print::text_line(r, loc),
                    filter: filter_of(r.c),
                })
                .collect()
        };
        self.prev = Some((now, listing.cgroups));
        out
    }
}

/// The `CGROUP` filter text of cgroup `c`: `:PATH` for a v1 path (in any of the hierarchies
/// merged into it: a line's controllers are a list, `4:cpu,cpuacct:/app`), `::PATH` for v2.
fn filter_of(c: &CgroupCounters) -> String {
    if c.path == b"/" {
        return String::new();
    }
    let path = String::from_utf8_lossy(&c.path);
    match &c.hierarchy {
        CgroupHierarchy::V2 => format!("::{path}"),
        CgroupHierarchy::V1(_) => format!(":{path}"),
    }
}

/// The column header.
pub fn header() -> String {
    print::HEADER.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cgroups_filter_is_its_line_in_ps_text() {
        let v1 = CgroupCounters::new(
            b"/app/web".to_vec(),
            CgroupHierarchy::V1(vec!["cpu".into(), "cpuacct".into()]),
        );
        assert_eq!(filter_of(&v1), ":/app/web");
        let v2 = CgroupCounters::new(b"/app".to_vec(), CgroupHierarchy::V2);
        assert_eq!(filter_of(&v2), "::/app");
        let root = CgroupCounters::new(b"/".to_vec(), CgroupHierarchy::V2);
        assert_eq!(filter_of(&root), "");
        // What the CGROUP filter is matched against (`ps -o cgroup`'s text of the lines).
        let text = "4:cpu,cpuacct:/app/web,0::/app";
        assert!(text.contains(&filter_of(&v1)) && text.contains(&filter_of(&v2)));
    }
}
