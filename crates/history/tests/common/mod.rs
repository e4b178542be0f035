//! Readings the store tests write (clock.rs, recorder.rs): small, with times and pids that
//! say which reading a read-back one is.
#![allow(dead_code)] // Not every test binary that includes this module uses all of it.

pub mod rng;

use tasksnap_model::{Backend, Reading, Snapshot, SnapshotStats, Task, TaskId};

/// One second, in ns.
pub const S: u64 = 1_000_000_000;

/// A process `pid` (its own main thread, started 1 ns after boot) with `cmdline`, if any.
pub fn process(pid: i32, cmdline: Option<&str>) -> Task {
    let mut t = Task::new(TaskId {
        tgid: pid,
        tid: pid,
        start_time_ns: 1,
    });
    t.cmdline = cmdline.map(|c| c.as_bytes().to_vec());
    t
}

/// A reading taken at `t_s` seconds (wall clock and boot time alike) of `tasks`, from the
/// procfs backend, without thread states.
pub fn reading_at(t_s: u64, tasks: Vec<Task>) -> Reading {
    Reading::of(Snapshot {
        taken_at_unix_ns: t_s * S,
        taken_at_boottime_ns: t_s * S,
        boot_time_unix_s: 1,
        backend: Backend::Procfs,
        tasks,
        stats: SnapshotStats::default(),
    })
}
