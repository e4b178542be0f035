//! `tasksnap serve`: the Prometheus exporter. A collection thread takes a reading of the
//! host every interval through the sampler (tasksnap-collect, the recorder's loop: BPF kept
//! loaded, tasks read incrementally) and of its cgroups (`Host::cgroups`, down to
//! `--cgroup-depth`), aggregates them per group and per cgroup, and encodes both exposition
//! formats once (tasksnap-export); the HTTP side ([`http`]) answers every scrape with the
//! bytes of the last collection. A scrape therefore costs the same at 100 or 100,000 tasks,
//! many scrapers cost nothing more, and a slow collection delays no scrape. The sampler
//! drains the exit records with each reading, so the group counters include what processes
//! did up to their exit; without an exit source that is said once at start.
//!
//! Exit codes: 0 stopped by SIGINT, SIGTERM or SIGHUP; 1 it could not listen or collect;
//! 2 bad usage or a bad configuration file.

mod budget;
mod conns;
mod http;
mod shared;

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use tasksnap_collect::{Host, QueryService, ReadingOptions, Readings};
use tasksnap_export::encode::{Cost, Exposition};
use tasksnap_export::{Aggregator, Cgroups, Config, Grouping, Options};
use tasksnap_model::Backend;

use crate::when;
use shared::Shared;

/// The port `tasksnap serve` listens on unless told otherwise: outside the 9100-9999 range
/// the Prometheus project's list of exporter default ports allocates, so no exporter's
/// default collides with it ("TASK" on a phone keypad).
pub const DEFAULT_PORT: u16 = 8275;

/// Exposes per-group process and thread metrics (CPU, time by scheduler state, D-state wait
/// reasons, memory, I/O, faults, context switches, exits) and per-cgroup counters (CPU,
/// throttling, memory, I/O, pressure) to Prometheus, in OpenMetrics or the
/// Prometheus text format; as root (BPF, else taskstats), processes that exit between collections
/// count too.
///
/// Collects on its own timer and answers every scrape of /metrics from the last collection.
/// Listens on 127.0.0.1:8275 unless told otherwise. See docs/serve.md.
#[derive(Debug, Parser)]
#[command(name = "tasksnap serve")]
pub struct Args {
    /// Where to listen, ADDR:PORT (0.0.0.0:PORT or [::]:PORT for every interface).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8275", value_parser = parse_listen)]
    pub listen: SocketAddr,

    /// Seconds between collections.
    #[arg(short = 'i', long, value_name = "SECONDS", default_value = "15", value_parser = parse_interval)]
    pub interval: Duration,

    /// How processes are grouped.
    #[arg(long, value_enum, default_value_t = GroupBy::Comm, conflicts_with = "config")]
    pub group_by: GroupBy,

    /// A prometheus-process-exporter configuration (process_names: ...) to group by.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// With --config: a process no rule matches is not adopted by its ancestor's group.
    #[arg(long, requires = "config")]
    pub no_children: bool,

    /// Also expose the K processes that used the most CPU in the last interval, with pid and
    /// comm labels.
    #[arg(long, value_name = "K", default_value = "0", value_parser = clap::value_parser!(u64).range(0..=1000))]
    pub top_n: u64,

    /// At most N series: the least busy groups are folded into group="other" beyond it (0: no
    /// limit).
    #[arg(long, value_name = "N", default_value = "20000")]
    pub max_series: usize,

    /// Per-cgroup series (tasksnap_cgroup_*) for the cgroups down to depth N of each hierarchy
    /// (the root is 0; 0 turns them off). They take at most half of --max-series: beyond it the
    /// cgroups that used the least CPU are folded into cgroup="other".
    #[arg(long, value_name = "N", default_value = "3", value_parser = clap::value_parser!(u64).range(0..=64))]
    pub cgroup_depth: u64,

    /// D-state wait reasons named per group; the rest are reason="other".
    #[arg(long, value_name = "K", default_value = "5", value_parser = clap::value_parser!(u64).range(0..=100))]
    pub reasons: u64,

    /// Where tasks and thread states come from: bpf (root), procfs, or auto.
    #[arg(long, value_name = "auto|bpf|procfs", default_value = "auto")]
    pub backend: Backend,

