//! The exact source itself ([`BpfSource`]): loads states.bpf.c through the shared loader
//! (tasksnap-bpf), runs its iterator passes, drains the exit ring buffer and the off-CPU
//! stack hash, and turns them into a [`Sample`]. Compiled only when this build has the BPF
//! programs (see `tasksnap_bpf::select!` in lib.rs, which mounts this file as
//! `crate::states_bpf`; `states::bpf` re-exports it).
//!
//! Read incrementally ([`Options::incremental`], what a long-running sampler asks for): the
//! first sample is the loading pass over every thread; each later one runs `drain_states`,
//! which gives the threads that left a CPU, were woken, or are on a CPU or a run queue since
//! the previous drain, and every other thread is the sample before's, in the same state for
//! longer ([`extend`]). A read then costs the threads that changed, not every thread of
//! the host. A whole pass comes back every [`FULL_EVERY`] samples, and at once when the
//! kernel side lost anything (a full dirty queue, a full ring buffer at an exit), so a thread
//! whose exit record was lost or whose name was changed from outside is right again.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use crate::states::bpf::{privileged, proc_is_readers, Options};
use crate::states::{Mode, Sample, ThreadTotals};
use tasksnap_model::hash::{IdMap, IdSet};
use crate::collector::StateSource;
use tasksnap_model::TaskId;

/// Off-CPU time per (state, stack id), by thread: (global tid, start time), as the why hash
/// keys it (the thread's TaskId holds the caller's namespace ids).
type WhyByThread = IdMap<(i32, u64), Vec<(State, u32, u64)>>;
use tasksnap_model::states::{State, NSTATES};
use crate::states::symbolize::{self, Kallsyms};
use crate::error::Error;
use tasksnap_bpf::skel::states as skel;

/// `ST_F_*` of states.h (the skeleton generates types, not macros).
const F_EXITED: u32 = 1 << 0;
const F_KTHREAD: u32 = 1 << 2;

/// `ST_SEED_STACK_IDS` of states.h: stack ids from here on name a stack of the
/// `seed_stacks` hash (a wait that began before tracking did, its stack taken by the
/// iterator when it seeded the thread); below, one of the stack map.
const SEED_STACK_IDS: u32 = 0x4000_0000;

/// Reason ids from here up to [`SEED_STACK_IDS`] name a thread that held a waiter's CPU (the
/// `held` hash, `track_holders`), not a stack: the stack map's ids are below its size.
const HOLDER_IDS: u32 = 0x2000_0000;

/// `ST_F_DRAINED`: a record of `drain_states` (the ring buffer carries both kinds).
const F_DRAINED: u32 = 1 << 3;

/// An incremental source takes a whole pass every this many samples.
const FULL_EVERY: u32 = 60;

/// What an incremental source keeps between samples.
struct Held {
    /// Every live thread of the last sample.
    sample: Sample,
    /// Samples since the last whole pass.
    drains: u32,
    /// The kernel side's loss counters at the last sample: a new loss means a whole pass.
    lost: (u64, u64),
    /// The last whole pass's note about pid 1.
    pid1_note: Option<String>,
    /// When `sample` was handed out ([`Options::lend`]): that sample's time and thread count,
    /// until it comes back (`sample` is empty meanwhile).
    lent: Option<(u64, usize)>,
    /// The exited threads of the sample handed out, taken out of it when it is kept (a
    /// retain over every thread was ~1 ms a sample at 50,000).
    exited: Vec<TaskId>,
    /// The exited threads taken out since the last sample: listed among the next sample's
    /// changes (see [`BpfSource::last_drained`]), as rows gone.
    gone: Vec<TaskId>,
}

/// The identity of the thread a record is of.
fn exit_id(r: &skel::types::st_rec) -> TaskId {
    TaskId {
        tgid: r.tgid as i32,
        tid: r.tid as i32,
        start_time_ns: r.start_boottime_ns,
    }
}

/// Takes the threads `exited` lists out of `s` (those the sample has as exited), noting
/// their identities in `gone`.
fn drop_exited(s: &mut Sample, exited: &mut Vec<TaskId>, gone: &mut Vec<TaskId>) {
    for id in exited.drain(..) {
        if s.threads.get(&id).is_some_and(|t| t.exited) {
            s.threads.remove(&id);
            gone.push(id);
        }
    }
    debug_assert!(s.threads.values().all(|t| !t.exited), "an exited thread unlisted");
}

impl Held {
    /// `sample` handed out when lending ([`Options::lend`]), else a copy of it; what the
    /// next sample starts from (the sample without its exited threads) kept either way.
    fn hand_out(&mut self, mut sample: Sample, lend: bool, spare: Option<Sample>) -> Sample {
        if lend {
            self.lent = Some((sample.at_ns, sample.threads.len()));
            self.sample = Sample::new(Mode::Bpf, 0);
            return sample;
        }
        let out = match spare {
            Some(mut out) => {
                out.mode = sample.mode;
                out.at_ns = sample.at_ns;
                out.threads.clone_from(&sample.threads);
                out.reasons.clone_from(&sample.reasons);
                out.notes.clone_from(&sample.notes);
                out
            }
            None => sample.clone(),
        };
        drop_exited(&mut sample, &mut self.exited, &mut self.gone);
        self.sample = sample;
        self.lent = None;
        out
    }

