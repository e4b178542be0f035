//! The state `top` keeps between refreshes ([`Top`]): where the tasks come from (the host or
//! a recording), the rate tracker, names and command lines read for the rows shown, DISK%
//! and wait reasons, the exit records; a refresh makes a [`Frame`] of it, and the live view
//! asks it for a [`Page`] of rows as text.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tasksnap_collect::{Host, Watched};
use tasksnap_model::{Backend, Group, Groups, Query, Selector};

use super::options::Options;
use super::view::{self, Line, Row};
use super::{arrange, cgroup_view, columns, exited, render, replay, system, waits};
use crate::ps::names::Names;
use crate::ps::text::{self, terminal_text, Locale};

/// A frame ready to show: header lines and every row that passed the filters, in order.
pub struct Frame {
    pub header: Vec<String>,
    pub lines: Vec<Row>,
    /// The cgroup view's rows, when it is on (shown instead of `lines`).
    pub cgroups: Option<Vec<cgroup_view::Row>>,
}

/// What the live view draws: the header, the column header and the text of the rows in the
/// window it asked for ([`Top::page`]). Built on the collection thread, so the terminal never
/// waits on a read.
#[derive(Debug, Clone, Default)]
pub struct Page {
    pub header: Vec<String>,
    pub column_header: String,
    /// The text of rows `scroll..scroll + rows.len()`.
    pub rows: Vec<String>,
    /// The task id (tid) of each row in `rows`: what the kill and renice prompts act on.
    pub ids: Vec<i32>,
    /// Rows in the whole frame (for scrolling).
    pub total: usize,
    /// The first row shown (clamped to the frame).
    pub scroll: usize,
    /// Why these rows lack command lines and shared memory, if they do.
    pub rows_error: Option<String>,
    /// In the cgroup view, each row's `CGROUP` filter (what Enter drills into).
    pub cgroup_filters: Vec<String>,
}

/// Where the tasks come from: the host, or a recording.
enum Source {
    Live(Box<Host>),
    Replay(Box<replay::Replay>),
}

/// The state kept between refreshes.
pub struct Top {
    pub opts: Options,
    source: Source,
    /// The backend as the header shows it (`bpf (pinned)`).
    backend_short: String,
    /// Whether the BPF backend answers (DISK% and wait reasons need it).
    bpf: bool,
    tracker: view::Tracker,
    system: system::SystemReader,
    names: Names,
    /// Command lines of tasks shown, by identity (tgid, start time).
    cmdlines: HashMap<(i32, u64), String>,
    /// Tasks whose command line read was abandoned (mmap lock held past the deadline), by
    /// identity, and when to try again: until then they show `[comm]`.
    cmdline_retry: HashMap<(i32, u64), Instant>,
    /// How ps and top escape names and command lines here (UTF-8 or not).
    locale: Locale,
    /// Why the last rows came without command lines and shared memory (descriptors or
    /// memory ran out), until a read succeeds again.
    rows_error: Option<String>,
    mem_total_kib: u64,
    /// DISK% and wait reasons (root with BPF), loaded after the first screen.
    waits: Option<waits::Waits>,
    /// Why there are no DISK% figures, once known.
    waits_unavailable: Option<String>,
    /// DISK% and wait reason by pid (tid in the threads view), from the last refresh.
    waits_by_id: HashMap<i32, waits::Wait>,
    /// Processes on screen at the last draw (their waits are sampled).
    visible_pids: Vec<i32>,
    refreshes: u64,
    /// Tasks the last refresh got from the kernel when it got only what changed.
    changed: Option<usize>,
    /// The rows of a frame no longer shown, for the next one to fill.
    spare_lines: Vec<Row>,
    caps_dropped: bool,
    /// The exit records (root: BPF, else taskstats), loaded at start, before the privileges
    /// go.
    exits: Option<exited::Source>,
    /// Why there are no exit records, once known.
    exits_unavailable: Option<String>,
    /// The last refresh's exits (`None`: no exit source, or a recording without them).
    interval: Option<exited::Interval>,
    /// Its rows that passed the view's filters.
    exited_rows: Vec<Row>,
    /// Zombie rows of the last frame that the exited view shows as their exits instead.
    hidden_zombies: Vec<Row>,
    /// The cgroup view's last reading.
    cgroup_view: cgroup_view::CgroupView,
    own_cpu_ns: u64,
    own_at: Instant,
    pid_width: usize,
}

