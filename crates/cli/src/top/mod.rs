//! `tasksnap top`: a live view that stays light at 100,000 tasks.
//!
//! Each refresh takes one snapshot of every thread (base, effective credentials, CPU times
//! and scheduler counters: with the BPF backend that is one iterator pass, no /proc file per
//! task), turns it into rates against the previous one ([`view`]), and formats only the rows
//! that are shown ([`render`]): shared memory (statm) and command lines are read for those
//! rows only, command lines cached by task identity. The header adds the machine's figures
//! ([`system`]) and tasksnap's own CPU use and per-refresh cost. `-b` prints frames in
//! procps `top -b`'s layout ([`batch`]); otherwise a terminal UI runs ([`tui`]), with the
//! collection on a thread of its own ([`worker`]) that sends it ready pages, so that keys are
//! answered while a refresh or a slow read is under way. The processes that exited during the
//! interval (root: BPF, else taskstats; or a recording that kept them) are counted in the header and,
//! with the exited view on (`e`, `--exited`), listed as atop lists them ([`exited`]).

mod batch;
mod exited;
mod render;
mod replay;
mod system;
mod tui;
mod view;
mod waits;
mod worker;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use tasksnap_collect::Host;
use tasksnap_model::{Backend, Groups, Query, Selector};

use crate::ps::names::Names;
use crate::ps::text::{self, Locale};
use view::{Filter, Line, Row, SortKey};

/// Options from the command line (and changed by keys in the UI).
#[derive(Debug, Clone)]
pub struct Options {
    pub batch: bool,
    pub iterations: Option<u64>,
    pub delay: Duration,
    pub pids: Vec<i32>,
    /// Only this user's tasks (resolved once, when typed).
    pub user: Option<u32>,
    pub threads: bool,
    pub full_command: bool,
    pub tree: bool,
    pub sort: SortKey,
    pub ascending: bool,
    pub name_filter: Option<String>,
    pub other_filter: Option<Filter>,
    pub backend: Backend,
    pub width: Option<usize>,
    /// Show each process's top wait reason after its command.
    pub show_wait: bool,
    /// Show a CGROUP column (as `ps -o cgroup`) before the command.
    pub show_cgroup: bool,
    /// `--replay DIR`: show this recording instead of the host.
    pub replay: Option<PathBuf>,
    /// `--at TIME` (ns since the epoch): the sample a replay starts on.
    pub at: Option<u64>,
    /// The exited view (`e`, `--exited`): the processes that exited during the interval
    /// are rows too, `<name>`, with an EXIT column.
    pub show_exited: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            batch: false,
            iterations: None,
            delay: Duration::from_secs(3),
            pids: Vec::new(),
            user: None,
            threads: false,
            full_command: false,
            tree: false,
            sort: SortKey::Cpu,
            ascending: false,
            name_filter: None,
            other_filter: None,
            backend: Backend::Auto,
            width: None,
            show_wait: false,
            show_cgroup: false,
            replay: None,
            at: None,
            show_exited: false,
        }
    }
}

const USAGE: &str = "\
usage: tasksnap top [-b] [-n COUNT] [-d SECONDS] [-p PID[,PID...]] [-u USER] [-H] [-c]
                    [-o FIELD] [-w COLUMNS] [--backend auto|bpf|procfs] [--exited]
       tasksnap top [-b] --replay DIR [--at TIME] [-n COUNT] [other options as above]
  -b   batch mode: print frames in procps top -b's layout
  -n   stop after COUNT frames        -d   seconds between frames (default 3)
  -p   only these processes           -u   only this user (name or uid)
  -H   one row per thread             -c   full command lines
  -o   sort by PID, USER, %CPU, %MEM, TIME+, RUNQ% or COMMAND (prefix + or - for order)
  --exited       list the processes that exited during each interval too, as <name>
                 with an EXIT column (root, or a recording that kept them; the
                 e key in the live view)
  --replay DIR   show a recording (tasksnap record) instead of the host, one sample at a
                 time: t next, T previous, b jump to a time (-b: one sample per frame)
  --at TIME      the sample to start on (RFC 3339 UTC, epoch seconds, -10m; default: the
                 second, the first with rates)
Keys in the live view: h or ? for help.
";

/// The widest line batch mode prints (procps top's limit).
const MAX_WIDTH: usize = 512;

