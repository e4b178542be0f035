//! Round trips of generated reading sequences through the encoder and decoder (key and delta
//! frames, seeking past deltas, names frames), and hostile payloads (truncated, flipped,
//! arbitrary): errors, never panics.

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;
use tasksnap_history::{
    extend_thread, same_thread, Decoder, Encoded, Encoder, HistoryError, EXITS_NOT_RECORDED,
    FORMAT_MAJOR,
};
use tasksnap_model::states::{Mode, Sample, State, ThreadTotals, NSTATES};
use tasksnap_model::Limit;
use tasksnap_model::{
    Backend, Base, CgroupCounters, CgroupHierarchy, CgroupListing, CmdlineMissing, Comm, CpuTicks,
    Cred, Exit, HostIdentity, Io, LoadAverages, Mem, Memory, Pressure, PressureLine, Reading,
    ReadingChanges, Sched, Snapshot, SnapshotStats, Stat, StatCounters, SystemFigures, Task,
    TaskId, TaskState, BOOT_ID_MAX_BYTES, HOSTNAME_MAX_BYTES,
};

mod common;

use common::rng::Rng;

fn task_state(r: &mut Rng) -> TaskState {
    TaskState::from_letter([b'R', b'S', b'D', b'Z', b'I', b'W', 0, 255][r.below(8) as usize])
}

fn new_task(r: &mut Rng, id: TaskId) -> Task {
    let mut t = Task::new(id);
    t.base = r.opt(|r| Base {
        state: if r.chance(10) {
            TaskState::Other(r.next() as u8)
        } else {
            task_state(r)
        },
        ppid: r.i32(),
        pgid: r.i32(),
        sid: r.i32(),
        tty_nr: r.u32(),
        tpgid: r.i32(),
        flags: r.u32(),
        comm: Comm::from_vec(r.bytes(20)),
        kthread: r.chance(20),
        nice: r.i32(),
        priority: r.i32(),
        policy: r.u32(),
        rt_priority: r.u32(),
        num_threads: r.u32(),
        processor: r.i32(),
    });
    t.cred = r.opt(|r| Cred {
        ruid: r.u32(),
        euid: r.u32(),
        suid: r.u32(),
        fsuid: r.u32(),
        rgid: r.u32(),
        egid: r.u32(),
        sgid: r.u32(),
        fsgid: r.u32(),
        groups: r.opt(|r| (0..r.below(4)).map(|_| r.u32()).collect()),
        effective_only: r.chance(50),
    });
    t.stat = r.opt(|r| Stat {
        utime_ns: r.num(),
        stime_ns: r.num(),
        cutime_ns: r.num(),
        cstime_ns: r.num(),
        minflt: r.num(),
        majflt: r.num(),
        cminflt: r.num(),
        cmajflt: r.num(),
        start_time_ns: if r.chance(80) {
            id.start_time_ns
        } else {
            r.num()
        },
        vsize_bytes: r.num(),
        rss_bytes: r.num(),
        // Not recorded (format 1).
        swap_bytes: None,
    });
    t.mem = r.opt(|r| {
        Box::new(Mem {
            vsize_bytes: r.num(),
            rss_bytes: r.num(),
            shared_bytes: r.num(),
            text_bytes: r.num(),
            data_bytes: r.num(),
            swap_bytes: r.opt(Rng::num),
            locked_bytes: r.opt(Rng::num),
        })
    });
    t.cmdline = r.opt(|r| r.bytes(40));
    t.locked_bytes = r.opt(Rng::num);
    t.cmdline_timed_out = r.chance(10);
    t.exe = r.opt(|r| r.bytes(20));
    t.io = r.opt(|r| {
        Box::new(Io {
            rchar_bytes: r.num(),
            wchar_bytes: r.num(),
            syscr: r.num(),
            syscw: r.num(),
            read_bytes: r.num(),
            write_bytes: r.num(),
            cancelled_write_bytes: r.num(),
        })
    });
    t.sched = r.opt(|r| {
        Box::new(Sched {
            on_cpu_ns: r.num(),
            run_delay_ns: r.num(),
            timeslices: r.num(),
            voluntary_switches: r.opt(Rng::num),
            involuntary_switches: r.opt(Rng::num),
        })
    });
    t.wchan = r.opt(|r| r.text(10));
    t.cgroup = r.opt(|r| Box::new(tasksnap_model::Cgroup::parse(r.bytes(30))));
    t
}

/// Changes one thing of a task (or nothing).
fn touch(r: &mut Rng, t: &mut Task) {
    match r.below(8) {
        0 => {
            // exec: new command line, maybe new comm, same identity.
            t.cmdline = r.opt(|r| r.bytes(40));
            if let Some(b) = &mut t.base {
                b.comm = Comm::from_vec(r.bytes(16));
            }
        }
        1 => t.cgroup = r.opt(|r| Box::new(tasksnap_model::Cgroup::parse(r.bytes(30)))),
        2 => {
            if let Some(s) = &mut t.stat {
                s.utime_ns = s.utime_ns.wrapping_add(r.below(1 << 20));
            }
        }
        3 => {
            if let Some(b) = &mut t.base {
                b.state = task_state(r);
                b.processor = r.i32();
            }
        }
        4 => *t = new_task(r, t.id),
        5 => t.wchan = r.opt(|r| r.text(8)),
        _ => {}
    }
}

