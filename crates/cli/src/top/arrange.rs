//! top's rows arranged by its columns (`columns.rs`): sorted by a column's key ([`sort`])
//! and kept or dropped by a filter typed at the `o` prompt ([`Filter`]).

use std::collections::HashMap;

use super::columns::{Column, Compare, SortBy};
use super::view::{Line, Row};

/// Sorts `lines` by `column` (largest first unless `ascending`), ties by pid; a column that
/// does not sort leaves them as they are.
///
/// Numeric keys sort a small array of (key, pid, index) and then move each row once (a
/// comparison sort of 50,000 rows spent its time in the comparisons' lookups). Rows that
/// come in pid order (the tracker's) with most keys equal (%CPU of idle
/// tasks) make that array nearly sorted, which the stable sort takes in linear time.
pub fn sort(
    lines: &mut [Row],
    column: Column,
    ascending: bool,
    user_of: &mut dyn FnMut(u32) -> String,
) {
    let Some(by) = column.spec().sort.map(|s| s.by) else {
        return;
    };
    if let SortBy::Number(numeric) = by {
        let mut keys: Vec<(u64, i32, u32)> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let k = numeric(l);
                (if ascending { k } else { !k }, l.id.tid, i as u32)
            })
            .collect();
        keys.sort();
        let perm: Vec<u32> = keys.into_iter().map(|(_, _, i)| i).collect();
        permute(lines, &perm);
        return;
    }
    let mut users: HashMap<u32, String> = HashMap::new();
    if matches!(by, SortBy::User) {
        for l in lines.iter() {
            users.entry(l.euid).or_insert_with(|| user_of(l.euid));
        }
    }
    lines.sort_by(|a, b| {
        let o = match by {
            SortBy::User => users.get(&a.euid).cmp(&users.get(&b.euid)),
            _ => a.comm.cmp(&b.comm),
        };
        let o = if ascending { o } else { o.reverse() };
        o.then(a.id.tid.cmp(&b.id.tid))
    });
}

/// Reorders `v` so that `v[i]` becomes the old `v[perm[i]]` (`perm` a permutation of
/// `0..v.len()`), cycle by cycle: one swap per row moved.
fn permute<T>(v: &mut [T], perm: &[u32]) {
    let mut done = vec![false; v.len()];
    for start in 0..v.len() {
        if done[start] {
            continue;
        }
        let mut i = start;
        loop {
            done[i] = true;
            let j = perm[i] as usize;
            if j == start || j >= v.len() {
                break;
            }
            v.swap(i, j);
            i = j;
        }
    }
}

/// A filter typed at the `o` prompt: `FIELD=text` (substring), `FIELD>n` or `FIELD<n`
/// (numbers), over the columns that filter ([`Column::filter_field`]). A leading `!`
/// negates.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    field: Column,
    op: u8,
    value: String,
    negate: bool,
}

impl Filter {
    /// Whether this filter needs every task's cgroups read ([`Line::cgroup`]).
    pub fn needs_cgroup(&self) -> bool {
        self.field == Column::CGROUP
    }

    /// Parses `FIELD=text` and friends; `None` when malformed.
    pub fn parse(s: &str) -> Option<Filter> {
        let (negate, s) = match s.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let at = s.find(['=', '>', '<'])?;
        Some(Filter {
            field: Column::filter_field(&s[..at])?,
            op: s.as_bytes()[at],
            value: s[at + 1..].trim().to_string(),
            negate,
        })
    }

