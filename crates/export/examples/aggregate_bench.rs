//! What the exporter's aggregation costs, without a host: `Aggregator::update` over synthetic
//! readings of N processes of T threads each (every one sleeping, 1% of them running a
//! little each collection), its CPU per collection (median of the collections after the
//! first two; the thread's CPU time, not wall) and the heap it holds and peaks at, counted by a counting allocator.
//!
//!     cargo run --release -p tasksnap-export --example aggregate_bench -- 50000 1
//!     cargo run --release -p tasksnap-export --example aggregate_bench -- 1 100000
//!
//! Prints one line: processes, threads, ms per collection (median, max), bytes the
//! aggregator holds between collections (all it allocated and kept), their peak during a
//! collection above what the reading holds, and its `Footprint`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use tasksnap_export::{Aggregator, Options};
use tasksnap_model::states::{Mode, Sample, State, ThreadTotals, NSTATES};
use tasksnap_model::{Backend, Base, Reading, Sched, Snapshot, SnapshotStats, Stat, Task, TaskId};

struct Counting;
static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only counts are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let n = NOW.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(n, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `alloc` with this layout.
        unsafe { System.dealloc(p, l) };
        NOW.fetch_sub(l.size(), Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const S: u64 = 1_000_000_000;

/// CPU time of the calling thread, ns: on a busy host wall time measures the neighbours.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * S + ts.tv_nsec as u64
}

fn reading(procs: i32, threads: i32, k: u64) -> Reading {
    let at = 1_000 * S + k * 15 * S;
    let mut tasks = Vec::new();
    let mut sample = Sample::new(Mode::Bpf, at);
    for p in 0..procs {
        let pid = 1_000 + p;
        for j in 0..threads {
            let tid = if j == 0 {
                pid
            } else {
                10_000_000 + p * threads + j
            };
            let id = TaskId {
                tgid: pid,
                tid,
                start_time_ns: 5 * S,
            };
            // 1% of the threads run a little each collection.
            let busy = (tid as u64 + k) % 100 == 0;
            let run = if busy { k * S / 10 } else { S };
            let mut t = Task::new(id);
            t.base = Some(Base {
                comm: if threads > 1 { "lg-threads" } else { "lg-proc" }
                    .as_bytes()
                    .into(),
                num_threads: threads as u32,
                ..Base::default()
            });
            if j == 0 {
                t.stat = Some(Stat {
                    utime_ns: run,
                    stime_ns: run / 2,
                    start_time_ns: 5 * S,
                    rss_bytes: 1 << 20,
                    vsize_bytes: 8 << 20,
                    ..Stat::default()
                });
                t.io = Some(Box::default());
            }
            t.sched = Some(Box::new(Sched {
                on_cpu_ns: run,
                run_delay_ns: 0,
                timeslices: 0,
                voluntary_switches: Some(k),
                involuntary_switches: Some(0),
            }));
            tasks.push(t);
            let mut ns = [0u64; NSTATES];
            ns[State::Running.index()] = run;
            ns[State::Sleeping.index()] = at - run;
            sample.threads.insert(
                id,
                ThreadTotals {
                    id,
                    comm: "lg".into(),
                    state_ns: ns,
                    current: Some(State::Sleeping),
                    seen_at_ns: at,
                    ..ThreadTotals::default()
                },
            );
        }
    }
    Reading {
        snapshot: Snapshot {
            taken_at_unix_ns: at,
            taken_at_boottime_ns: at,
            boot_time_unix_s: 1_000,
            backend: Backend::Bpf,
            tasks,
            stats: SnapshotStats::default(),
        },
        states: Some(sample),
        system: Default::default(),
        exits: Vec::new(),
        exits_dropped: 0,
        exits_missing: None,
        host: Default::default(),
        cgroups: None,
    }
}

fn main() {
    let args: Vec<i32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("PROCESSES THREADS_EACH"))
        .collect();
    let (procs, threads) = (
        args.first().copied().unwrap_or(50_000),
        args.get(1).copied().unwrap_or(1),
    );
    let mut a = Aggregator::new(Options::default());
    let mut ms = Vec::new();
    let (mut held, mut peak_above) = (0usize, 0usize);
    for k in 0..12 {
        let mut r = reading(procs, threads, k);
        let before = NOW.load(Relaxed);
        PEAK.store(before, Relaxed);
        let t0 = thread_cpu_ns();
        a.update(&mut r);
        let d = (thread_cpu_ns() - t0) as f64 / 1e6;
        // What the reading still holds is the sampler's, not the aggregator's.
        drop(r);
        if k >= 2 {
            ms.push(d);
            held = NOW.load(Relaxed);
            peak_above = peak_above.max(PEAK.load(Relaxed).saturating_sub(before));
        }
    }
    ms.sort_by(f64::total_cmp);
    println!(
        "{procs} processes x {threads} threads: update {:.1} ms CPU median, {:.1} max; held between \
         collections {:.1} MB; peak above the reading during one {:.1} MB; {:?}",
        ms[ms.len() / 2],
        ms[ms.len() - 1],
        held as f64 / 1e6,
        peak_above as f64 / 1e6,
        a.footprint()
    );
}