fn new_thread(r: &mut Rng, id: TaskId, at: u64) -> ThreadTotals {
    let current = r.opt(|r| State::ALL[r.below(NSTATES as u64) as usize]);
    // No off-CPU reason is kept for the throttled state (a holder's is a run-queue one).
    let reasoned = &State::ALL[..State::Throttled.index()];
    let mut reasons: Vec<(State, u32, u64)> = (0..r.below(3))
        .map(|_| (reasoned[r.below(6) as usize], r.below(5) as u32, r.num()))
        .collect();
    let mut wait_reason = None;
    if let Some(s) = current.filter(|&s| s != State::Throttled) {
        if r.chance(50) {
            let id = r.below(5) as u32;
            reasons.push((s, id, r.below(1000)));
            wait_reason = Some(id);
        }
    }
    ThreadTotals {
        id: if r.chance(5) {
            TaskId {
                tgid: r.i32(),
                tid: r.i32(),
                start_time_ns: r.num(),
            }
        } else {
            id
        },
        comm: r.text(8).into(),
        comm_bytes: None,
        kernel_thread: r.chance(10),
        state_ns: std::array::from_fn(|_| r.num()),
        samples: std::array::from_fn(|_| r.below(100)),
        current,
        reasons,
        wait_reason: if r.chance(5) { Some(9) } else { wait_reason },
        seen_at_ns: at.wrapping_sub(r.below(1000)),
        exited: r.chance(5),
    }
}

/// A thread that did not switch, read `g` ns later.
fn grow(t: &ThreadTotals, g: u64) -> ThreadTotals {
    extend_thread(t, g).unwrap_or_else(|| t.clone())
}

fn frames(r: &mut Rng) -> Arc<[String]> {
    (0..r.below(3))
        .map(|_| r.text(6))
        .collect::<Vec<_>>()
        .into()
}

fn system(r: &mut Rng, prev: Option<&SystemFigures>) -> SystemFigures {
    let ticks = |r: &mut Rng| CpuTicks {
        user: r.num(),
        nice: r.num(),
        system: r.num(),
        idle: r.num(),
        iowait: r.num(),
        irq: r.num(),
        softirq: r.num(),
        steal: r.num(),
    };
    let line = |r: &mut Rng| PressureLine {
        avg_pct: [r.below(100) as f64 / 4.0, 0.1, f64::MAX],
        total_us: r.num(),
    };
    let names: Vec<String> = match prev {
        Some(p) if r.chance(80) => p.vmstat.iter().map(|v| v.0.clone()).collect(),
        _ => (0..r.below(5)).map(|_| r.text(6)).collect(),
    };
    SystemFigures {
        cpu: r.opt(ticks),
        per_cpu: (0..r.below(4)).map(|_| ticks(r)).collect(),
        counters: r.opt(|r| StatCounters {
            context_switches: r.num(),
            forks: r.num(),
            procs_running: r.num(),
            procs_blocked: r.num(),
            interrupts: r.num(),
            softirqs: r.num(),
        }),
        memory: r.opt(|r| Memory {
            total_kib: r.num(),
            free_kib: r.num(),
            available_kib: r.num(),
            buff_cache_kib: r.num(),
            swap_total_kib: r.num(),
            swap_free_kib: r.num(),
        }),
        load: r.opt(|r| LoadAverages {
            avg: [r.below(1000) as f64 / 100.0, -0.0, 1e300],
            tasks: r.opt(Rng::num),
        }),
        vmstat: names.into_iter().map(|n| (n, r.num())).collect(),
        pressure: (0..r.below(3))
            .map(|_| Pressure {
                resource: r.text(6),
                some: r.opt(line),
                full: r.opt(line),
            })
            .collect(),
    }
}

/// A sequence of readings of an evolving host.
/// A process that exited at about `at` ns (boot time), with figures of every size.
fn new_exit(r: &mut Rng, at: u64) -> Exit {
    let tgid = r.i32();
    let start_time_ns = r.below(at.max(1));
    Exit {
        id: TaskId {
            tgid,
            tid: if r.chance(95) { tgid } else { r.i32() },
            start_time_ns: if r.chance(95) { start_time_ns } else { r.num() },
        },
        ppid: if r.chance(80) {
            r.below(500) as i32
        } else {
            r.i32()
        },
        ruid: r.u32(),
        euid: r.u32(),
        rgid: r.u32(),
        egid: r.u32(),
        comm: r.bytes(15),
        cmdline: r.bytes(Exit::CMDLINE_MAX_BYTES as u64),
        cmdline_missing: [
            None,
            Some(CmdlineMissing::NoMemory),
            Some(CmdlineMissing::Unreadable),
            Some(CmdlineMissing::Cut),
            Some(CmdlineMissing::NotCaptured),
        ][r.below(5) as usize],
        start_time_ns,
        exit_time_ns: at.wrapping_sub(r.below(1_000_000_000)),
        wait_status: if r.chance(70) {
            (r.below(256) as u32) << 8
        } else {
            r.u32()
        },
        utime_ns: r.num(),
        stime_ns: r.num(),
        cpu_ns: r.num(),
        peak_rss_bytes: r.num(),
        minflt: r.num(),
        majflt: r.num(),
        voluntary_ctxt_switches: r.num(),
        nonvoluntary_ctxt_switches: r.num(),
        rchar_bytes: r.num(),
        wchar_bytes: r.num(),
        read_bytes: r.num(),
        write_bytes: r.num(),
        cancelled_write_bytes: r.num(),
        threads_summed: r.u32(),
        threads_cut: r.chance(10),
        kernel_thread: r.chance(10),
    }
}