impl Top {
    pub fn new(opts: Options) -> anyhow::Result<Top> {
        Host::quiet_bpf_messages();
        // A live view runs for a while: the BPF programs' load time (the reason `ps` uses
        // /proc on small hosts) is paid once, and only BPF gives DISK% and wait reasons and
        // refreshes that read only what changed. So `auto` means BPF whenever it can load.
        let mut host = Host::from_env();
        host.open_live(opts.backend)?;
        let mem_total_kib = host.mem_total_kib().unwrap_or(0);
        let pid_width = host.pid_max_width().unwrap_or(5).max(5);
        let report = host.report();
        // The exit records, loaded now, while the heap is small: the load's transient memory
        // (libbpf parses the kernel's BTF, ~10 MB, and frees it) then stays under the peak
        // the tasks make later; loaded after the first screen it added 4 MB to the peak at
        // 50,000 processes.
        let exits = exited::Source::open(&host);
        let mut top = Top::with(
            opts,
            Source::Live(Box::new(host)),
            report.short(),
            report.backend == Backend::Bpf,
            mem_total_kib,
            pid_width,
        );
        match exits {
            Ok(s) => top.exits = Some(s),
            Err(why) => top.exits_unavailable = Some(why),
        }
        Ok(top)
    }

    /// A view over the recording `replay` (`--replay DIR`): no /proc, no BPF.
    pub fn replay(opts: Options, replay: replay::Replay) -> Top {
        let mem_total_kib = replay.mem_total_kib();
        let pid_width = replay.pid_width();
        let backend = format!("{} recorded", replay.host().report().short());
        let mut top = Top::with(
            opts,
            Source::Replay(Box::new(replay)),
            backend,
            false,
            mem_total_kib,
            pid_width,
        );
        // Nothing to load, nothing to drop.
        top.caps_dropped = true;
        top
    }

    /// Moves a replay one sample on (`forward`) or back; says why not (at an end, not a
    /// replay, a damaged sample).
    pub fn step(&mut self, forward: bool) -> Result<(), String> {
        match &mut self.source {
            Source::Replay(r) => r.step(forward),
            Source::Live(_) => Err("not a replay".into()),
        }
    }

    /// Moves a replay to the sample in force at `t` (ns since the epoch).
    pub fn jump(&mut self, t: u64) -> Result<(), String> {
        match &mut self.source {
            Source::Replay(r) => r.jump(t),
            Source::Live(_) => Err("not a replay".into()),
        }
    }

    /// Whether this is a replay.
    pub fn is_replay(&self) -> bool {
        matches!(self.source, Source::Replay(_))
    }

    fn with(
        opts: Options,
        source: Source,
        backend_short: String,
        bpf: bool,
        mem_total_kib: u64,
        pid_width: usize,
    ) -> Top {
        Top {
            opts,
            source,
            backend_short,
            bpf,
            tracker: view::Tracker::default(),
            system: system::SystemReader::default(),
            names: Names::default(),
            cmdlines: HashMap::new(),
            cmdline_retry: HashMap::new(),
            locale: Locale::from_env(),
            rows_error: None,
            mem_total_kib,
            waits: None,
            waits_unavailable: None,
            waits_by_id: HashMap::new(),
            visible_pids: Vec::new(),
            refreshes: 0,
            changed: None,
            spare_lines: Vec::new(),
            caps_dropped: false,
            exits: None,
            exits_unavailable: None,
            interval: None,
            exited_rows: Vec::new(),
            hidden_zombies: Vec::new(),
            cgroup_view: Default::default(),
            own_cpu_ns: system::own_cpu_ns(),
            own_at: Instant::now(),
            pid_width,
        }
    }

    fn user_name(&mut self, uid: u32) -> String {
        match self.names.user(uid) {
            Some(n) => String::from_utf8_lossy(n).into_owned(),
            None => uid.to_string(),
        }
    }

    /// Hands back a frame no longer shown: the next refresh fills its rows' memory instead
    /// of faulting in ~10 MB afresh at 50,000 tasks.
    pub fn recycle_frame(&mut self, frame: Frame) {
        let mut lines = frame.lines;
        lines.clear();
        self.spare_lines = lines;
    }

