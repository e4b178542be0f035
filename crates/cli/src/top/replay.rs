//! `tasksnap top --replay DIR`: the live view over a recording (`tasksnap record`). A replay
//! stands on one sample at a time and steps through them (`t`, `T`, `b`; one per frame in
//! batch mode); each frame is made by the code that makes a live one, from the sample shown
//! and the one before it: %CPU and RUNQ% from the two snapshots' counters over the two
//! readings' CLOCK_BOOTTIME stamps, the header's CPU split from their recorded CPU ticks,
//! DISK% and wait reasons from their recorded thread-state totals, memory, load and uptime
//! from the sample itself. Nothing of the host is read for what the recording holds, and no
//! BPF program is loaded.

use std::path::{Path, PathBuf};

use tasksnap_collect::Host;
use tasksnap_history::History;
use tasksnap_model::{Reading, Selector, Snapshot};

use super::system::{cpu_split, System};

/// A recording open for `top`, standing on one of its samples.
#[derive(Debug)]
pub struct Replay {
    dir: PathBuf,
    history: History,
    /// Every sample's time, ns since the epoch, in order.
    times: Vec<u64>,
    /// The sample shown: `times[index]`.
    pub(super) index: usize,
    /// Answers for the sample shown (rows' command lines and memory come through its fill).
    cur: Host,
    /// The sample before it, when there is one (rates need it).
    prev: Option<Reading>,
}

use tasksnap_history::rfc3339;

impl Replay {
    /// Opens the recording in `dir` on the sample in force at `at`; without it, on the
    /// first sample that has one before it (the first with rates). Every way this can fail
    /// (no store, an empty or damaged one, `at` outside it) is one line for the user.
    pub fn open(dir: &Path, at: Option<u64>) -> Result<Replay, String> {
        let history = crate::recording::open("tasksnap top", dir).map_err(|e| e.to_string())?;
        let (first, last) = history.bounds().map_err(|e| e.to_string())?;
        let times = history
            .sample_times(first, last)
            .map_err(|e| e.to_string())?;
        if times.is_empty() {
            let d = history.store().damage();
            let damaged = d.skipped_bytes + d.tail_bytes + d.corrupt_frames;
            return Err(if damaged > 0 {
                format!(
                    "{}: no readable sample: the recording is damaged ({} bytes skipped)",
                    dir.display(),
                    d.skipped_bytes + d.tail_bytes
                )
            } else {
                tasksnap_history::ReplayError::Empty {
                    dir: dir.to_path_buf(),
                }
                .to_string()
            });
        }
        let index = match at {
            Some(t) => index_at(&times, t).map_err(|e| format!("{}: {e}", dir.display()))?,
            None => 1.min(times.len() - 1),
        };
        let cur = read(&history, dir, times[index])?;
        let mut r = Replay {
            dir: dir.to_path_buf(),
            history,
            times,
            index,
            cur,
            prev: None,
        };
        r.prev = r.read_prev();
        Ok(r)
    }

    /// The reading of the sample before the one shown, if it reads.
    fn read_prev(&self) -> Option<Reading> {
        let i = self.index.checked_sub(1)?;
        read(&self.history, &self.dir, self.times[i])
            .ok()
            .and_then(Host::into_replayed)
    }

    /// Moves to the next sample (`forward`) or the previous one. At either end it stays and
    /// says so; at the end it first looks for samples a recorder appended since.
    pub fn step(&mut self, forward: bool) -> Result<(), String> {
        if forward {
            if self.index + 1 >= self.times.len() {
                self.look_for_more();
            }
            if self.index + 1 >= self.times.len() {
                return Err(format!(
                    "at the last sample ({}/{}): no later one",
                    self.index + 1,
                    self.times.len()
                ));
            }
            let next = read(&self.history, &self.dir, self.times[self.index + 1])?;
            let old = std::mem::replace(&mut self.cur, next);
            self.prev = old.into_replayed();
            self.index += 1;
        } else {
            if self.index == 0 {
                return Err(format!(
                    "at the first sample (1/{}): no earlier one",
                    self.times.len()
                ));
            }
            let t = self.times[self.index - 1];
            self.cur = match self.prev.take() {
                Some(p) => over(&self.dir, p),
                None => read(&self.history, &self.dir, t)?,
            };
            self.index -= 1;
            self.prev = self.read_prev();
        }
        Ok(())
    }