/// A cgroup record of any bytes and values: each value absent, unlimited (the limits) or a
/// number; v2 or v1 with some controllers; pressure lines or none.
fn new_cgroup(r: &mut Rng) -> CgroupCounters {
    let hierarchy = if r.chance(50) {
        CgroupHierarchy::V2
    } else {
        CgroupHierarchy::V1((0..r.below(3)).map(|_| r.text(8)).collect())
    };
    let mut path = b"/".to_vec();
    path.extend(r.bytes(30));
    let mut c = CgroupCounters::new(path, hierarchy);
    touch_cgroup(r, &mut c);
    c
}

/// New values for some of `c`'s counters (limits unlimited now and then).
fn touch_cgroup(r: &mut Rng, c: &mut CgroupCounters) {
    let n = |r: &mut Rng, v: &mut Option<u64>| {
        if r.chance(40) {
            *v = r.opt(Rng::num);
        }
    };
    for v in [
        &mut c.cpu_usage_ns,
        &mut c.cpu_period_us,
        &mut c.cpu_periods,
        &mut c.cpu_throttled_periods,
        &mut c.cpu_throttled_ns,
        &mut c.memory_current_bytes,
        &mut c.oom_kills,
        &mut c.swap_current_bytes,
        &mut c.io_read_bytes,
        &mut c.io_write_ops,
        &mut c.pids_current,
    ] {
        n(r, v);
    }
    let limit = |r: &mut Rng| {
        r.opt(|r| {
            if r.chance(30) {
                Limit::Unlimited
            } else {
                Limit::At(r.num())
            }
        })
    };
    if r.chance(30) {
        c.cpu_quota_us = limit(r);
        c.memory_limit_bytes = limit(r);
    }
    if r.chance(30) {
        c.pressure = (0..r.below(3))
            .map(|i| Pressure {
                resource: ["cpu", "memory", "io"][i as usize].into(),
                some: r.opt(|r| PressureLine {
                    avg_pct: [r.below(100) as f64 / 4.0, 0.0, 1.5],
                    total_us: r.num(),
                }),
                full: None,
            })
            .collect();
    }
}

/// The next cgroup listing after `prev` (`None`: not read): most records as they were, some
/// touched, some gone, some new, in a shuffled order.
fn cgroups(r: &mut Rng, prev: &mut Vec<CgroupCounters>) -> Option<CgroupListing> {
    prev.retain(|_| !r.chance(10));
    for c in prev.iter_mut() {
        if r.chance(20) {
            touch_cgroup(r, c);
        }
    }
    for _ in 0..r.below(4) {
        let c = new_cgroup(r);
        let v1 = |x: &CgroupCounters| matches!(x.hierarchy, CgroupHierarchy::V1(_));
        if !prev.iter().any(|p| p.path == c.path && v1(p) == v1(&c)) {
            prev.push(c);
        }
    }
    let n = prev.len();
    if n > 1 {
        prev.swap(r.below(n as u64) as usize, r.below(n as u64) as usize);
    }
    (!r.chance(10)).then(|| CgroupListing {
        cgroups: prev.clone(),
        notes: (0..r.below(2)).map(|_| r.text(12)).collect(),
    })
}

/// `l` as a recording gives it back: its records in identity order (v2 first, then v1, by
/// path bytes).
fn in_identity_order(l: &Option<CgroupListing>) -> Option<CgroupListing> {
    let mut l = l.clone()?;
    let rank = |c: &CgroupCounters| matches!(c.hierarchy, CgroupHierarchy::V1(_));
    l.cgroups
        .sort_by(|a, b| (rank(a), &a.path).cmp(&(rank(b), &b.path)));
    Some(l)
}