    /// Takes a snapshot and computes the frame.
    pub fn refresh(&mut self, clock: &str) -> anyhow::Result<Frame> {
        let started = Instant::now();
        let groups = self.groups();
        let selectors: Vec<Selector> = if self.opts.pids.is_empty() {
            vec![Selector::AllThreads]
        } else {
            self.opts
                .pids
                .iter()
                .map(|&p| Selector::ThreadsOf(p))
                .collect()
        };
        let pids = self.opts.pids.clone();
        let wanted = |tgid: i32| pids.is_empty() || pids.contains(&tgid);
        let mut lines = if self.is_replay() {
            self.replayed_rows(&selectors, &wanted)
        } else {
            // Exits first, against the counters of the previous refresh: a process that
            // exits after this drain is a live row of this refresh (or a zombie) and an exit
            // of the next, never neither.
            self.drain_exits(&wanted);
            if selectors == [Selector::AllThreads] {
                self.changed_rows(groups)?
            } else {
                self.selected_rows(selectors, groups)?
            }
        };
        self.filter(&mut lines);
        self.add_waits();
        if !self.caps_dropped && (self.refreshes >= 2 || self.opts.batch) {
            // What makes later refreshes cheap (the BPF walk and its memory) is loaded now,
            // after the first screen, while the privileges to load it are still there.
            if let Source::Live(host) = &mut self.source {
                host.prepare_live(&groups);
                // The BPF parts are loaded (or will not be): what loading needed goes.
                let _ = host.drop_loading_privileges();
            }
            self.caps_dropped = true;
        }
        let counts = view::count_states(&lines);
        let mut exited_rows = self
            .interval
            .as_mut()
            .map(|i| std::mem::take(&mut i.rows))
            .unwrap_or_default();
        self.filter(&mut exited_rows);
        self.exited_rows = exited_rows;
        self.hidden_zombies.clear();
        if self.opts.show_exited {
            self.add_exited(&mut lines);
        }
        self.order(&mut lines);
        let header = self.header(started, &counts, clock);
        let cgroups = self.cgroup_lines();
        Ok(Frame {
            header,
            lines,
            cgroups,
        })
    }

    /// The cgroup view's rows when it is on (its last reading dropped when it is off, so that
    /// turning it on again starts a fresh interval).
    fn cgroup_lines(&mut self) -> Option<Vec<cgroup_view::Row>> {
        if !self.opts.cgroups {
            self.cgroup_view = Default::default();
            return None;
        }
        Some(match &self.source {
            Source::Live(host) => {
                let listing = host.cgroups(cgroup_view::DEPTH);
                self.cgroup_view.rows(listing, Instant::now(), self.locale)
            }
            Source::Replay(_) => vec![cgroup_view::Row {
                text: "(a recording holds no cgroups: `tasksnap cgroups` reads the host's)".into(),
                filter: String::new(),
            }],
        })
    }

    /// The groups a refresh reads of every task.
    fn groups(&self) -> Groups {
        let cgroup_filter = self
            .opts
            .other_filter
            .as_ref()
            .is_some_and(arrange::Filter::needs_cgroup);
        // A CGROUP filter needs every task's cgroups, each refresh: the BPF backend then
        // takes whole passes and reads /proc/PID/cgroup for every task (the price of the
        // filter, paid only while it is on).
        Groups::of(&[Group::Base, Group::CredEffective, Group::Stat, Group::Sched])
            .flag(Group::Cgroup, cgroup_filter)
    }

    /// A replay's rows: the sample shown against the one before it, through a tracker of
    /// their own (a step may go either way, or jump), with the exits recorded with it.
    fn replayed_rows(&mut self, selectors: &[Selector], wanted: &dyn Fn(i32) -> bool) -> Vec<Row> {
        let Source::Replay(r) = &self.source else {
            unreachable!("replayed_rows is called for a replay")
        };
        self.tracker = view::Tracker::default();
        self.mem_total_kib = r.mem_total_kib();
        if let Some(prev) = r.prev() {
            let snap = replay::Replay::snapshot(prev, selectors, self.opts.threads);
            self.tracker
                .update(&snap, self.opts.threads, self.mem_total_kib);
        }
        // The exits recorded with this sample, against the counters of the one before.
        self.interval = exited::Interval::of_reading(r.reading(), r.prev(), &self.tracker, wanted);
        let snap = replay::Replay::snapshot(r.reading(), selectors, self.opts.threads);
        self.changed = None;
        self.tracker
            .update(&snap, self.opts.threads, self.mem_total_kib)
    }

    /// The exits since the last refresh, into `self.interval`; an exit source that fails is
    /// dropped, with why.
    fn drain_exits(&mut self, wanted: &dyn Fn(i32) -> bool) {
        self.interval = match self.exits.as_mut().map(|s| s.drain(&self.tracker, wanted)) {
            None => None,
            Some(Ok(i)) => Some(i),
            Some(Err(why)) => {
                self.exits = None;
                self.exits_unavailable = Some(why);
                None
            }
        };
    }

