//! The iterator programs as file descriptors, wherever they come from: a fresh load of the
//! skeleton (35-50 ms at startup: libbpf parsing the kernel's 5.5 MB BTF for CO-RE, then the
//! verifier), or the set `tasksnap pin` left in bpffs (no load at all). Also opens iterator
//! files and registers what each reader thread asks of a pass.
//!
//! Security of the pins: an iterator bypasses procfs's permission checks, so the pinned set
//! lives in a directory only root can enter (0700, owned by root), each pin 0600, and a set
//! found with looser permissions or another owner is refused, not used.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use libbpf_rs::MapCore;

use super::arena::Walker;
use super::skel;
use super::Unavailable;
use crate::sys;

/// Where bpffs is normally mounted.
pub const BPFFS: &str = "/sys/fs/bpf";
/// tasksnap's directory in bpffs; each build's programs go in a subdirectory named by
/// [`TAG`].
pub const PIN_ROOT: &str = "/sys/fs/bpf/tasksnap";
/// This build's BPF sources, hashed (build.rs).
pub const TAG: &str = env!("TASKSNAP_BPF_TAG");

const PIN_TASK_PROG: &str = "task_prog";
const PIN_TASK_LINK: &str = "task_link";
const PIN_CMD_LINK: &str = "cmdline_link";
const PIN_CFG: &str = "reader_cfg";
const PIN_WALK_PROG: &str = "walk_prog";
const PIN_CMD_PROG: &str = "cmd_prog";
const PIN_LINES_PROG: &str = "lines_prog";
const PIN_ARENAS: &str = "arenas";

/// statfs magic of bpffs (include/uapi/linux/magic.h).
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;

/// The directory this build pins into and reuses.
pub fn pin_dir() -> PathBuf {
    Path::new(PIN_ROOT).join(TAG)
}

/// Where the programs of a [`Programs`] came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Loaded by this process, in `load_ns`.
    Loaded {
        /// Time to open, load and attach, ns.
        load_ns: u64,
    },
    /// Opened from a pinned set, in `open_ns`.
    Pinned {
        /// The pin directory.
        dir: PathBuf,
        /// Time to open the pins, ns.
        open_ns: u64,
    },
}

/// The task iterator (and, when available, the command-line iterator) ready for passes.
pub struct Programs {
    task_prog: OwnedFd,
    task_link: OwnedFd,
    cmd_link: Option<OwnedFd>,
    cfg: libbpf_rs::MapHandle,
    /// The walk into an arena (Linux 6.7), when it loaded.
    pub walker: Option<Walker>,
    /// Why there is no walk, when there is none.
    pub walk_unavailable: Option<String>,
    /// Why there is no command-line iterator, when there is none.
    pub cmdline_unavailable: Option<String>,
    /// Loaded or pinned.
    pub origin: Origin,
    /// A loaded skeleton must outlive the descriptors above (they are duplicates, but the
    /// links detach when libbpf's link objects drop).
    _loaded: Option<Loaded>,
}

impl std::fmt::Debug for Programs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Programs")
            .field("origin", &self.origin)
            .field("cmdline", &self.cmd_link.is_some())
            .finish_non_exhaustive()
    }
}

struct Loaded {
    _skel: skel::TaskIterSkel<'static>,
    _links: Vec<libbpf_rs::Link>,
}

fn dup(fd: std::os::fd::BorrowedFd<'_>) -> Result<OwnedFd, Unavailable> {
    fd.try_clone_to_owned()
        .map_err(|e| Unavailable(format!("cannot duplicate a BPF descriptor: {e}")))
}