fn readings(seed: u64, steps: usize, tasks: usize) -> Vec<Reading> {
    let mut r = Rng(seed | 1);
    let mut at: u64 = r.below(1 << 40);
    let mut ids: Vec<Task> = (0..tasks)
        .map(|i| {
            let tgid = (i as i32 / 3) * 10 + 1;
            let id = TaskId {
                tgid,
                tid: tgid + (i as i32 % 3),
                start_time_ns: r.below(1 << 30),
            };
            new_task(&mut r, id)
        })
        .collect();
    let mut threads: HashMap<TaskId, ThreadTotals> = HashMap::new();
    let mut reasons: HashMap<u32, Arc<[String]>> = (0..4).map(|i| (i, frames(&mut r))).collect();
    let mut sys: Option<SystemFigures> = None;
    // The host identity from a generator of its own, so the other values stay as they were;
    // now and then another (a renamed host, a reboot), its bytes anything.
    let mut hr = Rng(seed ^ 0x5eed);
    let ident = |hr: &mut Rng| HostIdentity {
        hostname: hr.opt(|hr| hr.bytes(HOSTNAME_MAX_BYTES as u64)),
        boot_id: hr.opt(|hr| hr.bytes(BOOT_ID_MAX_BYTES as u64)),
    };
    let mut host = ident(&mut hr);
    // The cgroups from a generator of their own too.
    let mut cr = Rng(seed ^ 0xc6);
    let mut cgroup_pool = Vec::new();
    let mut out = Vec::new();
    for _ in 0..steps {
        if hr.chance(10) {
            host = ident(&mut hr);
        }
        let elapsed = r.below(2_000_000_000);
        at = at.wrapping_add(elapsed);
        // Tasks come and go; pids are reused with new start times.
        ids.retain(|_| !r.chance(5));
        for t in &mut ids {
            if r.chance(15) {
                touch(&mut r, t);
            }
        }
        for _ in 0..r.below(3) {
            let tgid = r.below(200) as i32;
            let id = TaskId {
                tgid,
                tid: tgid + r.below(2) as i32,
                start_time_ns: r.below(1 << 30),
            };
            ids.push(new_task(&mut r, id));
        }
        ids.sort_by_key(|t| t.id);
        ids.dedup_by_key(|t| t.id);
        let states = if r.chance(85) {
            let alive: Vec<TaskId> = ids.iter().map(|t| t.id).collect();
            threads.retain(|id, _| alive.contains(id) && !r.chance(3));
            for id in alive {
                let g = if r.chance(80) {
                    elapsed
                } else {
                    elapsed.wrapping_add(r.below(100))
                };
                let t = match threads.get(&id) {
                    Some(t) if r.chance(70) => grow(t, g),
                    Some(_) | None if r.chance(20) => continue,
                    _ => new_thread(&mut r, id, at),
                };
                threads.insert(id, t);
            }
            if r.chance(30) {
                reasons.remove(&(r.below(6) as u32));
                reasons.insert(r.below(6) as u32, frames(&mut r));
            }
            let mode = if r.chance(50) {
                Mode::Bpf
            } else {
                Mode::Procfs {
                    sample_hz: r.u32(),
                    delayacct: r.chance(50),
                }
            };
            Some(Sample {
                mode,
                at_ns: at,
                threads: threads.iter().map(|(k, v)| (*k, v.clone())).collect(),
                reasons: reasons.clone(),
                notes: (0..r.below(2)).map(|_| r.text(12)).collect(),
            })
        } else {
            None
        };
        let s = system(&mut r, sys.as_ref());
        sys = Some(s.clone());
        // Exits: none, a few, or no exit source at all.
        let exits_missing = r.chance(15).then(|| r.text(40));
        let (exits, exits_dropped) = if exits_missing.is_some() {
            (Vec::new(), 0)
        } else {
            let n = if r.chance(30) { 0 } else { r.below(6) };
            let exits = (0..n).map(|_| new_exit(&mut r, at)).collect();
            (exits, if r.chance(20) { r.num() } else { 0 })
        };
        out.push(Reading {
            snapshot: Snapshot {
                taken_at_unix_ns: at.wrapping_mul(3),
                taken_at_boottime_ns: at,
                boot_time_unix_s: 1_700_000_000,
                backend: [Backend::Auto, Backend::Bpf, Backend::Procfs][r.below(3) as usize],
                tasks: ids.clone(),
                stats: SnapshotStats {
                    vanished: r.num(),
                    partial: r.below(3),
                    denied: 0,
                    unparsable: r.num(),
                    cmdline_timeouts: 1,
                    reconciled_by_listing: r.chance(50),
                },
            },
            states,
            system: s,
            exits,
            exits_dropped,
            exits_missing,
            host: host.clone(),
            cgroups: cgroups(&mut cr, &mut cgroup_pool),
        });
    }
    out
}

/// Compares a decoded reading with the original: everything exact, except a thread the
/// delta omitted, which is the key's row grown by the sample's elapsed time.
fn check(orig: &Reading, got: &Reading, key: Option<&Reading>) -> Result<(), String> {
    if orig.snapshot != got.snapshot {
        let n = orig
            .snapshot
            .tasks
            .iter()
            .zip(&got.snapshot.tasks)
            .position(|(a, b)| a != b);
        return Err(format!(
            "snapshots differ ({} vs {} tasks, first difference at {n:?})",
            orig.snapshot.tasks.len(),
            got.snapshot.tasks.len()
        ));
    }
    if orig.system != got.system {
        return Err(format!(
            "system differs: {:?} vs {:?}",
            orig.system, got.system
        ));
    }
    if (&orig.exits, orig.exits_dropped, &orig.exits_missing)
        != (&got.exits, got.exits_dropped, &got.exits_missing)
    {
        return Err(format!(
            "exits differ: {:?} vs {:?}",
            (&orig.exits, orig.exits_dropped, &orig.exits_missing),
            (&got.exits, got.exits_dropped, &got.exits_missing)
        ));
    }
    if orig.host != got.host {
        return Err(format!("hosts differ: {:?} vs {:?}", orig.host, got.host));
    }
    if in_identity_order(&orig.cgroups) != got.cgroups {
        return Err(format!(
            "cgroups differ: {:?} vs {:?}",
            orig.cgroups, got.cgroups
        ));
    }
    match (&orig.states, &got.states) {
        (None, None) => Ok(()),
        (Some(a), Some(b)) => {
            if a.mode != b.mode || a.at_ns != b.at_ns || a.notes != b.notes {
                return Err("sample fields differ".into());
            }
            if a.reasons != b.reasons {
                return Err("reasons differ".into());
            }
            if a.threads.len() != b.threads.len() {
                return Err("thread counts differ".into());
            }
            let ks = key.and_then(|k| k.states.as_ref());
            for (id, t) in &a.threads {
                let d = b.threads.get(id).ok_or("thread missing")?;
                if same_thread(t, d) {
                    continue;
                }
                let k = ks
                    .and_then(|k| k.threads.get(id).map(|kt| (k, kt)))
                    .ok_or(format!("thread {id:?} differs and is not in the key"))?;
                let g = t.seen_at_ns.wrapping_sub(k.1.seen_at_ns);
                let rule = extend_thread(k.1, g).is_some_and(|e| same_thread(&e, t));
                let want = extend_thread(k.1, a.at_ns.wrapping_sub(k.0.at_ns));
                if !rule || !want.is_some_and(|w| same_thread(&w, d)) {
                    return Err(format!("thread {id:?} differs: {t:?} vs {d:?}"));
                }
            }
            Ok(())
        }
        _ => Err("states presence differs".into()),
    }
}