    /// Every task of the host: only what changed since the last refresh comes back (with
    /// the BPF walk; other backends give everything every time).
    fn changed_rows(&mut self, groups: Groups) -> anyhow::Result<Vec<Row>> {
        let Source::Live(host) = &mut self.source else {
            unreachable!("changed_rows is called for the host")
        };
        let mut q = Query::new(Selector::AllThreads, groups);
        // The leader's row carries the whole process's times in the process view.
        q.leader_as_process = !self.opts.threads;
        // A whole pass is fed straight into the tracker, task by task, after it drops
        // its rows: at 50,000 tasks neither a vector of every task nor the old rows
        // are in memory next to the pass.
        let full = host.next_changes_full(&q);
        let now_ns = system::boottime_ns();
        let mut feed = self
            .tracker
            .begin(now_ns, full, self.opts.threads, self.mem_total_kib);
        let tracker = &mut self.tracker;
        let summary = host.changes_into(&q, &mut |t| tracker.push(&mut feed, &t))?;
        self.changed = (!summary.full).then_some(summary.tasks);
        let mut lines = std::mem::take(&mut self.spare_lines);
        self.tracker
            .finish(feed, summary.full, &summary.gone, &mut lines);
        Ok(lines)
    }

    /// The host's tasks of `selectors` (`-p`), one whole snapshot each.
    fn selected_rows(
        &mut self,
        selectors: Vec<Selector>,
        groups: Groups,
    ) -> anyhow::Result<Vec<Row>> {
        let Source::Live(host) = &mut self.source else {
            unreachable!("selected_rows is called for the host")
        };
        let mut snap: Option<tasksnap_model::Snapshot> = None;
        for sel in selectors {
            let mut q = Query::new(sel, groups);
            q.leader_as_process = !self.opts.threads;
            let s = host.snapshot(&q)?;
            match &mut snap {
                None => snap = Some(s),
                Some(all) => all.tasks.extend(s.tasks),
            }
        }
        let snap = snap.ok_or_else(|| anyhow::anyhow!("no snapshot"))?;
        let lines = self
            .tracker
            .update(&snap, self.opts.threads, self.mem_total_kib);
        host.recycle(snap.tasks);
        Ok(lines)
    }

    /// The frame's header: the machine's figures, the counts, tasksnap's own cost since the
    /// last refresh (which started at `started`), the interval's exits; a replay's clock is
    /// its sample's, and it ends with the sample's marker.
    fn header(&mut self, started: Instant, counts: &view::StateCounts, clock: &str) -> Vec<String> {
        let sys = match &self.source {
            Source::Replay(r) => r.system(),
            Source::Live(host) => self.system.read(host),
        };
        let now_cpu = system::own_cpu_ns();
        let wall = self.own_at.elapsed().as_nanos().max(1) as f64;
        let own = render::OwnCost {
            cpu_pct: now_cpu.saturating_sub(self.own_cpu_ns) as f64 * 100.0 / wall,
            refresh_ms: started.elapsed().as_secs_f64() * 1e3,
            backend: {
                let changed = match self.changed {
                    Some(n) => format!(" ({n} changed)"),
                    None => String::new(),
                };
                let shown = counts.total;
                match &self.waits_unavailable {
                    Some(why) => format!("{}, {shown} tasks{changed}; {why}", self.backend_short),
                    None => format!("{}, {shown} tasks{changed}", self.backend_short),
                }
            },
        };
        self.own_cpu_ns = now_cpu;
        self.own_at = Instant::now();
        let mut header = match &self.source {
            Source::Replay(r) => render::header(&sys, counts, self.opts.threads, &own, &r.clock()),
            Source::Live(_) => render::header(&sys, counts, self.opts.threads, &own, clock),
        };
        if let Some(i) = &self.interval {
            // After the counts of the "Tasks:" line, as atop's PRC line has `#exit`.
            if let Some(tasks) = header.get_mut(1) {
                tasks.push_str(&i.header_note(&self.exited_rows));
            }
        }
        if let Source::Replay(r) = &self.source {
            // tasksnap's CPU share means nothing when frames come as fast as they are made.
            if let Some(own_line) = header.last_mut() {
                *own_line = format!(
                    "tasksnap: {:.1} ms per frame, {}",
                    own.refresh_ms, own.backend
                );
            }
            header.push(r.marker());
        }
        header
    }

    /// Puts the interval's exits in `lines` (the exited view), instead of the zombie rows
    /// of the same processes.
    fn add_exited(&mut self, lines: &mut Vec<Row>) {
        if let Some(i) = &self.interval {
            if !i.ids.is_empty() {
                let hidden = &mut self.hidden_zombies;
                lines.retain(|l| {
                    let zombie = l.exit.is_none() && i.ids.contains(&l.id);
                    if zombie {
                        hidden.push(l.clone());
                    }
                    !zombie
                });
            }
        }
        lines.extend(self.exited_rows.iter().cloned());
    }