    /// After each collection, print to stderr where its time went (sampler phases,
    /// aggregation, encoding) and its CPU time.
    #[arg(long)]
    pub timings: bool,

    /// Say nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,

    /// Where the query socket listens: users without privileges get their ps, top and
    /// Python passes from the loaded BPF programs through it, each shown exactly what its own
    /// /proc would show it (as root; see docs/service.md).
    #[arg(long, value_name = "PATH", default_value = QueryService::DEFAULT_SOCKET)]
    pub query_socket: PathBuf,

    /// No query socket: only the exporter.
    #[arg(long, conflicts_with = "no_metrics")]
    pub no_query_socket: bool,

    /// Only the query socket: no collections, no HTTP listener.
    #[arg(long)]
    pub no_metrics: bool,

    /// The most memory the query socket holds for its callers (passes alive, answers being
    /// sent), e.g. 256M or 1G: past it, new requests are told to read /proc themselves.
    #[arg(long, value_name = "BYTES", default_value = "256M", value_parser = parse_budget)]
    pub query_memory_budget: u64,
}

fn parse_budget(s: &str) -> Result<u64, String> {
    let b = when::parse_size(s)?;
    if b < QueryService::MIN_BUDGET_BYTES {
        return Err(format!(
            "{s} is less than the {} MiB a pass and a few answers need",
            QueryService::MIN_BUDGET_BYTES >> 20
        ));
    }
    Ok(b)
}

/// The groupings `--group-by` names (a configuration file is the other way to group).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupBy {
    /// The command name (comm).
    Comm,
    /// The effective user.
    User,
    /// The cgroup v2 path.
    Cgroup,
    /// The executable's path.
    Exe,
}

impl From<GroupBy> for Grouping {
    fn from(g: GroupBy) -> Grouping {
        match g {
            GroupBy::Comm => Grouping::Comm,
            GroupBy::User => Grouping::User,
            GroupBy::Cgroup => Grouping::Cgroup,
            GroupBy::Exe => Grouping::Exe,
        }
    }
}

fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    if s.starts_with(':') {
        return Err(format!(
            "{s:?} names no address: say 127.0.0.1{s} for this host only, or 0.0.0.0{s} for \
             every interface"
        ));
    }
    s.parse::<SocketAddr>()
        .map_err(|_| format!("{s:?} is not ADDR:PORT (e.g. 127.0.0.1:{DEFAULT_PORT})"))
}

fn parse_interval(s: &str) -> Result<Duration, String> {
    when::parse_duration_within(
        s,
        Duration::from_millis(100),
        Duration::from_secs(3600),
        "between 0.1 and 3600 seconds",
    )
}

/// `tasksnap serve ARGS`.
pub fn main(argv: &[OsString]) -> ExitCode {
    let args: Args = match crate::output::parse_args("tasksnap serve", argv) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let grouping = match &args.config {
        Some(path) => match Config::read(path) {
            Ok(config) => Grouping::Config {
                config,
                children: !args.no_children,
            },
            Err(e) => {
                warn!("tasksnap serve: {}: {e}", path.display());
                return ExitCode::from(2);
            }
        },
        None => args.group_by.into(),
    };
    run(&args, grouping)
}

/// The CPU clock of the calling thread, for [`collection_cpu_ns`] to leave out.
fn thread_cpu_clock() -> Option<libc::clockid_t> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: pthread_self is always valid for the calling thread; `clock` is writable.
    let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
    (rc == 0).then_some(clock)
}

/// CPU the exporter spent outside its HTTP thread: the collection thread and whatever
/// reader threads the sources run (the procfs backend's pool, the /proc state sampler).
/// Counted as the process's CPU less the HTTP thread's, so a scrape answered during a
/// collection is not charged to it and no source has to report its threads.
fn collection_cpu_ns(http: Option<libc::clockid_t>) -> u64 {
    let process = tasksnap_sys::clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID);
    process.saturating_sub(http.map_or(0, tasksnap_sys::clock_ns))
}

