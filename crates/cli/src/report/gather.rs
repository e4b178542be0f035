//! What the report shows, gathered in one pass over a window's samples ([`Frame`]s, in time
//! order, from a recording or a Parquet dump): the host's figures per sample and per interval,
//! CPU per group (comm, user, cgroup) per interval, the thread-state mix per interval and the
//! D-state wait reasons, the processes that exited per interval, and every process's figures
//! over the window. Interval `i` runs from reading `i - 1` to reading `i` and is shown at
//! reading `i`'s time; the first reading starts the window and has no interval.
//!
//! A process's CPU over the window is its CPU at its last reading of the window (its exit
//! record's when it exited in it) less its CPU at the window's first reading when it was in
//! it, else less nothing (it started in the window): what `dump` gives as the growth of
//! `cpu_seconds` (the model's `cpu_ns`: utime + stime) over the same readings.

use std::collections::HashMap;

use super::frame::{Frame, ProcRow, StateMix};

/// The group kinds the CPU chart can be split by.
pub const GROUP_KINDS: [&str; 3] = ["comm", "user", "cgroup"];

/// A process over the window.
#[derive(Debug, Clone)]
pub struct Proc {
    /// Its pid.
    pub pid: i32,
    /// Command name and line, bytes as recorded (the last seen).
    pub comm: Vec<u8>,
    /// The command line, arguments joined by spaces (the last seen; empty when unknown).
    pub args: Vec<u8>,
    /// Effective user id.
    pub uid: Option<u32>,
    /// The cgroup as one line (v2 path, else v1 lines joined).
    pub cgroup: Vec<u8>,
    /// CPU ns at the window's first reading when it was in it, else 0.
    pub base_cpu_ns: u64,
    /// CPU ns at its last reading (or exit).
    pub last_cpu_ns: u64,
    /// Its largest RSS at a reading, or its exit record's peak, bytes.
    pub peak_rss_bytes: u64,
    /// Its most CPU in one interval, ns, and the reading (index) that interval ends at.
    pub peak_interval_cpu_ns: u64,
    /// The reading of its peak (its first reading when it never used CPU in an interval).
    pub peak_reading: usize,
    /// Start, Unix seconds (`None` when unknown).
    pub start_unix_s: Option<f64>,
    /// Exit, Unix seconds, when it exited in the window.
    pub exit_unix_s: Option<f64>,
}

impl Proc {
    /// CPU over the window, ns.
    pub fn cpu_ns(&self) -> u64 {
        self.last_cpu_ns.saturating_sub(self.base_cpu_ns)
    }
}

/// The host's figures: per reading (memory, load) and per interval (CPU, pressure).
#[derive(Debug, Clone, Default)]
pub struct HostFigures {
    /// Per interval: busy, user (with nice), system (with irq, softirq), iowait, steal, % of
    /// all CPUs; NaN when unknown.
    pub cpu_pct: Vec<[f64; 5]>,
    /// Per reading: used (total less available), total, swap used, bytes.
    pub memory: Vec<[f64; 3]>,
    /// Per reading: load averages 1, 5, 15 min.
    pub load: Vec<[f64; 3]>,
    /// Per interval: CPU, memory, I/O pressure ("some"), % of the interval stalled.
    pub pressure: Vec<[f64; 3]>,
    /// Whether any reading had pressure lines.
    pub has_pressure: bool,
    /// Whether any reading had the host's figures (a dump may have no `system` table).
    pub known: bool,
}

/// Everything the report draws.
#[derive(Debug, Default)]
pub struct Gathered {
    /// Each reading's time, Unix ns.
    pub times_ns: Vec<u64>,
    /// The host name of the last reading, as recorded.
    pub hostname: Option<Vec<u8>>,
    /// The host's figures.
    pub host: HostFigures,
    /// Per group kind ([`GROUP_KINDS`]): the group names, and per interval the CPU ns of each
    /// group that used any (group index, ns).
    pub groups: [GroupCpu; 3],
    /// Per interval, the thread-state mix.
    pub states: Vec<StateMix>,
    /// Whether any interval had thread states.
    pub states_known: bool,
    /// D-state ns per wait reason (frames joined) over the window.
    pub disk_reasons: HashMap<String, u64>,
    /// Per interval: processes that exited, and their CPU since the previous reading, ns.
    pub exits: Vec<(u64, u64)>,
    /// Exit records the kernel dropped over the window.
    pub exits_dropped: u64,
    /// Whether the window's readings had an exit source.
    pub exits_known: bool,
    /// Every process seen in the window.
    pub procs: Vec<Proc>,
}

