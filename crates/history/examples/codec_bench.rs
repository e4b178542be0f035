//! Sizes and speeds of the codec on a synthetic host: `cargo run --release -p
//! tasksnap-history --example codec_bench [TASKS [PER_PROCESS [BUSY [WAKING]]]]`.
//! Builds a reading of TASKS tasks (processes of PER_PROCESS tasks each, mostly idle
//! sleepers), then 59 more, 10 s apart, in which BUSY per mille of the tasks (the same ones
//! each time, default 10) and WAKING per mille of the others (at random, default 0) ran, and
//! a process exited and another started; encodes 1 key + 59 deltas, and prints the payload sizes (raw and after
//! zstd level 3, as the store writes them) and the time per encode and decode.

use std::sync::Arc;
use std::time::Instant;

use tasksnap_history::{Decoder, Encoder};
use tasksnap_model::states::{Mode, Sample, State, ThreadTotals, NSTATES};
use tasksnap_model::{
    Backend, Base, Comm, CpuTicks, Cred, Mem, Reading, Sched, Snapshot, SnapshotStats, Stat,
    SystemFigures, Task, TaskId, TaskState,
};

#[path = "../tests/common/rng.rs"]
mod rng;

use rng::Rng;

const INTERVAL_NS: u64 = 10_000_000_000;

fn task(r: &mut Rng, tgid: i32, tid: i32, start: u64, threads: u32) -> Task {
    let mut t = Task::new(TaskId {
        tgid,
        tid,
        start_time_ns: start,
    });
    let names = [
        "nginx",
        "postgres",
        "java",
        "python3",
        "bash",
        "sshd",
        "kworker/3:1",
    ];
    let name = names[(tgid as usize) % names.len()];
    t.base = Some(Base {
        state: TaskState::Sleeping,
        ppid: if tgid % 50 == 0 { 1 } else { tgid - tgid % 50 },
        pgid: tgid,
        sid: tgid - tgid % 50,
        tty_nr: 0,
        tpgid: -1,
        flags: 0x0040_0100,
        comm: Comm::from_slice(name.as_bytes()),
        kthread: false,
        nice: 0,
        priority: 20,
        policy: 0,
        rt_priority: 0,
        num_threads: threads,
        processor: r.below(64) as i32,
    });
    let uid = 1000 + (tgid as u32 % 7);
    t.cred = Some(Cred::from_owner(uid, uid));
    let rss = (r.below(200_000) + 1000) * 4096;
    t.stat = Some(Stat {
        utime_ns: r.below(1 << 36) / 10_000_000 * 10_000_000,
        stime_ns: r.below(1 << 34) / 10_000_000 * 10_000_000,
        minflt: r.below(1 << 20),
        majflt: r.below(100),
        start_time_ns: start,
        vsize_bytes: rss * 8,
        rss_bytes: rss,
        ..Stat::default()
    });
    t.mem = Some(Box::new(Mem {
        vsize_bytes: rss * 8,
        rss_bytes: rss,
        shared_bytes: rss / 4,
        text_bytes: 1 << 20,
        data_bytes: rss / 2,
        swap_bytes: Some(0),
        locked_bytes: None,
    }));
    t.sched = Some(Box::new(Sched {
        on_cpu_ns: r.below(1 << 36),
        run_delay_ns: r.below(1 << 30),
        timeslices: r.below(1 << 16),
        voluntary_switches: Some(r.below(1 << 16)),
        involuntary_switches: Some(r.below(1 << 10)),
    }));
    t.cmdline = Some(
        format!(
            "/usr/bin/{name}\0--config\0/etc/{name}/{name}-{}.conf\0--workers\0{}",
            tgid % 13,
            tgid % 5
        )
        .into_bytes(),
    );
    t.cgroup = Some(Box::new(tasksnap_model::Cgroup::parse(
        format!("0::/system.slice/{name}-{}.service\n", tgid % 31).into_bytes(),
    )));
    t
}

fn thread(r: &mut Rng, t: &Task, at: u64) -> ThreadTotals {
    let mut state_ns = [0u64; NSTATES];
    state_ns[State::Running.index()] = r.below(1 << 36);
    state_ns[State::Runnable.index()] = r.below(1 << 30);
    state_ns[State::Sleeping.index()] = r.below(1 << 44);
    ThreadTotals {
        id: t.id,
        comm: t.comm_lossy().into(),
        comm_bytes: None,
        kernel_thread: false,
        state_ns,
        samples: [0; NSTATES],
        current: Some(State::Sleeping),
        reasons: vec![(State::Sleeping, (t.id.tgid % 40) as u32, r.below(1 << 40))],
        wait_reason: Some((t.id.tgid % 40) as u32),
        seen_at_ns: at,
        exited: false,
    }
}

