//! The BPF exit source ([`BpfExits`]): loads exits.bpf.c through the shared loader
//! (tasksnap-bpf), with the reader's pid namespace set before load, attaches it, and drains
//! its ring buffer into [`Exit`]s. A reader thread of its own empties the ring buffer as
//! records come (the kernel wakes it when the buffer goes from empty to not), so the buffer
//! only has to hold what arrives between two wakeups, not between two samples: at 20,000
//! exits a second a 4 MiB buffer, 5,800 records, dropped 70% of a 1 s sample's; the
//! exits then wait in memory, at most [`Options::max_pending_exits`]. Compiled only when this build has the BPF programs (see
//! `tasksnap_bpf::select!` in lib.rs, which mounts this file as `crate::exits_bpf`;
//! `exits` re-exports it). Layouts come from exits.h through the generated skeleton.

use std::cell::RefCell;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::Arc;

use tasksnap_bpf::skel::exits as skel;
use tasksnap_model::{CmdlineMissing, Exit, ExitBatch, TaskId};

use crate::exits::common::{privileged, reader_pid_ns_inum, split_cputime, Handoff, Options};
use crate::error::Error;

/// `EX_F_*` of exits.h (the skeleton generates types, not macros).
const F_NO_MM: u32 = 1 << 0;
const F_ARGS_FAULT: u32 = 1 << 1;
const F_ARGS_CUT: u32 = 1 << 2;
const F_THREADS_CUT: u32 = 1 << 3;
const F_KTHREAD: u32 = 1 << 4;

/// The loaded exit program, and the thread that reads its ring buffer.
pub struct BpfExits {
    /// What the reader thread hands over.
    handoff: Arc<Handoff>,
    /// Stops and joins the reader when dropped (before the links and the skeleton).
    _stop: crate::exits::common::Stop,
    _link: libbpf_rs::Link,
    /// After `_link` (drop order): a record made at exit waits for its thread's last switch.
    _switch_link: libbpf_rs::Link,
    skel: skel::ExitsSkel<'static>,
    /// The drop counter's total at the previous drain.
    dropped_before: u64,
    /// How long loading and attaching took, ns.
    pub load_ns: u64,
}

debug_showing!(BpfExits, load_ns);

/// An exit record as the model's [`Exit`].
fn exit_of(r: &skel::types::ex_rec, page_size_bytes: u64, tick_ns: u64) -> Exit {
    let comm: Vec<u8> = r
        .comm
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    let len = (r.args_len as usize).min(r.args.len());
    let cmdline: Vec<u8> = r.args[..len].iter().map(|&c| c as u8).collect();
    let cmdline_missing = if r.flags & F_NO_MM != 0 {
        Some(CmdlineMissing::NoMemory)
    } else if r.flags & F_ARGS_FAULT != 0 {
        Some(CmdlineMissing::Unreadable)
    } else if r.flags & F_ARGS_CUT != 0 {
        Some(CmdlineMissing::Cut)
    } else {
        None
    };
    let (utime_ns, stime_ns) = split_cputime(r.runtime_ns, r.utime_ns, r.stime_ns);
    Exit {
        id: TaskId {
            tgid: r.tgid as i32,
            tid: r.tgid as i32,
            start_time_ns: r.start_boottime_ns / tick_ns * tick_ns,
        },
        ppid: r.ppid as i32,
        ruid: r.ruid,
        euid: r.euid,
        rgid: r.rgid,
        egid: r.egid,
        comm,
        cmdline,
        cmdline_missing,
        start_time_ns: r.start_boottime_ns,
        exit_time_ns: r.exit_boottime_ns,
        wait_status: r.status,
        utime_ns,
        stime_ns,
        cpu_ns: r.runtime_ns,
        peak_rss_bytes: r.maxrss_pages * page_size_bytes,
        minflt: r.min_flt,
        majflt: r.maj_flt,
        voluntary_ctxt_switches: r.nvcsw,
        nonvoluntary_ctxt_switches: r.nivcsw,
        rchar_bytes: r.rchar,
        wchar_bytes: r.wchar,
        read_bytes: r.read_bytes,
        write_bytes: r.write_bytes,
        cancelled_write_bytes: r.cancelled_write_bytes,
        threads_summed: r.threads_summed,
        threads_cut: r.flags & F_THREADS_CUT != 0,
        kernel_thread: r.flags & F_KTHREAD != 0,
    }
}