    /// Makes `frame` follow the exited view as `opts.show_exited` now says (the `e` key),
    /// without a refresh: the rows of the interval on screen come or go, and the frame is
    /// ordered again.
    pub fn exited_view_changed(&mut self, frame: &mut Frame) {
        frame.lines.retain(|l| l.exit.is_none());
        frame.lines.append(&mut self.hidden_zombies);
        if self.opts.show_exited {
            self.add_exited(&mut frame.lines);
        }
        self.order(&mut frame.lines);
    }

    /// Why no process that exited can be shown, if none can: no exit source (not root, no
    /// BPF; or not loaded yet), or a recording that did not keep them.
    pub fn exits_missing(&self) -> Option<String> {
        match &self.source {
            Source::Replay(r) => r
                .reading()
                .exits_missing
                .as_ref()
                .map(|why| format!("this sample has none: {why}")),
            Source::Live(_) if self.exits.is_some() => None,
            Source::Live(_) => Some(
                self.exits_unavailable
                    .clone()
                    .unwrap_or_else(|| "the exit records are not loaded yet".into()),
            ),
        }
    }

    /// DISK% and wait reasons for the processes on screen (every process in batch mode).
    /// The accounting is loaded at the second refresh, so that loading it (a pass over every
    /// task to seed it) does not delay the first screen.
    fn add_waits(&mut self) {
        self.refreshes += 1;
        if let Source::Replay(r) = &self.source {
            // The recorded thread-state totals of the two samples, when it kept them.
            let states = r
                .prev()
                .and_then(|p| p.states.as_ref())
                .zip(r.reading().states.as_ref());
            match states {
                Some((prev, cur)) => {
                    self.waits_unavailable = None;
                    self.waits_by_id =
                        waits::between_samples(prev, cur, self.opts.threads, |_| true);
                }
                None => {
                    self.waits_by_id.clear();
                    self.waits_unavailable = Some(if r.prev().is_none() {
                        "no DISK%: no sample before this one".into()
                    } else {
                        "no DISK%: the recording has no thread states".into()
                    });
                }
            }
            return;
        }
        if self.waits_unavailable.is_some() {
            return;
        }
        if self.opts.cgroups {
            // No task rows on screen: no waits to sample (an empty list would mean every
            // thread of the host, ~100 ms a refresh at 50,000 processes).
            self.waits_by_id.clear();
            if let Some(w) = self.waits.as_mut() {
                w.forget();
            }
            return;
        }
        if self.waits.is_none() {
            if self.refreshes < 2 && !self.opts.batch {
                return;
            }
            if !self.bpf {
                self.waits_unavailable =
                    Some("DISK% needs the BPF accounting (root with BPF)".into());
                return;
            }
            let Source::Live(host) = &self.source else {
                return;
            };
            match waits::Waits::load(host) {
                Ok(w) => self.waits = Some(w),
                Err(why) => {
                    self.waits_unavailable = Some(format!("no DISK%: {why}"));
                    return;
                }
            }
        }
        let Some(w) = self.waits.as_mut() else {
            return;
        };
        // Batch mode prints every row; a screen shows the rows on it (none: nobody).
        let which = if self.opts.batch {
            Watched::Every
        } else {
            Watched::Only(&self.visible_pids)
        };
        // Put on the rows when they are drawn ([`Top::rows`]): a loop over every row here
        // touched 50,000 rows' memory for the few dozen on screen.
        self.waits_by_id = w.update(which, self.opts.threads);
    }

    /// Sorts `lines` by the current key, as a forest when the tree view is on.
    pub fn order(&mut self, lines: &mut Vec<Row>) {
        let names = &mut self.names;
        let mut user_of = |uid: u32| match names.user(uid) {
            Some(n) => String::from_utf8_lossy(n).into_owned(),
            None => uid.to_string(),
        };
        arrange::sort(lines, self.opts.sort, self.opts.ascending, &mut user_of);
        if self.opts.tree {
            *lines = view::forest(std::mem::take(lines));
        }
    }

    fn filter(&mut self, lines: &mut Vec<Row>) {
        let want_uid = self.opts.user;
        let name = self.opts.name_filter.clone();
        let other = self.opts.other_filter.clone();
        if want_uid.is_none() && name.is_none() && other.is_none() {
            return;
        }
        let mut users: HashMap<u32, String> = HashMap::new();
        lines.retain(|l| {
            if want_uid.is_some_and(|u| u != l.euid) {
                return false;
            }
            if let Some(n) = &name {
                if !String::from_utf8_lossy(&l.comm).contains(n.as_str()) {
                    return false;
                }
            }
            if let Some(f) = &other {
                let user = users
                    .entry(l.euid)
                    .or_insert_with(|| match self.names.user(l.euid) {
                        Some(n) => String::from_utf8_lossy(n).into_owned(),
                        None => l.euid.to_string(),
                    });
                if !f.keeps(l, user) {
                    return false;
                }
            }
            true
        });
    }