    /// Takes back a lent sample: it is what the next one starts from again. `false` when
    /// `old` is not the one lent.
    fn take_back(&mut self, mut old: Sample) -> bool {
        if self.lent != Some((old.at_ns, old.threads.len())) {
            return false;
        }
        drop_exited(&mut old, &mut self.exited, &mut self.gone);
        self.sample = old;
        self.lent = None;
        true
    }
}

/// When the stack map holds more stacks than this, the ones no thread refers to any more are
/// deleted (the map has 16,384 entries; a full map loses new stacks).
const STACK_GC_AT: usize = 8192;

/// One entry of the why hash: the raw key (to delete it), whose thread (global tid, start
/// time), which wait, how long.
#[derive(Debug)]
struct WhyEntry {
    key: Vec<u8>,
    thread: (i32, u64),
    state: u32,
    stackid: i32,
    ns: u64,
    /// An entry of the `held` hash (its stack id a holder's reason id), not of `why`.
    held: bool,
}

/// The loaded accounting.
pub struct BpfSource {
    // Field order is drop order: the ring buffer and the links go before the skeleton.
    ringbuf: libbpf_rs::RingBuffer<'static>,
    exits: std::rc::Rc<std::cell::RefCell<Vec<skel::types::st_rec>>>,
    iter_link: libbpf_rs::Link,
    /// With only pids asked for: one iterator per process (its threads only), so that a pass
    /// costs the threads shown, not every task of the host.
    proc_links: Vec<OwnedFd>,
    /// Watching processes of which none is left: a pass reads nothing.
    nobody: bool,
    _links: Vec<libbpf_rs::Link>,
    skel: skel::StatesSkel<'static>,
    opts: Options,
    /// Kernel symbols, read at the first stack to name (see [`BpfSource::syms`]) from the
    /// file opened at load.
    syms: Option<Kallsyms>,
    kallsyms: Option<std::fs::File>,
    /// Stack ids already symbolized, and the holders' reasons.
    frames: HashMap<u32, Arc<[String]>>,
    /// The reason id of each thread (global tid, start time) that held a waiter's CPU.
    holders: HashMap<(u32, u64), u32>,
    /// Thread names already made (see [`comm_text`]).
    names: HashMap<[i8; 16], Comm>,
    buf: Vec<u8>,
    /// The last sample, when read incrementally.
    held: Option<Held>,
    /// The last drain's generation (`st_drain_args.gen`).
    gen: u32,
    /// A sample given back ([`StateSource::recycle`]): the next copy of the held one goes
    /// into its memory.
    spare: Option<Sample>,
    /// The threads the last sample's drain and exit records read (empty after a whole
    /// pass).
    drained_ids: Vec<TaskId>,
    /// How long loading and attaching took, ns.
    pub load_ns: u64,
}

debug_showing!(BpfSource, load_ns);

fn monotonic_ns() -> u64 {
    tasksnap_sys::clock_ns(libc::CLOCK_MONOTONIC)
}

/// A comm as text, and its exact bytes when they are not valid UTF-8.
type Comm = (Arc<str>, Option<Arc<[u8]>>);

/// A kernel `comm` as text: invalid UTF-8 replaced, and everything else kept (callers
/// escape control characters when they print), with the exact bytes when the text is not
/// them. Interned in `names`: a host's threads share a few thousand names, and a text made
/// per thread per pass was a tenth of a sample's CPU at 50,000 threads (made, then freed
/// with the sample).
fn comm_text(comm: &[i8; 16], names: &mut HashMap<[i8; 16], Comm>) -> Comm {
    if let Some(t) = names.get(comm) {
        return t.clone();
    }
    let bytes: Vec<u8> = comm.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    let text: Arc<str> = Arc::from(String::from_utf8_lossy(&bytes).as_ref());
    let exact = std::str::from_utf8(&bytes)
        .is_err()
        .then(|| Arc::from(bytes.as_slice()));
    // Names that are no longer used go when the table grows past any host's working set
    // (threads rename themselves: a table kept forever would only grow).
    if names.len() >= 1 << 16 {
        names.clear();
    }
    names.insert(*comm, (text.clone(), exact.clone()));
    (text, exact)
}

/// The records of a pass: in place when the buffer is aligned for them (a heap buffer is),
/// copied otherwise. Copying each 136-byte record out, once per use, was a twentieth of a
/// sample at 50,000 threads.
fn records(buf: &[u8]) -> std::borrow::Cow<'_, [skel::types::st_rec]> {
    // SAFETY: st_rec is a plain C struct of integers (states.h), for which every bit pattern
    // is valid; align_to hands out only the aligned middle part of the buffer.
    let (head, recs, _) = unsafe { buf.align_to::<skel::types::st_rec>() };
    if head.is_empty() {
        return std::borrow::Cow::Borrowed(recs);
    }
    std::borrow::Cow::Owned(
        buf.chunks_exact(std::mem::size_of::<skel::types::st_rec>())
            .map(|c| {
                // SAFETY: a chunk is exactly one st_rec (see above); read_unaligned needs no
                // alignment.
                unsafe { std::ptr::read_unaligned(c.as_ptr().cast::<skel::types::st_rec>()) }
            })
            .collect(),
    )
}