fn open_and_load(cmdline: bool, walk: bool) -> Result<skel::TaskIterSkel<'static>, Unavailable> {
    use libbpf_rs::skel::{OpenSkel, SkelBuilder};

    // The skeleton borrows its object for its whole life; it lives as long as the process
    // (loaded once), so the object is leaked on purpose.
    let object: &'static mut std::mem::MaybeUninit<libbpf_rs::OpenObject> =
        Box::leak(Box::new(std::mem::MaybeUninit::uninit()));
    let mut open = skel::TaskIterSkelBuilder::default()
        .open(object)
        .map_err(|e| Unavailable(format!("cannot open the BPF object: {e}")))?;
    // One program that fails verification fails the whole object: load only what the run
    // needs.
    open.progs.dump_cmdline.set_autoload(cmdline);
    open.progs.walk_tasks.set_autoload(walk);
    open.progs.copy_cmdlines.set_autoload(walk && cmdline);
    open.progs.walk_tasks_lines.set_autoload(walk && cmdline);
    // TASKSNAP_VERIFIER_STATS=1: each program's verification time and size on stderr
    // (docs/bpf.md, "What loading costs").
    if std::env::var_os("TASKSNAP_VERIFIER_STATS").is_some() {
        for p in [
            &mut open.progs.dump_task,
            &mut open.progs.dump_cmdline,
            &mut open.progs.walk_tasks,
            &mut open.progs.walk_tasks_lines,
            &mut open.progs.copy_cmdlines,
        ] {
            p.set_log_level(4); // BPF_LOG_STATS
        }
        libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Debug, print_verifier_stats)));
    }
    open.load().map_err(|e| {
        Unavailable(format!(
            "the kernel refused the BPF task iterator ({e}); needs Linux 5.8+ with BTF"
        ))
    })
}

/// A libbpf message with a program's verifier log (BPF_LOG_STATS), on one line of stderr.
fn print_verifier_stats(_: libbpf_rs::PrintLevel, msg: String) {
    if let Some(line) = verifier_stats_line(&msg) {
        eprintln!("{line}");
    }
}