/// Makes the calling thread (the collection thread) 10 nice levels lower than the exporter,
/// so that a scrape arriving during a collection on a busy host is answered first: the
/// collection is background work with seconds to spare, a scrape has a timeout.
fn lower_priority() {
    // SAFETY: gettid has no preconditions; getpriority and setpriority on PRIO_PROCESS with
    // a thread id read and change that one thread's nice value (Linux keeps it per thread).
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        if now != -1 || *libc::__errno_location() == 0 {
            libc::setpriority(libc::PRIO_PROCESS, tid, (now + 10).min(19));
        }
    }
}

/// What the collection thread says once it has taken its first collection.
struct Started {
    tasks_why: String,
    states: String,
    states_why: String,
    /// The exit source, or why there is none.
    exits: Result<&'static str, String>,
    first_ms: f64,
}

/// What `serve` collects of the cgroups: how deep, and what is kept between collections.
struct CgroupOptions {
    /// The deepest level read (the root is 0); 0: no cgroup series.
    depth: usize,
    /// The most series they show (0: no limit).
    max_series: usize,
}

impl CgroupOptions {
    /// `--cgroup-depth`, and half of `--max-series` (0: no limit stays none).
    fn of(args: &Args) -> CgroupOptions {
        CgroupOptions {
            depth: args.cgroup_depth as usize,
            max_series: args.max_series.div_ceil(2),
        }
    }
}

/// The collection side: one sampler and one aggregator, kept for the exporter's life.
struct Collection {
    /// What reads the cgroups (the sampler's sources are opened from it too).
    host: Host,
    sampler: Readings,
    aggregator: Aggregator,
    /// The cgroups' series and how deep to read them (`None`: `--cgroup-depth 0`).
    cgroups: Option<(Cgroups, usize)>,
    cost: Cost,
    timings: bool,
    /// The HTTP thread's CPU clock (see [`collection_cpu_ns`]).
    http_clock: Option<libc::clockid_t>,
}

impl Collection {
    /// Opens the sources (loading BPF where allowed), then keeps only what reading /proc whatever
    /// its modes needs (not `top`'s kill and renice: [`Host::drop_privileges_but_reading`]).
    fn open(
        backend: Backend,
        opts: Options,
        cgroups: CgroupOptions,
        timings: bool,
        http_clock: Option<libc::clockid_t>,
    ) -> Result<Collection, String> {
        let mut host = Host::from_env();
        let sampler = host
            .open_readings(ReadingOptions {
                backend,
                exe: opts.grouping.needs_exe(),
                states_fds_left: budget::STATES_FDS_LEFT,
                exits: true,
                ..ReadingOptions::default()
            })
            .map_err(|e| e.to_string())?;
        if let (Err(e), Backend::Bpf) =
            (host.drop_privileges_but_reading(), sampler.report().backend)
        {
            warn!("tasksnap serve: could not drop capabilities: {e}");
        }
        let states = sampler.states_report().0.map_or("none", |b| b.name());
        Ok(Collection {
            cost: Cost {
                states_backend: states.to_string(),
                exits_source: sampler
                    .exits_source()
                    .map_or("none", |s| s.name())
                    .to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                ..Cost::default()
            },
            host,
            sampler,
            aggregator: Aggregator::new(opts),
            cgroups: (cgroups.depth > 0).then(|| (Cgroups::new(cgroups.max_series), cgroups.depth)),
            timings,
            http_clock,
        })
    }

    /// What the start line says of the sources, after the first collection.
    fn started(&self) -> Started {
        Started {
            tasks_why: self.sampler.report().why.clone(),
            states: self.cost.states_backend.clone(),
            states_why: self.sampler.states_report().1.to_string(),
            exits: self
                .sampler
                .exits_source()
                .map(|s| s.description())
                .ok_or_else(|| self.sampler.exits_missing().unwrap_or_default().to_string()),
            first_ms: self.cost.collect_seconds * 1e3,
        }
    }

