//! The BPF backend against the procfs backend: `tasksnap ps` must print the same rows either
//! way for a spawned load (threads, zombies, stopped and D-state tasks, odd names, niced,
//! real-time, a session leader, a terminal), apart from the columns that move between runs.
//! Needs root (the backend is only used as root); CI runs it with
//! TASKSNAP_REQUIRE_PRIVILEGED=1, where a skip is a failure.

mod common;

use std::collections::HashSet;

use common::ps::*;
use common::*;

const FORMATS: &[&[&str]] = &[
    &["-ef"],
    &["-eF"],
    &["-el"],
    &["-eLf"],
    &[
        "-eL",
        "-o",
        "pid,lwp,stat,nlwp,pri,ni,rtprio,cls,psr,comm,args",
    ],
    &["aux"],
    &["axjf"],
    &["-e", "m"],
    &[
        "-e",
        "-o",
        "pid,ppid,pgid,sid,tpgid,tty,stat,f,uid,euid,ruid,suid,fuid,gid,rgid,sgid",
    ],
    &[
        "-e",
        "-o",
        "pid,vsz,sz,rss,maj_flt,min_flt,start,lstart,wchan,comm,args",
    ],
    &["-e", "--forest", "-o", "pid,user,comm"],
    &["-e", "-o", "pid,comm,cgroup"],
    &[
        "-eL",
        "-o",
        "pid,lwp,sig,tsig,sigmask,ignored,caught,stackp,eip,lim,drs,trs,size,comm",
    ],
    &[
        "-e",
        "m",
        "-o",
        "pid,tid,sig,tsig,blocked,sigcatch,supgrp,fname,tty4,numa,comm",
    ],
    &[
        "-eL",
        "-o",
        "pid,lwp,netns,pidns,userns,mntns,oom,oomadj,luid,ag_id,rops,wchars,uss,unit,slice,lxc",
    ],
];

#[test]
fn ps_prints_the_same_rows_with_either_backend() {
    if !root_or_skip("BPF/procfs equivalence") {
        return;
    }
    let load = spawn_load();
    let extras = Extras::spawn();
    let mut pids: HashSet<i32> = load.info.known_pids().into_iter().collect();
    pids.extend(extras.pids());
    let mut failures = Vec::new();
    let spawned = pid_list(&pids);
    for args in FORMATS {
        // Forests over what the test spawned alone: see only_spawned_in_a_forest.
        let selected = only_spawned_in_a_forest(args, &spawned);
        let mut a: Vec<&str> = selected.iter().map(String::as_str).collect();
        a.push("--backend=bpf");
        let bpf = run(TASKSNAP, &["ps"], &a, "C.UTF-8");
        a.pop();
        a.push("--backend=procfs");
        let procfs = run(TASKSNAP, &["ps"], &a, "C.UTF-8");
        assert_eq!(
            bpf.code,
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&bpf.stderr)
        );
        let (h1, r1) = load_rows(&bpf.stdout, &pids);
        let (h2, r2) = load_rows(&procfs.stdout, &pids);
        if h1 != h2 || r1 != r2 || r1.len() < 20 {
            let mut msg = format!("{args:?}: {} vs {} rows\n", r1.len(), r2.len());
            msg += &differing_rows(("bpf", &r1), ("procfs", &r2), 4);
            failures.push(msg);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn no_process_is_missing_from_a_bpf_snapshot() {
    if !root_or_skip("BPF coverage") {
        return;
    }
    let before: Vec<i32> = proc_pids();
    let out = run(
        TASKSNAP,
        &["ps"],
        &["-e", "-o", "pid=", "--backend=bpf"],
        "C",
    );
    let listed: HashSet<i32> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect();
    // Everything /proc listed before the run and still there after it must be listed.
    let after: HashSet<i32> = proc_pids().into_iter().collect();
    let missing: Vec<i32> = before
        .into_iter()
        .filter(|p| after.contains(p) && !listed.contains(p))
        .collect();
    assert!(listed.contains(&1), "pid 1 must be there");
    assert!(
        missing.is_empty(),
        "missing from the BPF snapshot: {missing:?}"
    );
}

fn proc_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

#[test]
fn an_unavailable_backend_is_a_clear_error() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        let out = run(TASKSNAP, &["ps"], &["-p", "1", "--backend=bpf"], "C");
        assert_eq!(out.code, Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("BPF backend is unavailable"), "{err}");
        return;
    }
    // As root: asking for procfs must not load BPF, and auto must say what it chose.
    let out = run(
        TASKSNAP,
        &["ps"],
        &["-p", "1", "--backend=procfs", "--verbose"],
        "C",
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("procfs: asked for"));
    let out = run(TASKSNAP, &["ps"], &["-p", "1", "--verbose"], "C");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tasksnap: procfs") || err.contains("tasksnap: bpf"),
        "{err}"
    );
}

