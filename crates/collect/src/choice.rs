//! Which collector answers: the rules, kept apart from the collectors themselves.
//!
//! `auto` takes the BPF iterator when it can load and the host has enough tasks for its load
//! time (~30 ms, mostly libbpf parsing the kernel's BTF and the CO-RE relocations against
//! it) to pay off; otherwise the
//! procfs reader, which starts instantly. When `tasksnap pin` left the programs loaded there
//! is no load time, and `auto` takes the iterator at any size. The reason for the choice is
//! kept for `-v`.
//!
//! Thread-state sources ([`open_states`]): `auto` takes the BPF accounting whenever it loads
//! (exact), else the /proc source, and says why.
//!
//! Every choice comes back as a [`Chosen`]: the source, which backend it is, and why; the
//! sources themselves do not know why they were chosen.

use std::path::Path;

use tasksnap_model::{Backend, Groups, PassReport};

use crate::bpf::BpfCollector;
use crate::collector::Collector;
use crate::collector::LiveCollector;
use crate::collector::StateSource;
use crate::error::Error;
use crate::procfs::{ProcfsCollector, Units};
use crate::service::client::ServiceCollector;
use crate::states::bpf::BpfSource;
use crate::states::procfs::ProcfsSource;
use crate::units::is_kernel_proc;

/// Below this many tasks a one-shot procfs read (on both cores) is done before the BPF
/// program has loaded and run: at 7,000 processes the two were level on this 2-core
/// machine, at 8,000 BPF was 7-9% ahead (docs/benchmarks.md, "Backend crossover").
pub const AUTO_MIN_TASKS: u64 = 8_000;

use crate::machine::task_count;

/// A source [`crate::choice`] settled on (a task collector or a thread-state source), which
/// backend it is, and why.
pub struct Chosen<S> {
    /// The source.
    pub source: S,
    /// Which one it is: [`Backend::Bpf`], [`Backend::Procfs`] or [`Backend::Service`], never
    /// `Auto` (but for a replay's, which is what the recording says).
    pub backend: Backend,
    /// Why this one, for `-v`: the rule `auto` applied or the option given, with how it got
    /// ready (load time, pinned set). For thread states: "asked for" when the backend was
    /// named; with [`Backend::Auto`], how long the accounting took to load, or (the /proc
    /// source) why it could not load (the text of its [`Error::BpfUnavailable`]).
    pub why: String,
}

impl<S> Chosen<S> {
    /// `source` as `backend`, for `why`.
    pub fn new(source: S, backend: Backend, why: impl Into<String>) -> Chosen<S> {
        Chosen {
            source,
            backend,
            why: why.into(),
        }
    }

    /// The same choice, its source turned into another type (a box, an enum's variant).
    pub fn map<T>(self, f: impl FnOnce(S) -> T) -> Chosen<T> {
        Chosen {
            source: f(self.source),
            backend: self.backend,
            why: self.why,
        }
    }

    /// The `Debug` of a choice or of a handle around one, named `name`: which backend and
    /// why (a source itself is not `Debug`).
    pub fn debug_as(&self, f: &mut std::fmt::Formatter<'_>, name: &str) -> std::fmt::Result {
        f.debug_struct(name)
            .field("backend", &self.backend)
            .field("why", &self.why)
            .finish_non_exhaustive()
    }
}

impl<C: Collector + ?Sized> Chosen<Box<C>> {
    /// The collector's report, with why it answers ([`report_of`]).
    pub fn report(&self) -> PassReport {
        report_of(self.source.as_ref(), &self.why)
    }
}

/// `collector`'s report with why it answers: `why` (why it was chosen), unless it answered
/// its last pass otherwise than it was chosen to ([`Collector::answered_otherwise`]).
pub fn report_of<C: Collector + ?Sized>(collector: &C, why: &str) -> PassReport {
    let why = collector.answered_otherwise().unwrap_or(why).to_owned();
    PassReport {
        why,
        ..collector.report()
    }
}