    fn collect(&mut self, shared: &Shared) -> Result<Exposition, tasksnap_collect::Error> {
        self.cost.connections_evicted = shared.evicted.load(Ordering::Relaxed);
        let t0 = Instant::now();
        let c0 = collection_cpu_ns(self.http_clock);
        let reading = self.sampler.read_mut()?;
        let t1 = Instant::now();
        // The cgroups are read here, on the collection thread, so a scrape never waits on
        // cgroupfs; their series are counted against --max-series before the groups fold.
        let cgroups = self.cgroups.as_mut().map(|(cg, depth)| {
            cg.update(&self.host.cgroups(*depth));
            cg.shown()
        });
        let tc = Instant::now();
        if let Some(cg) = &cgroups {
            self.aggregator.show_beside(cg.series());
        }
        self.aggregator.update(reading);
        let t2 = Instant::now();
        let taken = reading.snapshot.taken_at_unix_ns;
        self.cost.collections += 1;
        self.cost.last_collection_unix_s = taken as f64 / 1e9;
        self.cost.tasks_backend = self.sampler.report().backend.name().to_string();
        // The cost shown is the last finished collection's: this one's encoding is part of
        // it, and its own figure cannot be in the bytes it is encoding.
        let exposition = tasksnap_export::expose(&self.aggregator.view(), cgroups, &self.cost);
        self.cost.collect_seconds = t0.elapsed().as_secs_f64();
        let cpu_ns = collection_cpu_ns(self.http_clock).saturating_sub(c0);
        self.cost.collect_cpu_seconds += cpu_ns as f64 / 1e9;
        if self.timings {
            let mut line = String::new();
            for (name, d) in self.sampler.phases() {
                line.push_str(&format!("{name} {:.1} ms, ", d.as_secs_f64() * 1e3));
            }
            warn!(
                "tasksnap serve: {line}cgroups {:.1} ms, aggregate {:.1} ms, encode {:.1} ms; {} \
                 series, {} B; CPU {:.1} ms",
                (tc - t1).as_secs_f64() * 1e3,
                (t2 - tc).as_secs_f64() * 1e3,
                t2.elapsed().as_secs_f64() * 1e3,
                exposition.series,
                exposition.openmetrics.len(),
                cpu_ns as f64 / 1e6
            );
            let mut held = self.sampler.footprint();
            for (part, bytes) in self.aggregator.footprint().parts() {
                held.add(part, bytes);
            }
            warn!(
                "tasksnap serve: held {:.1} MB: {}",
                held.total() as f64 / 1e6,
                held.line()
            );
        }
        Ok(exposition)
    }
}

/// Keeps a collection's large buffers (the thread-state pass, the maps of every thread) on
/// the heap between collections instead of returning them to the kernel and faulting them in
/// again: a tenth of a collection's CPU at 50,000 processes was page faults. The exporter
/// runs for weeks at a steady size, so the memory kept is what the next collection needs.
fn keep_heap() {
    // SAFETY: mallopt only changes allocator parameters; called before the threads start.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
    }
}

/// Starts the query socket; when it cannot, why (said after the start line: the exporter
/// goes on without it). Not on a fake /proc tree (a test's), which the BPF pass does not read.
fn start_queries(args: &Args) -> (Option<QueryService>, Option<String>) {
    if args.no_query_socket || !tasksnap_collect::HostOptions::from_env().is_this_kernel() {
        return (None, None);
    }
    match Host::serve_queries(&args.query_socket, args.query_memory_budget) {
        Ok(q) => (Some(q), None),
        Err(e) => (
            None,
            Some(format!(
                "tasksnap serve: no query socket at {}: {e}",
                args.query_socket.display()
            )),
        ),
    }
}

/// The stop line's account of the query socket.
fn queries_said(q: &Option<QueryService>) -> String {
    match q {
        Some(q) => {
            let c = q.counts();
            format!(
                "; queries: {} answered in {} passes, {} refused, {} turned away as busy ({})",
                c.answered.load(Ordering::Relaxed),
                c.passes.load(Ordering::Relaxed),
                c.refused.load(Ordering::Relaxed),
                c.busy.load(Ordering::Relaxed),
                q.limits_said()
            )
        }
        None => String::new(),
    }
}