/// "tasksnap: verifier: dump_task 1.4 ms, 2552 instructions processed, 119 states" from
/// libbpf's message with a program's load log; None for any other message.
fn verifier_stats_line(msg: &str) -> Option<String> {
    let name = msg.split_once("prog '")?.1.split_once('\'')?.0;
    let after = |key: &str| -> Option<u64> {
        msg.split_once(key)?
            .1
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    let us = after("verification time ")?;
    let insns = after("processed ")?;
    let states = after("total_states ")?;
    Some(format!(
        "tasksnap: verifier: {name} {:.1} ms, {insns} instructions processed, {states} states",
        us as f64 / 1e3
    ))
}

impl Programs {
    /// Loads the programs, the command-line iterator too when `cmdline` and the walk when
    /// `walk` (if one of those cannot load, `cmdline_unavailable` or `walk_unavailable` says
    /// why and the rest still works).
    ///
    /// The walk costs its verification (about 20 ms more per load here, 60 with its
    /// command-line variant: run with TASKSNAP_VERIFIER_STATS=1) and one RCU grace
    /// period to register its arena, more than it saves on a single pass: a one-shot
    /// tasksnap that loads its own programs leaves it out, and `tasksnap pin` puts it in.
    pub fn load(cmdline: bool, walk: bool) -> Result<Programs, Unavailable> {
        let start = sys::clock_ns(libc::CLOCK_MONOTONIC);
        let mut cmdline_unavailable = None;
        let mut walk_unavailable = (!walk).then(|| "not loaded".to_string());
        // The walk needs Linux 6.8 (open-coded task iterator, trusted arguments of global
        // functions), the sleepable command-line iterator Linux 5.18: whichever the kernel
        // refuses, keep the rest.
        let skel = match open_and_load(cmdline, walk) {
            Ok(s) => s,
            Err(why) => {
                walk_unavailable = Some(why.0);
                match open_and_load(cmdline, false) {
                    Ok(s) => s,
                    Err(why) if cmdline => {
                        cmdline_unavailable = Some(why.0);
                        match open_and_load(false, walk) {
                            Ok(s) if walk => {
                                walk_unavailable = None;
                                s
                            }
                            Ok(s) => s,
                            Err(_) => open_and_load(false, false)?,
                        }
                    }
                    Err(why) => return Err(why),
                }
            }
        };
        let link = skel
            .progs
            .dump_task
            .attach()
            .map_err(|e| Unavailable(format!("cannot attach the task iterator: {e}")))?;
        let mut links = Vec::new();
        let task_link = dup(link.as_fd())?;
        links.push(link);
        let mut cmd_link = None;
        if cmdline && cmdline_unavailable.is_none() {
            match skel.progs.dump_cmdline.attach() {
                Ok(l) => {
                    cmd_link = Some(dup(l.as_fd())?);
                    links.push(l);
                }
                Err(e) => {
                    cmdline_unavailable = Some(format!("cannot attach the cmdline iterator: {e}"))
                }
            }
        } else if !cmdline {
            cmdline_unavailable = Some("not loaded".into());
        }
        let task_prog = dup(skel.progs.dump_task.as_fd())?;
        let cfg = libbpf_rs::MapHandle::try_from(&skel.maps.reader_cfg)
            .map_err(|e| Unavailable(format!("cannot open the reader_cfg map: {e}")))?;
        let walker = if walk_unavailable.is_none() {
            Some(Walker {
                shared: false,
                prog: dup(skel.progs.walk_tasks.as_fd())?,
                // Loaded with the walk when command lines were asked for too.
                cmd_prog: if cmdline && cmdline_unavailable.is_none() {
                    Some(dup(skel.progs.copy_cmdlines.as_fd())?)
                } else {
                    None
                },
                lines_prog: if cmdline && cmdline_unavailable.is_none() {
                    Some(dup(skel.progs.walk_tasks_lines.as_fd())?)
                } else {
                    None
                },
                arenas: libbpf_rs::MapHandle::try_from(&skel.maps.arenas)
                    .map_err(|e| Unavailable(format!("cannot open the arenas map: {e}")))?,
            })
        } else {
            None
        };
        let load_ns = sys::clock_ns(libc::CLOCK_MONOTONIC).saturating_sub(start);
        Ok(Programs {
            task_prog,
            task_link,
            cmd_link,
            cfg,
            walker,
            walk_unavailable,
            cmdline_unavailable,
            origin: Origin::Loaded { load_ns },
            _loaded: Some(Loaded {
                _skel: skel,
                _links: links,
            }),
        })
    }

    /// The pinned set of this build, when `tasksnap pin` left one and it is safe to use.
    /// `Ok(None)` when there is none; `Err` when there is one that must not be trusted.
    pub fn open_pinned() -> Result<Option<Programs>, Unavailable> {
        let start = sys::clock_ns(libc::CLOCK_MONOTONIC);
        let dir = pin_dir();
        let meta = match std::fs::symlink_metadata(&dir) {
            Ok(m) => m,
            Err(_) => return Ok(None),
        };
        for d in [Path::new(PIN_ROOT), dir.as_path()] {
            let m = std::fs::symlink_metadata(d)
                .map_err(|e| Unavailable(format!("{}: {e}", d.display())))?;
            if !m.is_dir() || m.uid() != 0 || m.mode() & 0o077 != 0 {
                return Err(Unavailable(format!(
                    "{} is not a root-only directory (mode {:o}, owner {}): not using the \
                     pinned iterator; remove it with `tasksnap unpin`",
                    d.display(),
                    m.mode() & 0o7777,
                    m.uid()
                )));
            }
        }
        let _ = meta;
        let get = |name: &str| -> Result<OwnedFd, Unavailable> {
            obj_get(&dir.join(name)).map_err(|e| {
                Unavailable(format!(
                    "cannot open pinned {}: {e}",
                    dir.join(name).display()
                ))
            })
        };
        let task_prog = get(PIN_TASK_PROG)?;
        let task_link = get(PIN_TASK_LINK)?;
        let (cmd_link, cmdline_unavailable) = match get(PIN_CMD_LINK) {
            Ok(fd) => (Some(fd), None),
            Err(why) => (None, Some(why.0)),
        };
        let cfg = libbpf_rs::MapHandle::from_pinned_path(dir.join(PIN_CFG))
            .map_err(|e| Unavailable(format!("cannot open the pinned reader_cfg map: {e}")))?;
        let walk = get(PIN_WALK_PROG).and_then(|prog| {
            let arenas = libbpf_rs::MapHandle::from_pinned_path(dir.join(PIN_ARENAS))
                .map_err(|e| Unavailable(format!("cannot open the pinned arenas map: {e}")))?;
            Ok(Walker {
                shared: true,
                prog,
                cmd_prog: get(PIN_CMD_PROG).ok(),
                lines_prog: get(PIN_LINES_PROG).ok(),
                arenas,
            })
        });
        let (walker, walk_unavailable) = match walk {
            Ok(w) => (Some(w), None),
            Err(why) => (None, Some(why.0)),
        };
        let open_ns = sys::clock_ns(libc::CLOCK_MONOTONIC).saturating_sub(start);
        Ok(Some(Programs {
            task_prog,
            task_link,
            cmd_link,
            cfg,
            walker,
            walk_unavailable,
            cmdline_unavailable,
            origin: Origin::Pinned { dir, open_ns },
            _loaded: None,
        }))
    }

    /// Pins these (freshly loaded) programs into [`pin_dir`], replacing an older set of the
    /// same build. The set is assembled in a temporary directory and renamed into place, so
    /// a reader never sees half of it.
    pub fn pin(&self) -> Result<PathBuf, Unavailable> {
        let fail = |what: &str, e: io::Error| Unavailable(format!("{what}: {e}"));
        ensure_bpffs()?;
        make_private_dir(Path::new(PIN_ROOT))?;
        let dir = pin_dir();
        // bpffs refuses names with dots in them (reserved, kernel/bpf/inode.c bpf_lookup()).
        let tmp = Path::new(PIN_ROOT).join(format!("new_{TAG}_{}", std::process::id()));
        let _ = remove_pins(&tmp);
        make_private_dir(&tmp)?;
        let mut objects = vec![
            (PIN_TASK_PROG, self.task_prog.as_raw_fd()),
            (PIN_TASK_LINK, self.task_link.as_raw_fd()),
            (PIN_CFG, self.cfg.as_fd().as_raw_fd()),
        ];
        if let Some(c) = &self.cmd_link {
            objects.push((PIN_CMD_LINK, c.as_raw_fd()));
        }
        if let Some(w) = &self.walker {
            objects.push((PIN_WALK_PROG, w.prog.as_raw_fd()));
            if let Some(c) = &w.cmd_prog {
                objects.push((PIN_CMD_PROG, c.as_raw_fd()));
            }
            if let Some(l) = &w.lines_prog {
                objects.push((PIN_LINES_PROG, l.as_raw_fd()));
            }
            objects.push((PIN_ARENAS, w.arenas.as_fd().as_raw_fd()));
        }
        for (name, fd) in objects {
            let path = tmp.join(name);
            obj_pin(fd, &path).map_err(|e| fail(&format!("pinning {}", path.display()), e))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| fail(&format!("chmod {}", path.display()), e))?;
        }
        let _ = remove_pins(&dir);
        // Sets of other builds (older tasksnaps) would stay loaded for nothing.
        if let Ok(entries) = std::fs::read_dir(PIN_ROOT) {
            for e in entries.flatten() {
                if e.path() != tmp {
                    let _ = remove_pins(&e.path());
                }
            }
        }
        std::fs::rename(&tmp, &dir).map_err(|e| {
            let _ = remove_pins(&tmp);
            fail(&format!("rename into {}", dir.display()), e)
        })?;
        Ok(dir)
    }

    /// Duplicates of the descriptors, for a thread that may outlive this value (a pass
    /// abandoned at its deadline finishes on its own).
    pub fn shared(&self) -> Option<Programs> {
        Some(Programs {
            task_prog: self.task_prog.try_clone().ok()?,
            task_link: self.task_link.try_clone().ok()?,
            cmd_link: match &self.cmd_link {
                Some(c) => Some(c.try_clone().ok()?),
                None => None,
            },
            cfg: libbpf_rs::MapHandle::try_from(&self.cfg).ok()?,
            walker: match &self.walker {
                Some(w) => Some(w.try_clone()?),
                None => None,
            },
            walk_unavailable: self.walk_unavailable.clone(),
            cmdline_unavailable: self.cmdline_unavailable.clone(),
            origin: self.origin.clone(),
            _loaded: None,
        })
    }

    /// Whether the command-line iterator is there.
    pub fn has_cmdline(&self) -> bool {
        self.cmd_link.is_some()
    }

    /// Tells the programs what the thread `tid` wants from the passes it reads.
    pub fn register(&self, tid: u32, cfg: &skel::types::ts_reader_cfg) -> io::Result<()> {
        // SAFETY: ts_reader_cfg is the generated repr(C) struct of four u32 fields, no padding
        // bytes: viewing it as bytes reads initialized memory of exactly its size.
        let value = unsafe {
            std::slice::from_raw_parts(
                (cfg as *const skel::types::ts_reader_cfg).cast::<u8>(),
                std::mem::size_of::<skel::types::ts_reader_cfg>(),
            )
        };
        self.cfg
            .update(&tid.to_ne_bytes(), value, libbpf_rs::MapFlags::ANY)
            .map_err(io::Error::other)
    }

    /// Forgets what `tid` asked for.
    pub fn unregister(&self, tid: u32) {
        let _ = self.cfg.delete(&tid.to_ne_bytes());
    }

    /// A fresh iterator file over every task.
    pub fn task_iter(&self) -> io::Result<File> {
        iter_create(&self.task_link)
    }

    /// A fresh command-line iterator file, when there is a command-line iterator.
    pub fn cmdline_iter(&self) -> Option<io::Result<File>> {
        self.cmd_link.as_ref().map(iter_create)
    }

    /// A fresh iterator file over the threads of one process only
    /// (`bpf_iter_link_info.task.pid`, Linux 6.1): the kernel then visits that thread group
    /// instead of every task.
    pub fn process_iter(&self, pid: i32) -> io::Result<File> {
        let mut info = libbpf_sys::bpf_iter_link_info::default();
        info.task.pid = pid as u32;
        let opts = libbpf_sys::bpf_link_create_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as _,
            iter_info: &mut info,
            iter_info_len: std::mem::size_of::<libbpf_sys::bpf_iter_link_info>() as _,
            ..Default::default()
        };
        // SAFETY: the program fd is valid for the call; `opts` and `info` outlive it and the
        // kernel copies what it needs.
        let fd = unsafe {
            libbpf_sys::bpf_link_create(
                self.task_prog.as_raw_fd(),
                0,
                libbpf_sys::BPF_TRACE_ITER,
                &opts,
            )
        };
        let link = owned(fd)?;
        iter_create(&link)
    }
}