impl<S> std::fmt::Debug for Chosen<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.debug_as(f, "Chosen")
    }
}

/// How the BPF collector got ready, for `-v`.
fn readiness(b: &BpfCollector) -> String {
    match &b.pinned_at {
        Some(dir) => format!(
            "pinned programs at {}, opened in {:.2} ms",
            dir.display(),
            b.load_ns as f64 / 1e6
        ),
        None => match &b.pin_problem {
            Some(why) => format!(
                "loaded in {:.1} ms; pinned programs not used: {why}",
                b.load_ns as f64 / 1e6
            ),
            None => format!("loaded in {:.1} ms", b.load_ns as f64 / 1e6),
        },
    }
}

/// Where a task source reads and whom it may ask.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// Root's query service's socket; `None`: turned off.
    pub socket: Option<&'a Path>,
    /// The /proc tree.
    pub root: &'a Path,
    /// Its units.
    pub units: Units,
}

impl Place<'_> {
    /// The procfs collector of this tree, with why it answers (and, where `backend` would
    /// have asked the query service, why it did not: [`without_service`]).
    fn procfs(&self, backend: Backend, why: String) -> Result<Chosen<Box<ProcfsCollector>>, Error> {
        let p = ProcfsCollector::with_root(self.root)?.with_units(self.units);
        let why = without_service(why, backend, self.socket, self.root);
        Ok(Chosen::new(Box::new(p), Backend::Procfs, why))
    }
}

/// Why BPF cannot answer for the tree at `root` (`None`: it may).
fn not_the_kernel(root: &Path) -> Option<String> {
    (!is_kernel_proc(root)).then(|| {
        format!(
            "{} is not the running kernel's /proc: only the procfs sources read it",
            root.display()
        )
    })
}

/// Whether `auto` asks root's query service: for a caller that cannot load the BPF programs
/// itself (not root), reading the running kernel's /proc.
fn asks_service(root: &Path) -> bool {
    tasksnap_safefile::euid() != 0 && is_kernel_proc(root)
}

/// `why` of a /proc collector `auto` chose, with why the query service was not asked when it
/// would have been (no socket of root's at `socket`).
fn without_service(why: String, backend: Backend, socket: Option<&Path>, root: &Path) -> String {
    let absent = match (backend, socket) {
        (Backend::Auto, Some(socket)) if asks_service(root) => {
            crate::service::client::absent(socket)
        }
        _ => None,
    };
    match absent {
        Some(a) => format!("{why}; {a}"),
        None => why,
    }
}

/// `--backend service` for thread states, which the service does not serve.
fn no_service_states() -> Error {
    Error::Unsupported(
        "the query service answers task queries, not thread states: use --backend procfs, or \
         run as root for the BPF accounting"
            .into(),
    )
}

/// The error for `--backend bpf` when BPF cannot load.
fn bpf_unavailable(why: impl std::fmt::Display) -> Error {
    Error::Unsupported(format!("the BPF backend is unavailable: {why}"))
}

/// A collector settled on without BPF: root's query service, or the procfs reader.
enum Early {
    Service(Box<ServiceCollector>),
    Procfs(Box<ProcfsCollector>),
}

impl Early {
    fn live(self) -> Box<dyn LiveCollector> {
        match self {
            Early::Service(s) => s,
            Early::Procfs(p) => p,
        }
    }

    fn collector(self) -> Box<dyn Collector> {
        match self {
            Early::Service(s) => s,
            Early::Procfs(p) => p,
        }
    }
}