fn parse_args(argv: &[OsString]) -> Result<Options, String> {
    let mut o = Options::default();
    let args: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        // Values may be attached (-n5, -d0.5) or separate (-n 5).
        let mut value = |flag: &str| -> Result<String, String> {
            if a.len() > flag.len() {
                Ok(a[flag.len()..].to_string())
            } else {
                i += 1;
                args.get(i)
                    .cloned()
                    .ok_or_else(|| format!("option {flag} needs a value"))
            }
        };
        match a {
            "-b" => o.batch = true,
            "-H" => o.threads = true,
            "-c" => o.full_command = true,
            "--exited" => o.show_exited = true,
            "-h" | "--help" => return Err(String::new()),
            _ if a == "--replay" || a.starts_with("--replay=") => {
                let v = match a.strip_prefix("--replay=") {
                    Some(v) => v.to_string(),
                    None => value("--replay")?,
                };
                // `--replay -n 3` lost its directory (name one that starts with `-` as ./-x).
                if v.is_empty() || v.starts_with('-') {
                    return Err("--replay needs a recording's directory".into());
                }
                o.replay = Some(PathBuf::from(v));
            }
            _ if a == "--at" || a.starts_with("--at=") => {
                let v = match a.strip_prefix("--at=") {
                    Some(v) => v.to_string(),
                    None => value("--at")?,
                };
                o.at = Some(crate::when::parse_time(&v)?);
            }
            _ if a.starts_with("--backend") => {
                let v = match a.strip_prefix("--backend=") {
                    Some(v) => v.to_string(),
                    None => value("--backend")?,
                };
                o.backend = v
                    .parse()
                    .map_err(|e: tasksnap_model::UnknownBackend| e.to_string())?;
            }
            _ if a.starts_with("-n") => {
                let v = value("-n")?;
                o.iterations = Some(
                    v.parse::<u64>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| format!("bad iterations argument '{v}'"))?,
                );
            }
            _ if a.starts_with("-d") => {
                let v = value("-d")?;
                if v.trim_start().starts_with('-') {
                    return Err("-d requires positive argument".into());
                }
                // procps takes 0 and spins; tasksnap refreshes at most 10 times a second.
                o.delay = crate::input::parse_seconds(&v, 0.0)?.max(Duration::from_millis(100));
            }
            _ if a.starts_with("-p") => {
                let v = value("-p")?;
                for p in v.split(',') {
                    // procps: `-p 0` is top itself.
                    let pid = if p.trim() == "0" {
                        std::process::id() as i32
                    } else {
                        crate::input::Pid::parse(p)?.get()
                    };
                    o.pids.push(pid);
                }
            }
            _ if a.starts_with("-u") || a.starts_with("-U") => {
                let v = value("-u")?;
                o.user = Some(crate::input::uid_of(&v).ok_or("Invalid user")?);
            }
            _ if a.starts_with("-w") => {
                let v = value("-w")?;
                o.width = Some(
                    v.parse::<usize>()
                        .ok()
                        .filter(|w| (1..=MAX_WIDTH).contains(w))
                        .ok_or_else(|| {
                            format!("bad width arg '{v}', must > 0 and <= {MAX_WIDTH}")
                        })?,
                );
            }
            _ if a.starts_with("-o") => {
                let v = value("-o")?;
                o.sort = SortKey::parse(&v).ok_or_else(|| format!("unknown field '{v}'"))?;
                o.ascending = v.starts_with('-');
            }
            _ => return Err(format!("unknown option '{a}'")),
        }
        i += 1;
    }
    if o.at.is_some() && o.replay.is_none() {
        return Err("--at needs --replay DIR".into());
    }
    if o.batch && o.width.is_none() {
        // As procps top -b: lines as wide as $COLUMNS says (ignored when not a number in
        // 1..=512); without it tasksnap does not cut lines (procps cuts at 80).
        o.width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|w| (1..=MAX_WIDTH).contains(w));
    }
    Ok(o)
}

