//! The processes that exited during a refresh's interval, as `top` shows them:
//! the live exit source ([`Source`]: the host's BPF exit records, root only, drained once per
//! refresh before the walk), the interval's exits of a replayed reading, and what both become
//! ([`Interval`]): one row per exited process, marked as atop marks them (`<name>`, state
//! `E`, the exit code or signal in an EXIT column), and the header's count and CPU.
//!
//! An exited row's %CPU is the CPU it used during the interval: its final total less what
//! the previous refresh saw it had used (the tracker's counters, [`Tracker::cpu_ns_before`]),
//! or its whole total when it was never seen alive (born and gone within the interval).
//! A process can be both an exit and a live zombie row of the same refresh (its exit record
//! left when its last thread exited; its parent had not reaped it when the walk ran): the
//! view shows it once, as its exit ([`Interval::ids`]).

use std::collections::HashSet;

use tasksnap_collect::{Exits, Host};
use tasksnap_model::{Exit, ExitReason, Reading, TaskId};

use super::view::{Exited, Line, Row, Tracker};

/// The live exit source and when it was last drained.
pub struct Source {
    exits: Exits,
    /// The kernel's boot clock at the last drain (or the load), ns.
    drained_at_ns: u64,
}

impl Source {
    /// Loads the exit records of `host` (root: BPF, else taskstats), or says why there are none.
    /// Call it before `host.drop_loading_privileges()`: loading needs what that drops.
    pub fn open(host: &Host) -> Result<Source, String> {
        let exits = host.open_exits().map_err(|e| e.to_string())?;
        Ok(Source {
            exits,
            drained_at_ns: super::system::boottime_ns(),
        })
    }

    /// The processes that exited since the previous drain, as rows against `tracker` (its
    /// counters still those of the previous refresh). `wanted` says which processes the view
    /// shows (by tgid: `-p`).
    pub fn drain(
        &mut self,
        tracker: &Tracker,
        wanted: &dyn Fn(i32) -> bool,
    ) -> Result<Interval, String> {
        let mut batch = self.exits.drain().map_err(|e| e.to_string())?;
        if !self.exits.source().exact_identity() {
            // A start derived from the receipt time may be a tick off the live row's.
            let leaders = tracker.leaders();
            Exits::adopt_identities(&mut batch.exits, |tgid| leaders.get(&tgid).copied());
        }
        let now = super::system::boottime_ns();
        let wall_ns = now.saturating_sub(self.drained_at_ns);
        self.drained_at_ns = now;
        Ok(Interval::of(
            &batch.exits,
            batch.dropped,
            wall_ns,
            tracker,
            wanted,
        ))
    }
}

/// The exits of one interval, ready to show.
#[derive(Debug, Default)]
pub struct Interval {
    /// One row per exited process (the view's filters applied by the caller).
    pub rows: Vec<Row>,
    /// The identities of every exit of the interval: a live row with one of them is the same
    /// process's zombie.
    pub ids: HashSet<TaskId>,
    /// Exit records the kernel dropped during the interval (its buffer was full).
    pub dropped: u64,
}

impl Interval {
    /// Rows for `exits`, which ended during an interval of `wall_ns` whose start `tracker`
    /// holds the counters of.
    pub fn of(
        exits: &[Exit],
        dropped: u64,
        wall_ns: u64,
        tracker: &Tracker,
        wanted: &dyn Fn(i32) -> bool,
    ) -> Interval {
        let exits: Vec<&Exit> = exits.iter().filter(|e| wanted(e.id.tgid)).collect();
        let before = tracker.cpu_ns_before(exits.iter().map(|e| &e.id));
        let rows = exits
            .iter()
            .zip(before)
            .map(|(e, before)| Row::new(line(e, before, wall_ns)))
            .collect();
        Interval {
            rows,
            ids: exits.iter().map(|e| e.id).collect(),
            dropped,
        }
    }

    /// The exits a replayed `reading` recorded (those since the reading before it), against
    /// `tracker` holding the counters of `prev` (the reading before, when rates can be
    /// taken). `None` when the recording kept no exits (`exits_missing`: a recorder without
    /// root or BPF, or a store from before exits were recorded).
    pub fn of_reading(
        reading: &Reading,
        prev: Option<&Reading>,
        tracker: &Tracker,
        wanted: &dyn Fn(i32) -> bool,
    ) -> Option<Interval> {
        if reading.exits_missing.is_some() {
            return None;
        }
        let wall_ns = prev.map_or(0, |p| {
            reading
                .snapshot
                .taken_at_boottime_ns
                .saturating_sub(p.snapshot.taken_at_boottime_ns)
        });
        Some(Interval::of(
            &reading.exits,
            reading.exits_dropped,
            wall_ns,
            tracker,
            wanted,
        ))
    }