    /// Whether `l` passes; `user` is its user name.
    pub fn keeps(&self, l: &Line, user: &str) -> bool {
        let num = |v: f64| -> bool {
            let Ok(want) = self.value.parse::<f64>() else {
                return false;
            };
            match self.op {
                b'>' => v > want,
                b'<' => v < want,
                _ => v == want,
            }
        };
        let text = |v: &str| -> bool { self.op == b'=' && v.contains(self.value.as_str()) };
        let r = match self.field.spec().filter {
            Some(Compare::Number(of)) => num(of(l)),
            Some(Compare::Text(of)) => text(&of(l, user)),
            None => true,
        };
        r != self.negate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::top::view::tests::{snap, task};
    use crate::top::view::Tracker;
    use tasksnap_model::Task;

    #[test]
    fn permute_moves_every_row_to_its_place() {
        // Hot rows to the front, the rest shifted: the shape a %CPU sort has.
        let n = 1000u32;
        let mut perm: Vec<u32> = vec![7, 500, 999];
        perm.extend((0..n).filter(|i| ![7, 500, 999].contains(i)));
        let mut v: Vec<u32> = (0..n).map(|i| i * 10).collect();
        permute(&mut v, &perm);
        let want: Vec<u32> = perm.iter().map(|&i| i * 10).collect();
        assert_eq!(v, want);
        // A reversal: long cycles of length two.
        let perm: Vec<u32> = (0..n).rev().collect();
        let mut v: Vec<u32> = (0..n).collect();
        permute(&mut v, &perm);
        assert_eq!(v, perm);
    }

    #[test]
    fn cpu_sort_puts_busy_rows_first_and_ties_in_pid_order() {
        let mut tr = Tracker::default();
        let tasks: Vec<Task> = (1..=50).map(|p| task(p, p, 1, 0, 1)).collect();
        tr.update(&snap(1_000_000_000, tasks), false, 1000);
        let mut tasks: Vec<Task> = (1..=50).map(|p| task(p, p, 1, 0, 1)).collect();
        tasks[9] = task(10, 10, 1, 300, 1);
        tasks[29] = task(30, 30, 1, 600, 1);
        let mut l = tr.update(&snap(2_000_000_000, tasks), false, 1000);
        sort(&mut l, Column::CPU, false, &mut |u| u.to_string());
        let order: Vec<i32> = l.iter().map(|l| l.id.tid).collect();
        let mut want = vec![30, 10];
        want.extend((1..=50).filter(|p| *p != 10 && *p != 30));
        assert_eq!(order, want);
        sort(&mut l, Column::CPU, true, &mut |u| u.to_string());
        assert_eq!(
            &l.iter().map(|l| l.id.tid).collect::<Vec<_>>()[48..],
            [10, 30]
        );
    }

    #[test]
    fn filters_parse_and_match() {
        let mut tr = Tracker::default();
        let l = tr.update(&snap(1, vec![task(42, 42, 1, 0, 0)]), false, 1000);
        assert!(Filter::parse("COMMAND=t4").is_some_and(|f| f.keeps(&l[0], "root")));
        assert!(Filter::parse("!COMMAND=t4").is_some_and(|f| !f.keeps(&l[0], "root")));
        assert!(Filter::parse("pid>40").is_some_and(|f| f.keeps(&l[0], "root")));
        assert!(Filter::parse("USER=bob").is_some_and(|f| !f.keeps(&l[0], "root")));
        assert!(Filter::parse("nonsense").is_none());
        assert!(Filter::parse("FOO=1").is_none());
        // CGROUP: matched on what `ps -o cgroup` shows; a task whose cgroups were not read
        // (or are all roots) shows `-`.
        let f = Filter::parse("CGROUP=memory:/app").expect("a cgroup filter");
        assert!(f.needs_cgroup());
        assert!(!f.keeps(&l[0], "root"));
        let mut t = task(43, 43, 1, 0, 0);
        t.cgroup = Some(Box::new(tasksnap_model::Cgroup::parse(
            b"9:name=systemd:/\n4:memory:/app/x\n0::/\n".to_vec(),
        )));
        let l = tr.update(&snap(2, vec![t]), false, 1000);
        assert_eq!(l[0].cgroup.as_deref(), Some("4:memory:/app/x"));
        assert!(f.keeps(&l[0], "root"));
        assert!(!Filter::parse("COMMAND=x").is_some_and(|f| f.needs_cgroup()));
    }
}
