//! The iterator programs as file descriptors, wherever they come from: a fresh load of the
//! skeleton (35-50 ms at startup: libbpf parsing the kernel's 5.5 MB BTF for CO-RE, then the
//! verifier), or the set `tasksnap pin` left in bpffs (no load at all), with the walk's
//! programs and arenas map as one [`Walker`] (arena.rs runs it). Also opens iterator
//! files, registers what each reader thread asks of a pass (passes.rs reads them), and says
//! whether the process has the descriptors for all that ([`enough_descriptors`]).
//!
//! Security of the pins: an iterator bypasses procfs's permission checks, so the pinned set
//! lives in a directory only root can enter (0700, owned by root), each pin 0600, and a set
//! found with looser permissions or another owner is refused, not used
//! ([`tasksnap_bpf::pins`] does that for every BPF program of tasksnap).

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use libbpf_rs::MapCore;
use tasksnap_bpf::loader::{iter_file, process_iter_link};
use tasksnap_bpf::pins::{self, check_root_only, open_pin, pin_private};
pub use tasksnap_bpf::pins::{pin_dir, remove_pins, PIN_ROOT};

use tasksnap_bpf::skel::task_iter as skel;
use tasksnap_bpf::Unavailable;
use tasksnap_sys as sys;

/// This build's BPF sources, hashed ([`tasksnap_bpf::TAG`]).
pub const TAG: &str = tasksnap_bpf::TAG;

const PIN_TASK_PROG: &str = "task_prog";
const PIN_TASK_LINK: &str = "task_link";
const PIN_CMD_LINK: &str = "cmdline_link";
const PIN_CFG: &str = "reader_cfg";
const PIN_WALK_PROG: &str = "walk_prog";
const PIN_CMD_PROG: &str = "cmd_prog";
const PIN_LINES_PROG: &str = "lines_prog";
const PIN_LIST_PROG: &str = "list_prog";
const PIN_ARENAS: &str = "arenas";

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
    /// The iterator is dump_task_rare, which writes the signal and namespace blocks
    /// (TS_GROUP_SIG, TS_GROUP_NS); dump_task (and the walk, and a pinned set) leave them
    /// to /proc.
    pub rare: bool,
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
        .map_err(|e| Unavailable::Failed(format!("cannot duplicate a BPF descriptor: {e}")))
}

/// The command-line programs a load takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmdlines {
    /// None: command lines come from /proc.
    No,
    /// The copy by pid list only (`copy_cmdlines`, 1.6 ms of verification here): what a
    /// live view's fill of new processes uses.
    Copy,
    /// The sleepable iterator, the copy and the walk that reads lines (`walk_tasks_lines`,
    /// ~105 ms of verification here; TASKSNAP_VERIFIER_STATS=1 prints each program's).
    All,
}

impl From<bool> for Cmdlines {
    /// All of them when asked for, else none.
    fn from(asked: bool) -> Cmdlines {
        if asked {
            Cmdlines::All
        } else {
            Cmdlines::No
        }
    }
}

fn open_and_load(
    cmdline: Cmdlines,
    walk: bool,
    rare: bool,
    list: bool,
) -> Result<skel::TaskIterSkel<'static>, Unavailable> {
    tasksnap_bpf::loader::open_and_load(
        skel::TaskIterSkelBuilder::default(),
        |open| {
            // One program that fails verification fails the whole object: load only what
            // the run needs.
            open.progs.dump_cmdline.set_autoload(cmdline == Cmdlines::All);
            // One iterator or the other: libbpf relocates only what it loads, and the rare
            // one's kernel types cost a load ~28 ms of CPU (task_iter.bpf.c, dump_one).
            open.progs.dump_task.set_autoload(!rare);
            open.progs.dump_task_rare.set_autoload(rare);
            open.progs.walk_tasks.set_autoload(walk);
            open.progs.copy_cmdlines.set_autoload(walk && cmdline != Cmdlines::No);
            open.progs.walk_tasks_lines.set_autoload(walk && cmdline == Cmdlines::All);
            open.progs.walk_listed.set_autoload(walk && list);
        },
        |e| format!("the kernel refused the BPF task iterator ({e}); needs Linux 5.8+ with BTF"),
    )
}

