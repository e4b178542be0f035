//! procps `ps` as an oracle: for every supported option set, `tasksnap ps` must print the same
//! bytes as the system's procps-ng `ps` for the processes of a load this test spawns (sleepers,
//! threads, zombies, stopped tasks, a task in D state, hostile names), apart from columns whose
//! values move between two runs (%CPU, C, TIME, ELAPSED).
//!
//! Only the load's rows are compared: the rest of the machine changes between the two runs
//! (kworker names, ps itself).

mod common;

use std::collections::HashSet;
use std::process::Command;
use tasksnap_loadgen::skip_unless_root;

use common::ps::*;
use common::*;
use tasksnap_loadgen::Load;

fn compare(load: &Load, extras: &Extras, args: &[&str], locale: &str) -> Result<usize, String> {
    let mut pids: HashSet<i32> = load.info.known_pids().into_iter().collect();
    pids.extend(extras.pids());
    let ours = run(TASKSNAP, &["ps"], args, locale);
    let theirs = run_procps(args, locale, None);
    same_rows(args, locale, &pids, &ours, &theirs)
}

/// The rows of `pids` in two outputs of `args` (ours, procps's) are the same bytes, and
/// there are some.
fn same_rows(
    args: &[&str],
    locale: &str,
    pids: &HashSet<i32>,
    ours: &Out,
    theirs: &Out,
) -> Result<usize, String> {
    if ours.code != theirs.code {
        return Err(exits_differ(&format!("{args:?}"), ours, theirs));
    }
    let (h1, mut r1) = load_rows(&ours.stdout, pids);
    let (h2, mut r2) = load_rows(&theirs.stdout, pids);
    if is_forest(args) && !args.contains(&"-p") {
        blank_forest_bars(&mut r1);
        blank_forest_bars(&mut r2);
    }
    if h1 != h2 {
        return Err(format!(
            "{args:?} [{locale}]: header\n  ours:   {:?}\n  procps: {:?}",
            String::from_utf8_lossy(&h1),
            String::from_utf8_lossy(&h2)
        ));
    }
    if r1 != r2 {
        let mut msg = format!("{args:?} [{locale}]: rows differ\n");
        msg += &differing_rows(("ours", &r1), ("procps", &r2), 5);
        if r1.len() != r2.len() {
            msg += &format!("  {} rows vs {} rows\n", r1.len(), r2.len());
        }
        return Err(msg);
    }
    some_load_rows(&format!("{args:?}"), r1.len())
}

/// Why two runs differ in how they ended: their exit codes and what they said.
fn exits_differ(what: &str, ours: &Out, theirs: &Out) -> String {
    format!(
        "{what}: exit {:?} vs procps {:?}; stderr {:?} vs {:?}",
        ours.code,
        theirs.code,
        String::from_utf8_lossy(&ours.stderr),
        String::from_utf8_lossy(&theirs.stderr)
    )
}

/// `Ok(n)` when a comparison had `n > 0` rows of the load: with none it proves nothing.
fn some_load_rows(what: &str, n: usize) -> Result<usize, String> {
    if n == 0 {
        return Err(format!(
            "{what}: no load rows at all: the test would prove nothing"
        ));
    }
    Ok(n)
}

const FORMATS: &[&str] = &[
    "-ef",
    "-eF",
    "-el",
    "-ely",
    "-elf",
    "-ej",
    "-ejH",
    "-efH",
    "-eLf",
    "-eL",
    "-eT",
    "-e m",
    "-e H",
    "aux",
    "ax",
    "axu",
    "axjf",
    "axf",
    "-e --forest",
    "-e -o pid,ppid,pgid,pgrp,sid,sess,tid,lwp,spid,nlwp,tpgid",
    "-e -o pid,uid,euid,ruid,suid,fuid,user,euser,ruser,suser,fuser",
    "-e -o pid,gid,egid,rgid,group,egroup,rgroup",
    "-e -o pid,stat,s,state,tty,tt,tname,f,flags,wchan",
    "-e -o pid,pri,pri_foo,opri,priority,ni,nice,psr,class,cls,policy,rtprio,sched",
    "-e -o pid,rss,rssize,rsz,vsz,vsize,sz,pmem,%mem,maj_flt,min_flt",
    "-e -o pid,stime,start,lstart,bsdstart,start_time,etime,etimes,time,cputime,bsdtime",
    "-e -o pid,comm,ucmd,ucomm",
    "-e -o pid,args",
    "-e -o pid,cmd,command",
    "-e -o pid,comm,args -ww",
    "-e -o pid=PROCESS,comm=NAME,args=COMMAND",
    "-e -o pid:10,comm:5,args",
    "-e -o pid,addr,label,c,pcpu,%cpu",
    "-e -o pid,cgroup,comm",
    "-e -o pid,comm,cgroup",
    "-e -O ppid,nlwp",
    "-e --sort=-pid -o pid,comm",
    "-e --sort comm,pid -o pid,comm",
    "-e k -ppid,pid -o pid,ppid,comm",
    "-e --no-headers -o pid,comm",
    "-e -w -o pid,args",
    "-e c",
    "axc",
    "-aux",
    "-ax",
    "-eL --sort=pid",
    "-e m --sort=pid",
    "-e -o pid=X,comm=",
    "-e -o pid,comm -o args",
    "-eo pid,tname,comm --sort tty,-pid",
];

