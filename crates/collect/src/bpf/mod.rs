//! The BPF backend: one pass of a task iterator (`iter/task`) returns a binary record per task
//! (layout in `record.h`, the single source of truth), instead of opening, reading and
//! parsing several /proc files per task.
//!
//! What the kernel gives the iterator directly: identity, base, credentials, CPU times,
//! faults, sizes and scheduler counters. What it does not (command lines, the executable, I/O
//! counters, wait channels, exact RSS, supplementary groups, the names of workqueue threads)
//! is filled from procfs for the tasks that need it ("valid bits": a group is either exact or
//! read from /proc, never left wrong). Tasks /proc shows that the iterator did not return are
//! read from /proc too (see [`BpfCollector::snapshot`]).
//!
//! The program is loaded once per process; every pass opens a fresh iterator file.

// Built without clang, most of this module is unused: the backend then only says why it is
// unavailable.
#![cfg_attr(not(tasksnap_bpf), allow(unused_imports, unused_variables, dead_code))]

#[cfg(tasksnap_bpf)]
mod decode;

use std::collections::HashMap;
use std::io::Read;

use tasksnap_model::{Groups, Query, Selector, Snapshot, SnapshotStats};

use crate::procfs::ProcfsCollector;
use crate::{sys, Collector, Error};

#[cfg(tasksnap_bpf)]
#[allow(
    clippy::all,
    clippy::pedantic,
    clippy::restriction,
    clippy::undocumented_unsafe_blocks,
    missing_docs,
    missing_debug_implementations,
    non_camel_case_types,
    unsafe_op_in_unsafe_fn,
    dead_code
)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/task_iter.skel.rs"));
}

/// How many tasks may be missing from a pass (forks and exits while it runs) before the
/// /proc listing is consulted to find them.
const RECONCILE_SLACK: u64 = 64;

/// How long the command-line pass may take before /proc is used instead.
#[cfg(tasksnap_bpf)]
const CMDLINE_PASS_DEADLINE: std::time::Duration = std::time::Duration::from_millis(1500);

/// Why the BPF backend cannot be used here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether the caller may load BPF programs: root, or CAP_BPF and CAP_PERFMON (Linux 5.8).
///
/// Only root is accepted for now: an iterator bypasses procfs's permission checks (hidepid,
/// ptrace access to other users' command lines), so a non-root caller holding the
/// capabilities would see more than /proc shows it. Until the backend filters for that, such
/// a caller gets the procfs backend.
pub fn privileged() -> Result<(), Unavailable> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Unavailable(
            "not root: a BPF task iterator would bypass procfs's permission checks, so \
             tasksnap uses it only for root"
                .into(),
        ));
    }
    Ok(())
}

/// The loaded iterator and the procfs reader used to fill in what it cannot give.
pub struct BpfCollector {
    #[cfg(tasksnap_bpf)]
    skel: skel::TaskIterSkel<'static>,
    #[cfg(tasksnap_bpf)]
    link: libbpf_rs::Link,
    /// The command-line iterator, when it loaded.
    #[cfg(tasksnap_bpf)]
    cmd_link: Option<libbpf_rs::Link>,
    /// Why command lines come from /proc, when they do.
    pub cmdline_from_procfs: Option<String>,
    procfs: ProcfsCollector,
    buf: Vec<u8>,
    /// How long loading took, ns (reported by `-v` and `bench`).
    pub load_ns: u64,
}

impl std::fmt::Debug for BpfCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpfCollector")
            .field("load_ns", &self.load_ns)
            .finish_non_exhaustive()
    }
}

impl BpfCollector {
    /// Loads the iterator, or says why it cannot be.
    pub fn new() -> Result<BpfCollector, Unavailable> {
        Self::with_cmdline(false)
    }

    /// Loads the iterator and, when `cmdline`, the sleepable command-line iterator too (when
    /// that one cannot load, command lines come from /proc and `cmdline_from_procfs` says why).
    pub fn with_cmdline(cmdline: bool) -> Result<BpfCollector, Unavailable> {
        privileged()?;
        let procfs = ProcfsCollector::new().map_err(|e| Unavailable(e.to_string()))?;
        Self::load(procfs, cmdline)
    }