impl Programs {
    /// Loads the programs, the command-line programs `cmdline` names and the walk when
    /// `walk` (if one of those cannot load, `cmdline_unavailable` or `walk_unavailable` says
    /// why and the rest still works; `cmdline_unavailable` is about the sleepable iterator).
    ///
    /// The walk costs its verification (about 20 ms more per load here, 60 with its
    /// command-line variant: run with TASKSNAP_VERIFIER_STATS=1) and one RCU grace
    /// period to register its arena, more than it saves on a single pass: a one-shot
    /// tasksnap that loads its own programs leaves it out, and `tasksnap pin` puts it in.
    /// With `rare`, the iterator writes the signal and namespace blocks too.
    pub fn load(cmdline: Cmdlines, walk: bool, rare: bool) -> Result<Programs, Unavailable> {
        let start = sys::clock_ns(libc::CLOCK_MONOTONIC);
        let mut cmdline_unavailable = None;
        // The command-line programs the load that worked has.
        let mut with = cmdline;
        let mut walk_unavailable = (!walk).then(|| "not loaded".to_string());
        // The walk needs Linux 6.8 (open-coded task iterator, trusted arguments of global
        // functions), the sleepable command-line iterator Linux 5.18: whichever the kernel
        // refuses, keep the rest.
        // The list program (a live view's reads by change set, Linux 6.2's
        // bpf_task_from_pid) goes with the walk when the kernel takes it, else the walk
        // loads without it.
        let first = match open_and_load(cmdline, walk, rare, walk) {
            Ok(s) => Ok((s, walk)),
            Err(_) if walk => open_and_load(cmdline, walk, rare, false).map(|s| (s, false)),
            Err(why) => Err(why),
        };
        let (skel, listed) = match first {
            Ok(s) => s,
            Err(why) => {
                walk_unavailable = Some(why.to_string());
                let s = match open_and_load(cmdline, false, rare, false) {
                    Ok(s) => s,
                    Err(why) if cmdline != Cmdlines::No => {
                        cmdline_unavailable = Some(why.to_string());
                        with = Cmdlines::No;
                        match open_and_load(Cmdlines::No, walk, rare, false) {
                            Ok(s) if walk => {
                                walk_unavailable = None;
                                s
                            }
                            Ok(s) => s,
                            Err(_) => open_and_load(Cmdlines::No, false, rare, false)?,
                        }
                    }
                    Err(why) => return Err(why),
                };
                (s, false)
            }
        };
        let task_iter = if rare {
            &skel.progs.dump_task_rare
        } else {
            &skel.progs.dump_task
        };
        let link = task_iter
            .attach()
            .map_err(|e| Unavailable::Failed(format!("cannot attach the task iterator: {e}")))?;
        let mut links = Vec::new();
        let task_link = dup(link.as_fd())?;
        links.push(link);
        let mut cmd_link = None;
        if with == Cmdlines::All {
            match skel.progs.dump_cmdline.attach() {
                Ok(l) => {
                    cmd_link = Some(dup(l.as_fd())?);
                    links.push(l);
                }
                Err(e) => {
                    cmdline_unavailable = Some(format!("cannot attach the cmdline iterator: {e}"))
                }
            }
        } else if cmdline_unavailable.is_none() {
            cmdline_unavailable = Some("not loaded".into());
        }
        let task_prog = dup(task_iter.as_fd())?;
        let cfg = libbpf_rs::MapHandle::try_from(&skel.maps.reader_cfg)
            .map_err(|e| Unavailable::Failed(format!("cannot open the reader_cfg map: {e}")))?;
        let walker = if walk_unavailable.is_none() {
            Some(Walker {
                shared: false,
                prog: dup(skel.progs.walk_tasks.as_fd())?,
                // Loaded with the walk when command lines were asked for too.
                cmd_prog: if with == Cmdlines::Copy
                    || (with == Cmdlines::All && cmdline_unavailable.is_none())
                {
                    Some(dup(skel.progs.copy_cmdlines.as_fd())?)
                } else {
                    None
                },
                lines_prog: if with == Cmdlines::All && cmdline_unavailable.is_none() {
                    Some(dup(skel.progs.walk_tasks_lines.as_fd())?)
                } else {
                    None
                },
                list_prog: if listed {
                    Some(dup(skel.progs.walk_listed.as_fd())?)
                } else {
                    None
                },
                arenas: libbpf_rs::MapHandle::try_from(&skel.maps.arenas)
                    .map_err(|e| Unavailable::Failed(format!("cannot open the arenas map: {e}")))?,
            })
        } else {
            None
        };
        let load_ns = sys::clock_ns(libc::CLOCK_MONOTONIC).saturating_sub(start);
        Ok(Programs {
            task_prog,
            rare,
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
        if std::fs::symlink_metadata(&dir).is_err() {
            return Ok(None);
        }
        check_root_only(&dir)?;
        let get = |name: &str| -> Result<OwnedFd, Unavailable> {
            open_pin(&dir.join(name)).map_err(|e| {
                Unavailable::Failed(format!(
                    "cannot open pinned {}: {e}",
                    dir.join(name).display()
                ))
            })
        };
        let task_prog = get(PIN_TASK_PROG)?;
        let task_link = get(PIN_TASK_LINK)?;
        let (cmd_link, cmdline_unavailable) = match get(PIN_CMD_LINK) {
            Ok(fd) => (Some(fd), None),
            Err(why) => (None, Some(why.to_string())),
        };
        let cfg = libbpf_rs::MapHandle::from_pinned_path(dir.join(PIN_CFG))
            .map_err(|e| Unavailable::Failed(format!("cannot open the pinned reader_cfg map: {e}")))?;
        let walk = get(PIN_WALK_PROG).and_then(|prog| {
            let arenas = libbpf_rs::MapHandle::from_pinned_path(dir.join(PIN_ARENAS))
                .map_err(|e| Unavailable::Failed(format!("cannot open the pinned arenas map: {e}")))?;
            Ok(Walker {
                shared: true,
                prog,
                cmd_prog: get(PIN_CMD_PROG).ok(),
                lines_prog: get(PIN_LINES_PROG).ok(),
                list_prog: get(PIN_LIST_PROG).ok(),
                arenas,
            })
        });
        let (walker, walk_unavailable) = match walk {
            Ok(w) => (Some(w), None),
            Err(why) => (None, Some(why.to_string())),
        };
        let open_ns = sys::clock_ns(libc::CLOCK_MONOTONIC).saturating_sub(start);
        Ok(Some(Programs {
            task_prog,
            rare: false,
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
        let fail = |what: &str, e: io::Error| Unavailable::Failed(format!("{what}: {e}"));
        pins::ensure_bpffs()?;
        pins::make_private_dir(Path::new(PIN_ROOT))?;
        let dir = pin_dir();
        // bpffs refuses names with dots in them (reserved, kernel/bpf/inode.c bpf_lookup()).
        let tmp = Path::new(PIN_ROOT).join(format!("new_{TAG}_{}", std::process::id()));
        let _ = remove_pins(&tmp);
        pins::make_private_dir(&tmp)?;
        let mut objects = vec![
            (PIN_TASK_PROG, self.task_prog.as_fd()),
            (PIN_TASK_LINK, self.task_link.as_fd()),
            (PIN_CFG, self.cfg.as_fd()),
        ];
        if let Some(c) = &self.cmd_link {
            objects.push((PIN_CMD_LINK, c.as_fd()));
        }
        if let Some(w) = &self.walker {
            objects.push((PIN_WALK_PROG, w.prog.as_fd()));
            if let Some(c) = &w.cmd_prog {
                objects.push((PIN_CMD_PROG, c.as_fd()));
            }
            if let Some(l) = &w.lines_prog {
                objects.push((PIN_LINES_PROG, l.as_fd()));
            }
            if let Some(l) = &w.list_prog {
                objects.push((PIN_LIST_PROG, l.as_fd()));
            }
            objects.push((PIN_ARENAS, w.arenas.as_fd()));
        }
        for (name, fd) in objects {
            pin_private(&fd, &tmp.join(name))?;
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
        // Both in PIN_ROOT, which make_private_dir just checked is root's alone (0700, no
        // link): nobody else can plant anything there.
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
            rare: self.rare,
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
        iter_file(&self.task_link)
    }

    /// A fresh command-line iterator file, when there is a command-line iterator.
    pub fn cmdline_iter(&self) -> Option<io::Result<File>> {
        self.cmd_link.as_ref().map(iter_file)
    }

    /// A fresh iterator file over the threads of one process only
    /// (`bpf_iter_link_info.task.pid`, Linux 6.1): the kernel then visits that thread group
    /// instead of every task.
    pub fn process_iter(&self, pid: i32) -> io::Result<File> {
        iter_file(&process_iter_link(&self.task_prog, pid)?)
    }
}

/// Descriptors a loaded set of programs keeps open (programs, maps, links, BTF, and the
/// duplicates [`programs::Programs`] holds): 20 here without the walk and about 30 with it
/// (strace of `tasksnap ps -ef` and `tasksnap top`, Linux 6.18, libbpf 1.5), with some margin.
const DESCRIPTORS_LOADED: u64 = 22;
const DESCRIPTORS_LOADED_WITH_WALK: u64 = 32;

/// Descriptors a snapshot needs on top of the loaded programs, at most: an iterator file per
/// shard of the pass and of the command-line pass, the command-line pass's duplicates of the
/// program descriptors (`Programs::shared`, up to 8), and the few files the caller's thread
/// reads meanwhile (/proc/loadavg, the /proc listing, a procfs read of pid 1 on the caller's
/// thread). The procfs readers that fill in the rest have tables of their own.
fn descriptors_for_a_pass() -> u64 {
    let shards = super::settings::pass_shards();
    (shards + sys::cores().clamp(1, 8)) as u64 + 8 + 4
}

/// Whether this process can open the descriptors the backend needs (loading, with the walk
/// when `walk`, then a pass) under its open-files limit. Without them a pass would fail
/// half-way, or libbpf would (EMFILE, with its own messages on stderr): the backend is then
/// unavailable, with the reason, and `auto` uses procfs.
pub(super) fn enough_descriptors(walk: bool) -> Result<(), Unavailable> {
    let loaded = if walk {
        DESCRIPTORS_LOADED_WITH_WALK
    } else {
        DESCRIPTORS_LOADED
    };
    tasksnap_bpf::loader::enough_descriptors(loaded + descriptors_for_a_pass(), sys::nofile_limit())
}

/// The walk program and the arenas map, from a load or from pins.
pub struct Walker {
    /// True for a pinned set: its arenas map is shared by every tasksnap on the machine.
    pub(super) shared: bool,
    pub(super) prog: OwnedFd,
    /// The command-line copy (`copy_cmdlines`), loaded with the walk.
    pub(super) cmd_prog: Option<OwnedFd>,
    /// The walk with command lines (`walk_tasks_lines`), loaded with the copy.
    pub(super) lines_prog: Option<OwnedFd>,
    /// The records of a list of processes (`walk_listed`), loaded with the walk when the
    /// kernel takes it.
    pub(super) list_prog: Option<OwnedFd>,
    pub(super) arenas: libbpf_rs::MapHandle,
}

debug_showing!(Walker, shared);