    /// The text of rows `range` of `frame`, reading what only shown rows need.
    pub fn rows(&mut self, frame: &mut Frame, range: std::ops::Range<usize>) -> Vec<String> {
        let end = range.end.min(frame.lines.len());
        let start = range.start.min(end);
        let mut out = Vec::with_capacity(end - start);
        if !self.opts.batch {
            self.visible_pids = frame.lines[start..end]
                .iter()
                .filter(|l| l.exit.is_none())
                .map(|l| l.id.tgid)
                .collect();
            // Thread rows share their process: one iterator per process.
            self.visible_pids.sort_unstable();
            self.visible_pids.dedup();
        }
        let cgroups = self.read_row_extras(&mut frame.lines[start..end]);
        let layout = self.layout();
        for i in start..end {
            let l = &mut frame.lines[i];
            let key = if self.opts.threads {
                l.id.tid
            } else {
                l.id.tgid
            };
            if let Some(wait) = self.waits_by_id.get(&key).filter(|_| l.exit.is_none()) {
                if l.disk_pct != Some(wait.disk_pct)
                    || l.thr_pct != Some(wait.throttled_pct)
                    || l.reason != wait.reason
                {
                    let l = Row::make_mut(l);
                    l.disk_pct = Some(wait.disk_pct);
                    l.reason = wait.reason.clone();
                    // The run delay counts the time the quota held it back too: RUNQ% is
                    // the wait behind other threads, as in `states`.
                    let before = l.thr_pct.replace(wait.throttled_pct).unwrap_or(0.0);
                    l.runq_pct = l
                        .runq_pct
                        .map(|r| (r + before - wait.throttled_pct).max(0.0));
                }
            }
            let l = frame.lines[i].clone();
            let command = self.command(&l);
            let user = self.user_name(l.euid);
            let cells = columns::Cells {
                line: &l,
                user: &user,
                command: &command,
                cgroup: cgroups
                    .get(&(l.id.tgid, l.id.tid))
                    .map_or("-", String::as_str),
            };
            let mut row = String::with_capacity(ROW_BYTES + command.len());
            columns::write_row(&mut row, &cells, &layout);
            out.push(row);
        }
        out
    }

    /// The page for rows `scroll..scroll + room` of `frame` (reading what only shown rows
    /// need, with the collector's deadline).
    pub fn page(&mut self, frame: &mut Frame, scroll: usize, room: usize) -> Page {
        if let Some(lines) = &frame.cgroups {
            let scroll = scroll.min(lines.len().saturating_sub(1));
            return Page {
                header: frame.header.clone(),
                column_header: cgroup_view::header(),
                rows: lines
                    .iter()
                    .skip(scroll)
                    .take(room)
                    .map(|r| r.text.clone())
                    .collect(),
                ids: Vec::new(),
                cgroup_filters: lines
                    .iter()
                    .skip(scroll)
                    .take(room)
                    .map(|r| r.filter.clone())
                    .collect(),
                total: lines.len(),
                scroll,
                rows_error: None,
            };
        }
        let scroll = scroll.min(frame.lines.len().saturating_sub(1));
        let rows = self.rows(frame, scroll..scroll + room);
        let ids = frame
            .lines
            .iter()
            .skip(scroll)
            .take(rows.len())
            .map(|l| l.id.tid)
            .collect();
        Page {
            header: frame.header.clone(),
            column_header: self.column_header(),
            rows,
            ids,
            total: frame.lines.len(),
            scroll,
            rows_error: self.rows_error.clone(),
            cgroup_filters: Vec::new(),
        }
    }

    /// Whether row `l` needs its command line read.
    fn wants_cmdline(&self, l: &Line, now: Instant) -> bool {
        let key = (l.id.tgid, l.id.start_time_ns);
        self.opts.full_command
            && l.exit.is_none()
            && !l.kthread
            && !self.cmdlines.contains_key(&key)
            && self.cmdline_retry.get(&key).is_none_or(|&t| now >= t)
    }

