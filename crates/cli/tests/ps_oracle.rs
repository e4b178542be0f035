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
        return Err(format!(
            "{args:?}: exit {:?} vs procps {:?}; stderr {:?} vs {:?}",
            ours.code,
            theirs.code,
            String::from_utf8_lossy(&ours.stderr),
            String::from_utf8_lossy(&theirs.stderr)
        ));
    }
    let (h1, r1) = load_rows(&ours.stdout, pids);
    let (h2, r2) = load_rows(&theirs.stdout, pids);
    if h1 != h2 {
        return Err(format!(
            "{args:?} [{locale}]: header\n  ours:   {:?}\n  procps: {:?}",
            String::from_utf8_lossy(&h1),
            String::from_utf8_lossy(&h2)
        ));
    }
    if r1 != r2 {
        let mut msg = format!("{args:?} [{locale}]: rows differ\n");
        for (a, b) in r1.iter().zip(r2.iter()).filter(|(a, b)| a != b).take(5) {
            msg += &format!(
                "  ours:   {:?}\n  procps: {:?}\n",
                String::from_utf8_lossy(a),
                String::from_utf8_lossy(b)
            );
        }
        if r1.len() != r2.len() {
            msg += &format!("  {} rows vs {} rows\n", r1.len(), r2.len());
        }
        return Err(msg);
    }
    if r1.is_empty() {
        return Err(format!(
            "{args:?}: no load rows at all: the test would prove nothing"
        ));
    }
    Ok(r1.len())
}

const FORMATS: &[&[&str]] = &[
    &["-ef"],
    &["-eF"],
    &["-el"],
    &["-ely"],
    &["-elf"],
    &["-ej"],
    &["-ejH"],
    &["-efH"],
    &["-eLf"],
    &["-eL"],
    &["-eT"],
    &["-e", "m"],
    &["-e", "H"],
    &["aux"],
    &["ax"],
    &["axu"],
    &["axjf"],
    &["axf"],
    &["-e", "--forest"],
    &[
        "-e",
        "-o",
        "pid,ppid,pgid,pgrp,sid,sess,tid,lwp,spid,nlwp,tpgid",
    ],
    &[
        "-e",
        "-o",
        "pid,uid,euid,ruid,suid,fuid,user,euser,ruser,suser,fuser",
    ],
    &["-e", "-o", "pid,gid,egid,rgid,group,egroup,rgroup"],
    &["-e", "-o", "pid,stat,s,state,tty,tt,tname,f,flags,wchan"],
    &[
        "-e",
        "-o",
        "pid,pri,pri_foo,opri,priority,ni,nice,psr,class,cls,policy,rtprio,sched",
    ],
    &[
        "-e",
        "-o",
        "pid,rss,rssize,rsz,vsz,vsize,sz,pmem,%mem,maj_flt,min_flt",
    ],
    &[
        "-e",
        "-o",
        "pid,stime,start,lstart,bsdstart,start_time,etime,etimes,time,cputime,bsdtime",
    ],
    &["-e", "-o", "pid,comm,ucmd,ucomm"],
    &["-e", "-o", "pid,args"],
    &["-e", "-o", "pid,cmd,command"],
    &["-e", "-o", "pid,comm,args", "-ww"],
    &["-e", "-o", "pid=PROCESS,comm=NAME,args=COMMAND"],
    &["-e", "-o", "pid:10,comm:5,args"],
    &["-e", "-o", "pid,addr,label,c,pcpu,%cpu"],
    &["-e", "-o", "pid,cgroup,comm"],
    &["-e", "-o", "pid,comm,cgroup"],
    &["-e", "-O", "ppid,nlwp"],
    &["-e", "--sort=-pid", "-o", "pid,comm"],
    &["-e", "--sort", "comm,pid", "-o", "pid,comm"],
    &["-e", "k", "-ppid,pid", "-o", "pid,ppid,comm"],
    &["-e", "--no-headers", "-o", "pid,comm"],
    &["-e", "-w", "-o", "pid,args"],
    &["-e", "c"],
    &["axc"],
    &["-aux"],
    &["-ax"],
    &["-eL", "--sort=pid"],
    &["-e", "m", "--sort=pid"],
    &["-e", "-o", "pid=X,comm="],
    &["-e", "-o", "pid,comm", "-o", "args"],
    &["-eo", "pid,tname,comm", "--sort", "tty,-pid"],
];

fn check_all(locale: &str) {
    let load = spawn_load();
    let extras = Extras::spawn();
    let mut failures = Vec::new();
    let mut rows = 0;
    for args in FORMATS {
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
            let ours = run_cols(TASKSNAP, &["ps"], args, "C.UTF-8", Some(cols));
            let theirs = run_procps(args, "C.UTF-8", Some(cols));
            let (h1, r1) = load_rows(&ours.stdout, &pids);
            let (h2, r2) = load_rows(&theirs.stdout, &pids);
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
            match row.get(format!("{k}_hex")).and_then(|h| h.as_str()) {
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
    use std::io::Read;
    let mut child = Command::new(TASKSNAP)
        .args(["ps", "-eLf"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = [0u8; 16];
    child
        .stdout
        .as_mut()
        .expect("stdout")
        .read_exact(&mut first)
        .expect("read");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "status {:?}", out.status);
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The specifiers of the namespace, OOM, autogroup, login, memory-sharing, I/O and cgroup
/// columns (issue 21).
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
        let b = run(theirs[0], &theirs[1..], &args, locale);
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
        let bin = std::env::temp_dir().join(format!("tasksnap-nobody-{}", std::process::id()));
        std::fs::copy(TASKSNAP, &bin).expect("copy the binary");
        std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        let bin_str = bin.to_string_lossy().into_owned();
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
        let _ = std::fs::remove_file(&bin);
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