/// Encodes a sequence and decodes it in order, checking every reading.
fn run(rs: &[Reading], key_every: u32, force: &[bool]) -> Result<Vec<Encoded>, String> {
    // Odd key intervals without adaptive keys, so that long runs of deltas are tested too.
    let mut enc = Encoder::new(key_every).adaptive_keys(key_every % 2 == 0);
    let mut dec = Decoder::new();
    let mut key: Option<&Reading> = None;
    let mut out = Vec::new();
    for (i, r) in rs.iter().enumerate() {
        let e = enc.encode(r, force.get(i).copied().unwrap_or(false));
        if let Some(n) = &e.names {
            dec.apply_names(e.key, n).map_err(|x| x.to_string())?;
        } else if e.key {
            return Err("a key without names".into());
        }
        let got = dec
            .apply_sample(e.key, &e.sample)
            .map_err(|x| x.to_string())?;
        if e.key {
            key = Some(r);
        }
        check(r, &got, key).map_err(|m| format!("reading {i} (key {}): {m}", e.key))?;
        out.push(e);
    }
    Ok(out)
}

/// What changed from `prev` to `cur`, as a sampler says it: every task row that is not the
/// previous one, every thread whose totals are not the previous ones taken on by the time
/// between them; with `extra`, some rows that did not change said changed too (a sampler
/// may say more, never less).
fn told(prev: Option<&Reading>, cur: &Reading, extra: &mut Rng) -> ReadingChanges {
    let Some(prev) = prev else {
        return ReadingChanges::default();
    };
    let mut tasks: Vec<TaskId> = cur
        .snapshot
        .tasks
        .iter()
        .filter(|t| {
            extra.chance(10)
                || prev
                    .snapshot
                    .tasks
                    .binary_search_by(|p| p.id.cmp(&t.id))
                    .map_or(true, |i| prev.snapshot.tasks[i] != **t)
        })
        .map(|t| t.id)
        .collect();
    // The rows gone, mostly listed (a sampler lists those it knows left).
    for p in &prev.snapshot.tasks {
        let gone = cur
            .snapshot
            .tasks
            .binary_search_by(|t| t.id.cmp(&p.id))
            .is_err();
        if gone && !extra.chance(30) {
            tasks.push(p.id);
        }
    }
    let threads = match (&prev.states, &cur.states) {
        (Some(p), Some(c)) => {
            let mut ids: Vec<TaskId> = c
                .threads
                .iter()
                .filter(|(id, t)| {
                    extra.chance(10)
                        || p.threads.get(id).is_none_or(|k| {
                            t.seen_at_ns
                                .checked_sub(k.seen_at_ns)
                                .and_then(|g| extend_thread(k, g))
                                .is_none_or(|e| !same_thread(&e, t))
                        })
                })
                .map(|(id, _)| *id)
                .collect();
            for id in p.threads.keys() {
                if !c.threads.contains_key(id) && !extra.chance(30) {
                    ids.push(*id);
                }
            }
            Some(ids)
        }
        _ => None,
    };
    ReadingChanges {
        tasks: Some(tasks),
        threads,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// An encoder told what changed writes exactly what one that compares every row writes.
    #[test]
    fn told_changes_encode_the_same(seed in any::<u64>(), steps in 1usize..12,
                                    tasks in 0usize..40, key_every in 0u32..8) {
        let rs = readings(seed, steps, tasks);
        let mut every_row = Encoder::new(key_every).adaptive_keys(key_every % 2 == 0);
        let mut changed = Encoder::new(key_every).adaptive_keys(key_every % 2 == 0);
        let mut extra = Rng(seed ^ 0xc4a9);
        for (i, r) in rs.iter().enumerate() {
            let c = told(i.checked_sub(1).map(|j| &rs[j]), r, &mut extra);
            // Now and then a reading that does not say (a whole pass).
            let c = (!extra.chance(15)).then_some(&c);
            let a = every_row.encode(r, false);
            let b = changed.encode_changed(r, false, c);
            prop_assert_eq!(a, b, "reading {}", i);
        }
    }

    #[test]
    fn sequences_round_trip(seed in any::<u64>(), steps in 1usize..12, tasks in 0usize..40,
                            key_every in 0u32..8, force in proptest::collection::vec(any::<bool>(), 12)) {
        let rs = readings(seed, steps, tasks);
        let force: Vec<bool> = force.iter().map(|&f| f && seed % 3 == 0).collect();
        if let Err(m) = run(&rs, key_every, &force) {
            prop_assert!(false, "{}", m);
        }
    }

    /// Seeking: a fresh decoder given the key, the names frames in between and one delta.
    #[test]
    fn any_delta_decodes_against_its_key_alone(seed in any::<u64>(), steps in 2usize..10,
                                               tasks in 1usize..30) {
        let rs = readings(seed, steps, tasks);
        let enc = match run(&rs, 100, &[]) {
            Ok(e) => e,
            Err(m) => return Err(TestCaseError::fail(m)),
        };
        for target in 0..enc.len() {
            let Some(k) = (0..=target).rev().find(|&i| enc[i].key) else {
                return Err(TestCaseError::fail("no key"));
            };
            let mut dec = Decoder::new();
            for (i, e) in enc.iter().enumerate().take(target + 1).skip(k) {
                if let Some(n) = &e.names {
                    prop_assert!(dec.apply_names(e.key, n).is_ok());
                }
                if i == k || i == target {
                    let got = dec.apply_sample(e.key, &e.sample);
                    prop_assert!(got.is_ok());
                    if let Ok(got) = got {
                        if i == target {
                            if let Err(m) = check(&rs[target], &got, Some(&rs[k])) {
                                return Err(TestCaseError::fail(m));
                            }
                        }
                    }
                }
            }
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Hostile payloads: every truncation, byte flips and arbitrary bytes are errors or
    /// readings, never panics.
    #[test]
    fn hostile_payloads_do_not_panic(seed in any::<u64>(), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
                                     junk in proptest::collection::vec(any::<u8>(), 0..200)) {
        let rs = readings(seed, 3, 6);
        let mut enc = Encoder::new(10);
        let es: Vec<Encoded> = rs.iter().map(|r| enc.encode(r, false)).collect();
        let fresh = |es: &[Encoded]| {
            let mut d = Decoder::new();
            if let Some(n) = &es[0].names {
                let _ = d.apply_names(true, n);
            }
            let _ = d.apply_sample(true, &es[0].sample);
            d
        };
        for e in &es {
            for p in [Some(&e.sample), e.names.as_ref()].into_iter().flatten() {
                for cut in 0..p.len() {
                    let mut d = fresh(&es);
                    let _ = d.apply_sample(e.key, &p[..cut]);
                    let _ = d.apply_sample(!e.key, &p[..cut]);
                    let _ = d.apply_names(e.key, &p[..cut]);
                }
                let mut q = p.clone();
                for &(i, x) in &flips {
                    if !q.is_empty() {
                        let n = q.len();
                        q[i % n] ^= x | 1;
                    }
                }
                let mut d = fresh(&es);
                let _ = d.apply_names(e.key, &q);
                let _ = d.apply_sample(e.key, &q);
                let _ = d.apply_sample(false, &q);
            }
        }
        let mut d = fresh(&es);
        let mut j = b"TH\x01\x00\x00\x00".to_vec();
        j.push(junk.first().copied().unwrap_or(0) % 4);
        j.extend_from_slice(&junk);
        let _ = d.apply_sample(true, &j);
        let _ = d.apply_sample(false, &j);
        let _ = d.apply_names(true, &j);
        let _ = d.apply_names(false, &j);
        let _ = d.apply_sample(false, &junk);
    }
}

#[test]
fn a_newer_major_is_refused_and_a_newer_minor_is_read() {
    let rs = readings(7, 2, 10);
    let mut enc = Encoder::new(10);
    let e = enc.encode(&rs[0], false);
    let mut p = e.sample.clone();
    p[2..4].copy_from_slice(&(FORMAT_MAJOR + 1).to_le_bytes());
    assert_eq!(
        Decoder::new().apply_sample(true, &p).err(),
        Some(HistoryError::NewerFormat {
            found: FORMAT_MAJOR + 1,
            supported: FORMAT_MAJOR
        })
    );
    // A newer minor with trailing data: read as before.
    let mut p = e.sample.clone();
    p[4..6].copy_from_slice(&9u16.to_le_bytes());
    p.extend_from_slice(b"future data");
    let mut d = Decoder::new();
    if let Some(n) = &e.names {
        assert!(d.apply_names(true, n).is_ok());
    }
    let got = d.apply_sample(true, &p);
    assert!(got.is_ok_and(|g| check(&rs[0], &g, None).is_ok()));
    assert_eq!(
        Decoder::new().apply_sample(true, b"nope").err(),
        Some(HistoryError::BadMagic)
    );
}

#[test]
fn deltas_need_their_key() {
    let rs = readings(11, 3, 20);
    let mut enc = Encoder::new(10);
    let es: Vec<Encoded> = rs.iter().map(|r| enc.encode(r, false)).collect();
    assert!(es[0].key);
    let Some(delta) = es.iter().find(|e| !e.key) else {
        return;
    };
    assert!(matches!(
        Decoder::new().apply_sample(false, &delta.sample),
        Err(HistoryError::NoKey)
    ));
    // Against another key: refused.
    let mut other = rs[0].clone();
    other.snapshot.taken_at_unix_ns += 1;
    let mut d = Decoder::new();
    let k = Encoder::new(10).encode(&other, false);
    assert!(d.apply_sample(true, &k.sample).is_ok());
    assert!(matches!(
        d.apply_sample(false, &delta.sample),
        Err(HistoryError::WrongKey { .. })
    ));
    // A key flag that disagrees with the payload.
    assert!(matches!(
        d.apply_sample(true, &delta.sample),
        Err(HistoryError::WrongFrame)
    ));
}

/// A host where nothing ran: the delta carries no rows, and every thread (stamped with the
/// sample's time) decodes exactly.
#[test]
fn idle_threads_are_omitted_and_decode_exactly() {
    let mut rs = readings(5, 1, 300);
    if let Some(s0) = rs[0].states.as_mut() {
        for t in s0.threads.values_mut() {
            t.seen_at_ns = s0.at_ns;
        }
    }
    let mut next = rs[0].clone();
    next.snapshot.taken_at_unix_ns += 10;
    if let Some(s) = next.states.as_mut() {
        s.at_ns += 1_000;
        for t in s.threads.values_mut() {
            *t = grow(t, 1_000);
        }
    }
    rs.push(next);
    let mut enc = Encoder::new(10).adaptive_keys(false);
    let k = enc.encode(&rs[0], false);
    let d = enc.encode(&rs[1], false);
    assert!(k.key && !d.key);
    assert!(d.names.is_none(), "no new command lines");
    assert!(
        d.sample.len() * 10 < k.sample.len(),
        "delta {} bytes, key {}",
        d.sample.len(),
        k.sample.len()
    );
    let mut dec = Decoder::new();
    if let Some(n) = &k.names {
        assert!(dec.apply_names(true, n).is_ok());
    }
    assert!(dec.apply_sample(true, &k.sample).is_ok());
    let got = dec.apply_sample(false, &d.sample);
    let Ok(got) = got else {
        panic!("{got:?}");
    };
    assert_eq!(got.snapshot, rs[1].snapshot);
    let (Some(a), Some(b)) = (&rs[1].states, &got.states) else {
        panic!("states lost");
    };
    assert_eq!(a.threads.len(), b.threads.len());
    for (id, t) in &a.threads {
        assert!(
            b.threads.get(id).is_some_and(|d| same_thread(t, d)),
            "{id:?}"
        );
    }
}

/// Reads a varint at `*i` (test-side, to take a payload apart).
fn varint(p: &[u8], i: &mut usize) -> u64 {
    let mut v = 0;
    for shift in (0..64).step_by(7) {
        let x = p[*i];
        *i += 1;
        v |= u64::from(x & 0x7f) << shift;
        if x & 0x80 == 0 {
            break;
        }
    }
    v
}

/// A sample payload as format `minor` (0 to 3) wrote it: the header saying so, and only the
/// columns that minor had (33 in minor 0, the exits column added in 1, the host column in 2,
/// the throttled column in 3; minor 4 added the cgroups column).
fn as_minor(p: &[u8], minor: u16) -> Vec<u8> {
    // Header: magic (2), major (2), minor (2), frame type (1); then the column count and
    // each column as (length, bytes).
    let mut i = 7;
    let n = varint(p, &mut i) as usize;
    assert!(n < 0x80 && i == 8, "a one-byte column count");
    let keep = 33 + usize::from(minor);
    assert!(keep < n, "minor {minor} had fewer columns than {n}");
    let mut out = p[..7].to_vec();
    out[4..6].copy_from_slice(&minor.to_le_bytes());
    out.push(keep as u8);
    for _ in 0..keep {
        let start = i;
        let len = varint(p, &mut i) as usize;
        i += len;
        out.extend_from_slice(&p[start..i]);
    }
    out
}

/// Encodes `rs` (a key every 10 samples, never adaptive) and decodes each sample twice: as
/// written, and rewritten as format `minor` wrote it ([`as_minor`]). `check` gets each reading,
/// its key, and its two decodings (as written, as `minor`); deltas must be among them.
fn decode_also_as_minor(
    rs: &[Reading],
    minor: u16,
    mut check: impl FnMut(&Reading, &Reading, &Reading, &Reading),
) {
    let mut enc = Encoder::new(10).adaptive_keys(false);
    let mut dec = Decoder::new();
    let mut old_dec = Decoder::new();
    let mut key = &rs[0];
    let mut deltas = 0;
    for r in rs {
        let e = enc.encode(r, false);
        if e.key {
            key = r;
        } else {
            deltas += 1;
        }
        if let Some(n) = &e.names {
            assert!(dec.apply_names(e.key, n).is_ok());
            assert!(old_dec.apply_names(e.key, n).is_ok());
        }
        let got = dec.apply_sample(e.key, &e.sample).expect("as written");
        let old = as_minor(&e.sample, minor);
        assert_eq!(&old[4..6], &minor.to_le_bytes());
        let got_old = old_dec
            .apply_sample(e.key, &old)
            .unwrap_or_else(|e| panic!("as minor {minor}: {e}"));
        check(r, key, &got, &got_old);
    }
    assert!(deltas > 0, "deltas are tested too");
}

/// `r` as a store before minor 3 gives it back: throttled time (no state of its own then) is
/// runnable time, as a build without the state measured it, and there is no cgroups table
/// (minor 4). (The key a check compares a delta's omitted threads against is folded the same
/// way.)
fn before_throttled(r: &Reading) -> Reading {
    let mut r = r.clone();
    r.cgroups = None;
    if let Some(s) = &mut r.states {
        for t in s.threads.values_mut() {
            let (run, thr) = (State::Runnable.index(), State::Throttled.index());
            t.state_ns[run] = t.state_ns[run].wrapping_add(t.state_ns[thr]);
            t.samples[run] = t.samples[run].wrapping_add(t.samples[thr]);
            t.state_ns[thr] = 0;
            t.samples[thr] = 0;
            if t.current == Some(State::Throttled) {
                t.current = Some(State::Runnable);
            }
        }
    }
    r
}

/// A store from before the throttled state (format minor 2, no throttled column): its
/// threads decode with their throttled time as runnable, the rest as written.
#[test]
fn a_sample_from_before_the_throttled_state_decodes_it_as_runnable() {
    let rs = readings(13, 6, 12);
    let mut throttled = 0;
    decode_also_as_minor(&rs, 2, |r, key, got, old| {
        assert_eq!(check(r, got, Some(key)), Ok(()));
        throttled += r
            .states
            .iter()
            .flat_map(|s| s.threads.values())
            .filter(|t| t.current == Some(State::Throttled))
            .count();
        let (want, key) = (before_throttled(r), before_throttled(key));
        assert_eq!(check(&want, old, Some(&key)), Ok(()));
    });
    assert!(throttled > 0, "throttled threads are tested");
}

/// A store from before the cgroups table (format minor 3, no cgroups column), which is also
/// what a reader of minor 3 makes of a newer store (it skips the column): every sample, key
/// or delta, decodes without a table, the rest as written.
#[test]
fn a_sample_from_before_cgroups_decodes_without_a_table() {
    let rs = readings(17, 8, 12);
    let mut tables = 0;
    decode_also_as_minor(&rs, 3, |r, key, got, old| {
        assert_eq!(check(r, got, Some(key)), Ok(()));
        tables += usize::from(r.cgroups.as_ref().is_some_and(|l| !l.cgroups.is_empty()));
        assert_eq!(old.cgroups, None);
        let mut want = r.clone();
        want.cgroups = None;
        assert_eq!(check(&want, old, Some(key)), Ok(()));
    });
    assert!(tables > 2, "tables are tested");
}

/// A store from before exits were stored (format minor 0, no exits column): its samples,
/// keys and deltas alike, decode as they did, with no exits and a reason saying so.
#[test]
fn a_sample_from_before_exits_decodes_with_none() {
    let mut rs = readings(5, 4, 12);
    for r in &mut rs {
        r.exits_missing = None;
        r.exits_dropped = 0;
        r.exits.clear();
    }
    rs[1].exits = vec![new_exit(&mut Rng(3), rs[1].snapshot.taken_at_boottime_ns)];
    decode_also_as_minor(&rs, 0, |r, key, got, old| {
        assert_eq!(check(r, got, Some(key)), Ok(()));
        assert!(old.exits.is_empty());
        assert_eq!(old.exits_dropped, 0);
        assert_eq!(old.exits_missing.as_deref(), Some(EXITS_NOT_RECORDED));
        let mut want = before_throttled(r);
        want.exits.clear();
        want.exits_missing = Some(EXITS_NOT_RECORDED.to_string());
        // Nor did minor 0 keep the host identity.
        want.host = HostIdentity::default();
        assert_eq!(check(&want, old, Some(&before_throttled(key))), Ok(()));
    });
}

/// A store from before the host identity was stored (format minor 1, and minor 0 above):
/// every sample, key or delta, decodes with an unknown host and boot id (not the reader's),
/// the rest as written.
#[test]
fn a_sample_from_before_host_identity_decodes_with_none() {
    let mut rs = readings(9, 6, 12);
    for r in &mut rs {
        r.host = HostIdentity {
            hostname: Some(b"old-host".to_vec()),
            boot_id: Some(b"b00t".to_vec()),
        };
    }
    decode_also_as_minor(&rs, 1, |r, key, got, old| {
        assert_eq!(got.host, r.host);
        assert_eq!(old.host, HostIdentity::default());
        let mut want = before_throttled(r);
        want.host = HostIdentity::default();
        assert_eq!(check(&want, old, Some(&before_throttled(key))), Ok(()));
    });
}

/// The identity is written in key frames only: a reading whose identity differs from its
/// key's (a renamed host, another boot) is written as a key, and each decodes with its own.
#[test]
fn another_host_identity_starts_a_key() {
    let mut rs = readings(11, 8, 10);
    for (i, r) in rs.iter_mut().enumerate() {
        r.host = HostIdentity {
            hostname: Some(if i < 4 {
                b"a".to_vec()
            } else {
                b"b/..=\0".to_vec()
            }),
            boot_id: Some(if i < 6 {
                b"one".to_vec()
            } else {
                b"two".to_vec()
            }),
        };
    }
    let mut enc = Encoder::new(100).adaptive_keys(false);
    let mut dec = Decoder::new();
    let mut keys = Vec::new();
    for (i, r) in rs.iter().enumerate() {
        let e = enc.encode(r, false);
        if e.key {
            keys.push(i);
        }
        if let Some(n) = &e.names {
            assert!(dec.apply_names(e.key, n).is_ok());
        }
        let got = dec.apply_sample(e.key, &e.sample).expect("decodes");
        assert_eq!(got.host, r.host, "reading {i}");
    }
    for i in [0, 4, 6] {
        assert!(keys.contains(&i), "reading {i} is a key: {keys:?}");
    }
    assert!(keys.len() < rs.len(), "the others may be deltas: {keys:?}");
}

/// Exits cost the same in a key frame as in a delta, so they do not make the adaptive rule
/// write keys: a host whose tasks do not change, with 40 exits (long command lines) in every
/// sample, gets one key and deltas after it. (Counted, they made every sample a key.)
#[test]
fn exits_do_not_make_every_sample_a_key() {
    let tasks: Vec<_> = (1..=50)
        .map(|pid| common::process(pid, Some("/usr/bin/some-daemon --flag")))
        .collect();
    let mut rng = Rng(11);
    let mut enc = Encoder::new(60);
    let keys: Vec<bool> = (0..10)
        .map(|i| {
            let mut r = common::reading_at(100 + i, tasks.clone());
            r.exits = (0..40)
                .map(|_| new_exit(&mut rng, r.snapshot.taken_at_boottime_ns))
                .collect();
            enc.encode(&r, false).key
        })
        .collect();
    assert_eq!(keys.iter().filter(|&&k| k).count(), 1, "{keys:?}");
    assert!(keys[0]);
}
