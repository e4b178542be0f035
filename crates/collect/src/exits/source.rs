//! The BPF exit source ([`BpfExits`]): loads exits.bpf.c through the shared loader
//! (tasksnap-bpf), with the reader's pid namespace set before load, attaches it, and drains
//! its ring buffer into [`Exit`]s. Compiled only when this build has the BPF programs (see
//! `tasksnap_bpf::select!` in lib.rs, which mounts this file as `crate::exits_bpf`;
//! `exits` re-exports it). Layouts come from exits.h through the generated skeleton.

use std::cell::RefCell;
use std::rc::Rc;

use tasksnap_bpf::skel::exits as skel;
use tasksnap_model::{CmdlineMissing, Exit, ExitBatch, TaskId};

use crate::exits::{privileged, reader_pid_ns_inum, split_cputime, Options};
use crate::Error;

/// `EX_F_*` of exits.h (the skeleton generates types, not macros).
const F_NO_MM: u32 = 1 << 0;
const F_ARGS_FAULT: u32 = 1 << 1;
const F_ARGS_CUT: u32 = 1 << 2;
const F_THREADS_CUT: u32 = 1 << 3;
const F_KTHREAD: u32 = 1 << 4;

/// The loaded exit program and its ring buffer.
pub struct BpfExits {
    // Field order is drop order: the ring buffer and the link go before the skeleton.
    ringbuf: libbpf_rs::RingBuffer<'static>,
    arrived: Rc<RefCell<Vec<Exit>>>,
    _link: libbpf_rs::Link,
    skel: skel::ExitsSkel<'static>,
    /// The drop counter's total at the previous drain.
    dropped_before: u64,
    /// How long loading and attaching took, ns.
    pub load_ns: u64,
}

impl std::fmt::Debug for BpfExits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpfExits")
            .field("load_ns", &self.load_ns)
            .finish_non_exhaustive()
    }
}

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
        let link = skel
            .progs
            .on_group_exit
            .attach()
            .map_err(|e| Error::BpfUnavailable(format!("cannot attach sched_process_exit: {e}")))?;
        let page_size_bytes = opts.page_size_bytes.max(1);
        let tick_ns = 1_000_000_000 / opts.clock_ticks_per_s.clamp(1, 1_000_000_000);
        let arrived = Rc::new(RefCell::new(Vec::new()));
        let sink = arrived.clone();
        let mut rb = libbpf_rs::RingBufferBuilder::new();
        rb.add(&skel.maps.exit_records, move |data: &[u8]| {
            if data.len() >= std::mem::size_of::<skel::types::ex_rec>() {
                // SAFETY: the kernel side writes whole ex_rec records (exits.h), a plain C
                // struct of integers and byte arrays for which every bit pattern is valid;
                // the length was checked and read_unaligned needs no alignment.
                let r = unsafe {
                    std::ptr::read_unaligned(data.as_ptr().cast::<skel::types::ex_rec>())
                };
                sink.borrow_mut().push(exit_of(&r, page_size_bytes, tick_ns));
            }
            0
        })
        .map_err(|e| Error::BpfUnavailable(format!("exit ring buffer: {e}")))?;
        let ringbuf = rb
            .build()
            .map_err(|e| Error::BpfUnavailable(format!("exit ring buffer: {e}")))?;
        let mut exits = BpfExits {
            ringbuf,
            arrived,
            _link: link,
            skel,
            dropped_before: 0,
            load_ns: 0,
        };
        exits.dropped_before = exits.dropped_total()?;
        exits.load_ns = monotonic_ns().saturating_sub(start);
        Ok(exits)
    }

    /// The processes that exited since the previous drain (or the load), and how many exit
    /// records the kernel dropped meanwhile.
    pub fn drain(&mut self) -> Result<ExitBatch, Error> {
        self.ringbuf
            .consume()
            .map_err(|e| Error::Bpf(format!("draining the exit ring buffer: {e}")))?;
        let exits = std::mem::take(&mut *self.arrived.borrow_mut());
        let total = self.dropped_total()?;
        let dropped = total.saturating_sub(self.dropped_before);
        self.dropped_before = total;
        Ok(ExitBatch { exits, dropped })
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

fn monotonic_ns() -> u64 {
    tasksnap_procfs::sys::clock_ns(libc::CLOCK_MONOTONIC)
}