/// What answers without BPF being tried ([`open_live`], [`open`]), `None` where BPF (or
/// `auto`'s rule) decides:
/// - root's query service: asked for by name (`--backend service`: then a request it does
///   not answer is an error), or with `auto` for a caller that cannot load the BPF programs
///   itself (not root) when a socket of root's is at `socket` (then a request it does not
///   answer is read from /proc);
/// - the procfs reader for `--backend procfs`, or for `auto` where BPF cannot read `root`;
/// - an error for `--backend service` where the service cannot answer, or for
///   `--backend bpf` where BPF cannot read `root`.
fn without_bpf(backend: Backend, at: Place<'_>) -> Option<Result<Chosen<Early>, Error>> {
    let root = at.root;
    let service = |socket: &Path, by_name: bool, why: String| {
        let s = ServiceCollector::new(socket, root, at.units, by_name);
        Some(Ok(Chosen::new(
            Early::Service(Box::new(s)),
            Backend::Service,
            why,
        )))
    };
    let procfs = |why: String| Some(at.procfs(backend, why).map(|p| p.map(Early::Procfs)));
    match (backend, at.socket, not_the_kernel(root)) {
        (Backend::Service, None, _) => Some(Err(Error::Unsupported(format!(
            "the query service is turned off here ({}=1)",
            crate::host::options::NO_SERVICE_ENV
        )))),
        (Backend::Service, Some(_), Some(why)) => Some(Err(Error::Unsupported(why))),
        (Backend::Service, Some(socket), None) => service(
            socket,
            true,
            format!(
                "service: asked for with --backend service ({})",
                socket.display()
            ),
        ),
        (Backend::Auto, Some(socket), _)
            if asks_service(root) && crate::service::client::absent(socket).is_none() =>
        {
            service(
                socket,
                false,
                format!(
                    "service: not root, and root's query service listens at {} (it applies \
                     this caller's /proc rules)",
                    socket.display()
                ),
            )
        }
        (Backend::Procfs, ..) => procfs("procfs: asked for with --backend procfs".into()),
        (Backend::Bpf, _, Some(why)) => Some(Err(bpf_unavailable(why))),
        (Backend::Auto, _, Some(why)) => procfs(format!("procfs: {why}")),
        (Backend::Bpf | Backend::Auto, _, None) => None,
    }
}

/// The BPF collector `b`, chosen for `why`.
fn bpf_chosen(b: BpfCollector, why: String) -> Chosen<Box<BpfCollector>> {
    Chosen::new(Box::new(b), Backend::Bpf, why)
}

/// A collector for a live view (`top`): BPF whenever it can load, whatever the number of
/// tasks (the load is paid once), with the walk its refreshes use; procfs when `backend`
/// says so or BPF cannot load (the choice says why).
pub fn open_live(backend: Backend, at: Place<'_>) -> Result<Chosen<Box<dyn LiveCollector>>, Error> {
    if let Some(early) = without_bpf(backend, at) {
        return early.map(|c| c.map(Early::live));
    }
    match BpfCollector::for_live_view() {
        Ok(b) => {
            let why = format!("bpf: {}", readiness(&b));
            Ok(bpf_chosen(b, why).map(|b| b as Box<dyn LiveCollector>))
        }
        Err(why) if backend == Backend::Auto => Ok(at
            .procfs(backend, format!("procfs: {why}"))?
            .map(|p| p as Box<dyn LiveCollector>)),
        Err(why) => Err(bpf_unavailable(why)),
    }
}

/// The query service's collector: BPF only (the service exists to give its passes), every
/// program loaded and the walk's memory made for every group while the caller still holds
/// its privileges.
pub fn open_for_service(root: &Path) -> Result<Chosen<Box<dyn Collector>>, Error> {
    if let Some(why) = not_the_kernel(root) {
        return Err(bpf_unavailable(why));
    }
    let mut b = BpfCollector::for_service().map_err(bpf_unavailable)?;
    b.prepare_arena(&Groups::all());
    let why = format!("bpf: for the query service ({})", readiness(&b));
    Ok(bpf_chosen(b, why).map(|b| b as Box<dyn Collector>))
}

