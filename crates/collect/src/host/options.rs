//! Where a [`Host`](super::Host) reads ([`HostOptions`]: the /proc root and the trees beside
//! it, a fake tree from the environment).

use std::path::{Path, PathBuf};

use tasksnap_sys::roots;

use crate::units::is_kernel_proc;

/// Where a [`Host`](super::Host) reads, and what it takes as given. The default is this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostOptions {
    /// The procfs root (`/proc`). Any other root is read by the procfs sources only: the BPF
    /// programs read the running kernel, not a tree.
    pub proc_root: PathBuf,
    /// The sysfs root (`/sys`): NUMA nodes, cgroup mounts.
    pub sys_root: PathBuf,
    /// The device directory (`/dev`): terminal names.
    pub dev_root: PathBuf,
    /// The runtime directory (`/run`): systemd's sessions and machines.
    pub run_root: PathBuf,
    /// The utmp file (`/var/run/utmp`): logged-in users.
    pub utmp_path: PathBuf,
    /// The page size, bytes, in place of the running kernel's (a fake tree from a machine
    /// with 16 or 64 KiB pages).
    pub page_size_bytes: Option<u64>,
    /// Take exit records from taskstats even where the BPF program would load (tests, and
    /// comparing the two sources): [`EXITS_ENV`]`=taskstats`.
    pub exits_taskstats_only: bool,
    /// The query service's socket a caller without privileges asks (`tasksnap serve`'s,
    /// [`crate::service::DEFAULT_SOCKET`] unless [`QUERY_SOCKET_ENV`] names another); `None`
    /// when [`NO_SERVICE_ENV`] turns it off, and for a fake tree (the service reads the
    /// running kernel).
    pub query_socket: Option<PathBuf>,
}

impl Default for HostOptions {
    fn default() -> HostOptions {
        HostOptions {
            proc_root: PathBuf::from(roots::PROC),
            sys_root: PathBuf::from(roots::SYS),
            dev_root: PathBuf::from(roots::DEV),
            run_root: PathBuf::from(roots::RUN),
            utmp_path: PathBuf::from("/var/run/utmp"),
            page_size_bytes: None,
            exits_taskstats_only: false,
            query_socket: Some(PathBuf::from(crate::service::DEFAULT_SOCKET)),
        }
    }
}

/// The environment variable naming a fake /proc tree ([`HostOptions::from_env`]).
pub const PROC_ROOT_ENV: &str = "TASKSNAP_PROC_ROOT";
/// The environment variable naming a page size in bytes ([`HostOptions::from_env`]).
pub const PAGE_SIZE_ENV: &str = "TASKSNAP_PAGE_SIZE";
/// The environment variable choosing the exit source: `taskstats` skips the BPF program
/// ([`HostOptions::exits_taskstats_only`]); anything else changes nothing.
pub const EXITS_ENV: &str = "TASKSNAP_EXITS";

/// The environment variable naming the query service's socket ([`HostOptions::query_socket`]).
pub const QUERY_SOCKET_ENV: &str = "TASKSNAP_QUERY_SOCKET";
/// The environment variable that turns the query service off for a caller (any value but
/// empty or `0`): it reads /proc itself.
pub const NO_SERVICE_ENV: &str = "TASKSNAP_NO_SERVICE";

impl HostOptions {
    /// The machine's paths, with a fake tree when the environment names one: `TASKSNAP_PROC_ROOT`
    /// (the /proc root; `sys`, `dev`, `run` and `utmp` inside it are then the /sys, /dev and /run
    /// roots and the utmp file) and `TASKSNAP_PAGE_SIZE` (bytes). This is how the tests run every
    /// front end of the binary and of the Python binding on a fake tree. `TASKSNAP_EXITS=taskstats`
    /// takes exit records from taskstats instead of BPF ([`EXITS_ENV`]).
    ///
    /// Why this is safe: the bytes of /proc are hostile input already (any user names its
    /// processes, and their command lines), so a tree of the caller's own making shows nothing
    /// a process of the caller could not. With a fake root the BPF sources are never used
    /// (they would read the kernel, not the tree). What the variables must not do is let a
    /// user read files through a tasksnap running with more privilege than theirs: a setuid
    /// or file-capability binary runs in secure-execution mode (`AT_SECURE`, what glibc's
    /// `secure_getenv` checks), and then both variables are ignored.
    ///
    /// Root is the other case: a root `record`, `serve` or Python that inherited the variable
    /// (`sudo -E`, a unit's `Environment=`) would read, store or serve whatever a user's tree
    /// links to (a "cmdline" linking to /etc/shadow). As root the tree is taken only when
    /// root could have made it alone: a directory of root's that nobody else may write,
    /// below directories only root may change ([`tasksnap_safefile::Dir::open_private`]);
    /// otherwise the variable is ignored and the host is the running kernel's.
    ///
    /// The environment is read once per process (every later call gets the same answer, and
    /// a refusal is said once).
    pub fn from_env() -> HostOptions {
        static READ: std::sync::OnceLock<HostOptions> = std::sync::OnceLock::new();
        READ.get_or_init(HostOptions::read_env).clone()
    }