/// CPU per group of one kind.
#[derive(Debug, Default)]
pub struct GroupCpu {
    /// The groups' names (bytes), indexed by the group index.
    pub names: Vec<Vec<u8>>,
    /// Per interval: (group index, CPU ns) for the groups that used CPU.
    pub per_interval: Vec<Vec<(u32, u64)>>,
    index: HashMap<Vec<u8>, u32>,
}

impl GroupCpu {
    fn add(&mut self, name: &[u8], ns: u64, acc: &mut HashMap<u32, u64>) {
        if ns == 0 {
            return;
        }
        let i = match self.index.get(name) {
            Some(&i) => i,
            None => {
                let i = self.names.len() as u32;
                self.names.push(name.to_vec());
                self.index.insert(name.to_vec(), i);
                i
            }
        };
        *acc.entry(i).or_default() += ns;
    }
}

/// Folds frames into [`Gathered`], one at a time.
#[derive(Default)]
pub struct Gatherer {
    out: Gathered,
    procs: HashMap<(i32, u64), usize>,
    /// The sample before: its time and host figures (what the next interval needs of it).
    prev: Option<(u64, Option<tasksnap_model::SystemFigures>)>,
    users: tasksnap_sys::users::Names,
}

impl Gatherer {
    /// Takes the next sample of the window.
    pub fn frame(&mut self, f: &Frame) {
        let i = self.out.times_ns.len();
        self.out.times_ns.push(f.at_unix_ns);
        if f.hostname.is_some() {
            self.out.hostname.clone_from(&f.hostname);
        }
        self.host(f);
        self.processes(i, f);
        if i > 0 {
            self.out.states.push(f.states);
            self.out.states_known |= f.states.known;
            for (text, ns) in &f.disk_reasons {
                *self.out.disk_reasons.entry(text.clone()).or_default() += ns;
            }
        }
        self.prev = Some((f.at_unix_ns, f.system.clone()));
    }

    /// The gathered figures, processes by CPU over the window, most first.
    pub fn finish(mut self) -> Gathered {
        self.out
            .procs
            .sort_by(|a, b| b.cpu_ns().cmp(&a.cpu_ns()).then(a.pid.cmp(&b.pid)));
        self.out
    }

    fn host(&mut self, f: &Frame) {
        let none = tasksnap_model::SystemFigures::default();
        let s = f.system.as_ref().unwrap_or(&none);
        let h = &mut self.out.host;
        h.known |= f.system.is_some();
        h.memory.push(match s.memory {
            Some(m) => [
                m.total_kib.saturating_sub(m.available_kib) as f64 * 1024.0,
                m.total_kib as f64 * 1024.0,
                m.swap_total_kib.saturating_sub(m.swap_free_kib) as f64 * 1024.0,
            ],
            None => [f64::NAN; 3],
        });
        h.load.push(s.load.map_or([f64::NAN; 3], |l| l.avg));
        h.has_pressure |= !s.pressure.is_empty();
        let Some((prev_ns, prev)) = &self.prev else {
            return;
        };
        let p = prev.as_ref().unwrap_or(&none);
        h.cpu_pct.push(match (p.cpu, s.cpu) {
            (Some(a), Some(b)) => {
                let d = |x: u64, y: u64| y.saturating_sub(x) as f64;
                let total = d(a.total(), b.total());
                let pct = |v: f64| {
                    if total > 0.0 {
                        v * 100.0 / total
                    } else {
                        f64::NAN
                    }
                };
                let user = d(a.user + a.nice, b.user + b.nice);
                let sys = d(a.system + a.irq + a.softirq, b.system + b.irq + b.softirq);
                let iowait = d(a.iowait, b.iowait);
                let steal = d(a.steal, b.steal);
                let idle = d(a.idle, b.idle);
                [
                    pct(total - idle - iowait),
                    pct(user),
                    pct(sys),
                    pct(iowait),
                    pct(steal),
                ]
            }
            _ => [f64::NAN; 5],
        });
        let span_us = f.at_unix_ns.saturating_sub(*prev_ns) as f64 / 1000.0;
        let stalled = |res: &str| {
            let total = |f: &tasksnap_model::SystemFigures| {
                f.pressure
                    .iter()
                    .find(|x| x.resource == res)
                    .and_then(|x| x.some)
                    .map(|l| l.total_us)
            };
            match (total(p), total(s)) {
                (Some(a), Some(b)) if span_us > 0.0 => {
                    (b.saturating_sub(a) as f64 * 100.0 / span_us).min(100.0)
                }
                _ => f64::NAN,
            }
        };
        h.pressure
            .push([stalled("cpu"), stalled("memory"), stalled("io")]);
    }