fn check_all(locale: &str) {
    let load = spawn_load();
    let extras = Extras::spawn();
    let mut failures = Vec::new();
    let mut rows = 0;
    for &line in FORMATS {
        let args = &words(line)[..];
        // --no-headers output has no header to find the PID column in: compare whole output
        // of the load's pids only through an explicit selection instead.
        if args.contains(&"--no-headers") {
            continue;
        }
        let t0 = std::time::Instant::now();
        let r = compare(&load, &extras, args, locale);
        eprintln!("{args:?} {:?}", t0.elapsed());
        match r {
            Ok(n) => rows += n,
            Err(e) => failures.push(e),
        }
    }
    // The bars a whole-host forest may not compare, compared over what the test spawned.
    let mut pids: HashSet<i32> = load.info.known_pids().into_iter().collect();
    pids.extend(extras.pids());
    let spawned = pid_list(&pids);
    for args in FORMATS
        .iter()
        .map(|line| words(line))
        .filter(|a| is_forest(a))
    {
        let selected = only_spawned_in_a_forest(&args, &spawned);
        let selected: Vec<&str> = selected.iter().map(String::as_str).collect();
        match compare(&load, &extras, &selected, locale) {
            Ok(n) => rows += n,
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "{} formats differ from procps:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(rows > FORMATS.len() * 5, "too few rows compared: {rows}");
}

#[test]
fn same_bytes_as_procps_in_the_c_locale() {
    check_all("C");
}

#[test]
fn same_bytes_as_procps_in_a_utf8_locale() {
    check_all("C.UTF-8");
}

#[test]
fn selections_pick_the_same_rows_as_procps() {
    let load = spawn_load();
    let leader = load.info.leader.to_string();
    let pids: Vec<String> = load
        .info
        .known_pids()
        .iter()
        .map(|p| p.to_string())
        .collect();
    let list = pids.join(",");
    let stopped = load.info.stopped[0].to_string();
    // -q keeps the order given, duplicates included; a thread id is not a process.
    let dup = format!(
        "{},{},{},{}",
        load.info.stopped[0], load.info.leader, load.info.stopped[0], load.info.thread_tids[0]
    );
    let cases: Vec<Vec<&str>> = vec![
        vec!["-p", &list],
        vec!["-q", &list],
        vec!["--pid", &list],
        vec!["p", &list],
        vec!["-g", &leader, "-o", "pid,pgid,comm"],
        vec!["--ppid", &leader],
        vec!["-s", &leader],
        vec!["--sid", &leader],
        vec!["-p", &list, "-N", "-o", "pid,comm"],
        vec!["-p", &stopped, "-o", "pid,stat,args"],
        vec!["-C", "lg-proc", "-o", "pid,comm"],
        vec!["-u", "root", "-o", "pid,user,comm"],
        vec!["-U", "0", "-o", "pid,ruser,comm"],
        vec!["-G", "0", "-o", "pid,rgroup,comm"],
        vec!["-t", "-", "-o", "pid,tty,comm"],
        vec![&stopped],
        vec!["-p", &list, "-L", "-o", "pid,lwp,comm"],
        vec!["-q", &dup],
        vec!["-x"],
    ];
    let mut failures = Vec::new();
    for c in &cases {
        let ours = run(TASKSNAP, &["ps"], c, "C");
        let theirs = run_procps(c, "C", None);
        let pids: HashSet<i32> = load.info.known_pids().into_iter().collect();
        let (h1, r1) = load_rows(&ours.stdout, &pids);
        let (h2, r2) = load_rows(&theirs.stdout, &pids);
        if ours.code != theirs.code || h1 != h2 || r1 != r2 {
            failures.push(format!(
                "{c:?}: exit {:?}/{:?}\n ours:\n{}\n procps:\n{}",
                ours.code,
                theirs.code,
                String::from_utf8_lossy(&ours.stdout),
                String::from_utf8_lossy(&theirs.stdout)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn narrow_screens_cut_like_procps() {
    let load = spawn_load();
    let pids: HashSet<i32> = load.info.known_pids().into_iter().collect();
    let mut failures = Vec::new();
    for cols in ["30", "50", "80", "132"] {
        for args in [
            &["-ef"][..],
            &["aux"],
            &["-eLf"],
            &["-eo", "pid,user,args,comm"],
            &["axjf"],
        ] {
            let ours = tasksnap_in_columns(cols, &[&["ps"][..], args].concat(), "C.UTF-8");
            let theirs = run_procps(args, "C.UTF-8", Some(cols));
            let (h1, mut r1) = load_rows(&ours.stdout, &pids);
            let (h2, mut r2) = load_rows(&theirs.stdout, &pids);
            if is_forest(args) {
                blank_forest_bars(&mut r1);
                blank_forest_bars(&mut r2);
            }
            if h1 != h2 || r1 != r2 || r1.is_empty() {
                failures.push(format!("COLUMNS={cols} {args:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

#[test]
fn errors_and_exit_codes_match_procps() {
    let cases: &[&[&str]] = &[
        &["-Q"],
        &["-p", "abc"],
        &["-p", "0"],
        &["-o", "nonsense"],
        &["--sort=nonsense"],
        &["-u", "no-such-user-here"],
        &["-L", "-T"],
        &["--forest", "-L"],
        &["-q", "1", "--forest"],
        &["-o", ""],
        &["-o", "pid:0"],
        &["--nonsense"],
        &["-p", "999999999", "-o", "pid"],
    ];
    for c in cases {
        let ours = run(TASKSNAP, &["ps"], c, "C");
        let theirs = run_procps(c, "C", None);
        assert_eq!(ours.code, theirs.code, "{c:?}");
        assert_eq!(
            String::from_utf8_lossy(&ours.stderr),
            String::from_utf8_lossy(&theirs.stderr),
            "{c:?}"
        );
        assert_eq!(ours.stdout, theirs.stdout, "{c:?}");
    }
}

#[test]
fn machine_output_is_parseable() {
    let load = spawn_load();
    let pid = load.info.odd[0].pid.to_string();
    let out = run(
        TASKSNAP,
        &["ps"],
        &["-p", &pid, "-o", "pid,comm,args", "--output", "json"],
        "C",
    );
    assert_eq!(out.code, Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let row = &v[0];
    assert_eq!(row["pid"], serde_json::json!(load.info.odd[0].pid));
    assert!(row["args"].is_string());
    let csv = run(
        TASKSNAP,
        &["ps"],
        &["-p", &pid, "-o", "pid,comm", "--output", "csv"],
        "C",
    );
    let text = String::from_utf8_lossy(&csv.stdout);
    assert!(text.starts_with("pid,comm\n"), "{text}");
    assert!(text.lines().nth(1).is_some_and(|l| l.starts_with(&pid)));
}

/// `ps --output json` turned a comm of one space into "", stripped trailing spaces from args
/// and replaced control characters with `?`: the machine format must carry each spawned
/// odd task's own bytes (its comm from /proc, its argv joined by spaces).
#[test]
fn ps_json_output_is_lossy() {
    let load = spawn_load();
    assert!(!load.info.odd.is_empty());
    let pids: Vec<String> = load.info.odd.iter().map(|o| o.pid.to_string()).collect();
    let out = run(
        TASKSNAP,
        &["ps"],
        &[
            "-p",
            &pids.join(","),
            "-o",
            "pid,comm,args",
            "--output",
            "json",
        ],
        "C.UTF-8",
    );
    assert_eq!(
        out.code,
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let mut checked = 0;
    for odd in &load.info.odd {
        let Some(row) = rows.iter().find(|r| r["pid"] == serde_json::json!(odd.pid)) else {
            continue; // gone meanwhile
        };
        let Ok(mut comm) = std::fs::read(format!("/proc/{}/comm", odd.pid)) else {
            continue;
        };
        comm.pop(); // the kernel's newline
        let bytes = |k: &str| -> Vec<u8> {
            // Every byte column has its `_bytes` sibling: hex, or null for valid UTF-8.
            assert!(
                row.get(format!("{k}_bytes")).is_some(),
                "{k}_bytes in {row}"
            );
            match row[format!("{k}_bytes")].as_str() {
                Some(hex) => (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
                    .collect(),
                None => row[k].as_str().expect("a string").as_bytes().to_vec(),
            }
        };
        assert_eq!(bytes("comm"), comm, "comm of {odd:?}: {row}");
        let Ok(mut cmdline) = std::fs::read(format!("/proc/{}/cmdline", odd.pid)) else {
            continue;
        };
        let args = if cmdline.is_empty() {
            [&b"["[..], &comm, b"]"].concat()
        } else {
            if cmdline.last() == Some(&0) {
                cmdline.pop(); // the terminator
            }
            cmdline
                .iter()
                .map(|&b| if b == 0 { b' ' } else { b })
                .collect()
        };
        assert_eq!(bytes("args"), args, "args of {odd:?}: {row}");
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} odd tasks checked");
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let out = close_stdout_after(&["ps", "-eLf"], 16);
    assert!(out.status.success(), "status {:?}", out.status);
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Signal masks, the old memory-layout columns, and the other odd specifiers of `ps L`:
/// procps's headers, widths and values, checked one at a time and all together.
const ODD_SPECS: &[&str] = &[
    "blocked",
    "caught",
    "ignored",
    "pending",
    "sig",
    "sig_block",
    "sig_catch",
    "sig_ignore",
    "sig_pend",
    "sigcatch",
    "sigignore",
    "sigmask",
    "tsig",
    "drs",
    "dsiz",
    "m_drs",
    "m_size",
    "m_trs",
    "size",
    "trs",
    "trss",
    "tsiz",
    "sgi_rss",
    "eip",
    "esp",
    "stackp",
    "start_stack",
    "lim",
    "supgrp",
    "fname",
    "tty4",
    "sgi_p",
    "cuc",
    "cuu",
    "util",
    "zone",
    "numa",
];

/// Who runs both ps: this test's user, or nobody (who may not see other users' code and
/// stack addresses: /proc masks them, and tasksnap must print what procps prints then).
struct Runner {
    /// tasksnap where nobody can execute it, when nobody runs both.
    nobody: Option<String>,
}

impl Runner {
    fn uid(&self) -> Option<u32> {
        self.nobody.as_ref().map(|_| NOBODY)
    }

    fn backends(&self) -> Vec<&'static str> {
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        // The BPF backend serves root only (bpf_backend.rs checks the refusal).
        if root && self.nobody.is_none() {
            vec!["--backend=procfs", "--backend=bpf"]
        } else {
            vec!["--backend=procfs"]
        }
    }

    fn ours(&self, backend: &str, args: &[&str], cols: Option<&str>) -> Out {
        let program = self.nobody.as_deref().unwrap_or(TASKSNAP);
        let mut a = args.to_vec();
        a.push(backend);
        output(&mut command_as(
            self.uid(),
            program,
            &["ps"],
            &a,
            "C.UTF-8",
            cols,
        ))
    }

    fn theirs(&self, args: &[&str], cols: Option<&str>) -> Out {
        oracle(&mut command_as(
            self.uid(),
            "ps",
            &[],
            args,
            "C.UTF-8",
            cols,
        ))
    }
}

/// Whole outputs of a listing of the load's own processes (`-p`), each line compared; a
/// single column whose values move between runs is compared by its header and its row
/// count only.
fn same_output(
    what: &str,
    ours: &Out,
    theirs: &Out,
    moving: bool,
    leftover_ok: bool,
) -> Result<usize, String> {
    let lines = |o: &Out| -> Vec<Vec<u8>> {
        o.stdout
            .split(|&c| c == b'\n')
            .map(<[u8]>::to_vec)
            .collect()
    };
    let (a, mut b) = (lines(ours), lines(theirs));
    if leftover_ok {
        forgive_leftover_addresses(&a, &mut b);
    }
    let same = if moving {
        a.len() == b.len() && a.first() == b.first()
    } else {
        a == b
    };
    if ours.code != theirs.code || !same {
        let mut msg = format!("{what}: exit {:?} vs procps {:?}\n", ours.code, theirs.code);
        msg += &differing_rows(("ours", &a), ("procps", &b), 4);
        if a.len() != b.len() {
            msg += &format!("  {} lines vs {}\n", a.len(), b.len());
        }
        return Err(msg);
    }
    Ok(a.len().saturating_sub(2))
}

/// `ps m -o eip` (or esp) over the load: procps 4.0.2 prints on a thread row a value left over
/// from another task it read, which is non-zero when that task was exiting (a churning host),
/// where the kernel says 0 for a sleeping task (`do_task_stat()` gives addresses only for
/// exiting or dumping tasks) and tasksnap prints the kernel's 0. A procps line is taken as
/// ours only there: ours is all zeros, procps's is an address, and no task of the load is
/// exiting (each of their threads' stat says 0 now, so the address cannot be theirs).
fn forgive_leftover_addresses(ours: &[Vec<u8>], theirs: &mut [Vec<u8>]) {
    let zero = b"0000000000000000";
    let address = |l: &[u8]| {
        let t = String::from_utf8_lossy(l);
        let t = t.trim();
        t.len() == 16 && t.bytes().all(|c| c.is_ascii_hexdigit()) && t.as_bytes() != zero
    };
    for (o, t) in ours.iter().zip(theirs.iter_mut()) {
        if o != t && String::from_utf8_lossy(o).trim().as_bytes() == zero && address(t) {
            eprintln!(
                "procps printed a left-over address {:?} where the kernel says 0",
                String::from_utf8_lossy(t).trim()
            );
            *t = o.clone();
        }
    }
}

/// True when the kernel gives every thread of the load no code or stack address
/// (`/proc/PID/task/TID/stat` kstkesp and kstkeip, fields 29 and 30, are 0): none is exiting.
fn kernel_says_zero(load: &Load) -> bool {
    load.info.known_pids().iter().all(|pid| {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return true; // gone: nothing of it is listed
        };
        tasks.flatten().all(|t| {
            let Ok(stat) = std::fs::read(t.path().join("stat")) else {
                return true;
            };
            // The fields after the comm, which ends at the last ')'.
            let after = stat
                .iter()
                .rposition(|&c| c == b')')
                .map_or(&stat[..], |i| &stat[i + 1..]);
            let fields: Vec<&[u8]> = after
                .split(|&c| c == b' ')
                .filter(|f| !f.is_empty())
                .collect();
            // Field 3 (state) is fields[0], so field N is fields[N - 3].
            fields.get(26) == Some(&&b"0"[..]) && fields.get(27) == Some(&&b"0"[..])
        })
    })
}

/// Each specifier alone, for the load's processes, as processes (`-p`), threads (`-L`: a
/// leader's row is read as the process, the others as threads, which `sig` tells apart) and
/// procps's `m` (process rows print `-` for thread-only columns, thread rows for
/// process-only ones).
fn each_alone(runner: &Runner, load: &Load) -> Vec<String> {
    let list = load
        .info
        .known_pids()
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut failures = Vec::new();
    let mut rows = 0;
    for spec in ODD_SPECS {
        for how in [&["-p"][..], &["-L", "-p"], &["m", "-p"]] {
            let mut args = how.to_vec();
            args.extend([list.as_str(), "-o", spec]);
            let theirs = runner.theirs(&args, None);
            let header = theirs
                .stdout
                .split(|&c| c == b'\n')
                .next()
                .unwrap_or_default();
            let moving = MOVING.contains(&String::from_utf8_lossy(header).trim());
            // procps's `m` thread rows of eip/esp may hold a value left over from another
            // task it read (non-zero when that task was exiting: churn on a busy host).
            let leftover_ok =
                how[0] == "m" && (*spec == "eip" || *spec == "esp") && kernel_says_zero(load);
            for backend in runner.backends() {
                let ours = runner.ours(backend, &args, None);
                let what = format!("{args:?} {backend}");
                match same_output(&what, &ours, &theirs, moving, leftover_ok) {
                    Ok(n) => rows += n,
                    Err(e) => failures.push(e),
                }
            }
        }
    }
    assert!(rows > ODD_SPECS.len() * 20, "too few rows compared: {rows}");
    failures
}

/// All of them together (and some with widths of their own, and on narrow lines where signal
/// masks take 9 cells) over the load's rows of whole-system listings.
fn together(runner: &Runner, load: &Load, extras: &Extras) -> Vec<String> {
    let mut pids: HashSet<i32> = load.info.known_pids().into_iter().collect();
    pids.extend(extras.pids());
    let all = format!("pid,{}", ODD_SPECS.join(","));
    let sigs = "pid,sig,tsig,sigmask,ignored,caught,comm";
    let cases: Vec<(Vec<&str>, Option<&str>)> = vec![
        (vec!["-e", "-o", &all], None),
        (vec!["-eL", "-o", &all], None),
        (vec!["-e", "m", "-o", &all], None),
        (vec!["-eL", "-o", sigs], Some("30")),
        (vec!["-eL", "-o", sigs], Some("80")),
        (vec!["-e", "m", "-o", sigs], Some("40")),
        (
            vec![
                "-e",
                "-o",
                "pid,caught:20,sigmask:5,lim:8,fname:12,stackp:4,comm",
            ],
            None,
        ),
        (vec!["-e", "--forest", "-o", "pid,fname,tty4,comm"], None),
        (
            vec!["-e", "--sort=-sigmask", "-o", "pid,sigmask,comm"],
            None,
        ),
        (vec!["-e", "--sort=tsiz", "-o", "pid,tsiz,comm"], None),
        // By the exact CPU share (PIDS_UTILIZATION; the load's sleepers tie, and keep
        // their order: order.rs's unit test has shares that print alike but differ).
        (vec!["-e", "--sort=-util", "-o", "pid,util,cuu,comm"], None),
    ];
    let mut failures = Vec::new();
    for (args, cols) in &cases {
        let theirs = runner.theirs(args, *cols);
        for backend in runner.backends() {
            let ours = runner.ours(backend, args, *cols);
            let (h1, r1) = load_rows(&ours.stdout, &pids);
            let (h2, r2) = load_rows(&theirs.stdout, &pids);
            if ours.code != theirs.code || h1 != h2 || r1 != r2 || r1.len() < 20 {
                let mut msg = format!(
                    "{args:?} {backend} COLUMNS={cols:?}: {} vs {} rows\n",
                    r1.len(),
                    r2.len()
                );
                if h1 != h2 {
                    msg += &format!(
                        "  header ours:   {:?}\n  header procps: {:?}\n",
                        String::from_utf8_lossy(&h1),
                        String::from_utf8_lossy(&h2)
                    );
                }
                msg += &differing_rows(("ours", &r1), ("procps", &r2), 4);
                failures.push(msg);
            }
        }
    }
    failures
}

#[test]
fn odd_specifiers_match_procps() {
    let load = spawn_load();
    let extras = Extras::spawn();
    let runner = Runner { nobody: None };
    let mut failures = each_alone(&runner, &load);
    failures.extend(together(&runner, &load, &extras));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn odd_specifiers_match_procps_as_nobody() {
    skip_unless_root!("ps as nobody (setpriv)");
    let load = spawn_load();
    let extras = Extras::spawn();
    let runner = Runner {
        nobody: Some(tasksnap_for_others()),
    };
    // The load is root's: nobody sees its code and stack addresses masked (1, 1, 0).
    let pid = load.info.procs[0];
    let masked = runner.theirs(&["-p", &pid.to_string(), "-o", "trs=,stackp="], None);
    assert_eq!(
        String::from_utf8_lossy(&masked.stdout)
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["0", "0000000000000000"],
        "procps as nobody should see masked addresses"
    );
    let mut failures = each_alone(&runner, &load);
    failures.extend(together(&runner, &load, &extras));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Signal masks and addresses are hexadecimal: strings in JSON, every digit kept, even when
/// none of the digits is a letter (`"0000008000000000"`, not the number 8000000000).
#[test]
fn machine_output_keeps_hexadecimal_columns_as_text() {
    let load = spawn_load();
    let pid = load
        .info
        .signals
        .expect("the --signals process")
        .to_string();
    let out = run(
        TASKSNAP,
        &["ps"],
        &[
            "-p",
            &pid,
            "-o",
            "pid,sig,tsig,sigmask,eip,lim",
            "--output",
            "json",
        ],
        "C",
    );
    assert_eq!(out.code, Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let row = &v[0];
    assert_eq!(row["sig"], "0000008000000000", "{row}");
    assert_eq!(row["tsig"], "0000000000004000", "{row}");
    assert_eq!(row["sigmask"], "0000008000004200", "{row}");
    assert_eq!(row["eip"], "0000000000000000", "{row}");
    assert_eq!(row["pid"], serde_json::json!(load.info.signals));
}

// ---- Option handling beyond the common forms: AIX descriptors, personalities, BSD e/s/v/X,
// ---- O sort codes, and procps's newer --delimiter and fds.

/// Runs `program ps ARGS` (tasksnap, or a copy of it) with `env` set (PS_PERSONALITY and
/// friends cleared first), in the C locale, optionally as nobody through setpriv.
fn ps_env(program: &str, args: &[&str], env: &[(&str, &str)], nobody: bool) -> Out {
    output(&mut env_command(program, &["ps"], args, env, nobody))
}

/// procps `ps` as [`ps_env`] runs a program: the oracle ([`oracle`]).
fn procps_env(args: &[&str], env: &[(&str, &str)], nobody: bool) -> Out {
    oracle(&mut env_command("ps", &[], args, env, nobody))
}

/// The command [`ps_env`] runs.
fn env_command(
    program: &str,
    prefix: &[&str],
    args: &[&str],
    env: &[(&str, &str)],
    nobody: bool,
) -> Command {
    let mut cmd = if nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", program]);
        c
    } else {
        Command::new(program)
    };
    cmd.args(prefix)
        .args(args)
        .env("LC_ALL", "C")
        .env_remove("COLUMNS");
    for v in [
        "PS_FORMAT",
        "PS_PERSONALITY",
        "CMD_ENV",
        "I_WANT_A_BROKEN_PS",
        "_XPG",
    ] {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Compares the load's rows (header, rows, exit code, stderr) of tasksnap and procps run
/// with `env` (as nobody when `nobody` names tasksnap's copy).
fn compare_env(
    pids: &HashSet<i32>,
    args: &[&str],
    env: &[(&str, &str)],
    nobody: Option<&str>,
) -> Result<usize, String> {
    let ours = match nobody {
        Some(bin) => ps_env(bin, args, env, true),
        None => ps_env(TASKSNAP, args, env, false),
    };
    let theirs = procps_env(args, env, nobody.is_some());
    let what = format!(
        "{env:?} {args:?}{}",
        if nobody.is_some() { " as nobody" } else { "" }
    );
    if ours.code != theirs.code || ours.stderr != theirs.stderr {
        return Err(exits_differ(&what, &ours, &theirs));
    }
    if theirs.code != Some(0) {
        return Err(format!(
            "{what}: procps failed too: a listing case that lists nothing"
        ));
    }
    let (h1, r1) = load_rows(&ours.stdout, pids);
    let (h2, r2) = load_rows(&theirs.stdout, pids);
    if h1 != h2 || r1 != r2 {
        let mut msg = format!(
            "{what}: differs\n  header ours:   {:?}\n  header procps: {:?}\n",
            String::from_utf8_lossy(&h1),
            String::from_utf8_lossy(&h2)
        );
        msg += &differing_rows(("ours", &r1), ("procps", &r2), 3);
        msg += &format!("  {} rows vs {} rows\n", r1.len(), r2.len());
        return Err(msg);
    }
    some_load_rows(&what, r1.len())
}

/// One case: environment variables to set, and ps's arguments.
type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);

fn check_cases(cases: &[Case], nobody: Option<&str>) {
    let load = spawn_load();
    let extras = Extras::spawn();
    let mut pids: HashSet<i32> = load.info.known_pids().into_iter().collect();
    pids.extend(extras.pids());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(env, args)| compare_env(&pids, args, env, nobody).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from procps:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

const NO_ENV: &[(&str, &str)] = &[];

/// procps 4.0.2 crashed under churn ("Signal 11 (SEGV) caught by ps (4.0.2).
/// ps:src/ps/display.c:71: please report this bug", then killed by that signal) on
/// `-e -o "%p %G %g %u %U %t %C %a"` while tasks vanished, and the case failed: "exit
/// Some(0) vs procps None". A crash of the oracle is not behaviour to match: it is run
/// again, and counted. A stand-in that crashes as procps does (its message, then the signal
/// again), once, then answers: the answer is compared; one that always crashes fails the
/// case, saying so.
#[test]
fn regression_a_crash_of_the_procps_oracle_was_compared_as_its_answer() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let fake = dir.path().join("ps");
    let crashed_once = dir.path().join("crashed");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\n\
             ulimit -c 0\n\
             if [ \"$1\" = always ] || [ ! -e {c} ]; then\n\
             : > {c}\n\
             echo 'Signal 11 (SEGV) caught by ps (4.0.2).' >&2\n\
             echo 'ps:src/ps/display.c:71: please report this bug' >&2\n\
             kill -SEGV $$\n\
             fi\n\
             echo '    PID TTY          TIME CMD'\n",
            c = crashed_once.display()
        ),
    )
    .expect("write the stand-in");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let before = oracle_crashes();
    let out = oracle(&mut Command::new(&fake));
    assert_eq!(
        out.code,
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"    PID TTY          TIME CMD\n");
    assert!(oracle_crashes() > before);
    let always = std::panic::catch_unwind(|| oracle(Command::new(&fake).arg("always")));
    let why = always
        .err()
        .expect("an oracle that always crashes fails the case");
    let why = why
        .downcast_ref::<String>()
        .map(String::as_str)
        .unwrap_or_default();
    assert!(why.contains("procps ps crashed on each of"), "{why}");
}

#[test]
fn aix_descriptors_match_procps() {
    check_cases(
        &[
            (NO_ENV, &["-e", "-o", "%p %U %a"]),
            (NO_ENV, &["-e", "-o", "%p%c"]),
            (NO_ENV, &["-e", "-o", "%p %P %y %x %n %z %r %c"]),
            (NO_ENV, &["-e", "-o", "%p %G %g %u %U %t %C %a"]),
            (NO_ENV, &["-e", "-o", "x %p   %a"]),
            // The columns before a failing item stay, and the AIX reading follows them.
            (NO_ENV, &["-e", "-o", "c %p %c"]),
            (NO_ENV, &["-e", "-o", "%cpu,pid,comm"]),
            (&[("PS_FORMAT", "%p %a")], &["-e"]),
            (NO_ENV, &["-e", "-o", "%p %a", "-w"]),
        ],
        None,
    );
}

/// One listing per personality (and the option each changes), compared with procps: the
/// listings under each environment that chooses one.
const PERSONALITY_CASES: &[(Env, &[&[&str]])] = &[
    (BSD, &[&["ax"], &["axu"], &["axj"]]),
    (BSD, &[&["axl"], &["-ax"], &["axh"]]),
    (BSD, &[&["ax", "m", "-o", "pid,pmem,comm"]]),
    (&[("PS_PERSONALITY", "old")], &[&["-axu"]]),
    (&[("I_WANT_A_BROKEN_PS", "")], &[&["axj"]]),
    (GNU, &[&["-ef"], &["-ej"], &["-el"]]),
    (GNU, &[&["-ejl"], &["-ejf"], &["-efl"]]),
    (&[("CMD_ENV", "debian")], &[&["-e"]]),
    (&[("PS_PERSONALITY", "linux")], &[&["-ef"]]),
    (&[("PS_PERSONALITY", "aix")], &[&["axu"], &["axj"]]),
    (TRU64, &[&["-ef"]]),
    (&[("PS_PERSONALITY", "digital")], &[&["-efl"]]),
    (&[("PS_PERSONALITY", "compaq")], &[&["-ej"]]),
    (TRU64, &[&["-el"], &["axu"], &["axl"], &["-e", "h"]]),
    (
        &[("PS_PERSONALITY", "sunos4")],
        &[&["ax"], &["axu"], &["-e"]],
    ),
    (
        &[("PS_PERSONALITY", "hpux")],
        &[&["-e", "-x", "-o", "pid,comm"]],
    ),
    (&[("PS_PERSONALITY", "sysv")], &[&["-elx"]]),
    (&[("PS_PERSONALITY", "390")], &[&["-ej"]]),
    (&[("PS_PERSONALITY", "posix")], &[&["-ef"]]),
    (&[("PS_PERSONALITY", "unix95")], &[&["aux"]]),
    (&[("PS_PERSONALITY", "no-such-one")], &[&["-ef"]]),
    (&[("PS_PERSONALITY", ""), ("CMD_ENV", "gnu")], &[&["-el"]]),
    (&[("PS_PERSONALITY", "irix"), ("_XPG", "1")], &[&["-el"]]),
];

type Env = &'static [(&'static str, &'static str)];
const BSD: Env = &[("PS_PERSONALITY", "bsd")];
const GNU: Env = &[("PS_PERSONALITY", "gnu")];
const TRU64: Env = &[("PS_PERSONALITY", "tru64")];

/// [`PERSONALITY_CASES`], a case a listing.
fn personality_cases() -> Vec<Case<'static>> {
    PERSONALITY_CASES
        .iter()
        .flat_map(|&(env, lists)| lists.iter().map(move |&args| (env, args)))
        .collect()
}

#[test]
fn personalities_match_procps() {
    check_cases(&personality_cases(), None);
}

/// BSD `s`, `v`, `X` and the old `m` format lists, plain and under the personalities that
/// change them.
const FORMAT_LIST_CASES: &[Case<'static>] = &[
    (NO_ENV, &["ax", "s"]),
    (NO_ENV, &["ax", "v"]),
    (NO_ENV, &["ax", "X"]),
    (NO_ENV, &["-axm"]),
    (&[("PS_PERSONALITY", "old")], &["ax", "m"]),
    (&[("PS_PERSONALITY", "bsd")], &["ax", "v"]),
    (&[("PS_PERSONALITY", "linux")], &["-el"]),
    (&[("PS_PERSONALITY", "irix")], &["-el"]),
];

#[test]
fn bsd_s_v_x_and_old_m_formats_match_procps() {
    check_cases(FORMAT_LIST_CASES, None);
}

#[test]
fn bsd_e_shows_the_environment_as_procps() {
    check_cases(
        &[
            (NO_ENV, &["ax", "e"]),
            (NO_ENV, &["axec"]),
            (NO_ENV, &["-e", "e", "-o", "pid,comm,args"]),
            (NO_ENV, &["-ef", "e"]),
            (NO_ENV, &["axfe"]),
            (&[("COLUMNS", "60")], &["ax", "e"]),
        ],
        None,
    );
}

/// As nobody, another user's environment is hidden (EACCES on /proc/PID/environ): procps
/// then shows the command alone, and so must tasksnap, whichever backend answers.
#[test]
fn bsd_e_hides_other_users_environments_from_nobody() {
    skip_unless_root!("BSD e as nobody (runs both ps as nobody)");
    let copy = tasksnap_for_others();
    check_cases(
        &[
            (NO_ENV, &["ax", "e"]),
            (NO_ENV, &["-e", "e", "-o", "pid,comm"]),
        ],
        Some(&copy),
    );
}

#[test]
fn o_sort_codes_match_procps() {
    check_cases(
        &[
            (NO_ENV, &["-e", "O", "p", "-o", "pid,comm"]),
            (NO_ENV, &["-e", "O", "-p", "-o", "pid,comm"]),
            (NO_ENV, &["-e", "-o", "pid,ppid,comm", "O", "-Pp"]),
            (NO_ENV, &["-e", "-o", "pid,ppid,comm", "O", "P-p"]),
            (NO_ENV, &["-e", "-o", "pid,rss,comm", "O", "-r"]),
            (NO_ENV, &["-e", "-o", "pid,tty,comm", "O", "t"]),
            (NO_ENV, &["-e", "-o", "pid,vsz,comm", "O", "-v"]),
            (NO_ENV, &["-e", "-o", "pid,comm", "O", "-k"]),
            (NO_ENV, &["-e", "-o", "pid,user,comm", "O", "-uJp"]),
            (NO_ENV, &["-e", "--sort=-pid", "-o", "pid,vsize,comm"]),
            // Not sort codes: a format after PID.
            (NO_ENV, &["-e", "O", "ppid,nlwp"]),
            (NO_ENV, &["ax", "O", "ppid"]),
        ],
        None,
    );
}

#[test]
fn option_errors_match_procps() {
    let cases: &[Case] = &[
        (NO_ENV, &["-o", "%p %%a"]),
        (NO_ENV, &["-o", "%p %Z"]),
        (NO_ENV, &["-o", "%cpuc"]),
        (NO_ENV, &["-o", "pid %p"]),
        (NO_ENV, &["-o", "%"]),
        (NO_ENV, &["-o", "% p"]),
        // procps keeps the first unknown specifier's message for the rest of the run.
        (NO_ENV, &["-o", "%p", "-o", "foo"]),
        (NO_ENV, &["O", "foo"]),
        (NO_ENV, &["O", "PP"]),
        (NO_ENV, &["--forest", "O", "P"]),
        (NO_ENV, &["k", "pid", "O", "v"]),
        (NO_ENV, &["-e", "k", "pid", "O", "P"]),
        (NO_ENV, &["-ax", "m"]),
        (NO_ENV, &["-o", "pid", "O", "foo"]),
        (&[("PS_PERSONALITY", "bsd")], &["-Q"]),
        (&[("PS_FORMAT", "%p %Z")], &["-p", "1", "-Q"]),
    ];
    for (env, args) in cases {
        let ours = ps_env(TASKSNAP, args, env, false);
        let theirs = procps_env(args, env, false);
        assert_eq!(ours.code, theirs.code, "{env:?} {args:?}");
        assert_eq!(
            String::from_utf8_lossy(&ours.stderr),
            String::from_utf8_lossy(&theirs.stderr),
            "{env:?} {args:?}"
        );
        assert_eq!(ours.code, Some(1), "{env:?} {args:?}: a usage error");
    }
}

/// `--delimiter` and `-o fds` are newer than procps 4.0.2: checked against what procps's
/// HEAD prints (testsuite/ps.test/ps_output.exp; `pr_fds` prints the size stat(2) gives
/// /proc/PID/fd, 0 when that fails), on processes with a known number of open descriptors.
#[test]
fn delimiter_and_fds_as_procps_head_prints_them() {
    if std::fs::metadata("/proc/self/fd").map_or(0, |m| m.len()) == 0 {
        eprintln!("SKIP fds: this kernel (before 6.2) reports no size for /proc/PID/fd");
        return;
    }
    use std::os::unix::process::CommandExt;
    // Descriptors 0-2 (null) plus 3..=(2+extra), all the sleep's own.
    let spawn = |extra: usize| {
        let redirs: String = (3..3 + extra)
            .map(|fd| format!(" {fd}</dev/null"))
            .collect();
        Command::new("sh")
            .arg("-c")
            .arg(format!("exec sleep 1000{redirs}"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("spawn sleep")
    };
    let kids = [spawn(0), spawn(5)];
    let ids: Vec<i32> = kids.iter().map(|k| k.id() as i32).collect();
    struct Reap(Vec<i32>);
    impl Drop for Reap {
        fn drop(&mut self) {
            for &p in &self.0 {
                // SAFETY: signalling the process group this test created.
                unsafe { libc::kill(-p, libc::SIGKILL) };
            }
        }
    }
    let _reap = Reap(ids.clone());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    for &p in &ids {
        while !tasksnap_loadgen::settled_sleep(p) {
            assert!(
                std::time::Instant::now() < deadline,
                "{p} never became a sleep"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    let list = format!("{},{}", ids[0], ids[1]);
    // What the test knows independently: the entries of each /proc/PID/fd (readable as
    // its owner), five more for the second sleep (the test harness may pass a few
    // descriptors of its own to both).
    let entries = |p: i32| {
        std::fs::read_dir(format!("/proc/{p}/fd"))
            .expect("own fd directory")
            .count()
    };
    let counts = [entries(ids[0]), entries(ids[1])];
    assert_eq!(counts[1], counts[0] + 5);
    let out = ps_env(
        TASKSNAP,
        &["-o", "pid,fds,comm", "-p", &list],
        NO_ENV,
        false,
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["PID", "FDS", "COMMAND"], "{text}");
    for (i, row) in rows[1..].iter().enumerate() {
        assert_eq!(
            row,
            &[
                ids[i].to_string(),
                counts[i].to_string(),
                "sleep".to_string()
            ],
            "{text}"
        );
    }
    assert_eq!(rows.len(), 3, "{text}");
    // FDS is 3 wide and right-aligned.
    assert!(
        text.lines()
            .nth(1)
            .is_some_and(|l| l.ends_with(&format!("{:>3} sleep", counts[0]))),
        "{text}"
    );
    // HEAD's own test: `ps -o pid,ucmd --delimiter : PID` prints PID:CMD and pid:sleep.
    let out = ps_env(
        TASKSNAP,
        &["-o", "pid,ucmd", "--delimiter", ":", &ids[0].to_string()],
        NO_ENV,
        false,
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("PID:CMD\n{}:sleep\n", ids[0])
    );
    let out = ps_env(
        TASKSNAP,
        &["-o", "pid,fds,ucmd", "--delimiter=,", "-p", &list],
        NO_ENV,
        false,
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "PID,FDS,CMD\n{},{},sleep\n{},{},sleep\n",
            ids[0], counts[0], ids[1], counts[1]
        )
    );
    for (args, msg) in [
        (
            &["--delimiter", "::"][..],
            "error: delimiter must be a single character\n",
        ),
        (
            &["--delimiter"][..],
            "error: delimiter character must follow --delimiter\n",
        ),
    ] {
        let out = ps_env(TASKSNAP, args, NO_ENV, false);
        assert_eq!(out.code, Some(1));
        assert!(
            String::from_utf8_lossy(&out.stderr).starts_with(msg),
            "{args:?}"
        );
    }
    // The count needs no ptrace access: nobody sees it too, as procps's stat does.
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let copy = tasksnap_for_others();
        let out = ps_env(
            &copy,
            &["-o", "fds=", "-p", &ids[1].to_string()],
            NO_ENV,
            true,
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{:>3}\n", counts[1])
        );
    }
}

/// procps's layout test columns (`_left` ... `_unlimited2`) print a text picked by the row's
/// place in the listing and the header countdown: over the load's processes only (`-p`, so
/// the places do not depend on the rest of the machine), with one header, none, and a header
/// every screen (`--headers` with LINES=4), the whole output must be procps's.
#[test]
fn layout_test_columns_follow_procps_header_countdown() {
    let load = spawn_load();
    let mut pids = load.info.known_pids();
    pids.sort_unstable();
    pids.truncate(12);
    assert!(pids.len() >= 8, "the load has too few processes: {pids:?}");
    let list = pids
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let formats = [
        "pid,_left,_right,_unlimited",
        "pid,_left2,_right2,comm,_unlimited2",
    ];
    let mut failures = Vec::new();
    for format in formats {
        for extra in [&[][..], &["--no-headers"], &["--headers"]] {
            let mut args = vec!["-p", list.as_str(), "-o", format];
            args.extend_from_slice(extra);
            let ours = ps_env(TASKSNAP, &args, &[("LINES", "4")], false);
            let theirs = procps_env(&args, &[("LINES", "4")], false);
            if ours.stdout != theirs.stdout || ours.code != theirs.code {
                failures.push(format!(
                    "{args:?}:\n  ours:   {:?}\n  procps: {:?}",
                    String::from_utf8_lossy(&ours.stdout),
                    String::from_utf8_lossy(&theirs.stdout)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The specifiers of the namespace, OOM, autogroup, login, memory-sharing, I/O and cgroup
/// columns.
const PLACED_SPECS: &[&str] = &[
    "cgroupns", "ipcns", "mntns", "netns", "pidns", "timens", "userns", "utsns", "oom", "oomadj",
    "ag_id", "ag_nice", "luid", "pss", "uss", "rbytes", "rchars", "rops", "wbytes", "wcbytes",
    "wchars", "wops", "cgname", "lxc", "unit", "uunit", "slice", "seat", "lsession", "machine",
    "ouid",
];

/// Each of those alone, all together, per thread (`-L`, `m`, `H`) and sorted by some.
fn placed_cases() -> Vec<Vec<String>> {
    let all = PLACED_SPECS.join(",");
    let mut cases: Vec<Vec<String>> = PLACED_SPECS
        .iter()
        .map(|s| vec!["-e".into(), "-o".into(), format!("pid,{s}")])
        .collect();
    for c in [
        vec!["-e", "-o", &format!("pid,{all}")],
        vec!["-eL", "-o", &format!("pid,lwp,{all}")],
        vec!["-e", "m", "-o", &format!("pid,tid,{all}")],
        vec!["-e", "H", "-o", &format!("pid,{all}")],
        vec![
            "-e",
            "--sort=netns,-oomadj,luid,unit,lxc,pid",
            "-o",
            &format!("pid,{all}"),
        ],
    ] {
        cases.push(c.into_iter().map(String::from).collect());
    }
    cases
}

/// Runs every case through `ours` and procps (each a command line: program and prefix
/// arguments) and collects the differences.
fn check_placed(pids: &HashSet<i32>, ours: &[&str], theirs: &[&str]) -> Vec<String> {
    let mut failures = Vec::new();
    let mut cases: Vec<(Vec<String>, &str)> =
        placed_cases().into_iter().map(|c| (c, "C")).collect();
    // Names are escaped by locale (a cgroup's control characters, UTF-8, bad bytes).
    for list in ["pid,cgname", "pid,lxc,cgroup"] {
        cases.push((["-e", "-o", list].map(String::from).to_vec(), "C.UTF-8"));
    }
    for (case, locale) in cases {
        let args: Vec<&str> = case.iter().map(String::as_str).collect();
        let a = run(ours[0], &ours[1..], &args, locale);
        let b = oracle(&mut command_as(
            None,
            theirs[0],
            &theirs[1..],
            &args,
            locale,
            None,
        ));
        if let Err(e) = same_rows(&args, locale, pids, &a, &b) {
            failures.push(format!("{ours:?}: {e}"));
        }
    }
    failures
}

/// `-o` of every namespace, OOM, autogroup, login uid, PSS/USS, I/O and cgroup column prints
/// what procps prints, for a load, processes in other namespaces and cgroups (root), and
/// other users' processes: as root with either backend, and as nobody (who may not see
/// namespaces, I/O or PSS of processes not its own: `-`/0, as procps shows).
#[test]
fn namespace_oom_login_and_cgroup_columns_match_procps() {
    let load = spawn_load();
    let extras = Extras::spawn();
    let placed = Placed::spawn();
    let mut pids: HashSet<i32> = load.info.known_pids().into_iter().collect();
    pids.extend(extras.pids());
    pids.extend(placed.pids());
    let mut failures = check_placed(&pids, &[TASKSNAP, "ps"], &["ps"]);
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        // The same rows through the BPF iterator (namespaces, oom_score_adj and loginuid
        // from its pass, the rest from /proc).
        for case in placed_cases() {
            let mut args: Vec<&str> = case.iter().map(String::as_str).collect();
            let b = run_procps(&args, "C", None);
            args.push("--backend=bpf");
            let a = run(TASKSNAP, &["ps"], &args, "C");
            args.pop();
            if let Err(e) = same_rows(&args, "C", &pids, &a, &b) {
                failures.push(format!("--backend=bpf: {e}"));
            }
        }
        // As nobody, procfs's permission checks decide what shows.
        let bin_str = tasksnap_for_others();
        let nobody = [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ];
        let ours: Vec<&str> = nobody
            .iter()
            .copied()
            .chain([bin_str.as_str(), "ps"])
            .collect();
        let theirs: Vec<&str> = nobody.iter().copied().chain(["ps"]).collect();
        failures.extend(check_placed(&pids, &ours, &theirs));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    if !root {
        return;
    }
    // The comparison must have had something to compare: procps's own view of the placed
    // processes shows other namespaces, the OOM adjustment, the login uid, the cgroup names
    // and the sd-login answers.
    let all = "pid,netns,utsns,pidns,timens,userns,oomadj,luid,lxc,cgname,unit,uunit,slice,lsession,ouid,machine,seat";
    let procps = run_procps(&["-e", "-o", all], "C", None);
    let (_, rows) = load_rows(&procps.stdout, &placed.pids().into_iter().collect());
    let text: Vec<String> = rows
        .iter()
        .map(|r| String::from_utf8_lossy(r).into_owned())
        .collect();
    let init_net = std::fs::read_link("/proc/self/ns/net").expect("netns");
    let init_net = init_net.to_string_lossy();
    let init_net = init_net.trim_start_matches("net:[").trim_end_matches(']');
    let tag = Placed::tag();
    let has = |what: &str, f: &dyn Fn(&[&str]) -> bool| {
        assert!(
            text.iter()
                .any(|r| f(&r.split_whitespace().collect::<Vec<_>>())),
            "no placed row shows {what}: {text:#?}"
        );
    };
    has("another network namespace", &|r| {
        r[1] != init_net && r[1] != "-"
    });
    has("oom_score_adj 300", &|r| r[6] == "300");
    has("login uid 4242", &|r| r[7] == "4242");
    // PSS and USS move with ps itself (masked above): against smaps_rollup read right after,
    // within a few pages.
    let list: Vec<String> = placed.pids().iter().map(|p| p.to_string()).collect();
    let ours = run(
        TASKSNAP,
        &["ps"],
        &["-o", "pid=,pss=,uss=", "-p", &list.join(",")],
        "C",
    );
    let mut sized = 0;
    for line in String::from_utf8_lossy(&ours.stdout).lines() {
        let v: Vec<u64> = line
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        let Ok(rollup) = std::fs::read(format!("/proc/{}/smaps_rollup", v[0])) else {
            continue;
        };
        let (pss, uss) = tasksnap_procfs::parse::parse_smaps_rollup(&rollup);
        assert!(
            v[1].abs_diff(pss) <= 16 && v[2].abs_diff(uss) <= 16 && uss > 0,
            "pid {}: PSS {} USS {} against smaps_rollup's {pss} {uss}",
            v[0],
            v[1],
            v[2]
        );
        sized += 1;
    }
    assert!(sized >= 5, "only {sized} PSS/USS rows checked");
    if placed.in_cgroups {
        has("an LXC name", &|r| r[8] == tag);
        has("a user unit", &|r| r[11] == format!("{tag}-app.service"));
        has("a session and its owner", &|r| {
            r[13] == tag && r[14] == "4242"
        });
        if placed.seat_and_machine {
            has("a seat", &|r| r[16] == "seat-test");
            has("a machine", &|r| r[15] == format!("{tag}-vm"));
        }
    }
}

/// The personalities and the BSD format lists as user nobody sees them (both ps run as
/// nobody): the signal, memory-layout and environment columns are the ones /proc hides from
/// another user.
#[test]
fn personalities_and_format_lists_match_procps_as_nobody() {
    skip_unless_root!("personalities as nobody (runs both ps as nobody)");
    let copy = tasksnap_for_others();
    let mut cases = personality_cases();
    cases.extend_from_slice(FORMAT_LIST_CASES);
    check_cases(&cases, Some(&copy));
}

/// `ARGS` run in a private mount namespace whose /proc is mounted `subset=pid` (no
/// /proc/uptime, /proc/stat or /proc/sys: only the pid directories and `self`).
fn ps_under_subset_pid(program: &[&str], args: &[&str]) -> Out {
    let o = Command::new("unshare")
        .args(["-m", "--propagation", "private", "--", "sh", "-c"])
        .arg("mount -t proc -o subset=pid proc /proc && exec \"$@\"")
        .arg("sh")
        .args(program)
        .args(args)
        .env("LC_ALL", "C")
        .env_remove("COLUMNS")
        .env_remove("PS_FORMAT")
        .env_remove("PS_PERSONALITY")
        .output()
        .expect("run unshare");
    Out {
        code: o.status.code(),
        stdout: o.stdout,
        stderr: o.stderr,
    }
}

/// Regression: where /proc has no uptime (`subset=pid`), procps 4.0.2 cannot tell how long a
/// process has lived (its `boot_tics` is never set) and prints `cuc` and `cuu` as 0.000;
/// tasksnap took its own boot clock instead and printed the real figures.
#[test]
fn cuc_and_cuu_print_zero_without_uptime_as_procps() {
    skip_unless_root!("a procfs mount of its own (subset=pid)");
    use std::os::unix::process::CommandExt;
    // A process that used CPU (a shell loop), then sleeps as `sleep`, in its own group.
    let mut child = Command::new("sh")
        .args([
            "-c",
            "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exec sleep 1000",
        ])
        .process_group(0)
        .spawn()
        .expect("spawn");
    let pid = child.id() as i32;
    tasksnap_loadgen::wait_until("the burner to sleep", || {
        std::fs::read(format!("/proc/{pid}/comm")).is_ok_and(|c| c == b"sleep\n")
    });
    let p = pid.to_string();
    let args = ["-o", "pid,cuc,cuu,comm", "-p", &p];
    let row = |o: &Out| -> String {
        assert_eq!(o.code, Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(p.as_str()))
            .unwrap_or_else(|| panic!("no row of {pid}: {text}"))
            .to_string()
    };
    // With a whole /proc the figures are not zero (so the test can fail).
    let whole = row(&run(TASKSNAP, &["ps", "--backend", "procfs"], &args, "C"));
    let theirs = row(&ps_under_subset_pid(&["ps"], &args));
    let mut results = Vec::new();
    for backend in ["procfs", "bpf"] {
        let ours = row(&ps_under_subset_pid(
            &[TASKSNAP, "ps", "--backend", backend],
            &args,
        ));
        results.push((backend, ours));
    }
    // SAFETY: kill takes no pointers; the group is the child's own.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let _ = child.wait();
    assert!(!whole.contains(" 0.000 "), "no CPU used? {whole}");
    assert!(theirs.contains(" 0.000  0.000 "), "procps: {theirs}");
    for (backend, ours) in results {
        assert_eq!(ours, theirs, "--backend {backend}");
    }
}
