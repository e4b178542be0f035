//! What a long-running sampler holds between readings, in bytes by part ([`Held`]): the last
//! reading's task rows, their boxed groups and names, its thread-state totals, and what its
//! sources keep (the state source's own totals, the task source's buffers, the walk's arena).
//! Counted from capacities and the types' sizes, not asked of the allocator: what each holder
//! asked for, without malloc's own overhead or the free memory it keeps.

use std::collections::HashSet;
use std::mem::size_of;

use tasksnap_model::states::{Sample, State, ThreadTotals};
use tasksnap_model::{Task, TaskId};

/// Bytes held, by part, in a fixed order (a part a source does not have is absent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    /// (part, bytes).
    pub parts: Vec<(&'static str, usize)>,
}

impl Held {
    /// All the parts' bytes.
    pub fn total(&self) -> usize {
        self.parts.iter().map(|p| p.1).sum()
    }

    /// Adds `bytes` to `part` (made if new).
    pub fn add(&mut self, part: &'static str, bytes: usize) {
        match self.parts.iter_mut().find(|p| p.0 == part) {
            Some(p) => p.1 += bytes,
            None => self.parts.push((part, bytes)),
        }
    }

    /// `part: N MB, ...`, for a `--timings` line.
    pub fn line(&self) -> String {
        let mut out = String::new();
        for (part, bytes) in &self.parts {
            if !out.is_empty() {
                out.push_str(", ");
            }
            out.push_str(&format!("{part} {:.1} MB", *bytes as f64 / 1e6));
        }
        out
    }
}

/// A hash table's bytes: each slot its entry and a control byte.
pub(crate) fn table_bytes(capacity: usize, entry: usize) -> usize {
    capacity * (entry + 1)
}

/// The rows of `tasks` (the vector's capacity), their boxed groups, and their names
/// (command line, executable, cgroup text: a cgroup's text shared by several rows counted
/// once).
pub(crate) fn tasks(tasks: &Vec<Task>, held: &mut Held) {
    held.add("task rows", tasks.capacity() * size_of::<Task>());
    let mut groups = 0;
    let mut names = 0;
    let mut cgroups: HashSet<usize> = HashSet::new();
    for t in tasks {
        let cmdline = t.cmdline.as_ref().map_or(0, Vec::capacity);
        let exe = t.exe.as_ref().map_or(0, Vec::capacity);
        // `Task::heap_bytes` counts a cgroup's text for each row holding it.
        let text = |c: &tasksnap_model::Cgroup| c.raw().len() + 2 * size_of::<usize>();
        let cgroup = t
            .cgroup
            .as_ref()
            .map_or(0, |c| size_of::<tasksnap_model::Cgroup>() + text(c));
        groups += t.heap_bytes() - size_of::<Task>() - cmdline - exe - cgroup;
        names += cmdline + exe;
        if let Some(c) = &t.cgroup {
            names += size_of::<tasksnap_model::Cgroup>();
            if cgroups.insert(c.raw().as_ptr() as usize) {
                names += text(c);
            }
        }
    }
    held.add("task groups", groups);
    held.add("task names", names);
}

/// A thread-state sample: its table of totals, their wait reasons and the reasons' names.
pub(crate) fn sample(s: &Sample) -> usize {
    let reasons: usize = s
        .threads
        .values()
        .map(|t| t.reasons.capacity() * size_of::<(State, u32, u64)>())
        .sum();
    table_bytes(s.threads.capacity(), size_of::<(TaskId, ThreadTotals)>())
        + reasons
        + table_bytes(
            s.reasons.capacity(),
            size_of::<(u32, std::sync::Arc<[String]>)>(),
        )
        + s.reasons
            .values()
            .flat_map(|f| f.iter())
            .map(|f| size_of::<String>() + f.capacity())
            .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasksnap_model::states::Mode;
    use tasksnap_model::{Cgroup, Sched, TaskId};

    fn task(tid: i32, cmdline: &[u8], cgroup: &Cgroup) -> Task {
        let mut t = Task::new(TaskId {
            tgid: 1,
            tid,
            start_time_ns: 5,
        });
        t.cmdline = Some(cmdline.to_vec());
        t.cgroup = Some(Box::new(cgroup.clone()));
        t.sched = Some(Box::new(Sched {
            on_cpu_ns: 0,
            run_delay_ns: 0,
            timeslices: 0,
            voluntary_switches: None,
            involuntary_switches: None,
        }));
        t
    }

    /// The parts are what the rows hold: the vector's capacity, one `Sched` box each, each
    /// row's own command line, and a cgroup text shared by both rows once.
    #[test]
    fn task_parts_count_what_the_rows_hold() {
        let cg = Cgroup::parse(b"0::/a.slice\n".to_vec());
        let mut v = Vec::with_capacity(4);
        v.push(task(1, b"abc", &cg));
        v.push(task(2, b"\xff\xfe", &cg));
        let mut held = Held::default();
        tasks(&v, &mut held);
        let part = |name| held.parts.iter().find(|p| p.0 == name).map(|p| p.1);
        assert_eq!(part("task rows"), Some(4 * size_of::<Task>()));
        assert_eq!(part("task groups"), Some(2 * size_of::<Sched>()));
        let names = 3 + 2 + 2 * size_of::<Cgroup>() + 12 + 2 * size_of::<usize>();
        assert_eq!(part("task names"), Some(names));
        assert_eq!(
            held.total(),
            4 * size_of::<Task>() + 2 * size_of::<Sched>() + names
        );
    }

    #[test]
    fn a_sample_counts_its_table_and_reasons() {
        let mut s = Sample::new(Mode::Bpf, 1);
        let id = TaskId {
            tgid: 1,
            tid: 1,
            start_time_ns: 0,
        };
        let mut t = ThreadTotals {
            id,
            ..ThreadTotals::default()
        };
        t.reasons = Vec::with_capacity(3);
        s.threads.insert(id, t);
        let want = table_bytes(s.threads.capacity(), size_of::<(TaskId, ThreadTotals)>())
            + 3 * size_of::<(State, u32, u64)>();
        assert_eq!(sample(&s), want);
    }
}