/// `serve --no-metrics`: the query socket alone, until a stop signal.
fn run_queries_only(args: &Args, signals: &libc::sigset_t) -> ExitCode {
    let mut q = match Host::serve_queries(&args.query_socket, args.query_memory_budget) {
        Ok(q) => q,
        Err(e) => {
            warn!(
                "tasksnap serve: no query socket at {}: {e}",
                args.query_socket.display()
            );
            return ExitCode::from(1);
        }
    };
    let _ = Host::drop_all_privileges_of_this_thread();
    if !args.quiet {
        warn!(
            "tasksnap serve: answering queries at {} (tasks: {}); stop with Ctrl-C",
            q.path().display(),
            q.why
        );
    }
    while !crate::signals::wait(signals, Duration::from_secs(3600)) {}
    q.stop();
    if !args.quiet {
        warn!("tasksnap serve: stopped{}", queries_said(&Some(q)));
    }
    ExitCode::SUCCESS
}

fn run(args: &Args, grouping: Grouping) -> ExitCode {
    keep_heap();
    let nofile = budget::raise_nofile();
    let signals = crate::signals::stop_signals();
    crate::signals::block(&signals);
    if args.no_metrics {
        return run_queries_only(args, &signals);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            warn!("tasksnap serve: cannot start: {e}");
            return ExitCode::from(1);
        }
    };
    // Listen first: a port in use is said at once, before BPF is loaded.
    let listener = match runtime.block_on(async { http::listen(args.listen) }) {
        Ok(l) => l,
        Err(e) => {
            warn!("tasksnap serve: {e}");
            return ExitCode::from(1);
        }
    };
    // Before any thread drops its capabilities: its threads keep what they need.
    let (mut queries, queries_missing) = start_queries(args);
    let shared = Arc::new(Shared::new());
    let (collector, started) = match start_collecting(args, grouping, &shared) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // This thread serves HTTP: it needs no privilege at all beyond what it has bound.
    let _ = Host::drop_all_privileges_of_this_thread();
    // What is open now (the sources, the listener, the runtime) stays open: the rest of the
    // open-files limit is shared between connections and collections.
    let open = Host::open_descriptors().unwrap_or(64);
    let budget = budget::budget(nofile, open);
    let limited = if budget.connections < budget::MAX_CONNECTIONS {
        format!(
            "; at most {} connections at once (open-files limit {}, {} descriptors in use, {} \
             kept for collections)",
            budget.connections, budget.limit, open, budget.reserve
        )
    } else {
        String::new()
    };
    if !args.quiet {
        let at = listener.local_addr().map_or(args.listen, |a| a);
        say_started(args, at, &started, &queries, &queries_missing, &limited);
    } else if budget.connections < 8 {
        warn!("tasksnap serve: {}", limited.trim_start_matches("; "));
    }
    let stop = Arc::new(tokio::sync::Notify::new());
    if let Err(e) = watch_signals(signals, shared.clone(), stop.clone()) {
        warn!("tasksnap serve: cannot start the signal thread: {e}");
        return ExitCode::from(1);
    }
    let served = runtime.block_on(http::serve(listener, shared.clone(), stop, budget));
    shared.stop();
    if let Some(q) = &mut queries {
        q.stop();
    }
    let code = match collector.join() {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    };
    if !args.quiet {
        let e = shared.current();
        warn!(
            "tasksnap serve: stopped; {} scrapes answered; last exposition {} series, {:.1} \
             KB{}",
            served.scrapes,
            e.series,
            e.openmetrics.len() as f64 / 1e3,
            queries_said(&queries)
        );
    }
    code
}