    /// The processes of sample `i` (live ones, then exits) into [`Proc`]s, and each one's
    /// CPU in the interval ending here into its groups.
    fn processes(&mut self, i: usize, f: &Frame) {
        let mut acc: [HashMap<u32, u64>; 3] = Default::default();
        let (mut exits, mut exit_cpu) = (0u64, 0u64);
        for p in &f.procs {
            let (k, d) = self.seen(i, p);
            // An exit's row has no cgroup: the process's last live row's is charged.
            self.charge(k, d, &mut acc);
            if p.exit_unix_ns.is_some() {
                exits += 1;
                exit_cpu += d;
            }
        }
        self.out.exits_dropped += f.exits.dropped;
        self.out.exits_known |= f.exits.known;
        if i > 0 {
            self.out.exits.push((exits, exit_cpu));
            for (g, a) in self.out.groups.iter_mut().zip(acc) {
                let mut v: Vec<(u32, u64)> = a.into_iter().collect();
                v.sort_unstable();
                g.per_interval.push(v);
            }
        }
    }

    /// Records process row `t` of sample `i`; returns its index in the processes and its
    /// CPU in the interval ending here (0 in the window's first sample).
    fn seen(&mut self, i: usize, t: &ProcRow) -> (usize, u64) {
        let cpu = t.cpu_ns.unwrap_or(0);
        let key = (t.pid, t.start_key);
        let k = match self.procs.get(&key) {
            Some(&k) => k,
            None => {
                let k = self.out.procs.len();
                self.procs.insert(key, k);
                let base = if i == 0 { cpu } else { 0 };
                self.out.procs.push(Proc {
                    pid: t.pid,
                    comm: Vec::new(),
                    args: Vec::new(),
                    uid: None,
                    cgroup: Vec::new(),
                    base_cpu_ns: base,
                    last_cpu_ns: base,
                    peak_rss_bytes: 0,
                    peak_interval_cpu_ns: 0,
                    peak_reading: i,
                    start_unix_s: t.start_unix_ns.map(|ns| ns as f64 / 1e9),
                    exit_unix_s: None,
                });
                k
            }
        };
        let p = &mut self.out.procs[k];
        let d = cpu.saturating_sub(p.last_cpu_ns);
        p.last_cpu_ns = p.last_cpu_ns.max(cpu);
        p.peak_rss_bytes = p.peak_rss_bytes.max(t.rss_bytes.unwrap_or(0));
        if d > p.peak_interval_cpu_ns {
            p.peak_interval_cpu_ns = d;
            p.peak_reading = i;
        }
        if let Some(c) = &t.comm {
            p.comm.clone_from(c);
        }
        if let Some(c) = &t.args {
            if !c.is_empty() || p.args.is_empty() {
                p.args.clone_from(c);
            }
        }
        if let Some(u) = t.uid {
            p.uid = Some(u);
        }
        if let Some(c) = &t.cgroup {
            p.cgroup.clone_from(c);
        }
        if let Some(ns) = t.exit_unix_ns {
            p.exit_unix_s = Some(ns as f64 / 1e9);
        }
        (k, d)
    }

    /// Adds `ns` of process `k` to its comm, user and cgroup groups (`?` when unknown).
    fn charge(&mut self, k: usize, ns: u64, acc: &mut [HashMap<u32, u64>; 3]) {
        if ns == 0 {
            return;
        }
        let p = &self.out.procs[k];
        let unknown = |v: &[u8]| {
            if v.is_empty() {
                b"?".to_vec()
            } else {
                v.to_vec()
            }
        };
        let (comm, cgroup, uid) = (unknown(&p.comm), unknown(&p.cgroup), p.uid);
        let user = uid.map_or_else(|| b"?".to_vec(), |u| self.user_name(u));
        self.out.groups[0].add(&comm, ns, &mut acc[0]);
        self.out.groups[1].add(&user, ns, &mut acc[1]);
        self.out.groups[2].add(&cgroup, ns, &mut acc[2]);
    }

    /// The user name of `uid` (its number when the system has none).
    pub fn user_name(&mut self, uid: u32) -> Vec<u8> {
        self.users
            .user(uid)
            .map_or_else(|| uid.to_string().into_bytes(), <[u8]>::to_vec)
    }
}