    /// Reads what rows `lines` need and the snapshot did not carry, in one pass through the
    /// collector: shared memory (statm) and, with `-c`, command lines not cached yet. A
    /// command line whose read blocks on the target's mmap lock past the collector's
    /// deadline is left out (the row shows `[comm]`) and tried again a few seconds later,
    /// so neither a refresh nor the screen waits on another process's lock.
    ///
    /// With the CGROUP column on (`g`), the same pass reads every row's cgroups (a process
    /// may move to another cgroup, so they are read each time the rows are drawn) and
    /// returns them as the column shows them, by (tgid, tid).
    fn read_row_extras(&mut self, lines: &mut [Row]) -> HashMap<(i32, i32), String> {
        let now = Instant::now();
        let want_cgroup = self.opts.show_cgroup;
        let mut ids: Vec<(i32, i32)> = Vec::new();
        let mut want_cmdline = false;
        for l in lines.iter().filter(|l| l.exit.is_none()) {
            let cmd = self.wants_cmdline(l, now);
            if l.shr_kib.is_none() || cmd || want_cgroup {
                ids.push((l.id.tgid, l.id.tid));
                want_cmdline |= cmd;
            }
        }
        if ids.is_empty() {
            return HashMap::new();
        }
        let groups = Groups::of(&[Group::Mem])
            .flag(Group::Cmdline, want_cmdline)
            .flag(Group::Cgroup, want_cgroup);
        let filled = match &self.source {
            Source::Live(host) => host.fill(&ids, groups),
            Source::Replay(r) => r.host().fill(&ids, groups),
        };
        let read = match filled {
            Ok((read, _stats)) => {
                self.rows_error = None;
                read
            }
            Err(e) => {
                // Shown, never passed off as data: the rows say `[comm]` and the header
                // says why; the next refresh tries again.
                self.rows_error = Some(e.to_string());
                Default::default()
            }
        };
        if self.cmdlines.len() > 100_000 {
            self.cmdlines.clear();
        }
        self.cmdline_retry.retain(|_, t| *t > now);
        let mut cgroups = HashMap::new();
        for l in lines.iter_mut().filter(|l| l.exit.is_none()) {
            let task = read.get(&(l.id.tgid, l.id.tid));
            if let Some(raw) = task.filter(|_| want_cgroup).map(|t| t.cgroup.as_deref()) {
                let text = text::cgroup_text(raw);
                cgroups.insert((l.id.tgid, l.id.tid), terminal_text(&text, self.locale));
            }
            if l.shr_kib.is_none() {
                let shr = task
                    .and_then(|t| t.mem.as_ref())
                    .map_or(0, |m| m.shared_bytes / 1024);
                Row::make_mut(l).shr_kib = Some(shr);
            }
            if !want_cmdline || !self.wants_cmdline(l, now) {
                continue;
            }
            let key = (l.id.tgid, l.id.start_time_ns);
            match task {
                Some(t) if t.cmdline_timed_out => {
                    self.cmdline_retry.insert(key, now + CMDLINE_RETRY);
                }
                // Gone since the refresh: nothing to cache.
                None => {}
                Some(t) => {
                    let raw = t.cmdline.as_deref().unwrap_or_default();
                    let c = command_text(raw, &l.comm, l.state == b'Z', self.locale);
                    self.cmdlines.insert(key, c);
                }
            }
        }
        cgroups
    }

    fn command(&mut self, l: &Line) -> String {
        let comm = escaped(&l.comm, self.locale);
        if let Some(x) = &l.exit {
            // Marked as atop marks a process that exited: `<name>`, `<command line>`.
            let text = if self.opts.full_command && !x.cmdline.iter().all(|&b| b == 0) {
                command_text(&x.cmdline, &l.comm, false, self.locale)
            } else {
                comm
            };
            return format!("<{text}>");
        }
        if !self.opts.full_command {
            return comm;
        }
        if l.kthread {
            return format!("[{comm}]");
        }
        let key = (l.id.tgid, l.id.start_time_ns);
        match self.cmdlines.get(&key) {
            Some(c) => c.clone(),
            None => command_text(b"", &l.comm, l.state == b'Z', self.locale),
        }
    }

    /// Why the rows last drawn lack command lines and shared memory, if they do.
    pub fn rows_error(&self) -> Option<&str> {
        self.rows_error.as_deref()
    }

    pub fn column_header(&self) -> String {
        columns::header(&self.layout())
    }

    /// Which columns the options show, and the pid column's width.
    fn layout(&self) -> columns::Layout {
        columns::Layout {
            pid_width: self.pid_width,
            exited: self.opts.show_exited,
            cgroup: self.opts.show_cgroup,
            wait: self.opts.show_wait,
            tree: self.opts.tree,
        }
    }
}

/// Room for a row's columns before its command (its text is allocated once, at this plus
/// the command's length).
const ROW_BYTES: usize = 128;

/// How long a task whose command line could not be read in time shows `[comm]` before the
/// next try.
const CMDLINE_RETRY: Duration = Duration::from_secs(5);

/// The comm after procps's library escape for the locale (bytes, ready for [`terminal_text`]).
fn escaped_comm(bytes: &[u8], loc: Locale) -> Vec<u8> {
    let mut v = bytes.to_vec();
    if let Some(end) = v.iter().position(|&b| b == 0) {
        v.truncate(end);
    }
    text::library_escape(&mut v, loc);
    v
}