/// A frame ready to show: header lines and every row that passed the filters, in order.
pub struct Frame {
    pub header: Vec<String>,
    pub lines: Vec<Row>,
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
        let groups = Groups {
            base: true,
            cred_effective: true,
            stat: true,
            sched: true,
            // A CGROUP filter needs every task's cgroups, each refresh: the BPF backend then
            // takes whole passes and reads /proc/PID/cgroup for every task (the price of
            // the filter, paid only while it is on).
            cgroup: self
                .opts
                .other_filter
                .as_ref()
                .is_some_and(view::Filter::needs_cgroup),
            ..Groups::default()
        };
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
        let mut lines = if let Source::Replay(r) = &self.source {
            // The sample shown against the one before it, through a tracker of their own:
            // a step may go either way, or jump.
            self.tracker = view::Tracker::default();
            self.mem_total_kib = r.mem_total_kib();
            if let Some(prev) = r.prev() {
                let snap = replay::Replay::snapshot(prev, &selectors, self.opts.threads);
                self.tracker
                    .update(&snap, self.opts.threads, self.mem_total_kib);
            }
            // The exits recorded with this sample, against the counters of the one before.
            self.interval =
                exited::Interval::of_reading(r.reading(), r.prev(), &self.tracker, &wanted);
            let snap = replay::Replay::snapshot(r.reading(), &selectors, self.opts.threads);
            self.changed = None;
            self.tracker
                .update(&snap, self.opts.threads, self.mem_total_kib)
        } else if let Source::Live(host) = &mut self.source {
            // Exits first, against the counters of the previous refresh: a process that
            // exits after this drain is a live row of this refresh (or a zombie) and an exit
            // of the next, never neither.
            self.interval = match self.exits.as_mut().map(|s| s.drain(&self.tracker, &wanted)) {
                None => None,
                Some(Ok(i)) => Some(i),
                Some(Err(why)) => {
                    self.exits = None;
                    self.exits_unavailable = Some(why);
                    None
                }
            };
            if selectors == [Selector::AllThreads] {
                // Every task: only what changed since the last refresh comes back (with the
                // BPF walk; other backends give everything every time).
                let mut q = Query::new(Selector::AllThreads, groups);
                // The leader's row carries the whole process's times in the process view.
                q.leader_as_process = !self.opts.threads;
                // A whole pass is fed straight into the tracker, task by task, after it drops
                // its rows: at 50,000 tasks neither a vector of every task nor the old rows
                // are in memory next to the pass.
                let full = host.next_changes_full(&q);
                let now_ns = system::boottime_ns();
                let mut feed =
                    self.tracker
                        .begin(now_ns, full, self.opts.threads, self.mem_total_kib);
                let tracker = &mut self.tracker;
                let summary = host.changes_into(&q, &mut |t| tracker.push(&mut feed, &t))?;
                self.changed = (!summary.full).then_some(summary.tasks);
                let mut lines = std::mem::take(&mut self.spare_lines);
                self.tracker
                    .finish(feed, summary.full, &summary.gone, &mut lines);
                lines
            } else {
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
                lines
            }
        } else {
            unreachable!("a source is live or a replay")
        };
        self.filter(&mut lines);
        self.add_waits();
        if !self.caps_dropped && (self.refreshes >= 2 || self.opts.batch) {
            // What makes later refreshes cheap (the BPF walk and its memory) is loaded now,
            // after the first screen, while the privileges to load it are still there.
            if let Source::Live(host) = &mut self.source {
                host.prepare_live(&groups);
                // The BPF parts are loaded (or will not be): what loading needed goes.
                let _ = host.ready();
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
            Source::Replay(r) => render::header(&sys, &counts, self.opts.threads, &own, &r.clock()),
            Source::Live(_) => render::header(&sys, &counts, self.opts.threads, &own, clock),
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
        Ok(Frame { header, lines })
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
        let pids: Vec<i32> = if self.opts.batch {
            Vec::new()
        } else {
            self.visible_pids.clone()
        };
        let Some(w) = self.waits.as_mut() else {
            return;
        };
        // Put on the rows when they are drawn ([`Top::rows`]): a loop over every row here
        // touched 50,000 rows' memory for the few dozen on screen.
        self.waits_by_id = w.update(&pids, self.opts.threads);
    }

    /// Sorts `lines` by the current key, as a forest when the tree view is on.
    pub fn order(&mut self, lines: &mut Vec<Row>) {
        let names = &mut self.names;
        let mut user_of = |uid: u32| match names.user(uid) {
            Some(n) => String::from_utf8_lossy(n).into_owned(),
            None => uid.to_string(),
        };
        view::sort(lines, self.opts.sort, self.opts.ascending, &mut user_of);
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
        for i in start..end {
            let l = &mut frame.lines[i];
            let key = if self.opts.threads {
                l.id.tid
            } else {
                l.id.tgid
            };
            if let Some(wait) = self.waits_by_id.get(&key).filter(|_| l.exit.is_none()) {
                if l.disk_pct != Some(wait.disk_pct) || l.reason != wait.reason {
                    let l = Row::make_mut(l);
                    l.disk_pct = Some(wait.disk_pct);
                    l.reason = wait.reason.clone();
                }
            }
            let l = frame.lines[i].clone();
            let mut command = self.command(&l);
            if self.opts.show_wait {
                command = format!("{command}: {}", l.reason.as_deref().unwrap_or("-"));
            }
            if self.opts.show_cgroup {
                let cg = cgroups
                    .get(&(l.id.tgid, l.id.tid))
                    .map_or("-", String::as_str);
                command = format!("{cg:<w$.w$} {command}", w = render::CGROUP_WIDTH);
            }
            if self.opts.show_exited {
                command = format!(
                    "{:>w$} {command}",
                    exited::exit_text(&l),
                    w = exited::EXIT_WIDTH
                );
            }
            let user = self.user_name(l.euid);
            out.push(render::line(
                &l,
                self.pid_width,
                &user,
                &command,
                self.opts.tree,
            ));
        }
        out
    }

    /// The page for rows `scroll..scroll + room` of `frame` (reading what only shown rows
    /// need, with the collector's deadline).
    pub fn page(&mut self, frame: &mut Frame, scroll: usize, room: usize) -> Page {
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
        let groups = Groups {
            mem: true,
            cmdline: want_cmdline,
            cgroup: want_cgroup,
            ..Groups::default()
        };
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
        render::column_header(
            self.pid_width,
            self.opts.show_wait,
            self.opts.show_cgroup,
            self.opts.show_exited,
        )
    }
}

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

/// ps's output pass (what is not printable in the locale becomes `?`), so that what
/// reaches the terminal is always valid text.
fn terminal_text(v: &[u8], loc: Locale) -> String {
    let mut out: Vec<u8> = Vec::with_capacity(v.len());
    let mut room = usize::MAX;
    text::output_escape(&mut out, v, &mut room, loc);
    String::from_utf8_lossy(&out).into_owned()
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

/// Entry point for `tasksnap top ARGS...`.
pub fn main(argv: &[OsString]) -> ExitCode {
    let opts = match parse_args(argv) {
        Ok(o) => o,
        Err(e) if e.is_empty() => return crate::output::print(USAGE),
        Err(e) => {
            // procps top: the message, exit status 1.
            warn!("tasksnap top: {e}\n(tasksnap top -h for usage)");
            return ExitCode::from(1);
        }
    };
    if let Some(dir) = opts.replay.clone() {
        // Everything that can be wrong with the recording or the time is said here, before
        // the terminal is touched.
        let rp = match replay::Replay::open(&dir, opts.at) {
            Ok(r) => r,
            Err(e) => {
                warn!("tasksnap top: {e}");
                return ExitCode::from(1);
            }
        };
        let r = if opts.batch {
            batch::run(Top::replay(opts, rp))
        } else {
            tui::run(opts, Some(rp))
        };
        return crate::output::exit_code(r.map(|()| ExitCode::SUCCESS));
    }
    let r = if opts.batch {
        match Top::new(opts) {
            Ok(top) => batch::run(top),
            Err(e) => {
                warn!("tasksnap top: {e:#}");
                return ExitCode::from(1);
            }
        }
    } else {
        // The collector is made on the live view's collection thread (keys are answered
        // while it loads); a failure to start comes back from there.
        tui::run(opts, None)
    };
    crate::output::exit_code(r.map(|()| ExitCode::SUCCESS))
}

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(args: &[&str]) -> Result<Options, String> {
        let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        parse_args(&argv)
    }

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

    #[test]
    fn top_bad_arguments_are_errors() {
        for bad in [
            &["-n", "0"][..],
            &["-n", "-1"],
            &["-d", "-1"],
            &["-d", "1e20"],
            &["-d", "nan"],
            &["-p", ""],
            &["-p", "-1"],
            &["-p", "1,,2"],
            &["-u", "no-such-user-tasksnap"],
            &["-w", "0"],
            &["-w", "100000"],
            &["-x"],
            &["-n"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
        let o = parse(&["-b", "-n", "2", "-d", "0.5", "-p", "1,0", "-u", "root"]).expect("parses");
        assert_eq!(o.iterations, Some(2));
        assert_eq!(o.delay, Duration::from_millis(500));
        assert_eq!(o.pids, vec![1, std::process::id() as i32]);
        assert_eq!(o.user, Some(0));
    }

    #[test]
    fn top_replay_arguments() {
        let o = parse(&["-b", "--replay", "/r", "--at", "1763866800"]).expect("parses");
        assert_eq!(o.replay.as_deref(), Some(Path::new("/r")));
        assert_eq!(o.at, Some(1_763_866_800_000_000_000));
        let o = parse(&["--replay=/r", "--at=2025-11-23T03:00:00Z"]).expect("parses");
        assert_eq!(o.replay.as_deref(), Some(Path::new("/r")));
        assert_eq!(o.at, Some(1_763_866_800_000_000_000));
        for bad in [
            &["--at", "-10m"][..],
            &["--replay"],
            &["--replay="],
            &["--replay", "/r", "--at", "yesterday"],
            &["--replay", "/r", "--at"],
            &["--replay", "-n", "1"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