#[test]
fn a_non_root_caller_never_gets_the_iterator() {
    if !root_or_skip("non-root BPF refusal (runs tasksnap as nobody)") {
        return;
    }
    // The iterator bypasses procfs's checks (other users' command lines under ptrace rules,
    // hidepid): tasksnap must not serve a non-root caller from it.
    // tasksnap where nobody can execute it, wherever the checkout lives.
    let bin_str = tasksnap_for_others();
    let as_nobody = |args: &[&str]| {
        std::process::Command::new("setpriv")
            // The question here is the iterator itself; root's query service (another test's,
            // tests/service.rs) answers non-root callers by procfs's rules.
            .env("TASKSNAP_NO_SERVICE", "1")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                &bin_str,
                "ps",
            ])
            .args(args)
            .output()
            .expect("setpriv")
    };
    let out = as_nobody(&["-p", "1", "--backend=bpf"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("BPF backend is unavailable") && err.contains("not root"),
        "{err}"
    );
    let out = as_nobody(&["-e", "-o", "pid=", "--verbose"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tasksnap: procfs"),
        "auto must pick procfs for nobody: {err}"
    );
}

#[test]
fn pids_are_namespace_local_inside_a_pid_namespace() {
    if !root_or_skip("pid namespace translation (unshare --pid)") {
        return;
    }
    let ns = ps_in_a_pid_namespace("pid,ppid,comm", "");
    let (bpf, procfs, text) = (&ns.bpf, &ns.procfs, &ns.stdout);
    let sleep_row = |s: &str| {
        s.lines()
            .find(|l| l.ends_with(" sleep"))
            .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
    };
    let (b, p) = (sleep_row(bpf), sleep_row(procfs));
    assert!(b.is_some(), "no sleep row under BPF:\n{text}");
    assert_eq!(b, p, "pid/ppid of the namespace's sleep differ:\n{text}");
    // Namespace-local numbers are tiny; global ones would not be.
    let pid: i32 = b
        .as_deref()
        .and_then(|r| r.split(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or(-1);
    assert!((1..100).contains(&pid), "{text}");
    // The same tasks either way (the two tasksnap runs aside): nothing from outside the
    // namespace, no task twice under two numbers.
    assert_eq!(
        row_set(bpf, "tasksnap"),
        row_set(procfs, "tasksnap"),
        "{text}"
    );
}

#[test]
fn capabilities_are_dropped_once_the_iterator_is_ready() {
    if !root_or_skip("capability drop") {
        return;
    }
    let out = run(
        TASKSNAP,
        &["ps"],
        &["-eL", "-o", "pid,tid,comm", "--backend=bpf", "--verbose"],
        "C",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.code, Some(0), "{err}");
    // DAC_OVERRIDE, DAC_READ_SEARCH, KILL, SYS_PTRACE, SYS_NICE; no SYS_ADMIN, BPF, PERFMON.
    assert!(
        err.contains("capabilities after setup: 0x0000000000880026"),
        "{err}"
    );
    // Passes after the drop still see every task, threads included.
    let rows = String::from_utf8_lossy(&out.stdout).lines().count();
    let threads: usize = proc_pids()
        .iter()
        .filter_map(|p| std::fs::read_dir(format!("/proc/{p}/task")).ok())
        .map(|d| d.count())
        .sum();
    assert!(
        rows + 64 >= threads,
        "{rows} rows for about {threads} threads"
    );
}