    #[cfg(not(tasksnap_bpf))]
    fn load(_procfs: ProcfsCollector, _cmdline: bool) -> Result<BpfCollector, Unavailable> {
        Err(Unavailable(
            "this tasksnap was built without the BPF backend (clang was missing at build time)"
                .into(),
        ))
    }

    #[cfg(tasksnap_bpf)]
    fn open_and_load(cmdline: bool) -> Result<skel::TaskIterSkel<'static>, Unavailable> {
        use libbpf_rs::skel::{OpenSkel, SkelBuilder};

        // The skeleton borrows its object for its whole life; it lives as long as the process
        // (loaded once), so the object is leaked on purpose.
        let object: &'static mut std::mem::MaybeUninit<libbpf_rs::OpenObject> =
            Box::leak(Box::new(std::mem::MaybeUninit::uninit()));
        let mut open = skel::TaskIterSkelBuilder::default()
            .open(object)
            .map_err(|e| Unavailable(format!("cannot open the BPF object: {e}")))?;
        // One program that fails verification fails the whole object: load only what the
        // run needs.
        open.progs.dump_cmdline.set_autoload(cmdline);
        open.load().map_err(|e| {
            Unavailable(format!(
                "the kernel refused the BPF task iterator ({e}); needs Linux 5.8+ with BTF"
            ))
        })
    }

    #[cfg(tasksnap_bpf)]
    fn load(procfs: ProcfsCollector, cmdline: bool) -> Result<BpfCollector, Unavailable> {
        let start = sys::clock_ns(libc::CLOCK_MONOTONIC);
        let mut cmdline_from_procfs = None;
        let skel = match Self::open_and_load(cmdline) {
            Ok(s) => s,
            Err(why) if cmdline => {
                // The sleepable iterator needs Linux 5.18: keep the rest.
                cmdline_from_procfs = Some(why.0);
                Self::open_and_load(false)?
            }
            Err(why) => return Err(why),
        };
        let link = skel
            .progs
            .dump_task
            .attach()
            .map_err(|e| Unavailable(format!("cannot attach the task iterator: {e}")))?;
        let cmd_link = if cmdline && cmdline_from_procfs.is_none() {
            match skel.progs.dump_cmdline.attach() {
                Ok(l) => Some(l),
                Err(e) => {
                    cmdline_from_procfs = Some(format!("cannot attach the cmdline iterator: {e}"));
                    None
                }
            }
        } else {
            if !cmdline {
                cmdline_from_procfs = Some("not loaded".into());
            }
            None
        };
        let load_ns = sys::clock_ns(libc::CLOCK_MONOTONIC).saturating_sub(start);
        Ok(BpfCollector {
            skel,
            link,
            cmd_link,
            cmdline_from_procfs,
            procfs,
            buf: Vec::with_capacity(1 << 20),
            load_ns,
        })
    }

    /// One pass of the iterator with `groups`, raw records into `self.buf`.
    #[cfg(tasksnap_bpf)]
    fn pass(&mut self, groups: u32) -> Result<(), Error> {
        self.pass_of(groups, None)
    }

    /// An iterator link over the threads of one process only (`bpf_iter_link_info.task.pid`,
    /// Linux 6.1): the kernel then visits that thread group instead of every task.
    #[cfg(tasksnap_bpf)]
    fn process_link(&self, pid: i32) -> Result<libbpf_rs::Link, Error> {
        let mut info = libbpf_sys::bpf_iter_link_info::default();
        info.task.pid = pid as u32;
        let opts = libbpf_sys::bpf_iter_attach_opts {
            link_info: &mut info,
            link_info_len: std::mem::size_of::<libbpf_sys::bpf_iter_link_info>() as _,
            sz: std::mem::size_of::<libbpf_sys::bpf_iter_attach_opts>() as _,
            ..Default::default()
        };
        let prog = libbpf_rs::AsRawLibbpf::as_libbpf_object(&self.skel.progs.dump_task);
        // SAFETY: `prog` is a loaded program of this skeleton, alive as long as the skeleton;
        // `opts` and `info` outlive the call, which copies what it needs.
        let ptr = unsafe { libbpf_sys::bpf_program__attach_iter(prog.as_ptr(), &opts) };
        let ptr = std::ptr::NonNull::new(ptr).ok_or_else(|| {
            Error::Unsupported(format!(
                "cannot attach a one-process task iterator: {}",
                std::io::Error::last_os_error()
            ))
        })?;
        // SAFETY: libbpf returned a valid link it hands over to us.
        Ok(unsafe { libbpf_rs::Link::from_ptr(ptr) })
    }

    /// One pass with `groups` over every task, or over one process's threads.
    #[cfg(tasksnap_bpf)]
    fn pass_of(&mut self, groups: u32, process: Option<i32>) -> Result<(), Error> {
        if let Some(bss) = self.skel.maps.bss_data.as_deref_mut() {
            bss.groups = groups;
        }
        let one = match process {
            Some(pid) => Some(self.process_link(pid)?),
            None => None,
        };
        let link = one.as_ref().unwrap_or(&self.link);
        let mut iter = libbpf_rs::Iter::new(link)
            .map_err(|e| Error::Unsupported(format!("cannot open the task iterator: {e}")))?;
        self.buf.clear();
        iter.read_to_end(&mut self.buf)
            .map_err(|source| Error::Root {
                path: "bpf task iterator".into(),
                source,
            })?;
        Ok(())
    }

    /// The command-line pass, on its own thread under `deadline`: it takes each target's mmap
    /// lock, and one process stuck in mmap must not stall the listing. `None` when there is
    /// no command-line iterator or the pass missed the deadline (the abandoned thread finishes
    /// on its own); the caller then reads command lines from /proc, where a watchdog
    /// abandons the one read that blocks.
    #[cfg(tasksnap_bpf)]
    fn cmdline_pass(&mut self, deadline: std::time::Duration) -> Option<HashMap<i32, Vec<u8>>> {
        use libbpf_rs::MapCore;

        let link = self.cmd_link.as_ref()?;
        let shards = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 8);
        if let Some(bss) = self.skel.maps.bss_data.as_deref_mut() {
            bss.cmd_nshards = shards as u32;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let map = &self.skel.maps.cmd_shard_of;
        let mut registered: Vec<u32> = Vec::with_capacity(shards);
        for shard in 0..shards {
            let mut iter = libbpf_rs::Iter::new(link).ok()?;
            let tx = tx.clone();
            // The reader thread registers itself before reading; the map entry is read by
            // the program in that thread's read() calls.
            let (ready_tx, ready_rx) = std::sync::mpsc::channel::<u32>();
            let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
            std::thread::Builder::new()
                .name("tasksnap-cmdline".into())
                .spawn(move || {
                    // SAFETY: gettid has no arguments and cannot fail.
                    let tid = unsafe { libc::gettid() } as u32;
                    let _ = ready_tx.send(tid);
                    if go_rx.recv().is_err() {
                        return;
                    }
                    let mut buf = Vec::with_capacity(1 << 20);
                    let r = iter.read_to_end(&mut buf).map(|_| buf);
                    let _ = tx.send(r);
                })
                .ok()?;
            let tid = ready_rx.recv().ok()?;
            map.update(
                &tid.to_ne_bytes(),
                &(shard as u32).to_ne_bytes(),
                libbpf_rs::MapFlags::ANY,
            )
            .ok()?;
            registered.push(tid);
            go_tx.send(()).ok()?;
        }
        drop(tx);
        let start = std::time::Instant::now();
        let mut out = HashMap::new();
        let mut complete = true;
        for _ in 0..shards {
            let left = deadline.saturating_sub(start.elapsed());
            match rx.recv_timeout(left) {
                Ok(Ok(buf)) => out.extend(decode::cmdlines(&buf)),
                _ => {
                    complete = false;
                    break;
                }
            }
        }
        if complete {
            // Done with these reader threads: free their map entries for the next pass.
            for tid in registered {
                let _ = map.delete(&tid.to_ne_bytes());
            }
        }
        complete.then_some(out)
    }

    #[cfg(not(tasksnap_bpf))]
    fn pass(&mut self, _groups: u32) -> Result<(), Error> {
        Err(Error::Unsupported("built without the BPF backend".into()))
    }

    /// The raw bytes of one pass with base (and `cred`/`stat` when asked) records: the cost of
    /// the iterator alone, for `bench`.
    pub fn raw_pass(&mut self, cred: bool, stat: bool) -> Result<usize, Error> {
        self.pass(1 | if cred { 2 } else { 0 } | if stat { 4 } else { 0 })?;
        Ok(self.buf.len())
    }
}