    /// Moves to the sample in force at `t` (the last one at or before it).
    pub fn jump(&mut self, t: u64) -> Result<(), String> {
        self.look_for_more();
        let i = index_at(&self.times, t)?;
        if i == self.index {
            return Ok(());
        }
        if i == self.index + 1 || i + 1 == self.index {
            return self.step(i > self.index);
        }
        self.cur = read(&self.history, &self.dir, self.times[i])?;
        self.index = i;
        self.prev = self.read_prev();
        Ok(())
    }

    /// Adds the samples a recorder appended since the recording was opened (the store is
    /// opened afresh: an open one knows the frames it found when it was opened).
    fn look_for_more(&mut self) {
        let Some(&last) = self.times.last() else {
            return;
        };
        let Ok(fresh) = History::open(&self.dir) else {
            return;
        };
        let Some((_, end)) = fresh.span().filter(|&(_, end)| end > last) else {
            return;
        };
        let Ok(more) = fresh.sample_times(last.saturating_add(1), end) else {
            return;
        };
        if more.iter().any(|&t| t > last) {
            self.times.extend(more.into_iter().filter(|&t| t > last));
            self.history = fresh;
        }
    }

    /// The sample shown.
    pub fn reading(&self) -> &Reading {
        // `cur` is only ever made by `over`, a host over a reading.
        self.cur
            .replayed()
            .expect("a replay's host holds the reading it replays")
    }

    /// The sample before it, when rates can be taken against it: same boot, earlier.
    pub fn prev(&self) -> Option<&Reading> {
        let cur = &self.reading().snapshot;
        self.prev.as_ref().filter(|p| {
            p.snapshot.boot_time_unix_s == cur.boot_time_unix_s
                && p.snapshot.taken_at_boottime_ns < cur.taken_at_boottime_ns
        })
    }

    /// The host over the sample shown (for the rows' fill).
    pub fn host(&self) -> &Host {
        &self.cur
    }

    /// The tasks of `reading` that `selectors` name, in the shape a live refresh gets them:
    /// every thread of the processes shown; in the threads view (`threads`) each row one
    /// thread, so the leader's row, which the recorder kept with its process's CPU times,
    /// keeps what its process's other threads did not use.
    pub fn snapshot(reading: &Reading, selectors: &[Selector], threads: bool) -> Snapshot {
        let s = &reading.snapshot;
        let mut tasks: Vec<tasksnap_model::Task> = s
            .tasks
            .iter()
            .filter(|t| selectors.iter().any(|sel| Host::selects(sel, t)))
            .cloned()
            .collect();
        if threads {
            leader_as_thread(&mut tasks);
        }
        s.with_tasks(tasks)
    }

    /// The header's machine figures, as recorded (the CPU split against the sample before,
    /// or since boot for the first).
    pub fn system(&self) -> System {
        let cur = self.reading();
        let before = self.prev().and_then(|p| p.system.cpu).unwrap_or_default();
        System {
            uptime_s: cur.snapshot.taken_at_boottime_ns as f64 / 1e9,
            // Logins are not recorded.
            users: 0,
            loadavg: cur.system.load.map(|l| l.avg).unwrap_or_default(),
            cpu_pct: cur
                .system
                .cpu
                .map(|now| cpu_split(&before, &now))
                .unwrap_or_default(),
            mem: cur.system.memory.unwrap_or_default(),
        }
    }