impl BpfSource {
    /// Loads and attaches the accounting, or says why it cannot be.
    pub fn load(opts: Options) -> Result<BpfSource, Error> {
        privileged()?;
        Self::load_incremental_if_it_can(opts)
    }

    fn load_incremental_if_it_can(mut opts: Options) -> Result<BpfSource, Error> {
        // Incremental only over every thread: with a filter each sample reads few threads
        // anyway, and a queue nobody drains would fill.
        opts.incremental &= opts.filter.pids.is_empty() && opts.filter.comms.is_empty();
        if opts.incremental {
            // The drain needs bpf_task_from_pid (Linux 6.2) and open-coded loops (6.4): an
            // older kernel refuses it, and whole passes go on as before.
            match Self::load_once(opts.clone()) {
                Ok(s) => return Ok(s),
                Err(_) => opts.incremental = false,
            }
        }
        Self::load_once(opts)
    }

    fn load_once(opts: Options) -> Result<BpfSource, Error> {
        let start = monotonic_ns();
        let skel = tasksnap_bpf::loader::open_and_load(
            skel::StatesSkelBuilder::default(),
            |open| {
                if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
                    ro.track_sleep = opts.track_sleep;
                    ro.track_holders = opts.track_holders;
                    ro.incremental = opts.incremental;
                }
                if !opts.incremental {
                    // Not loaded: the verifier's time, and kernels before 6.4.
                    open.progs.drain_states.set_autoload(false);
                    open.progs.on_wakeup.set_autoload(false);
                    open.progs.on_wakeup_new.set_autoload(false);
                    open.progs.on_exec.set_autoload(false);
                }
            },
            |e| {
                format!(
                    "the kernel refused the accounting programs ({e}); they need Linux 5.11+ \
                     with BTF (tp_btf, task storage, iter/task)"
                )
            },
        )
        .map_err(|why| Error::BpfUnavailable(why.to_string()))?;
        let attach = |p: &libbpf_rs::ProgramMut<'_>, what: &str| {
            p.attach()
                .map_err(|e| Error::BpfUnavailable(format!("cannot attach {what}: {e}")))
        };
        // The iterator first: its first pass (below) seeds every thread that the tracepoints
        // have not met yet.
        let iter_link = attach(&skel.progs.dump_states, "the task iterator")?;
        let mut links = vec![
            attach(&skel.progs.on_switch, "sched_switch")?,
            attach(&skel.progs.on_exit, "sched_process_exit")?,
        ];
        if opts.incremental {
            links.push(attach(&skel.progs.on_wakeup, "sched_wakeup")?);
            links.push(attach(&skel.progs.on_wakeup_new, "sched_wakeup_new")?);
            links.push(attach(&skel.progs.on_exec, "sched_process_exec")?);
        }
        // Opened now, while privileged (see Kallsyms::read); read at the first stack.
        let kallsyms = std::fs::File::open(&opts.kallsyms).ok();
        let exits = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let sink = exits.clone();
        let mut rb = libbpf_rs::RingBufferBuilder::new();
        rb.add(&skel.maps.exits, move |data: &[u8]| {
            if data.len() >= std::mem::size_of::<skel::types::st_rec>() {
                // SAFETY: the kernel side writes whole st_rec records (states.h), a plain
                // C struct of integers for which every bit pattern is valid; the length was
                // checked and read_unaligned needs no alignment.
                let r = unsafe {
                    std::ptr::read_unaligned(data.as_ptr().cast::<skel::types::st_rec>())
                };
                sink.borrow_mut().push(r);
            }
            0
        })
        .map_err(|e| Error::BpfUnavailable(format!("exit ring buffer: {e}")))?;
        let ringbuf = rb
            .build()
            .map_err(|e| Error::BpfUnavailable(format!("exit ring buffer: {e}")))?;
        let mut src = BpfSource {
            ringbuf,
            exits,
            iter_link,
            proc_links: Vec::new(),
            nobody: false,
            _links: links,
            skel,
            opts,
            syms: None,
            kallsyms,
            frames: HashMap::new(),
            holders: HashMap::new(),
            names: HashMap::new(),
            buf: Vec::with_capacity(1 << 20),
            held: None,
            gen: 0,
            drained_ids: Vec::new(),
            spare: None,
            load_ns: 0,
        };
        // Seed: every thread not yet met by a tracepoint starts from its current state. An
        // incremental source keeps this pass as its first sample.
        if src.opts.seed_all {
            if src.incremental() {
                let lost = src.losses();
                src.whole_sample(lost)
                    .map_err(|e| Error::BpfUnavailable(e.to_string()))?;
            } else {
                src.pass()
                    .map_err(|e| Error::BpfUnavailable(e.to_string()))?;
            }
        }
        if src.opts.filter.comms.is_empty() {
            let pids = src.opts.filter.pids.clone();
            for pid in pids {
                // A process that is gone (or a kernel before 6.1) keeps the full pass.
                match src.process_link(pid) {
                    Some(l) => src.proc_links.push(l),
                    None => {
                        src.proc_links.clear();
                        break;
                    }
                }
            }
        }
        src.load_ns = monotonic_ns().saturating_sub(start);
        Ok(src)
    }

    /// The threads the last sample read because they changed or exited, and those it no
    /// longer has (they exited in the sample before), when it was read incrementally
    /// (`None` after a whole pass): what a sample cost.
    pub fn last_drained(&self) -> Option<&[TaskId]> {
        (self.held.as_ref()?.drains > 0).then_some(self.drained_ids.as_slice())
    }

    /// Whether samples are read incrementally: asked for, every thread of the host (a
    /// filter's per-process links read few threads anyway).
    fn incremental(&self) -> bool {
        self.opts.incremental
            && self.proc_links.is_empty()
            && self.opts.filter.pids.is_empty()
            && self.opts.filter.comms.is_empty()
    }

    /// Reports only the threads `which` names from now on, with one iterator per process
    /// watched, so that a sample costs the processes watched, not the host. `tasksnap top`
    /// watches the rows on screen. The accounting itself never stops: a process watched
    /// later has its totals since loading. Processes that are gone are skipped; with none
    /// left to watch, a sample reads nothing.
    pub fn watch(&mut self, which: crate::states::Watched<'_>) {
        self.proc_links.clear();
        self.opts.filter.comms.clear();
        self.held = None;
        let pids = match which {
            crate::states::Watched::Every => {
                self.opts.filter.pids.clear();
                self.nobody = false;
                return;
            }
            crate::states::Watched::Only(pids) => pids,
        };
        let mut kept = Vec::with_capacity(pids.len());
        for &pid in pids {
            if let Some(l) = self.process_link(pid) {
                self.proc_links.push(l);
                kept.push(pid);
            }
        }
        // The seeding pass over every task left a buffer sized for the host.
        self.buf = Vec::with_capacity(1 << 16);
        self.nobody = kept.is_empty();
        // Nobody left: a filter that matches no process, so that exit records are not
        // reported for every process either.
        self.opts.filter.pids = if self.nobody { vec![i32::MIN] } else { kept };
    }

    /// An iterator link over the threads of one process only (the shared loader's
    /// [`tasksnap_bpf::loader::process_iter_link`], as crates/collect uses for one-process
    /// queries).
    fn process_link(&self, pid: i32) -> Option<OwnedFd> {
        tasksnap_bpf::loader::process_iter_link(&self.skel.progs.dump_states.as_fd(), pid).ok()
    }

    /// One iterator pass (over the asked-for processes, or every task) into `self.buf`;
    /// returns the number of records ([`records`] decodes them).
    fn pass(&mut self) -> Result<usize, Error> {
        use std::io::Read;

        self.buf.clear();
        if self.nobody {
            return Ok(0);
        }
        let links: Vec<BorrowedFd<'_>> = if self.proc_links.is_empty() {
            vec![self.iter_link.as_fd()]
        } else {
            self.proc_links.iter().map(|l| l.as_fd()).collect()
        };
        for link in links {
            let mut iter = tasksnap_bpf::loader::iter_file(&link)
                .map_err(|e| Error::Bpf(format!("cannot open the task iterator: {e}")))?;
            iter.read_to_end(&mut self.buf)
                .map_err(|source| Error::Io {
                    path: "bpf task iterator".into(),
                    error: source,
                })?;
        }
        Ok(self.buf.len() / std::mem::size_of::<skel::types::st_rec>())
    }

    /// One drain (`drain_states`, run until the queue holds no older entry, the ring buffer
    /// emptied between runs): the records of the threads that changed, and the drain's
    /// "now" (the scheduler clock the other threads are extended to). Exit records that
    /// arrived meanwhile stay in `self.exits`.
    fn drain(&mut self, gen: u32) -> Result<(Vec<skel::types::st_rec>, u64), Error> {
        use std::os::fd::AsFd;

        let mut args = skel::types::st_drain_args {
            gen,
            ..Default::default()
        };
        let mut drained = Vec::new();
        // Each run stops with a quarter of the ring buffer left; 2^16 runs are far more
        // than any host's threads need.
        for _ in 0..1 << 16 {
            tasksnap_bpf::loader::run_syscall(&self.skel.progs.drain_states.as_fd(), &mut args)
                .map_err(|e| Error::Bpf(format!("draining the threads that changed: {e}")))?;
            self.ringbuf
                .consume()
                .map_err(|e| Error::Bpf(format!("draining the exit ring buffer: {e}")))?;
            // In order: a thread drained twice (woken again before its tag came round)
            // has its later record last, and the later one wins.
            let mut all = self.exits.borrow_mut();
            all.retain(|r| {
                let d = r.flags & F_DRAINED != 0;
                if d {
                    drained.push(*r);
                }
                !d
            });
            if args.done != 0 {
                break;
            }
        }
        Ok((drained, args.now_ns))
    }

    /// The kernel side's loss counters: dirty queue full, exit ring buffer full.
    fn losses(&self) -> (u64, u64) {
        self.skel
            .maps
            .bss_data
            .as_deref()
            .map_or((0, 0), |b| (b.dirty_lost, b.lost_exits))
    }

    /// Off-CPU ns per ((tid, start time), state, stack id) so far.
    fn why(&mut self) -> Result<Vec<WhyEntry>, Error> {
        use libbpf_rs::MapCore;

        let map = &self.skel.maps.why;
        let mut out = Vec::new();
        // Batches of 512: each batch's key and value buffers are allocated up front, and the
        // hash is usually small (4096 cost ~0.8 ms a sample for an empty hash).
        let batch = map
            .lookup_batch(512, libbpf_rs::MapFlags::ANY, libbpf_rs::MapFlags::ANY)
            .map_err(|e| Error::Bpf(format!("reading the off-CPU stack hash: {e}")))?;
        let size = std::mem::size_of::<skel::types::st_why_key>();
        for (k, v) in batch {
            if k.len() < size || v.len() < 8 {
                continue;
            }
            // SAFETY: a key of the why map is a whole st_why_key (states.h), plain integers.
            let key =
                unsafe { std::ptr::read_unaligned(k.as_ptr().cast::<skel::types::st_why_key>()) };
            let mut ns = [0u8; 8];
            ns.copy_from_slice(&v[..8]);
            out.push(WhyEntry {
                key: k,
                thread: (key.tid as i32, key.start_boottime_ns),
                state: key.state,
                stackid: key.stackid,
                ns: u64::from_ne_bytes(ns),
                held: false,
            });
        }
        if self.opts.track_holders {
            self.held(&mut out)?;
        }
        Ok(out)
    }

    /// The `held` hash's entries, as run-queue reasons: each holder a reason id of its own
    /// (kept while the source lives; its text the holder's name and thread id).
    fn held(&mut self, out: &mut Vec<WhyEntry>) -> Result<(), Error> {
        use libbpf_rs::MapCore;

        let batch: Vec<(Vec<u8>, Vec<u8>)> = self
            .skel
            .maps
            .held
            .lookup_batch(512, libbpf_rs::MapFlags::ANY, libbpf_rs::MapFlags::ANY)
            .map_err(|e| Error::Bpf(format!("reading the CPU holders' hash: {e}")))?
            .collect();
        let (ksize, vsize) = (
            std::mem::size_of::<skel::types::st_held_key>(),
            std::mem::size_of::<skel::types::st_held>(),
        );
        for (k, v) in batch {
            if k.len() < ksize || v.len() < vsize {
                continue;
            }
            // SAFETY: a key and a value of the held map are whole st_held_key and st_held
            // (states.h), plain integers and bytes; read_unaligned needs no alignment.
            let (key, value) = unsafe {
                (
                    std::ptr::read_unaligned(k.as_ptr().cast::<skel::types::st_held_key>()),
                    std::ptr::read_unaligned(v.as_ptr().cast::<skel::types::st_held>()),
                )
            };
            let id = self.holder_id(key.holder_tid, key.holder_start_boottime_ns, &value.comm);
            out.push(WhyEntry {
                key: k,
                thread: (key.tid as i32, key.start_boottime_ns),
                state: State::Runnable.index() as u32,
                stackid: id as i32,
                ns: value.ns,
                held: true,
            });
        }
        Ok(())
    }

    /// The reason id of a thread that held a waiter's CPU, its text made on first sight:
    /// `held by NAME (TID)`, the thread id as the initial pid namespace numbers it.
    fn holder_id(&mut self, tid: u32, start_ns: u64, comm: &[i8; 16]) -> u32 {
        if let Some(&id) = self.holders.get(&(tid, start_ns)) {
            return id;
        }
        // Ids are not reused while the source lives; past the range, the oldest go.
        if self.holders.len() >= (SEED_STACK_IDS - HOLDER_IDS) as usize {
            self.holders.clear();
        }
        let id = HOLDER_IDS + self.holders.len() as u32;
        let (name, _) = comm_text(comm, &mut self.names);
        let name: String = name.chars().flat_map(char::escape_default).collect();
        self.frames
            .insert(id, Arc::from(vec![format!("held by {name} ({tid})")]));
        self.holders.insert((tid, start_ns), id);
        id
    }

    /// The map a stack id names a stack of: the stack map, or the seeded waits' hash.
    fn stack_map(&self, id: u32) -> &libbpf_rs::Map<'static> {
        if id >= SEED_STACK_IDS {
            &self.skel.maps.seed_stacks
        } else {
            &self.skel.maps.stacks
        }
    }

    /// Kernel symbols, read at the first stack that needs them: /proc/kallsyms is ~5 MB of
    /// text the kernel formats on each read (~50 ms of CPU), and a host where nothing waits
    /// in D (or a run without `--sleep`) may never need them. Read after the programs were
    /// loaded, as they are by then: a stack starts in the JIT-compiled on_switch
    /// (`bpf_prog_<tag>_on_switch`), which must be named to be trimmed. Unreadable, the
    /// frames are addresses.
    fn syms(&mut self) -> &Kallsyms {
        let file = &mut self.kallsyms;
        self.syms.get_or_insert_with(|| {
            file.take()
                .and_then(|f| Kallsyms::read(f).ok())
                .unwrap_or_default()
        })
    }

    /// The frames of a stack id, symbolized and trimmed (cached; ids are stable while the
    /// stack is in its map).
    fn stack_frames(&mut self, id: u32) -> Arc<[String]> {
        use libbpf_rs::MapCore;

        if let Some(f) = self.frames.get(&id) {
            return f.clone();
        }
        let raw = self
            .stack_map(id)
            .lookup(&id.to_ne_bytes(), libbpf_rs::MapFlags::ANY)
            .ok()
            .flatten()
            .unwrap_or_default();
        // A seeded wait's stack is zeros after its last frame.
        let addrs: Vec<u64> = raw
            .chunks_exact(8)
            .map(|c| {
                let mut a = [0u8; 8];
                a.copy_from_slice(c);
                u64::from_ne_bytes(a)
            })
            .take_while(|&a| a != 0)
            .collect();
        let mut frames = symbolize::trim(self.syms().frames(&addrs));
        if frames.is_empty() {
            frames.push("[stack lost]".into());
        }
        let f: Arc<[String]> = Arc::from(frames);
        self.frames.insert(id, f.clone());
        f
    }

    /// A note when the filter selects pid 1 and the iterator did not return it. On this kind
    /// of VM (a protected init, see docs/bpf.md) the iterator skips pid 1 and its threads, and
    /// the programs do not run in their context either (their switch-outs never reach
    /// sched_switch: the task storage read through a pidfd showed RUNNING -> RUNNING
    /// transitions only), so no exact figure can be given for them. `seen_pid1` is about the
    /// reader's namespace's pid 1 (inside a child namespace, its init: visible), and its name
    /// is taken from /proc only when /proc is that namespace's.
    fn pid1_note(&self, seen_pid1: bool) -> Option<String> {
        if seen_pid1 || !proc_is_readers(&self.opts.proc_root) {
            return None;
        }
        let stat = std::fs::read(self.opts.proc_root.join("1/stat")).ok()?;
        let comm = crate::states::procfs::thread_stat(&stat)?.comm;
        self.opts.filter.matches(1, &comm).then(|| {
            format!(
                "pid 1 ({comm}) and its threads are hidden from BPF on this host (the task \
                 iterator skips them and their context switches are not traced): not shown; \
                 `--mode procfs -p 1` shows them"
            )
        })
    }

    fn delete_why(&self, entries: &[&WhyEntry]) {
        use libbpf_rs::MapCore;

        for e in entries {
            let map = if e.held {
                &self.skel.maps.held
            } else {
                &self.skel.maps.why
            };
            let _ = map.delete(&e.key);
        }
    }

    /// Deletes stacks no thread of `sample` (every thread the source holds) refers to any
    /// more, when the map is filling up.
    fn collect_stacks(&mut self, sample: &mut Sample) {
        use libbpf_rs::MapCore;

        if self.frames.len() < STACK_GC_AT {
            return;
        }
        let referenced: IdSet<u32> = sample
            .threads
            .values()
            .flat_map(|t| t.reasons.iter().map(|r| r.1))
            .collect();
        sample.reasons.retain(|id, _| referenced.contains(id));
        let unused: Vec<u32> = self
            .frames
            .keys()
            .copied()
            .filter(|id| !referenced.contains(id))
            .collect();
        for id in unused {
            if (HOLDER_IDS..SEED_STACK_IDS).contains(&id) {
                continue; // a holder's text, no stack: kept with its id
            }
            // A thread blocking on this very stack after the pass would find its frames gone:
            // its reason then reads "[stack lost]" once. Rare, and only on a full map.
            let _ = self.stack_map(id).delete(&id.to_ne_bytes());
            self.frames.remove(&id);
        }
    }

    fn sample_whole_or_changed(&mut self) -> Result<Sample, Error> {
        // The losses as they are before this sample is read: one counted while it is read
        // (exits are likeliest to be lost then) makes the next one a whole pass.
        let lost = self.losses();
        if self.incremental() {
            if let Some(held) = self.held.take() {
                // A lent sample not given back: nothing to start from.
                if held.drains + 1 < FULL_EVERY && lost == held.lost && held.lent.is_none() {
                    return self.changed_sample(held, lost);
                }
            }
        }
        self.whole_sample(lost)
    }

    /// A sample from one pass over every thread (the reasons, the exits since the last
    /// sample); kept as the start of the next one when reading incrementally.
    fn whole_sample(&mut self, lost: (u64, u64)) -> Result<Sample, Error> {
        let why = self.why()?;
        let nrecs = self.pass()?;
        // The pass's bytes are taken out of self while they are decoded (the loop below needs
        // &mut self for symbols) and put back for the next pass.
        let buf = std::mem::take(&mut self.buf);
        let recs = records(&buf);
        let at_ns = monotonic_ns();
        self.ringbuf
            .consume()
            .map_err(|e| Error::Bpf(format!("draining the exit ring buffer: {e}")))?;
        // Records of an earlier drain are older than this pass: only the exits count.
        let exits: Vec<skel::types::st_rec> = self
            .exits
            .borrow_mut()
            .drain(..)
            .filter(|r| r.flags & F_DRAINED == 0)
            .collect();
        let why_of = why_by_thread(&why);
        // Which threads are alive matters only for cleaning the why hash: not built otherwise
        // (two sets of every thread of the host would cost more than the rest of a sample).
        // Sets of every thread of the host are hashed with the model's thread hasher: SipHash
        // over 50,000 (tid, start time) pairs was milliseconds of every sample.
        let live_threads: IdSet<(i32, u64)> = if why.is_empty() {
            IdSet::default()
        } else {
            recs.iter()
                .map(|r| (r.global_tid as i32, r.start_boottime_ns))
                .collect()
        };
        let mut sample = Sample::new(Mode::Bpf, at_ns);
        sample.threads.reserve(nrecs + exits.len());
        // The reader's namespace's pid 1 (records are numbered as there).
        let seen_pid1 = recs.iter().any(|r| r.tid == 1);
        let pid1_note = if (self.proc_links.is_empty() && !self.nobody)
            || self.opts.filter.pids.contains(&1)
        {
            self.pid1_note(seen_pid1)
        } else {
            None
        };
        sample.notes.extend(pid1_note.clone());
        for r in recs.iter() {
            self.put(r, false, &why_of, &mut sample);
        }
        for r in &exits {
            self.put(r, true, &why_of, &mut sample);
        }
        self.finish(&mut sample, &why, Some(&live_threads), &exits);
        self.buf = buf;
        if self.incremental() {
            let mut held = Held {
                sample: Sample::new(Mode::Bpf, 0),
                drains: 0,
                lost,
                pid1_note,
                lent: None,
                exited: exits.iter().map(exit_id).collect(),
                gone: Vec::new(),
            };
            let out = held.hand_out(sample, self.opts.lend, None);
            self.held = Some(held);
            return Ok(out);
        }
        Ok(sample)
    }

    /// A sample from `held` (the last one) and one drain: the threads that changed are read,
    /// the others are extended to the drain's "now" in the state they were in.
    fn changed_sample(&mut self, mut held: Held, lost: (u64, u64)) -> Result<Sample, Error> {
        let why = self.why()?;
        self.gen = self.gen.wrapping_add(1).max(1);
        let (drained, now_ns) = self.drain(self.gen)?;
        let exits: Vec<skel::types::st_rec> = self.exits.borrow_mut().drain(..).collect();
        let why_of = why_by_thread(&why);
        let mut sample = std::mem::replace(&mut held.sample, Sample::new(Mode::Bpf, 0));
        sample.at_ns = monotonic_ns();
        sample.notes.clear();
        sample.notes.extend(held.pid1_note.clone());
        extend(&mut sample, now_ns);
        self.drained_ids.clear();
        // The exited threads the last sample reported, gone from this one.
        self.drained_ids.append(&mut held.gone);
        for r in &drained {
            self.drained_ids.push(TaskId {
                tgid: r.tgid as i32,
                tid: r.tid as i32,
                start_time_ns: r.start_boottime_ns,
            });
            self.put(r, false, &why_of, &mut sample);
        }
        let drained_here: tasksnap_model::hash::IdSet<TaskId> =
            self.drained_ids.iter().copied().collect();
        for r in &exits {
            let id = exit_id(r);
            // A row only taken on (not read by this drain) was extended past the exit: the
            // exit record's totals are the thread's, not the larger sum.
            if !drained_here.contains(&id) {
                sample.threads.remove(&id);
            }
            self.drained_ids.push(id);
            self.put(r, true, &why_of, &mut sample);
        }
        self.finish(&mut sample, &why, None, &exits);
        held.exited = exits.iter().map(exit_id).collect();
        let out = held.hand_out(sample, self.opts.lend, self.spare.take());
        held.drains += 1;
        held.lost = lost;
        self.held = Some(held);
        Ok(out)
    }

    /// One record into `sample`: its thread's totals with their wait reasons (the why hash's
    /// entries and the wait not yet in it), unless the filter leaves the thread out. A pass's
    /// or a drain's record replaces what the sample held; an exit record is merged (the
    /// later totals win) and marks the thread exited.
    fn put(
        &mut self,
        r: &skel::types::st_rec,
        exited: bool,
        why_of: &WhyByThread,
        sample: &mut Sample,
    ) {
        if !self.opts.filter.pids.is_empty()
            && self.opts.filter.comms.is_empty()
            && !self.opts.filter.pids.contains(&(r.tgid as i32))
        {
            return; // the common case, decided without building the name
        }
        let (comm, comm_bytes) = comm_text(&r.comm, &mut self.names);
        if !self.opts.filter.matches(r.tgid as i32, &comm) {
            return;
        }
        let mut state_ns = [0u64; NSTATES];
        state_ns.copy_from_slice(&r.ns[..NSTATES]);
        let current = State::from_index(r.cur_state);
        let wait_state = State::from_index(r.wait_state);
        let mut reasons = why_of
            .get(&(r.global_tid as i32, r.start_boottime_ns))
            .cloned()
            .unwrap_or_default();
        // The blocked time of the last wait not yet in the hash (it is added at the
        // thread's next switch-out), under its stack (a wait that began before tracking did
        // has the one the iterator took when it seeded the thread).
        let keeps =
            wait_state == State::Disk || (self.opts.track_sleep && wait_state == State::Sleeping);
        let mut wait_reason = None;
        // A wait going on is named even with nothing counted yet: a whole pass at load
        // (an incremental source's first sample) meets waits that began just then, and a
        // thread that does not change is only taken on from this record.
        let ongoing = current == wait_state && !exited;
        if keeps && (r.pending_why_ns > 0 || ongoing) && r.stackid >= 0 {
            let id = r.stackid as u32;
            if ongoing {
                wait_reason = Some(id);
            }
            match reasons.iter_mut().find(|x| x.0 == wait_state && x.1 == id) {
                Some(x) => x.2 += r.pending_why_ns,
                None => reasons.push((wait_state, id, r.pending_why_ns)),
            }
        }
        for &(_, id, _) in &reasons {
            if let std::collections::hash_map::Entry::Vacant(v) = sample.reasons.entry(id) {
                v.insert(self.stack_frames(id));
            }
        }
        let t = ThreadTotals {
            id: TaskId {
                tgid: r.tgid as i32,
                tid: r.tid as i32,
                start_time_ns: r.start_boottime_ns,
            },
            comm,
            comm_bytes,
            kernel_thread: r.flags & F_KTHREAD != 0,
            state_ns,
            samples: [0; NSTATES],
            current: Some(current),
            reasons,
            wait_reason,
            seen_at_ns: r.now_ns,
            exited: exited || r.flags & F_EXITED != 0,
        };
        let key = t.id;
        let sum = |x: &ThreadTotals| x.state_ns.iter().sum::<u64>();
        match sample.threads.get_mut(&key) {
            // Seen by the pass (or held) and in the exit buffer: the later (larger) totals
            // win, and the thread is reported as exited.
            Some(old) if exited => {
                if sum(&t) > sum(old) {
                    *old = t;
                }
                old.exited = true;
            }
            Some(old) => *old = t,
            None => {
                sample.threads.insert(key, t);
            }
        }
    }

    /// What every sample ends with: the /proc stacks' frames, the why hash's entries of
    /// threads that are gone deleted (`live`: every thread alive, when a whole pass knows
    /// it; else only the exited ones go), the stack map kept from filling, and the losses.
    fn finish(
        &mut self,
        sample: &mut Sample,
        why: &[WhyEntry],
        live: Option<&IdSet<(i32, u64)>>,
        exits: &[skel::types::st_rec],
    ) {
        // Off-CPU entries of threads that are gone (their last totals are in this sample)
        // are deleted so the hash does not fill up.
        let exited: IdSet<(i32, u64)> = exits
            .iter()
            .map(|r| (r.global_tid as i32, r.start_boottime_ns))
            .collect();
        let stale: Vec<&WhyEntry> = why
            .iter()
            .filter(|w| exited.contains(&w.thread) || live.is_some_and(|l| !l.contains(&w.thread)))
            .collect();
        self.delete_why(&stale);
        self.collect_stacks(sample);
        if let Some(bss) = self.skel.maps.bss_data.as_deref() {
            if bss.lost_exits > 0 {
                sample.notes.push(format!(
                    "{} thread exits were lost (ring buffer full): those threads are missing \
                     from the intervals they exited in",
                    bss.lost_exits
                ));
            }
            if bss.lost_stacks > 0 {
                sample.notes.push(format!(
                    "{} off-CPU stacks could not be recorded (maps full)",
                    bss.lost_stacks
                ));
            }
            if bss.lost_storage > 0 {
                sample.notes.push(format!(
                    "{} transitions were not accounted (task storage busy or out of memory)",
                    bss.lost_storage
                ));
            }
        }
    }
}