    fn read_env() -> HostOptions {
        if secure_execution() {
            return HostOptions::default();
        }
        // SAFETY: geteuid has no preconditions and cannot fail.
        let as_root = unsafe { libc::geteuid() } == 0;
        let root = std::env::var_os(PROC_ROOT_ENV).filter(|r| {
            let taken = !as_root || only_root_could_have_made(r);
            if !taken {
                // Said here, the one place the variable is read: a run that silently showed
                // the real host instead of the tree asked for would mislead.
                eprintln!(
                    "tasksnap: {PROC_ROOT_ENV}={} ignored: as root, a fake tree must be a \
                     directory of root's that nobody else may write (the running kernel's \
                     /proc is read instead)",
                    Path::new(r).display()
                );
            }
            taken
        });
        let mut o =
            HostOptions::from_values(root.as_deref(), std::env::var_os(PAGE_SIZE_ENV).as_deref());
        // Only ever a narrower source than the default: harmless whoever set it.
        o.exits_taskstats_only = std::env::var_os(EXITS_ENV).is_some_and(|v| v == "taskstats");
        // Another socket only ever shows what a service of root's there says (the client
        // refuses a listener that is not root's), and root's clients never ask one.
        if o.query_socket.is_some() {
            if let Some(p) = std::env::var_os(QUERY_SOCKET_ENV).filter(|p| !p.is_empty()) {
                o.query_socket = Some(PathBuf::from(p));
            }
        }
        if std::env::var_os(NO_SERVICE_ENV).is_some_and(|v| !v.is_empty() && v != "0") {
            o.query_socket = None;
        }
        o
    }

    /// [`HostOptions::from_env`] given the variables' values: an empty root is none; a page
    /// size that is not a power of two of at least 1 KiB is ignored.
    pub fn from_values(
        proc_root: Option<&std::ffi::OsStr>,
        page_size: Option<&std::ffi::OsStr>,
    ) -> HostOptions {
        let mut o = HostOptions::default();
        if let Some(root) = proc_root.filter(|r| !r.is_empty()) {
            let root = PathBuf::from(root);
            o.sys_root = root.join("sys");
            o.dev_root = root.join("dev");
            o.run_root = root.join("run");
            o.utmp_path = root.join("utmp");
            o.proc_root = root;
            o.query_socket = None;
        }
        o.page_size_bytes = page_size
            .and_then(|v| v.to_str())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&b| b >= 1024 && b.is_power_of_two());
        o
    }

    /// These options with the /proc root at `proc_root` and nothing else moved: what psutil's
    /// `PROCFS_PATH` does (a container reading its host's /proc mounted at /host/proc keeps
    /// its own /sys and /dev), where [`HostOptions::from_values`] moves a whole fake tree. A
    /// root other than the running kernel's is read by the procfs sources only, and is never
    /// asked of the query service, which answers for the running kernel.
    pub fn with_proc_root(&self, proc_root: PathBuf) -> HostOptions {
        let kernel = is_kernel_proc(&proc_root);
        HostOptions {
            proc_root,
            query_socket: self.query_socket.clone().filter(|_| kernel),
            ..self.clone()
        }
    }

    /// Whether these are the running kernel's own trees (the BPF sources may answer).
    pub fn is_this_kernel(&self) -> bool {
        is_kernel_proc(&self.proc_root)
    }
}

/// Whether root alone could have made the tree at `root` (see [`HostOptions::from_env`]):
/// root's, written by nobody else, below directories only root may change. An empty value
/// names no tree and passes; so does a path where nothing is (reading it fails, plainly).
pub fn only_root_could_have_made(root: &std::ffi::OsStr) -> bool {
    let path = Path::new(root);
    // A missing tree holds nothing to follow: it is kept, and reading it says it is missing.
    root.is_empty()
        || std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        || tasksnap_safefile::Dir::open_private(path).is_ok()
}

/// Whether the process runs in secure-execution mode (setuid, setgid or file capabilities).
fn secure_execution() -> bool {
    // SAFETY: getauxval reads the process's auxiliary vector; it has no preconditions.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}