/// A collector for snapshots of `groups` (`ps`, `bench`), ready to take them: everything
/// that needs the caller's privileges (the BPF walk's memory) is done before this returns,
/// so the caller may drop them.
pub fn open(
    backend: Backend,
    groups: &Groups,
    at: Place<'_>,
) -> Result<Chosen<Box<dyn Collector>>, Error> {
    if let Some(early) = without_bpf(backend, at) {
        return early.map(|c| c.map(Early::collector));
    }
    let bpf = |why: &dyn Fn(&BpfCollector) -> String| {
        let mut b = BpfCollector::for_groups(groups)?;
        b.prepare_arena(groups);
        let why = why(&b);
        Ok::<_, crate::bpf::Unavailable>(bpf_chosen(b, why).map(|b| b as Box<dyn Collector>))
    };
    let procfs = |why: String| {
        at.procfs(backend, why)
            .map(|p| p.map(|p| p as Box<dyn Collector>))
    };
    match backend {
        Backend::Bpf => bpf(&|b| format!("bpf: asked for with --backend bpf ({})", readiness(b)))
            .map_err(bpf_unavailable),
        // `auto`: [`without_bpf`] answered the others.
        _ => {
            let tasks = task_count(at.root).unwrap_or(0);
            // With a pinned set there is no load to amortize: the iterator wins at any size.
            if !BpfCollector::pinned_available() && tasks < AUTO_MIN_TASKS {
                return procfs(format!(
                    "procfs: {tasks} tasks, fewer than {AUTO_MIN_TASKS}: reading /proc is done \
                     before the BPF program would have loaded"
                ));
            }
            match bpf(&|b| format!("bpf: {tasks} tasks ({})", readiness(b))) {
                Ok(b) => Ok(b),
                Err(why) => procfs(format!("procfs: BPF unavailable: {why}")),
            }
        }
    }
}

/// A thread-state source for `backend`: the BPF accounting (exact, root only) with `bpf`'s
/// settings, the /proc source with `procfs`'s, or with [`Backend::Auto`] the accounting when
/// it loads and else the /proc source (its [`Chosen::why`] says why). Asked for by name, a
/// source that cannot run is an error ([`Error::BpfUnavailable`], [`Error::Io`]).
pub fn open_states(
    backend: Backend,
    bpf: crate::states::bpf::Options,
    procfs: crate::states::procfs::Options,
) -> Result<Chosen<Box<dyn StateSource>>, Error> {
    let from_proc = |procfs, why: String| {
        let s: Box<dyn StateSource> = Box::new(ProcfsSource::new(procfs)?);
        Ok(Chosen::new(s, Backend::Procfs, why))
    };
    // The accounting's own root says which kernel it would read (a test may hand the /proc
    // source a tree of its own beside it).
    if let Some(why) = not_the_kernel(&bpf.proc_root) {
        match backend {
            Backend::Bpf => return Err(Error::BpfUnavailable(why)),
            Backend::Auto => return from_proc(procfs, why),
            Backend::Procfs => {}
            Backend::Service => return Err(no_service_states()),
        }
    }
    let accounting = |s: BpfSource, why: String| {
        let s: Box<dyn StateSource> = Box::new(s);
        Chosen::new(s, Backend::Bpf, why)
    };
    let loaded = |s: &BpfSource| format!("loaded in {:.1} ms", s.load_ns as f64 / 1e6);
    match backend {
        Backend::Bpf => {
            let s = BpfSource::load(bpf)?;
            let why = format!("asked for ({})", loaded(&s));
            Ok(accounting(s, why))
        }
        Backend::Procfs => from_proc(procfs, "asked for".into()),
        Backend::Service => Err(no_service_states()),
        Backend::Auto => match BpfSource::load(bpf) {
            Ok(s) => {
                let why = loaded(&s);
                Ok(accounting(s, why))
            }
            Err(why) => from_proc(procfs, why.to_string()),
        },
    }
}