/// Starts the collection thread and waits for its first collection. The sources live on
/// that thread (a state source stays on the thread that opened it): it opens them, drops
/// the capabilities it no longer needs, and takes the first collection before anything is
/// answered: until then there is nothing true to say (connections wait in the listen queue
/// meanwhile). On failure, said, the exit code.
fn start_collecting(
    args: &Args,
    grouping: Grouping,
    shared: &Arc<Shared>,
) -> Result<(std::thread::JoinHandle<()>, Started), ExitCode> {
    let (started_tx, started_rx) = std::sync::mpsc::channel::<Result<Started, String>>();
    let shared = shared.clone();
    let interval = args.interval;
    let opts = Options {
        grouping,
        top_n: args.top_n as usize,
        max_series: args.max_series,
        reasons_per_group: args.reasons as usize,
        ..Options::default()
    };
    let cgroups = CgroupOptions::of(args);
    let backend = args.backend;
    let timings = args.timings;
    // This thread answers HTTP once the collection thread has started.
    let http_clock = thread_cpu_clock();
    let collector = std::thread::Builder::new()
        .name("collect".into())
        .spawn(move || {
            lower_priority();
            let mut c = match Collection::open(backend, opts, cgroups, timings, http_clock) {
                Ok(c) => c,
                Err(e) => {
                    let _ = started_tx.send(Err(e));
                    return;
                }
            };
            match c.collect(&shared) {
                Ok(e) => shared.publish(e),
                Err(e) => {
                    let _ = started_tx.send(Err(e.to_string()));
                    return;
                }
            }
            let _ = started_tx.send(Ok(c.started()));
            collect_loop(&mut c, &shared, interval);
        });
    let collector = match collector {
        Ok(c) => c,
        Err(e) => {
            warn!("tasksnap serve: cannot start the collection thread: {e}");
            return Err(ExitCode::from(1));
        }
    };
    match started_rx.recv() {
        Ok(Ok(s)) => Ok((collector, s)),
        Ok(Err(e)) => {
            warn!("tasksnap serve: {e}");
            let _ = collector.join();
            Err(ExitCode::from(1))
        }
        Err(_) => {
            warn!("tasksnap serve: the collection thread ended before its first collection");
            Err(ExitCode::from(1))
        }
    }
}

/// The start line: where it listens, what it collects with, and what is missing.
fn say_started(
    args: &Args,
    at: SocketAddr,
    started: &Started,
    queries: &Option<QueryService>,
    queries_missing: &Option<String>,
    limited: &str,
) {
    let socket = match queries {
        Some(q) => format!(" and queries at {}", q.path().display()),
        None => String::new(),
    };
    warn!(
        "tasksnap serve: listening on http://{}/metrics{socket}, collecting every {} \
         (tasks: {}; thread states: {}, {}; exits: {}); first collection {:.0} ms{limited}; \
         stop with Ctrl-C",
        at,
        humantime::format_duration(args.interval),
        started.tasks_why,
        started.states,
        started.states_why,
        started.exits.as_deref().unwrap_or("none"),
        started.first_ms,
    );
    if let Some(why) = queries_missing {
        warn!("{why}");
    }
    // After the start line (which names the address); tasksnap_source_info says
    // exits="none" too, --quiet or not.
    if let Err(why) = &started.exits {
        warn!(
            "tasksnap serve: what a process does between the last collection and its exit \
             is not counted: no exit records ({why})"
        );
    }
}

/// A thread that waits for a stop signal, then stops the collections and the HTTP side.
fn watch_signals(
    signals: libc::sigset_t,
    shared: Arc<Shared>,
    stop: Arc<tokio::sync::Notify>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            if crate::signals::wait(&signals, Duration::from_secs(3600)) {
                shared.stop();
                stop.notify_one();
                return;
            }
        })
        .map(|_| ())
}

fn collect_loop(c: &mut Collection, shared: &Shared, interval: Duration) {
    let mut next = Instant::now() + interval;
    let mut failing = false;
    loop {
        if shared.sleep_until(next) {
            return;
        }
        // A failed collection leaves the last exposition up (its timestamp says how old it
        // is) and is tried again at the next tick; the message is said once per run of
        // failures.
        match c.collect(shared) {
            Ok(e) => {
                shared.publish(e);
                if failing {
                    warn!("tasksnap serve: collecting again");
                }
                failing = false;
            }
            Err(e) => {
                c.cost.collection_errors += 1;
                if !failing {
                    warn!("tasksnap serve: a collection failed ({e}); serving the last one");
                }
                failing = true;
            }
        }
        // The next tick on the schedule; ticks already past are skipped (a collection that
        // took longer than the interval).
        next += interval;
        let now = Instant::now();
        while next < now {
            next += interval;
        }
    }
}