fn host(r: &mut Rng, ntasks: usize, per_proc: usize, at: u64) -> Reading {
    let mut tasks = Vec::with_capacity(ntasks);
    let mut pid = 1000;
    while tasks.len() < ntasks {
        let start = r.below(1 << 40);
        let n = per_proc.min(ntasks - tasks.len()).max(1);
        push_process(r, &mut tasks, pid, start, n);
        pid += n as i32 + r.below(3) as i32;
    }
    let mut sample = Sample::new(Mode::Bpf, at);
    for t in &tasks {
        sample.threads.insert(t.id, thread(r, t, at));
    }
    for i in 0..40u32 {
        sample.reasons.insert(
            i,
            Arc::from(vec![
                "do_epoll_wait".to_string(),
                format!("fn_{i}"),
                "entry_SYSCALL_64".to_string(),
            ]),
        );
    }
    let ticks = CpuTicks {
        user: 1 << 30,
        idle: 1 << 34,
        ..CpuTicks::default()
    };
    Reading {
        snapshot: Snapshot {
            taken_at_unix_ns: 1_700_000_000_000_000_000 + at,
            taken_at_boottime_ns: at,
            boot_time_unix_s: 1_700_000_000,
            backend: Backend::Bpf,
            tasks,
            stats: SnapshotStats::default(),
        },
        states: Some(sample),
        system: SystemFigures {
            cpu: Some(ticks),
            per_cpu: vec![ticks; 64],
            vmstat: (0..180)
                .map(|i| (format!("vmstat_counter_{i}"), i * 1000))
                .collect(),
            ..SystemFigures::default()
        },
        exits: Vec::new(),
        exits_dropped: 0,
        exits_missing: None,
        host: Default::default(),
        cgroups: None,
    }
}

/// A process of `n` tasks: its threads share its memory, credentials and command line.
fn push_process(r: &mut Rng, tasks: &mut Vec<Task>, pid: i32, start: u64, n: usize) {
    let leader = task(r, pid, pid, start, n as u32);
    let mut threads = Vec::new();
    for i in 1..n {
        let mut t = task(r, pid, pid + i as i32, start + i as u64 * 1000, n as u32);
        t.mem.clone_from(&leader.mem);
        t.cred.clone_from(&leader.cred);
        t.cmdline.clone_from(&leader.cmdline);
        t.cgroup.clone_from(&leader.cgroup);
        if let (Some(s), Some(l)) = (&mut t.stat, &leader.stat) {
            s.vsize_bytes = l.vsize_bytes;
            s.rss_bytes = l.rss_bytes;
        }
        threads.push(t);
    }
    tasks.push(leader);
    tasks.extend(threads);
}

/// Task `t` ran for a while during the interval.
fn run(r: &mut Rng, t: &mut Task, th: Option<&mut ThreadTotals>) {
    let ran = r.below(INTERVAL_NS / 10);
    if let Some(st) = &mut t.stat {
        st.utime_ns += ran / 10_000_000 * 10_000_000;
        st.minflt += r.below(100);
    }
    if let Some(sc) = &mut t.sched {
        sc.on_cpu_ns += ran;
        sc.timeslices += 1 + r.below(50);
        if let Some(v) = &mut sc.voluntary_switches {
            *v += 1 + r.below(50);
        }
    }
    if let Some(b) = &mut t.base {
        b.processor = r.below(64) as i32;
    }
    if let Some(th) = th {
        th.state_ns[State::Running.index()] += ran;
        th.state_ns[State::Sleeping.index()] -= ran.min(th.state_ns[State::Sleeping.index()]);
        if let Some(x) = th.reasons.first_mut() {
            x.2 -= ran.min(x.2);
        }
    }
}