    /// What the "Tasks:" line adds: `,   3 exited (12.5% CPU)` (the rows `shown`, after the
    /// view's filters: their number and the CPU they used during the interval, as a share of
    /// one CPU), and `, 40 exits dropped` when the kernel dropped records (its buffer was
    /// full: those processes are in neither figure).
    pub fn header_note(&self, shown: &[Row]) -> String {
        let cpu = shown.iter().fold(0.0, |sum, l| sum + l.cpu_pct);
        let dropped = if self.dropped > 0 {
            format!(", {} exits dropped", self.dropped)
        } else {
            String::new()
        };
        format!(", {:3} exited ({cpu:.1}% CPU){dropped}", shown.len())
    }
}

/// An exited process's row: `cpu_ns_before` what it had used at the interval's start, if it
/// was seen alive then.
fn line(e: &Exit, cpu_ns_before: Option<u64>, wall_ns: u64) -> Line {
    let used_ns = e.cpu_ns.saturating_sub(cpu_ns_before.unwrap_or(0));
    let cpu_pct = if wall_ns > 0 {
        used_ns as f64 * 100.0 / wall_ns as f64
    } else {
        0.0
    };
    Line {
        id: e.id,
        ppid: e.ppid,
        euid: e.euid,
        priority: 0,
        nice: 0,
        virt_kib: 0,
        res_kib: 0,
        shr_kib: None,
        state: b'E',
        cpu_pct,
        mem_pct: 0.0,
        time_ns: e.cpu_ns,
        runq_pct: None,
        disk_pct: None,
        thr_pct: None,
        reason: None,
        comm: e.comm.clone().into(),
        kthread: e.kernel_thread,
        depth: 0,
        cgroup: None,
        exit: Some(Box::new(Exited {
            reason: e.reason(),
            cmdline: e.cmdline.clone().into_boxed_slice(),
        })),
    }
}