/// A name as ps shows it (control characters and, in a UTF-8 locale, broken sequences as `?`).
fn escaped(bytes: &[u8], loc: Locale) -> String {
    terminal_text(&escaped_comm(bytes, loc), loc)
}

/// The COMMAND text with `-c`, as ps's `args` shows it ([`text::command_or_name`]).
fn command_text(raw: &[u8], comm: &[u8], zombie: bool, loc: Locale) -> String {
    let bytes = text::command_or_name(Some(raw), escaped_comm(comm, loc), zombie, loc);
    terminal_text(&bytes, loc)
}

/// The wall clock as top prints it.
pub fn clock() -> String {
    tasksnap_sys::local_clock()
}

#[cfg(test)]
mod tests {
    use crate::top::replay::tests::{record, SEC, T0};
    use crate::top::replay::Replay;
    use crate::top::session::*;

    /// A hostile process name or command line never puts a control character or a broken
    /// UTF-8 sequence on the terminal; both show as ps shows them.
    #[test]
    fn top_shows_names_and_command_lines_as_ps_does() {
        let utf8 = Locale { utf8: true };
        assert_eq!(escaped(b"a\x1b[2Jb\nc", utf8), "a?[2Jb?c");
        // Invalid UTF-8: `?` from there on, as procps (not U+FFFD).
        assert_eq!(escaped(b"ok\xff\xfe", utf8), "ok??");
        assert_eq!(
            command_text(b"sleep\x0010\0", b"sleep", false, utf8),
            "sleep 10"
        );
        // An empty argv (wiped, or a process that never had one): `[comm]`, never blank.
        assert_eq!(command_text(b"", b"worker", false, utf8), "[worker]");
        assert_eq!(
            command_text(b"", b"worker", true, utf8),
            "[worker] <defunct>"
        );
        assert_eq!(command_text(b"\0\0", b"worker", false, utf8), "?");
        assert_eq!(command_text(b"x\xc3(", b"x", false, utf8), "x?(");
    }

    /// A replay's frame, whose marker (the header's last line) names `sample`.
    fn refresh_on(top: &mut Top, sample: &str) -> Frame {
        let frame = top.refresh("unused").expect("frame");
        assert!(frame.header.last().is_some_and(|m| m.contains(sample)));
        frame
    }

    /// A replay stands on a sample and steps through the recording: rates from the sample
    /// before, refusals at both ends, jumps to the sample in force, errors that say why.
    #[test]
    fn a_replay_steps_through_its_recording() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = dir.path().join("rec");
        record(&store, 4);
        let opts = Options {
            batch: true,
            ..Default::default()
        };
        let rp = Replay::open(&store, None).expect("opens");
        assert_eq!(rp.index, 1, "starts on the first sample with rates");
        let mut top = Top::replay(opts, rp);
        let frame = top.refresh("unused").expect("frame");
        let row = frame.lines.iter().find(|l| l.id.tgid == 100).expect("row");
        assert!((row.cpu_pct - 75.0).abs() < 0.01, "{}", row.cpu_pct);
        assert!(
            frame.header[0].starts_with("top - 03:00:01 up 16 min"),
            "{:?}",
            frame.header
        );
        let marker = frame.header.last().expect("marker");
        assert!(
            marker.contains("sample 2/4 at 2025-11-23T03:00:01.000Z"),
            "{marker}"
        );

        top.step(true).expect("to 3");
        top.step(true).expect("to 4");
        let end = top.step(true).expect_err("past the end");
        assert!(end.contains("last sample (4/4)"), "{end}");
        top.jump(T0).expect("to the first");
        let frame = refresh_on(&mut top, "sample 1/4");
        assert_eq!(
            frame.lines[0].cpu_pct, 0.0,
            "no sample before the first: no rates"
        );
        let start = top.step(false).expect_err("before the start");
        assert!(start.contains("first sample"), "{start}");
        top.jump(T0 + 2 * SEC + SEC / 2).expect("in force at 2.5 s");
        let frame = refresh_on(&mut top, "sample 3/4");
        assert!((frame.lines[0].cpu_pct - 75.0).abs() < 0.01);
        assert!(top.jump(T0 + 10 * SEC).is_err());
        top.step(false).expect("back to 2");
        refresh_on(&mut top, "sample 2/4");

        // Where it cannot start: one line each.
        let at = Replay::open(&store, Some(T0 - 1)).expect_err("before the start");
        assert!(at.contains("outside the recording"), "{at}");
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).expect("mkdir");
        assert!(Replay::open(&empty, None).is_err());
        assert!(Replay::open(&dir.path().join("none"), None).is_err());
    }
}