/// The next reading: every sleeper grew by the interval; the busy tasks (`busy` per mille,
/// the same ones every time) and `wake` per mille of the others, at random, ran; a process
/// exited and another started.
fn step(r: &mut Rng, prev: &Reading, busy: u64, wake: u64, per_proc: usize) -> Reading {
    let mut next = prev.clone();
    let at = prev.snapshot.taken_at_boottime_ns + INTERVAL_NS;
    next.snapshot.taken_at_boottime_ns = at;
    next.snapshot.taken_at_unix_ns += INTERVAL_NS;
    let Some(s) = next.states.as_mut() else {
        return next;
    };
    s.at_ns = at;
    for t in s.threads.values_mut() {
        if let Some(g) = tasksnap_history::extend_thread(t, INTERVAL_NS) {
            *t = g;
        }
    }
    for t in &mut next.snapshot.tasks {
        let is_busy = (t.id.tid as u64).wrapping_mul(2654435761) % 1000 < busy;
        if is_busy || r.below(1000) < wake {
            let th = s.threads.get_mut(&t.id);
            run(r, t, th);
        }
    }
    // A process exits, another starts.
    if let Some(i) = next
        .snapshot
        .tasks
        .iter()
        .position(|t| t.id.tgid % 97 == r.below(97) as i32 && t.id.is_leader())
    {
        let tgid = next.snapshot.tasks[i].id.tgid;
        next.snapshot.tasks.retain(|t| t.id.tgid != tgid);
        s.threads.retain(|id, _| id.tgid != tgid);
    }
    let pid = next.snapshot.tasks.last().map_or(1, |t| t.id.tgid) + 10;
    let start = at - 1_000_000;
    let first = next.snapshot.tasks.len();
    push_process(r, &mut next.snapshot.tasks, pid, start, per_proc.max(1));
    for t in &next.snapshot.tasks[first..] {
        s.threads.insert(t.id, thread(r, t, at));
    }
    if let Some(c) = &mut next.system.cpu {
        c.user += 1234;
        c.idle += 60_000;
    }
    for v in &mut next.system.vmstat {
        v.1 += r.below(3) * 17;
    }
    next
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let ntasks = args.first().copied().unwrap_or(50_000) as usize;
    let per_proc = args.get(1).copied().unwrap_or(10) as usize;
    let permille = args.get(2).copied().unwrap_or(10);
    let wake = args.get(3).copied().unwrap_or(0);
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut readings = vec![host(&mut r, ntasks, per_proc, 1 << 40)];
    for _ in 1..60 {
        let Some(prev) = readings.last() else { break };
        let n = step(&mut r, prev, permille, wake, per_proc);
        readings.push(n);
    }

    // For scale: what copying one reading costs on this machine.
    let t0 = Instant::now();
    let copy = readings.first().cloned();
    let clone_ms = t0.elapsed().as_secs_f64() * 1e3;
    drop(copy);

    let mut enc = Encoder::new(60);
    let mut out = Vec::new();
    let (mut key_ms, mut delta_ms) = (0.0, 0.0);
    for (i, rd) in readings.iter().enumerate() {
        let t0 = Instant::now();
        let e = enc.encode(rd, i == 0);
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        if e.key {
            key_ms += ms;
        } else {
            delta_ms += ms;
        }
        out.push(e);
    }
    let keys = out.iter().filter(|e| e.key).count();
    let deltas = out.len() - keys;

    let z = |b: &[u8]| zstd::bulk::compress(b, 3).map_or(0, |v| v.len());
    let (mut raw, mut zst, mut key_raw, mut key_z) = (0usize, 0usize, 0usize, 0usize);
    let mut names_z = 0;
    for e in &out {
        let r = e.sample.len() + e.names.as_ref().map_or(0, Vec::len);
        let c = z(&e.sample) + e.names.as_deref().map_or(0, z);
        names_z += e.names.as_deref().map_or(0, z);
        raw += r;
        zst += c;
        if e.key {
            key_raw += r;
            key_z += c;
        }
    }

    let mut dec = Decoder::new();
    let (mut dkey_ms, mut ddelta_ms) = (0.0, 0.0);
    for (e, rd) in out.iter().zip(&readings) {
        let t0 = Instant::now();
        if let Some(n) = &e.names {
            if let Err(err) = dec.apply_names(e.key, n) {
                eprintln!("names: {err}");
                return;
            }
        }
        let got = dec.apply_sample(e.key, &e.sample);
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        match got {
            Ok(g) if g.snapshot == rd.snapshot && g.system == rd.system => {}
            Ok(_) => eprintln!("decoded reading differs"),
            Err(err) => {
                eprintln!("decode: {err}");
                return;
            }
        }
        if e.key {
            dkey_ms += ms;
        } else {
            ddelta_ms += ms;
        }
    }
    let n = out.len().max(1) as f64;
    println!(
        "{ntasks} tasks ({per_proc} per process), {permille}/1000 busy and {wake}/1000 waking per sample, {} samples ({keys} key, {deltas} delta)",
        out.len()
    );
    println!(
        "key: {:.1} KB raw, {:.1} KB zstd-3; average per sample: {:.1} KB raw, {:.1} KB zstd-3 (names frames {:.1} KB zstd in all)",
        key_raw as f64 / 1e3 / keys.max(1) as f64,
        key_z as f64 / 1e3 / keys.max(1) as f64,
        raw as f64 / 1e3 / n,
        zst as f64 / 1e3 / n,
        names_z as f64 / 1e3
    );
    println!(
        "encode: key {:.2} ms, delta {:.2} ms; decode: key {:.2} ms, delta {:.2} ms",
        key_ms / keys.max(1) as f64,
        delta_ms / deltas.max(1) as f64,
        dkey_ms / keys.max(1) as f64,
        ddelta_ms / deltas.max(1) as f64
    );
    println!("for scale, cloning one reading: {clone_ms:.2} ms");
    println!(
        "per day at one sample every 10 s: {:.2} GB",
        zst as f64 / n * 8640.0 / 1e9
    );
}