    /// The sample's time of day in UTC, as the header's clock shows it.
    pub fn clock(&self) -> String {
        let s = self.reading().snapshot.taken_at_unix_ns / 1_000_000_000 % 86_400;
        format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    }

    /// The header line that says this is a replay, and of what.
    pub fn marker(&self) -> String {
        let cur = &self.reading().snapshot;
        let interval = match self.prev() {
            Some(p) => format!(
                "{:.1} s since the sample before",
                cur.taken_at_boottime_ns
                    .saturating_sub(p.snapshot.taken_at_boottime_ns) as f64
                    / 1e9
            ),
            None => "no sample before it: no rates".into(),
        };
        format!(
            "replay {} sample {}/{} at {} ({interval})",
            self.dir.display(),
            self.index + 1,
            self.times.len(),
            rfc3339(cur.taken_at_unix_ns)
        )
    }

    /// The widest pid the sample holds, in digits (at least 5, as the live view).
    pub fn pid_width(&self) -> usize {
        let max = self
            .reading()
            .snapshot
            .tasks
            .iter()
            .map(|t| t.id.tid.max(t.id.tgid))
            .max()
            .unwrap_or(0);
        max.max(1).to_string().len().max(5)
    }

    /// `MemTotal` when the sample was taken (for %MEM).
    pub fn mem_total_kib(&self) -> u64 {
        self.reading()
            .system
            .memory
            .map(|m| m.total_kib)
            .unwrap_or(0)
    }
}

/// The index of the sample in force at `t` among `times` (sorted): the last at or before
/// it. A time before the first or after the last is an error that says the recording's span.
pub fn index_at(times: &[u64], t: u64) -> Result<usize, String> {
    match (times.first(), times.last()) {
        (Some(&first), Some(&last)) if (first..=last).contains(&t) => {
            Ok(times.partition_point(|&x| x <= t) - 1)
        }
        (Some(&first), Some(&last)) => Err(format!(
            "{} is outside the recording, which runs from {} to {}",
            rfc3339(t),
            rfc3339(first),
            rfc3339(last)
        )),
        _ => Err("the recording holds no sample".into()),
    }
}

/// The sample in force at `t`, as a host (its report names the recording and time).
fn read(history: &History, dir: &Path, t: u64) -> Result<Host, String> {
    let reading = history.reading_at(t).map_err(|e| e.to_string())?;
    Ok(over(dir, reading))
}

/// A host over `reading` of the recording in `dir`.
fn over(dir: &Path, reading: Reading) -> Host {
    let why = format!(
        "replay of {} at {}",
        dir.display(),
        rfc3339(reading.snapshot.taken_at_unix_ns)
    );
    Host::replay(reading, why)
}

/// In `tasks` (every thread of some processes, in (tgid, tid) order, each leader carrying
/// its process's CPU times), gives each leader its own share: the process's times less its
/// other threads' (what is left also holds the threads that have exited, as procps's
/// `ps -L` cannot tell either).
fn leader_as_thread(tasks: &mut [tasksnap_model::Task]) {
    let mut i = 0;
    while i < tasks.len() {
        let tgid = tasks[i].id.tgid;
        let end = i + tasks[i..].iter().take_while(|t| t.id.tgid == tgid).count();
        let (mut user, mut system) = (0u64, 0u64);
        let mut leader = None;
        for (j, t) in tasks[i..end].iter().enumerate() {
            if t.id.is_leader() {
                leader = Some(i + j);
            } else if let Some(s) = &t.stat {
                user += s.utime_ns;
                system += s.stime_ns;
            }
        }
        if let Some(s) = leader.and_then(|l| tasks[l].stat.as_mut()) {
            s.utime_ns = s.utime_ns.saturating_sub(user);
            s.stime_ns = s.stime_ns.saturating_sub(system);
        }
        i = end;
    }
}

#[cfg(test)]
pub(super) mod tests {
    use crate::top::replay::*;