/// libbpf's convention: a descriptor, or a negative errno.
fn owned(fd: i32) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: libbpf returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn iter_create(link: &OwnedFd) -> io::Result<File> {
    // SAFETY: bpf_iter_create takes a link descriptor, valid for the call.
    let fd = unsafe { libbpf_sys::bpf_iter_create(link.as_raw_fd()) };
    owned(fd).map(File::from)
}

fn c_path(path: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))
}

fn obj_get(path: &Path) -> io::Result<OwnedFd> {
    let p = c_path(path)?;
    // SAFETY: `p` is a NUL-terminated path valid for the call.
    owned(unsafe { libbpf_sys::bpf_obj_get(p.as_ptr()) })
}

fn obj_pin(fd: i32, path: &Path) -> io::Result<()> {
    let p = c_path(path)?;
    // SAFETY: `fd` is a live BPF object descriptor and `p` a NUL-terminated path, both valid
    // for the call.
    let r = unsafe { libbpf_sys::bpf_obj_pin(fd, p.as_ptr()) };
    if r < 0 {
        return Err(io::Error::from_raw_os_error(-r));
    }
    Ok(())
}

fn make_private_dir(dir: &Path) -> Result<(), Unavailable> {
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Unavailable(format!("mkdir {}: {e}", dir.display()))),
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| Unavailable(format!("chmod {}: {e}", dir.display())))
}