/// The why hash's entries by thread (global tid, start time).
fn why_by_thread(why: &[WhyEntry]) -> WhyByThread {
    let mut why_of = WhyByThread::default();
    for w in why {
        if w.stackid >= 0 {
            why_of.entry(w.thread).or_default().push((
                State::from_index(w.state),
                w.stackid as u32,
                w.ns,
            ));
        }
    }
    why_of
}

/// Every thread of `sample` taken on to `now_ns` (the scheduler clock) in the state it was
/// in: the time since it was seen goes to that state, and to its wait's reason when the
/// wait goes on. Exact for a thread that did not change since (drain_states gives every
/// one that did).
fn extend(sample: &mut Sample, now_ns: u64) {
    for t in sample.threads.values_mut() {
        let dt = now_ns.saturating_sub(t.seen_at_ns);
        if dt == 0 {
            continue;
        }
        if let Some(cur) = t.current {
            t.state_ns[cur.index()] += dt;
            if let Some(id) = t.wait_reason {
                if let Some(x) = t.reasons.iter_mut().find(|x| x.0 == cur && x.1 == id) {
                    x.2 += dt;
                }
            }
        }
        t.seen_at_ns = now_ns;
    }
}

impl StateSource for BpfSource {
    fn sample(&mut self) -> Result<Sample, Error> {
        self.sample_whole_or_changed()
    }

    fn changed(&self) -> Option<&[TaskId]> {
        self.last_drained()
    }

    fn recycle(&mut self, old: Sample) {
        match &mut self.held {
            Some(h) if h.lent.is_some() => {
                // Not the one lent: the next sample is a whole pass.
                let _ = h.take_back(old);
            }
            Some(_) => self.spare = Some(old),
            None => {}
        }
    }

    fn held_bytes(&self) -> usize {
        use std::mem::size_of;
        let samples = self.held.as_ref().map(|h| &h.sample).into_iter().chain(&self.spare);
        samples.map(crate::footprint::sample).sum::<usize>()
            + self.buf.capacity()
            + crate::footprint::table_bytes(self.names.capacity(), size_of::<([i8; 16], Comm)>())
            + self.drained_ids.capacity() * size_of::<TaskId>()
    }
}
