//! The format specifiers procps's `ps L` lists, as the tests that compare every specifier
//! use them: which move between two runs, which take the rest of the line, and the few `-o`
//! lists that put them all side by side (procps 4.0.2 takes about 40 per run).

use std::collections::HashSet;

use super::ps::{run_procps, tokens};

/// The specifiers whose values legitimately move between the two runs (tasksnap's, then
/// procps's), masked in the rows; the header and the rows' presence are still compared.
/// Everything else is left unmasked: the load's tasks sleep, so their CPU times, last CPU
/// (psr, cpuid, lastcpu, sgi_p, numa), resident memory, oom score and fault counts do not
/// move. (ps_oracle.rs checks PSS and USS against smaps_rollup read right after the run.)
pub const MOVING: &[(&str, &str)] = &[
    (
        "%cpu",
        "CPU time over elapsed time, and the elapsed time grows between the runs",
    ),
    ("pcpu", "as %cpu"),
    ("c", "as %cpu, as an integer"),
    ("util", "as c"),
    ("cp", "as %cpu, per mille"),
    ("cuu", "as %cpu, to three decimals"),
    ("cuc", "as cuu, with the reaped children's time"),
    ("etime", "the elapsed time, to the second"),
    ("etimes", "as etime, in seconds"),
    (
        "pss",
        "a shared page counts 1/n in each of the n processes mapping it, and the two ps \
         programs map different library pages shared with the listed processes",
    ),
    ("uss", "as pss: a page is private while one process maps it"),
];

/// procps's `CF_UNLIMITED` specifiers: a column that takes the rest of the line when last,
/// cut to its width anywhere else. In the all-together run they come last.
pub const UNLIMITED: &[&str] = &[
    "_unlimited",
    "_unlimited2",
    "args",
    "cgname",
    "cgroup",
    "cmd",
    "comm",
    "command",
    "exe",
    "supgid",
    "supgrp",
    "ucmd",
    "ucomm",
];

/// procps's `ps L`: (name, header) per line; the line is `%-12.12s %-8.8s`.
pub fn ps_l(out: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| {
            let (name, head) = l.split_at(l.len().min(12));
            (
                name.trim_end().to_string(),
                head.trim_start_matches(' ').trim_end().to_string(),
            )
        })
        .collect()
}

pub fn procps_list() -> Vec<(String, String)> {
    let out = run_procps(&["L"], "C", None);
    assert_eq!(out.code, Some(0), "procps ps L");
    let l = ps_l(&out.stdout);
    assert!(
        l.len() > 100,
        "procps ps L lists only {} specifiers",
        l.len()
    );
    l
}

/// The header and the rows of the given pids (PID is the first column); in each row the
/// bytes from the end of the PID column up to `mask_to` are replaced by `#`.
pub fn rows(out: &[u8], pids: &HashSet<i32>, mask_to: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut lines = out.split(|&c| c == b'\n');
    let header = lines.next().unwrap_or_default().to_vec();
    let pid_end = tokens(&header).first().map_or(0, |&(_, _, e)| e);
    let mut rows = Vec::new();
    for line in lines {
        let Some(pid) = line
            .get(..pid_end)
            .and_then(|f| String::from_utf8_lossy(f).trim().parse::<i32>().ok())
        else {
            continue;
        };
        if !pids.contains(&pid) {
            continue;
        }
        let mut row = line.to_vec();
        let end = mask_to.min(row.len());
        if end > pid_end {
            row[pid_end..end].fill(b'#');
        }
        rows.push(row);
    }
    (header, rows)
}

pub fn is_moving(spec: &str) -> bool {
    MOVING.iter().any(|&(m, _)| m == spec)
}

/// procps 4.0.2 holds at most 70 library items per run (`PIDSITEMS`, ps/common.h) and dies
/// of SIGSEGV or SIGABRT beyond (~80 specifiers of `ps L`): "all together" is therefore a
/// few `-o` lists of this many specifiers each (about 40 items).
pub const GROUP: usize = 40;

/// The `-o` lists that put all of `specs` side by side: each is pid (to find the rows), the
/// moving ones (all right-aligned, their headers no wider than their columns, so masking the
/// bytes from the end of PID to the end of the last moving header masks exactly them), then
/// a group of the others, in `ps L` order with the unlimited ones last (cut to their width
/// in the middle, the last one taking the rest of the line). Returns each list with the
/// number of moving columns in it.
pub fn together(specs: &[&str]) -> Vec<(String, usize)> {
    let moving: Vec<&str> = specs.iter().copied().filter(|s| is_moving(s)).collect();
    let mut rest: Vec<&str> = specs
        .iter()
        .copied()
        .filter(|s| !is_moving(s) && !UNLIMITED.contains(s))
        .collect();
    rest.extend(specs.iter().filter(|s| UNLIMITED.contains(s)));
    rest.chunks(GROUP)
        .map(|group| {
            let mut o = vec!["pid"];
            o.extend(&moving);
            o.extend(group);
            (o.join(","), moving.len())
        })
        .collect()
}