    #[test]
    fn the_sample_in_force_at_a_time() {
        let times = [10, 20, 30];
        assert_eq!(index_at(&times, 10), Ok(0));
        assert_eq!(index_at(&times, 19), Ok(0));
        assert_eq!(index_at(&times, 20), Ok(1));
        assert_eq!(index_at(&times, 30), Ok(2));
        let before = index_at(&times, 9).expect_err("before the first");
        assert!(before.contains("outside the recording"), "{before}");
        assert!(index_at(&times, 31).is_err());
        assert!(index_at(&[], 5).is_err());
    }

    pub(crate) const T0: u64 = 1_763_866_800_000_000_000;
    pub(crate) const SEC: u64 = 1_000_000_000;

    /// Sample `i` of a synthetic recording: one process (pid 100, `burn`) that uses 0.75
    /// CPU seconds per second (0.5 user, 0.25 system), samples one second apart from T0.
    fn reading(i: u64) -> Reading {
        let mut t = task(100, 100, i * 500);
        t.base = Some(tasksnap_model::Base {
            state: tasksnap_model::TaskState::Running,
            ppid: 1,
            comm: tasksnap_model::Comm::from_slice(b"burn"),
            num_threads: 1,
            ..Default::default()
        });
        Reading {
            snapshot: Snapshot {
                taken_at_unix_ns: T0 + i * SEC,
                taken_at_boottime_ns: 1000 * SEC + i * SEC,
                boot_time_unix_s: T0 / SEC - 1000,
                backend: tasksnap_model::Backend::Procfs,
                tasks: vec![t],
                stats: Default::default(),
            },
            states: None,
            system: tasksnap_model::SystemFigures {
                memory: Some(tasksnap_model::Memory {
                    total_kib: 1 << 20,
                    ..Default::default()
                }),
                ..Default::default()
            },
            exits: Vec::new(),
            exits_dropped: 0,
            exits_missing: None,
            host: Default::default(),
            cgroups: None,
        }
    }

    /// A store in `dir` holding samples 0..n of [`reading`].
    pub(crate) fn record(dir: &Path, n: u64) {
        let mut rec =
            tasksnap_history::Recorder::create(dir, Default::default(), 2).expect("store");
        for i in 0..n {
            rec.append(&reading(i)).expect("append");
        }
        rec.finish().expect("finish");
    }

    fn task(tgid: i32, tid: i32, cpu_ms: u64) -> tasksnap_model::Task {
        let mut t = tasksnap_model::Task::new(tasksnap_model::TaskId {
            tgid,
            tid,
            start_time_ns: 1,
        });
        t.stat = Some(tasksnap_model::Stat {
            utime_ns: cpu_ms * 1_000_000,
            stime_ns: cpu_ms * 500_000,
            ..Default::default()
        });
        t
    }

    /// In the threads view a leader's row is its own thread: the process's times the
    /// recorder kept on it, less its other threads'; a process of one thread is unchanged.
    #[test]
    fn leader_rows_are_threads_in_the_threads_view() {
        let mut tasks = vec![
            task(10, 10, 900),
            task(10, 11, 300),
            task(10, 12, 500),
            task(20, 20, 70),
            // A thread whose process row was not kept: nothing to take from.
            task(30, 31, 5),
        ];
        leader_as_thread(&mut tasks);
        let cpu = |i: usize| tasks[i].stat.as_ref().map(|s| (s.utime_ns, s.stime_ns));
        assert_eq!(cpu(0), Some((100_000_000, 50_000_000)));
        assert_eq!(cpu(1), Some((300_000_000, 150_000_000)));
        assert_eq!(cpu(3), Some((70_000_000, 35_000_000)));
        assert_eq!(cpu(4), Some((5_000_000, 2_500_000)));
        // Never below zero (threads read a moment after their process).
        let mut odd = vec![task(40, 40, 1), task(40, 41, 9)];
        leader_as_thread(&mut odd);
        assert_eq!(odd[0].stat.as_ref().map(|s| s.utime_ns), Some(0));
    }
}