/// The EXIT column of a row: the exit code, or the signal that ended it by name (`KILL`,
/// `SEGV`; `sig34` for one without a short name), `*` after it when it left a core; `-` for
/// a live row.
pub fn exit_text(l: &Line) -> String {
    match l.exit.as_ref().map(|x| x.reason) {
        None => "-".into(),
        Some(ExitReason::Code(c)) => c.to_string(),
        Some(ExitReason::Signal {
            signal,
            core_dumped,
        }) => {
            let name = match i32::from(signal) {
                libc::SIGHUP => "HUP".to_string(),
                libc::SIGINT => "INT".into(),
                libc::SIGQUIT => "QUIT".into(),
                libc::SIGILL => "ILL".into(),
                libc::SIGTRAP => "TRAP".into(),
                libc::SIGABRT => "ABRT".into(),
                libc::SIGBUS => "BUS".into(),
                libc::SIGFPE => "FPE".into(),
                libc::SIGKILL => "KILL".into(),
                libc::SIGUSR1 => "USR1".into(),
                libc::SIGSEGV => "SEGV".into(),
                libc::SIGUSR2 => "USR2".into(),
                libc::SIGPIPE => "PIPE".into(),
                libc::SIGALRM => "ALRM".into(),
                libc::SIGTERM => "TERM".into(),
                libc::SIGXCPU => "XCPU".into(),
                libc::SIGXFSZ => "XFSZ".into(),
                libc::SIGSYS => "SYS".into(),
                n => format!("sig{n}"),
            };
            if core_dumped {
                name + "*"
            } else {
                name
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::top::exited::*;
    use tasksnap_model::{Base, Snapshot, Stat, Task, TaskState};

    /// A tracker that has seen `tasks` at 1000 ns (`threads`: the threads view).
    fn tracked(tasks: Vec<Task>, threads: bool) -> Tracker {
        let mut tr = Tracker::default();
        tr.update(&snap(tasks), threads, 1000);
        tr
    }

    fn exit(pid: i32, start: u64, cpu_ms: u64, status: u32) -> Exit {
        Exit {
            id: TaskId {
                tgid: pid,
                tid: pid,
                start_time_ns: start,
            },
            ppid: 1,
            comm: b"job".to_vec(),
            cmdline: b"job\0--fast\0".to_vec(),
            cpu_ns: cpu_ms * 1_000_000,
            wait_status: status,
            ..Exit::default()
        }
    }

    fn task(tgid: i32, tid: i32, start: u64, cpu_ms: u64) -> Task {
        let mut t = Task::new(TaskId {
            tgid,
            tid,
            start_time_ns: start,
        });
        t.base = Some(Base {
            state: TaskState::from_letter(b'S'),
            ppid: 1,
            comm: b"job".to_vec().into(),
            ..Base::default()
        });
        t.stat = Some(Stat {
            utime_ns: cpu_ms * 1_000_000,
            ..Stat::default()
        });
        t
    }

    fn snap(tasks: Vec<Task>) -> Snapshot {
        Snapshot {
            taken_at_unix_ns: 1,
            taken_at_boottime_ns: 1,
            boot_time_unix_s: 0,
            backend: tasksnap_model::Backend::Procfs,
            tasks,
            stats: Default::default(),
        }
    }

    /// A process seen alive at the interval's start shows what it used since; one born and
    /// gone within the interval shows its whole total; a reused pid is another process.
    #[test]
    fn exited_rows_show_the_cpu_of_the_interval() {
        let tr = tracked(vec![task(10, 10, 5, 300), task(11, 11, 5, 100)], false);
        let exits = [
            exit(10, 5, 800, 0x0700),
            exit(12, 6, 250, 9),
            // Pid 11 again, another start time: never seen alive.
            exit(11, 9, 40, 0),
        ];
        let i = Interval::of(&exits, 0, 1_000_000_000, &tr, &|_| true);
        let pct: Vec<f64> = i.rows.iter().map(|l| l.cpu_pct).collect();
        assert_eq!(pct.len(), 3);
        assert!((pct[0] - 50.0).abs() < 1e-9, "{pct:?}");
        assert!((pct[1] - 25.0).abs() < 1e-9, "{pct:?}");
        assert!((pct[2] - 4.0).abs() < 1e-9, "{pct:?}");
        assert_eq!(i.rows[0].time_ns, 800_000_000, "TIME+ is the final total");
        assert_eq!(exit_text(&i.rows[0]), "7");
        assert_eq!(exit_text(&i.rows[1]), "KILL");
        assert_eq!(i.rows[0].state, b'E');
        assert_eq!(
            i.header_note(&i.rows),
            ",   3 exited (79.0% CPU)",
            "the interval's CPU, not the processes' lifetimes"
        );
        // `-p 12`: only that one.
        let i = Interval::of(&exits, 4, 1_000_000_000, &tr, &|p| p == 12);
        assert_eq!(i.rows.len(), 1);
        assert_eq!(
            i.header_note(&i.rows),
            ",   1 exited (25.0% CPU), 4 exits dropped"
        );
    }

    /// In the threads view a process's CPU at the interval's start is the sum over its
    /// threads (the leader's row has only its own).
    #[test]
    fn threads_view_sums_the_threads_seen_before() {
        let tr = tracked(vec![task(10, 10, 5, 100), task(10, 13, 7, 200)], true);
        let i = Interval::of(&[exit(10, 5, 500, 0)], 0, 1_000_000_000, &tr, &|_| true);
        assert!(
            (i.rows[0].cpu_pct - 20.0).abs() < 1e-9,
            "{}",
            i.rows[0].cpu_pct
        );
    }

    /// A recording's exits against the sample before; a recording that kept none (from
    /// before exits were stored, or a recorder without BPF) shows nothing extra.
    #[test]
    fn a_replayed_sample_shows_its_recorded_exits_unless_it_kept_none() {
        let reading = |at_ns: u64, exits: Vec<Exit>, missing: Option<&str>| Reading {
            snapshot: Snapshot {
                taken_at_boottime_ns: at_ns,
                ..snap(Vec::new())
            },
            states: None,
            system: Default::default(),
            exits,
            exits_dropped: 0,
            exits_missing: missing.map(str::to_owned),
            host: Default::default(),
            cgroups: None,
        };
        let prev = reading(1_000_000_000, Vec::new(), None);
        let cur = reading(3_000_000_000, vec![exit(20, 1, 500, 0x0500)], None);
        let i = Interval::of_reading(&cur, Some(&prev), &Tracker::default(), &|_| true)
            .expect("exits recorded");
        assert_eq!(i.rows.len(), 1);
        assert!((i.rows[0].cpu_pct - 25.0).abs() < 1e-9, "500 ms over 2 s");
        assert_eq!(exit_text(&i.rows[0]), "5");
        let old = reading(3_000_000_000, Vec::new(), Some("recorded before"));
        assert!(Interval::of_reading(&old, Some(&prev), &Tracker::default(), &|_| true).is_none());
    }

    #[test]
    fn signals_show_by_name_and_a_core_with_a_star() {
        let row = |status| {
            let i = Interval::of(&[exit(3, 1, 0, status)], 0, 0, &Tracker::default(), &|_| {
                true
            });
            exit_text(&i.rows[0])
        };
        assert_eq!(row(0), "0");
        assert_eq!(row(0x8b), "SEGV*");
        assert_eq!(row(15), "TERM");
        assert_eq!(row(34), "sig34");
    }
}