impl BpfExits {
    /// Loads and attaches the exit program, or says why it cannot be (not root, a kernel
    /// without the tracepoint's `group_dead` argument, Linux 6.16, ...).
    pub fn load(opts: Options) -> Result<BpfExits, Error> {
        privileged()?;
        let start = monotonic_ns();
        let inum = reader_pid_ns_inum()?;
        let skel = tasksnap_bpf::loader::open_and_load(
            skel::ExitsSkelBuilder::default(),
            |open| {
                if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
                    ro.reader_ns_inum = inum;
                }
                // A bad size is refused by the load below, with the kernel's reason.
                let _ = open.maps.exit_records.set_max_entries(opts.ring_buffer_bytes);
            },
            |e| {
                format!(
                    "the kernel refused the exit program ({e}); it needs Linux 6.16+ with BTF \
                     (sched_process_exit's group_dead argument, ring buffers)"
                )
            },
        )
        .map_err(|why| Error::BpfUnavailable(why.to_string()))?;
        // The last-switch program first: a record made at exit waits for it (exits.bpf.c).
        let switch_link = skel
            .progs
            .on_last_switch
            .attach()
            .map_err(|e| Error::BpfUnavailable(format!("cannot attach sched_switch: {e}")))?;
        let link = skel
            .progs
            .on_group_exit
            .attach()
            .map_err(|e| Error::BpfUnavailable(format!("cannot attach sched_process_exit: {e}")))?;
        let page_size_bytes = opts.page_size_bytes.max(1);
        let tick_ns = 1_000_000_000 / opts.clock_ticks_per_s.clamp(1, 1_000_000_000);
        let map = libbpf_rs::MapHandle::try_from(&skel.maps.exit_records)
            .map_err(|e| Error::BpfUnavailable(format!("exit ring buffer: {e}")))?;
        let bad = |what: &str, e: std::io::Error| Error::BpfUnavailable(format!("{what}: {e}"));
        let (mut stop, stop_rd) = crate::exits::common::Stop::new().map_err(|e| bad("eventfd", e))?;
        let handoff = Handoff::new(opts.max_pending_exits);
        let reader = Reader {
            map,
            stop: stop_rd,
            handoff: handoff.clone(),
            page_size_bytes,
            tick_ns,
        };
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("exits-bpf".into())
            .spawn(move || reader.run(ready_tx))
            .map_err(|e| bad("starting the exit reader thread", e))?;
        stop.started(handle);
        let mut exits = BpfExits {
            handoff,
            _stop: stop,
            _link: link,
            _switch_link: switch_link,
            skel,
            dropped_before: 0,
            load_ns: 0,
        };
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(why)) => return Err(Error::BpfUnavailable(why)),
            Err(_) => return Err(Error::BpfUnavailable("the exit reader thread died".into())),
        }
        exits.dropped_before = exits.dropped_total()?;
        exits.load_ns = monotonic_ns().saturating_sub(start);
        Ok(exits)
    }

    /// The processes that exited since the previous drain (or the load), and how many exit
    /// records the kernel dropped meanwhile.
    /// Records still in the ring buffer (the reader thread not yet woken for them) are the
    /// next drain's.
    pub fn drain(&mut self) -> Result<ExitBatch, Error> {
        let mut batch = self
            .handoff
            .take()
            .map_err(|why| Error::Bpf(format!("the exit reader stopped: {why}")))?;
        let total = self.dropped_total()?;
        batch.dropped += total.saturating_sub(self.dropped_before);
        self.dropped_before = total;
        Ok(batch)
    }

    /// The per-CPU drop counters, summed.
    fn dropped_total(&self) -> Result<u64, Error> {
        use libbpf_rs::MapCore;

        let per_cpu = self
            .skel
            .maps
            .exit_drops
            .lookup_percpu(&0u32.to_ne_bytes(), libbpf_rs::MapFlags::ANY)
            .map_err(|e| Error::Bpf(format!("reading the exit drop counter: {e}")))?
            .unwrap_or_default();
        Ok(per_cpu
            .iter()
            .filter(|v| v.len() >= 8)
            .map(|v| {
                let mut n = [0u8; 8];
                n.copy_from_slice(&v[..8]);
                u64::from_ne_bytes(n)
            })
            .sum())
    }
}

/// The reader thread: its own handle on the ring buffer map, the ring buffer built on it,
/// and where it puts what it read.
struct Reader {
    map: libbpf_rs::MapHandle,
    stop: OwnedFd,
    handoff: Arc<Handoff>,
    page_size_bytes: u64,
    tick_ns: u64,
}

impl Reader {
    /// Builds the ring buffer (says so on `ready`), then reads it until told to stop.
    fn run(self, ready: std::sync::mpsc::Sender<Result<(), String>>) {
        // The thread starts before the host drops its capabilities (a per-thread set): reading
        // a ring buffer it already has needs none, so it keeps none.
        if let Err(e) = crate::caps::keep_only(0) {
            let _ = ready.send(Err(format!(
                "the exit reader thread could not drop its capabilities: {e}"
            )));
            return;
        }
        let (page_size_bytes, tick_ns) = (self.page_size_bytes, self.tick_ns);
        let local = Rc::new(RefCell::new(Vec::new()));
        let sink = local.clone();
        let mut rb = libbpf_rs::RingBufferBuilder::new();
        let added = rb.add(&self.map, move |data: &[u8]| {
                if data.len() >= std::mem::size_of::<skel::types::ex_rec>() {
                    // SAFETY: the kernel side writes whole ex_rec records (exits.h), a plain
                    // C struct of integers and byte arrays for which every bit pattern is
                    // valid; the length was checked and read_unaligned needs no alignment.
                    let r = unsafe {
                        std::ptr::read_unaligned(data.as_ptr().cast::<skel::types::ex_rec>())
                    };
                    sink.borrow_mut().push(exit_of(&r, page_size_bytes, tick_ns));
                }
                0
            });
        let built = match added {
            Ok(_) => rb.build(),
            Err(e) => Err(e),
        };
        let rb = match built {
            Ok(rb) => {
                let _ = ready.send(Ok(()));
                rb
            }
            Err(e) => {
                let _ = ready.send(Err(format!("exit ring buffer: {e}")));
                return;
            }
        };
        crate::exits::common::read_until_stopped(rb.epoll_fd(), self.stop.as_raw_fd(), &self.handoff, || {
            rb.consume()
                .map_err(|e| format!("reading the exit ring buffer: {e}"))?;
            self.handoff.put(&mut local.borrow_mut(), 0);
            Ok(())
        });
    }
}

fn monotonic_ns() -> u64 {
    tasksnap_sys::clock_ns(libc::CLOCK_MONOTONIC)
}