impl Collector for BpfCollector {
    fn name(&self) -> &'static str {
        "bpf"
    }

    /// One iterator pass, assembled into the tasks the query selects; then the groups the
    /// kernel cannot give are read from /proc for those tasks only, and any task /proc lists
    /// that the iterator did not return is read from /proc entirely. (On this kind of VM the
    /// iterator does not return pid 1: reconciling with the /proc listing keeps every task
    /// /proc shows in the snapshot.)
    fn snapshot(&mut self, query: &Query) -> Result<Snapshot, Error> {
        self.snapshot_impl(query)
    }
}

impl BpfCollector {
    #[cfg(not(tasksnap_bpf))]
    fn snapshot_impl(&mut self, _query: &Query) -> Result<Snapshot, Error> {
        Err(Error::Unsupported("built without the BPF backend".into()))
    }

    #[cfg(tasksnap_bpf)]
    fn snapshot_impl(&mut self, query: &Query) -> Result<Snapshot, Error> {
        let taken_at_unix_ns = sys::clock_ns(libc::CLOCK_REALTIME);
        let taken_at_boottime_ns = sys::clock_ns(libc::CLOCK_BOOTTIME);
        let mut groups = query.groups;
        if matches!(
            query.selector,
            Selector::ChildrenOf(_) | Selector::Session(_) | Selector::ProcessGroup(_)
        ) {
            groups.base = true;
        }
        let one_process = match query.selector {
            Selector::Pid(p) | Selector::ThreadsOf(p) => Some(p),
            _ => None,
        };
        self.pass_of(decode::group_bits(&groups), one_process)?;
        let units = self.procfs.units();
        let records = decode::records(&self.buf).map_err(Error::Unsupported)?;
        let mut tasks = decode::assemble(&records, query, &groups, units);
        let mut stats = SnapshotStats::default();

        // Tasks /proc shows that the iterator did not return. On this kind of VM that is
        // pid 1 and its threads (init is protected: even root gets EACCES on
        // /proc/1/ns/pid), so pid 1 is checked directly; a full /proc listing (45 ms at
        // 50,000 tasks) is only taken when the kernel's task count says more are missing.
        let seen_tgids: std::collections::HashSet<i32> =
            records.iter().map(|r| r.hdr.tgid as i32).collect();
        let mut extra_threads = 0u64;
        let mut missing: Vec<i32> = Vec::new();
        if !seen_tgids.contains(&1) {
            missing.push(1);
            extra_threads += std::fs::read_dir("/proc/1/task").map_or(0, |d| d.count() as u64);
        }
        // The kernel's task count is global: inside a pid namespace it cannot tell what is
        // missing, so the listing is always taken there.
        let in_namespace = records.first().is_some_and(|r| r.hdr.ns_level > 0);
        let total = crate::choice::task_count(std::path::Path::new("/proc")).unwrap_or(0);
        let have = records.len() as u64 + extra_threads;
        if let Some(p) = one_process {
            // One process asked for: /proc is consulted for it alone if the iterator was
            // silent (pid 1 here, or a pid that is gone).
            missing = if seen_tgids.contains(&p) {
                Vec::new()
            } else {
                vec![p]
            };
        } else if in_namespace || have + RECONCILE_SLACK < total {
            missing = self
                .procfs
                .list_pids()?
                .into_iter()
                .filter(|p| !seen_tgids.contains(p))
                .collect();
            stats.reconciled_by_listing = true;
        }
        let wanted = |pid: i32| match query.selector {
            Selector::Pid(p) | Selector::ThreadsOf(p) => p == pid,
            _ => true,
        };
        for pid in missing.into_iter().filter(|&p| wanted(p)) {
            let sel = if query.wants_threads() {
                Selector::ThreadsOf(pid)
            } else {
                Selector::Pid(pid)
            };
            let mut q = Query::new(sel, groups);
            q.leader_as_process = query.leader_as_process;
            tasks.extend(self.procfs.snapshot(&q)?.tasks);
        }
        decode::filter(&mut tasks, query);

        // Command lines from the sleepable iterator, when it is there and finishes in time.
        let mut fill_groups = groups;
        if groups.cmdline {
            if let Some(mut cmds) = self.cmdline_pass(CMDLINE_PASS_DEADLINE) {
                let per_thread = query.wants_threads();
                for t in tasks.iter_mut() {
                    if decode::no_mm(t) {
                        t.cmdline = Some(Vec::new());
                    } else if per_thread {
                        // Threads share their process's command line.
                        t.cmdline = cmds.get(&t.id.tgid).cloned();
                    } else {
                        t.cmdline = cmds.remove(&t.id.tgid);
                    }
                }
                // What is still missing (flagged, or born after the pass) is read from /proc.
                fill_groups.cmdline = tasks.iter().any(|t| t.cmdline.is_none());
            } else if self.cmd_link.is_some() {
                stats.cmdline_timeouts += 1;
            }
        }

        // Groups the iterator cannot give: read them from /proc for these tasks.
        let fill = decode::procfs_groups(&fill_groups);
        if fill != Groups::default() {
            let only_cmdline = fill
                == Groups {
                    cmdline: true,
                    ..Groups::default()
                };
            let ids: Vec<(i32, i32)> = tasks
                .iter()
                .filter(|t| !only_cmdline || (t.cmdline.is_none() && !decode::no_mm(t)))
                .map(|t| (t.id.tgid, t.id.tid))
                .collect();
            let (filled, fill_stats) = self.procfs.fill(&ids, fill);
            stats.denied += fill_stats.denied;
            stats.cmdline_timeouts += fill_stats.cmdline_timeouts;
            decode::merge(&mut tasks, filled, &fill);
        }
        decode::fix_kernel_names(&mut tasks);
        if !query.groups.base {
            for t in &mut tasks {
                t.base = None;
            }
        }
        tasks.sort_unstable_by_key(|t| (t.id.tgid, t.id.tid));
        Ok(Snapshot {
            taken_at_unix_ns,
            taken_at_boottime_ns,
            boot_time_unix_s: self.procfs.boot_time(),
            backend: "bpf",
            tasks,
            stats,
        })
    }
}

#[cfg(all(test, tasksnap_bpf))]
mod probe_tests {
    use super::*;

    #[test]
    #[ignore = "diagnostic: prints which /proc tasks the iterator does not return"]
    fn which_tasks_does_the_iterator_miss() {
        let mut c = BpfCollector::new().expect("load");
        c.pass(1).expect("pass");
        let recs = decode::records(&c.buf).expect("records");
        let seen: std::collections::HashSet<u32> = recs.iter().map(|r| r.hdr.tgid).collect();
        let pids = c.procfs.list_pids().expect("pids");
        let missing: Vec<i32> = pids
            .into_iter()
            .filter(|p| !seen.contains(&(*p as u32)))
            .collect();
        eprintln!(
            "{} records; missing from the iterator: {missing:?}",
            recs.len()
        );
        for r in recs.iter().take(3) {
            eprintln!("{:?}", r.hdr);
        }
    }
}