/// Whether bpffs is mounted at [`BPFFS`].
pub fn bpffs_mounted() -> bool {
    let Ok(p) = c_path(Path::new(BPFFS)) else {
        return false;
    };
    // SAFETY: an all-zero statfs is a valid value for the kernel to overwrite.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `p` is a NUL-terminated path and `st` a writable statfs, both valid for the call.
    let r = unsafe { libc::statfs(p.as_ptr(), &mut st) };
    r == 0 && st.f_type as i64 == BPF_FS_MAGIC
}

/// Mounts bpffs at [`BPFFS`] (root only, mode 0700) when nothing is mounted there: systemd
/// does this at boot on most distributions, minimal VMs and containers often skip it.
fn ensure_bpffs() -> Result<(), Unavailable> {
    if bpffs_mounted() {
        return Ok(());
    }
    let target = c_path(Path::new(BPFFS)).map_err(|e| Unavailable(e.to_string()))?;
    let fstype = c"bpf";
    let data = c"mode=0700";
    // SAFETY: all pointers are NUL-terminated strings valid for the call.
    let r = unsafe {
        libc::mount(
            fstype.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            data.as_ptr().cast(),
        )
    };
    if r != 0 {
        return Err(Unavailable(format!(
            "bpffs is not mounted at {BPFFS} and mounting it failed: {}",
            io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Removes a pin directory and the pins in it (unpinning: the programs unload once no
/// process holds them).
pub fn remove_pins(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            remove_pins(&entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    std::fs::remove_dir(dir)
}

/// Reader threads for a pass: as many as cores, at most 4. Each walks every task but reads
/// the fields of its share only, which is where the time goes (cache misses in the task,
/// signal, cred and mm structs of 50,000 tasks).
pub fn pass_shards() -> usize {
    crate::sys::cores().clamp(1, 4)
}

/// Reads one iterator file to its end into a buffer of `want` bytes' capacity.
fn read_all(mut f: File, want: usize) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(want.max(64 << 10));
    f.read_to_end(&mut buf)?;
    Ok(buf)
}

/// One pass read by the calling thread into `buf` (cleared; its capacity is kept from pass to
/// pass, so a periodic refresh does not fault in a fresh buffer every time).
pub fn read_into(
    progs: &Programs,
    groups: u32,
    open: impl Fn(&Programs) -> io::Result<File>,
    buf: &mut Vec<u8>,
) -> io::Result<()> {
    use std::io::Read;
    // SAFETY: gettid has no arguments and cannot fail.
    let tid = unsafe { libc::gettid() } as u32;
    let cfg = skel::types::ts_reader_cfg {
        groups,
        nshards: 1,
        ..Default::default()
    };
    progs.register(tid, &cfg)?;
    buf.clear();
    let r = open(progs).and_then(|mut f| f.read_to_end(buf));
    progs.unregister(tid);
    r.map(|_| ())
}

/// One pass split over `shards` reader threads (the calling thread alone when 1): each
/// registers its thread id with `groups` and its shard, opens a fresh iterator with `open`,
/// and reads it to the end. The buffers come back in shard order. Each reader is listed in
/// `watched`, when given, while it reads (a watcher then tells a stuck pass from a slow one).
pub(crate) fn read_sharded(
    progs: &Programs,
    groups: u32,
    shards: usize,
    want_bytes: usize,
    watched: Option<&crate::blocked::Threads>,
    open: impl Fn(&Programs) -> io::Result<File> + Sync,
) -> io::Result<Vec<Vec<u8>>> {
    let one = |shard: usize| -> io::Result<Vec<u8>> {
        let _listed = watched.map(|w| w.enter());
        // SAFETY: gettid has no arguments and cannot fail.
        let tid = unsafe { libc::gettid() } as u32;
        let cfg = skel::types::ts_reader_cfg {
            groups,
            shard: shard as u32,
            nshards: shards as u32,
            ..Default::default()
        };
        progs.register(tid, &cfg)?;
        let r = open(progs).and_then(|f| read_all(f, want_bytes / shards.max(1)));
        progs.unregister(tid);
        r
    };
    if shards <= 1 {
        return Ok(vec![one(0)?]);
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = (1..shards)
            .map(|shard| s.spawn(move || one(shard)))
            .collect();
        let mut out = vec![one(0)?];
        for h in handles {
            out.push(
                h.join()
                    .map_err(|_| io::Error::other("an iterator reader thread panicked"))??,
            );
        }
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifier_stats_from_a_libbpf_message() {
        // As libbpf 1.5 printed it for dump_task on Linux 6.18.
        let msg = "libbpf: prog 'dump_task': -- BEGIN PROG LOAD LOG --\nverification time 1397 \
                   usec\nstack depth 232\nprocessed 2552 insns (limit 1000000) \
                   max_states_per_insn 5 total_states 119 peak_states 115 mark_read 0\n-- END \
                   PROG LOAD LOG --\n";
        assert_eq!(
            verifier_stats_line(msg).as_deref(),
            Some("tasksnap: verifier: dump_task 1.4 ms, 2552 instructions processed, 119 states")
        );
        assert_eq!(verifier_stats_line("libbpf: loaded kernel BTF\n"), None);
        assert_eq!(verifier_stats_line("libbpf: prog 'x': bad"), None);
    }
}
