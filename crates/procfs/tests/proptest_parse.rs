//! Property tests of the per-task /proc parsers in `tasksnap_procfs::parse` (stat in full and
//! in brief, the state letter, status, statm, schedstat, io, btime, forks): no input panics
//! (arbitrary bytes, truncated and oversized lines, huge and negative numbers), and lines
//! generated from random field values, with hostile comms (`(`, `)`, spaces, newlines,
//! invalid UTF-8, up to 64 bytes), parse back to those values. The bases are real lines read
//! from Linux 6.18 (`/proc/self/stat` of `cat`, kthreadd, an init with 11 threads, a thread
//! in D with delay accounting; its status).
//!
//! These were three files with three copies of the strategies (tasksnap-collect's, the
//! states /proc source's and the load generator's stat parsers); there is one parser now, and
//! one set of strategies.
//!
//! `PROPTEST_CASES` overrides the case count (512 by default here).

use proptest::prelude::*;

mod strategies;
use strategies::{brief_line, config, hostile_comm, number_token, with_comm, with_field};
use tasksnap_procfs::parse::{
    cgroup_v2_path, parse_btime, parse_cgroup, parse_forks, parse_io, parse_schedstat, parse_stat,
    parse_stat_brief, parse_statm, parse_status, stat_state_letter, state_of, SchedStat, StatLine,
    StatusFields,
};

// Real lines from this project's Linux 6.18 VM.
const CAT: &[u8] = b"7817 (cat) R 7814 7814 8054 0 -1 4194304 99 0 0 0 0 0 0 0 20 0 1 0 56536 3133440 384 18446744073709551615 94012467380224 94012467400105 140723751615824 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 94012467416112 94012467417728 94013385617408 140723751619267 140723751619287 140723751619287 140723751620587 0\n";
const KTHREADD: &[u8] = b"2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 13 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
const INIT: &[u8] = b"1 (process_api) S 0 0 0 0 -1 4194560 15213 7547065 0 1167 30 78 18778 4663 10 -10 11 0 13 35180544 2263 18446744073709551615 1 1 0 0 0 0 0 4096 1256 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
/// A thread in D whose comm is `a) (b`, with delay accounting on (field 42 = 7).
const DWAIT: &[u8] = b"4242 (a) (b) D 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 123456 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 7 0 0 0 0 0 0 0 0 0 0\n";
const REAL_STATS: [&[u8]; 4] = [CAT, KTHREADD, INIT, DWAIT];

const INIT_STATUS: &str = "Name:\tprocess_api\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t1\nNgid:\t0\nPid:\t1\nPPid:\t0\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nFDSize:\t128\nGroups:\t \nNStgid:\t1\nNSpid:\t1\nNSpgid:\t0\nNSsid:\t0\nKthread:\t0\nVmPeak:\t   45092 kB\nVmSize:\t   34356 kB\nVmLck:\t   34324 kB\nVmPin:\t       0 kB\nVmHWM:\t    9484 kB\nVmRSS:\t    9120 kB\nRssAnon:\t    3228 kB\nRssFile:\t       8 kB\nRssShmem:\t    5884 kB\nVmData:\t   26768 kB\nVmStk:\t     132 kB\nVmExe:\t    5400 kB\nVmLib:\t       8 kB\nVmPTE:\t     108 kB\nVmSwap:\t       0 kB\nHugetlbPages:\t       0 kB\nCoreDumping:\t0\nTHP_enabled:\t1\nuntag_mask:\t0xffffffffffffffff\nThreads:\t11\nSigQ:\t0/96364\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000001000\nSigCgt:\t00000000000004e8\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\nCapBnd:\t000001fffeffffff\nCapAmb:\t0000000000000000\nNoNewPrivs:\t0\nSeccomp:\t0\nSeccomp_filters:\t0\nSpeculation_Store_Bypass:\tthread vulnerable\nSpeculationIndirectBranch:\tconditional enabled\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed:\t00000000,00000001\nMems_allowed_list:\t0\nvoluntary_ctxt_switches:\t338\nnonvoluntary_ctxt_switches:\t29\n";

/// A real /proc/stat (shortened intr and softirq lines) with the given btime and processes.
fn proc_stat(btime: &str, processes: &str) -> String {
    format!("cpu  51415 0 11390 48463 862 0 155 223 0 0\ncpu0 24251 0 5200 26454 190 0 46 110 0 0\ncpu1 27164 0 6190 22008 672 0 108 113 0 0\nintr 1234 0 0\nctxt 775683\nbtime {btime}\nprocesses {processes}\nprocs_running 4\nprocs_blocked 0\nsoftirq 1 2 3\n")
}

/// Every field of a stat line, as the kernel writes them (fs/proc/array.c, 52 fields).
#[derive(Debug, Clone)]
struct Fields {
    st: StatLine,
    /// Fields 25-38 (rsslim .. exit_signal; the first six are `st.layout`) and 42-52, the
    /// others not parsed; full u64 range.
    skipped: [u64; 14],
    after: [u64; 11],
}

fn state_letter() -> impl Strategy<Value = u8> {
    prop::sample::select(b"RSDTtXZPIWKxN".to_vec())
}

prop_compose! {
    fn fields()(
        ids in (any::<i32>(), any::<i32>(), any::<i32>(), any::<i32>(), any::<i32>(), any::<i32>()),
        comm in hostile_comm(),
        state in state_letter(),
        flags in any::<u32>(),
        faults in any::<[u64; 4]>(),
        times in (any::<u64>(), any::<u64>(), any::<i64>(), any::<i64>()),
        sched in (any::<i32>(), any::<i32>(), any::<i32>()),
        mem in (any::<u64>(), any::<u64>(), 0..=i64::MAX as u64),
        tail in (any::<i32>(), any::<u32>(), any::<u32>()),
        skipped in any::<[u64; 14]>(),
        after in any::<[u64; 11]>(),
    ) -> Fields {
        let st = StatLine {
            pid: ids.0,
            comm,
            state,
            ppid: ids.1,
            pgrp: ids.2,
            session: ids.3,
            tty_nr: ids.4,
            tpgid: ids.5,
            flags,
            minflt: faults[0],
            cminflt: faults[1],
            majflt: faults[2],
            cmajflt: faults[3],
            utime_ticks: times.0,
            stime_ticks: times.1,
            cutime_ticks: times.2,
            cstime_ticks: times.3,
            priority: sched.0,
            nice: sched.1,
            num_threads: sched.2,
            start_ticks: mem.0,
            vsize_bytes: mem.1,
            rss_pages: mem.2,
            processor: tail.0,
            rt_priority: tail.1,
            policy: tail.2,
            layout: tasksnap_model::Layout {
                rsslim_bytes: skipped[0],
                start_code: skipped[1],
                end_code: skipped[2],
                start_stack: skipped[3],
                kstkesp: skipped[4],
                kstkeip: skipped[5],
            },
        };
        Fields { st, skipped, after }
    }
}

/// The line the kernel would write for `f` (`itrealvalue` is always 0).
fn stat_line(f: &Fields) -> Vec<u8> {
    let s = &f.st;
    let mut out = format!("{} (", s.pid).into_bytes();
    out.extend_from_slice(&s.comm);
    out.extend_from_slice(b") ");
    out.push(s.state);
    let mut nums = vec![
        s.ppid.to_string(),
        s.pgrp.to_string(),
        s.session.to_string(),
        s.tty_nr.to_string(),
        s.tpgid.to_string(),
        s.flags.to_string(),
        s.minflt.to_string(),
        s.cminflt.to_string(),
        s.majflt.to_string(),
        s.cmajflt.to_string(),
        s.utime_ticks.to_string(),
        s.stime_ticks.to_string(),
        s.cutime_ticks.to_string(),
        s.cstime_ticks.to_string(),
        s.priority.to_string(),
        s.nice.to_string(),
        s.num_threads.to_string(),
        "0".to_string(),
        s.start_ticks.to_string(),
        s.vsize_bytes.to_string(),
        s.rss_pages.to_string(),
    ];
    nums.extend(f.skipped.iter().map(u64::to_string));
    nums.push(s.processor.to_string());
    nums.push(s.rt_priority.to_string());
    nums.push(s.policy.to_string());
    nums.extend(f.after.iter().map(u64::to_string));
    for n in nums {
        out.push(b' ');
        out.extend_from_slice(n.as_bytes());
    }
    out.push(b'\n');
    out
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn stat_never_panics_on_arbitrary_bytes(buf in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = parse_stat(&buf);
    }

    #[test]
    fn stat_round_trips_random_fields_with_a_hostile_comm(f in fields()) {
        let line = stat_line(&f);
        let got = parse_stat(&line);
        prop_assert_eq!(got.as_ref(), Ok(&f.st), "line {:?}", String::from_utf8_lossy(&line));
        prop_assert_eq!(state_of(&f.st).letter(), f.st.state);
    }

    /// The three real lines, comm replaced: only the comm changes in what is parsed.
    #[test]
    fn real_stat_lines_with_a_hostile_comm(which in 0..REAL_STATS.len(), comm in hostile_comm()) {
        let real = REAL_STATS[which];
        let want = StatLine { comm: comm.clone(), ..parse_stat(real).expect("real line") };
        prop_assert_eq!(parse_stat(&with_comm(real, &comm)), Ok(want));
    }

    /// Cut anywhere: an error or a line missing only optional trailing fields, never a panic;
    /// cut before rss, always an error.
    #[test]
    fn truncated_stat_lines(which in 0..REAL_STATS.len(), comm in hostile_comm(), cut in any::<prop::sample::Index>()) {
        let line = with_comm(REAL_STATS[which], &comm);
        let cut = cut.index(line.len() + 1);
        let r = parse_stat(&line[..cut]);
        let close = line.iter().rposition(|&c| c == b')').expect(")");
        // Up to the end of vsize (field 23, the 21st after the comm; " R 1 ..." splits into
        // "", "R", "1", ...), rss is missing. A cut inside the comm leaves a line whose last
        // `)` is the comm's: anything may follow it, so no claim there.
        let vsize_end = close + line[close + 1..]
            .split(|&c| c == b' ')
            .take(22)
            .map(|f| f.len() + 1)
            .sum::<usize>();
        if cut > close && cut <= vsize_end {
            prop_assert!(r.is_err(), "cut at {} of {:?}: {:?}", cut, String::from_utf8_lossy(&line), r);
        }
    }

    /// Oversized: extra fields, a huge line, a giant comm; never a panic, and the comm still
    /// splits on the last `)`.
    #[test]
    fn oversized_stat_lines(
        which in 0..REAL_STATS.len(),
        extra in prop::collection::vec(number_token(), 0..20),
        extra_copies in 1usize..50,
        // Up to 6,300 bytes: a hostile comm repeated (cheaper to generate than random bytes).
        comm in (hostile_comm(), 1usize..100).prop_map(|(c, k)| c.repeat(k)),
    ) {
        let mut line = with_comm(REAL_STATS[which], &comm);
        line.pop();
        for t in extra.iter().cycle().take(extra.len() * extra_copies) {
            line.push(b' ');
            line.extend_from_slice(t.as_bytes());
        }
        let _ = parse_stat(&line);
        if let Ok(st) = parse_stat(&with_comm(REAL_STATS[which], &comm)) {
            prop_assert_eq!(st.comm, comm);
        }
    }

    /// Any field replaced by a huge, negative or malformed number: an error or a value, never
    /// a panic; a token that is a valid value for the field parses to it.
    #[test]
    fn stat_fields_with_hostile_numbers(which in 0..REAL_STATS.len(), i in 0usize..52, tok in number_token()) {
        let line = with_field(REAL_STATS[which], i, &tok);
        let r = parse_stat(&line);
        // Field 4 (ppid, i == 1) is an i32.
        if i == 1 {
            match tok.parse::<i32>() {
                Ok(v) if !tok.starts_with('+') => prop_assert_eq!(r.as_ref().map(|s| s.ppid), Ok(v)),
                _ => prop_assert!(r.is_err(), "{:?} accepted as ppid: {:?}", tok, r),
            }
        }
        // Field 5 (pgrp, i == 2) is an i32.
        if i == 2 {
            match tok.parse::<i32>() {
                Ok(v) if !tok.starts_with('+') => prop_assert_eq!(r.as_ref().map(|s| s.pgrp), Ok(v)),
                _ => prop_assert!(r.is_err(), "{:?} accepted as pgrp: {:?}", tok, r),
            }
        }
        // Field 14 (utime, i == 11) is a u64.
        if i == 11 {
            match tok.parse::<u64>() {
                Ok(v) if !tok.starts_with('+') => prop_assert_eq!(r.as_ref().map(|s| s.utime_ticks), Ok(v)),
                _ => prop_assert!(r.is_err(), "{:?} accepted as utime: {:?}", tok, r),
            }
        }
    }

    #[test]
    fn status_never_panics(buf in prop::collection::vec(any::<u8>(), 0..800)) {
        let _ = parse_status(&buf);
    }

    /// Arbitrary lines mixed into a real status file, with the known keys' values fuzzed.
    #[test]
    fn status_with_hostile_lines(
        junk in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..80), 0..6),
        at in prop::collection::vec(any::<prop::sample::Index>(), 6),
        key in prop::sample::select(vec!["Uid:", "Gid:", "Groups:", "VmLck:", "VmRSS:", "VmSize:", "VmSwap:", "voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"]),
        value in prop_oneof![number_token(), "[ \t0-9kB]{0,30}", ".{0,40}"],
    ) {
        let mut lines: Vec<Vec<u8>> = INIT_STATUS.lines().map(|l| l.as_bytes().to_vec()).collect();
        for (j, at) in junk.into_iter().zip(at) {
            let i = at.index(lines.len() + 1);
            lines.insert(i, j);
        }
        let mut fuzzed = format!("{key}\t{value}").into_bytes();
        if let Some(l) = lines.iter_mut().find(|l| l.starts_with(key.as_bytes())) {
            std::mem::swap(l, &mut fuzzed);
        }
        let _ = parse_status(&lines.join(&b'\n'));
    }

    /// A status file written from random values parses back to them.
    #[test]
    fn status_round_trips(
        name in "[^\n]{0,64}",
        uids in any::<[u32; 4]>(),
        gids in any::<[u32; 4]>(),
        groups in prop::collection::vec(any::<u32>(), 0..40),
        vm in prop::collection::vec(prop::option::of(any::<u64>()), 4),
        switches in (prop::option::of(any::<u64>()), prop::option::of(any::<u64>())),
        signals in any::<[Option<u64>; 5]>(),
    ) {
        let mut s = format!("Name:\t{name}\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t{}\t{}\t{}\t{}\nGid:\t{}\t{}\t{}\t{}\nFDSize:\t64\nGroups:\t",
            uids[0], uids[1], uids[2], uids[3], gids[0], gids[1], gids[2], gids[3]);
        for g in &groups {
            s.push_str(&format!("{g} "));
        }
        if groups.is_empty() {
            s.push(' ');
        }
        s.push('\n');
        for (k, v) in ["VmSize", "VmLck", "VmRSS", "VmSwap"].iter().zip(&vm) {
            if let Some(v) = v {
                s.push_str(&format!("{k}:\t{v:>8} kB\n"));
            }
        }
        s.push_str("Threads:\t1\nSigQ:\t0/96364\n");
        for (k, v) in ["SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"].iter().zip(signals) {
            if let Some(v) = v {
                s.push_str(&format!("{k}:\t{v:016x}\n"));
            }
        }
        if let Some(v) = switches.0 {
            s.push_str(&format!("voluntary_ctxt_switches:\t{v}\n"));
        }
        if let Some(v) = switches.1 {
            s.push_str(&format!("nonvoluntary_ctxt_switches:\t{v}\n"));
        }
        let want = StatusFields {
            uids: Some(uids),
            gids: Some(gids),
            groups: Some(groups),
            vm_size_kb: vm[0],
            vm_lck_kb: vm[1],
            vm_rss_kb: vm[2],
            vm_swap_kb: vm[3],
            voluntary_switches: switches.0,
            involuntary_switches: switches.1,
            signals,
        };
        prop_assert_eq!(parse_status(s.as_bytes()), Ok(want));
    }

    #[test]
    fn statm_schedstat_io_never_panic(buf in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_statm(&buf);
        let _ = parse_schedstat(&buf);
        let _ = parse_io(&buf);
        let _ = parse_btime(&buf);
        let _ = parse_forks(&buf);
    }

    #[test]
    fn number_lists_with_hostile_tokens(toks in prop::collection::vec(number_token(), 0..10), sep in prop::sample::select(vec![" ", "\t", "\n", "  "])) {
        let s = toks.join(sep);
        let _ = parse_statm(s.as_bytes());
        let _ = parse_schedstat(s.as_bytes());
        let all_u64 = toks.iter().all(|t| !t.starts_with('+') && t.parse::<u64>().is_ok());
        if toks.len() >= 3 && all_u64 {
            let want: Vec<u64> = toks[..3].iter().map(|t| t.parse().expect("u64")).collect();
            prop_assert_eq!(parse_schedstat(s.as_bytes()).map(|v| vec![v.run_ns, v.run_delay_ns, v.timeslices]), Ok(want));
        }
    }

    #[test]
    fn statm_and_schedstat_round_trip(v in any::<[u64; 7]>(), trailing in prop::sample::select(vec!["", "\n", " \n"])) {
        let statm = format!("{} {} {} {} {} {} {}{trailing}", v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
        prop_assert_eq!(parse_statm(statm.as_bytes()), Ok(v));
        let sched = format!("{} {} {}{trailing}", v[0], v[1], v[2]);
        prop_assert_eq!(parse_schedstat(sched.as_bytes()), Ok(SchedStat { run_ns: v[0], run_delay_ns: v[1], timeslices: v[2] }));
        // Short: an error (the kernel always writes three numbers).
        let short = format!("{} {}{trailing}", v[0], v[1]);
        prop_assert!(parse_schedstat(short.as_bytes()).is_err());
        // Truncated: an error.
        prop_assert!(parse_statm(&statm.as_bytes()[..statm.find(' ').expect("space")]).is_err());
    }

    #[test]
    fn io_round_trips_in_any_order(v in any::<[u64; 7]>(), order in Just((0..7).collect::<Vec<usize>>()).prop_shuffle(), extra in prop::collection::vec(("[a-z_]{1,12}", any::<u32>()), 0..3)) {
        let keys = ["rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes", "cancelled_write_bytes"];
        let mut lines: Vec<String> = order.iter().map(|&i| format!("{}: {}", keys[i], v[i])).collect();
        lines.extend(
            extra
                .into_iter()
                .filter(|(k, _)| !keys.contains(&k.as_str()))
                .map(|(k, n)| format!("{k}: {n}")),
        );
        let io = parse_io(lines.join("\n").as_bytes()).expect("io parses");
        prop_assert_eq!(
            [io.rchar_bytes, io.wchar_bytes, io.syscr, io.syscw, io.read_bytes, io.write_bytes, io.cancelled_write_bytes],
            v
        );
        // A missing line: an error.
        let short = lines[1..].join("\n");
        prop_assert!(parse_io(short.as_bytes()).is_err());
    }

    #[test]
    fn btime_and_forks_round_trip(btime in any::<u64>(), forks in any::<u64>()) {
        let stat = proc_stat(&btime.to_string(), &forks.to_string());
        prop_assert_eq!(parse_btime(stat.as_bytes()), Ok(btime));
        prop_assert_eq!(parse_forks(stat.as_bytes()), Ok(forks));
    }

    #[test]
    fn btime_and_forks_with_hostile_values(tok in number_token(), cut in any::<prop::sample::Index>()) {
        let stat = proc_stat(&tok, &tok);
        let b = parse_btime(stat.as_bytes());
        let f = parse_forks(stat.as_bytes());
        match tok.parse::<u64>() {
            Ok(v) if !tok.starts_with('+') => {
                prop_assert_eq!(b, Ok(v));
                prop_assert_eq!(f, Ok(v));
            }
            _ => {
                prop_assert!(b.is_err(), "{:?}: {:?}", tok, b);
                prop_assert!(f.is_err(), "{:?}: {:?}", tok, f);
            }
        }
        let cut = cut.index(stat.len() + 1);
        let _ = parse_btime(&stat.as_bytes()[..cut]);
        let _ = parse_forks(&stat.as_bytes()[..cut]);
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn brief_stat_and_state_letter_never_panic(buf in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = parse_stat_brief(&buf);
        let _ = stat_state_letter(&buf);
    }

    #[test]
    fn brief_stat_round_trips_with_a_hostile_comm(
        comm in hostile_comm(),
        state in state_letter(),
        flags in any::<u64>(),
        start in any::<u64>(),
        blkio in any::<u64>(),
        other in any::<[u64; 52]>(),
    ) {
        let line = brief_line(&comm, state, flags, start, blkio, &other);
        let st = parse_stat_brief(&line).expect("generated line parses");
        prop_assert_eq!(&st.comm, &comm);
        prop_assert_eq!(st.state, state);
        prop_assert_eq!(st.flags, flags);
        prop_assert_eq!(st.start_ticks, start);
        prop_assert_eq!(st.blkio_ticks, blkio);
        prop_assert_eq!(stat_state_letter(&line), Some(state));
    }

    /// The full and the brief parse of one line agree where they overlap.
    #[test]
    fn brief_and_full_stat_agree(f in fields()) {
        let line = stat_line(&f);
        let brief = parse_stat_brief(&line).expect("brief parses");
        prop_assert_eq!(&brief.comm, &f.st.comm);
        prop_assert_eq!(brief.state, f.st.state);
        prop_assert_eq!(brief.flags, u64::from(f.st.flags));
        prop_assert_eq!(brief.start_ticks, f.st.start_ticks);
        prop_assert_eq!(brief.blkio_ticks, f.after[0]);
    }

    #[test]
    fn real_stat_lines_with_a_hostile_comm_brief(which in 0..REAL_STATS.len(), comm in hostile_comm()) {
        let real = REAL_STATS[which];
        let want = parse_stat_brief(real).expect("real line");
        let line = with_comm(real, &comm);
        let st = parse_stat_brief(&line).expect("parses");
        prop_assert_eq!(&st.comm, &comm);
        prop_assert_eq!((st.state, st.flags, st.start_ticks, st.blkio_ticks), (want.state, want.flags, want.start_ticks, want.blkio_ticks));
        prop_assert_eq!(stat_state_letter(&line), Some(want.state));
    }

    /// Truncated anywhere, oversized, or with a field replaced by a hostile number: no panic;
    /// field 22 (start) must be a u64 as the kernel writes it (no sign).
    #[test]
    fn truncated_oversized_and_hostile_brief_stat(
        which in 0..REAL_STATS.len(),
        comm in hostile_comm(),
        cut in any::<prop::sample::Index>(),
        extra in prop::collection::vec(number_token(), 0..100),
        field in 0usize..60,
        tok in number_token(),
    ) {
        let line = with_comm(REAL_STATS[which], &comm);
        let cut = cut.index(line.len() + 1);
        let _ = parse_stat_brief(&line[..cut]);
        let _ = stat_state_letter(&line[..cut]);
        let mut big = line.clone();
        big.pop();
        for t in &extra {
            big.push(b' ');
            big.extend_from_slice(t.as_bytes());
        }
        let _ = parse_stat_brief(&big);
        let fuzzed = with_field(&line, field, &tok);
        let r = parse_stat_brief(&fuzzed);
        let close = line.iter().rposition(|&c| c == b')').expect(")");
        let n_fields = String::from_utf8_lossy(&line[close + 1..]).split_ascii_whitespace().count();
        if field % n_fields == 19 {
            match tok.parse::<u64>() {
                Ok(v) if !tok.starts_with('+') => prop_assert_eq!(r.map(|s| s.start_ticks), Some(v)),
                _ => prop_assert!(r.is_none(), "{:?} accepted as start: {:?}", tok, r),
            }
        }
    }

    /// Thousands of extra fields do not move the comm.
    #[test]
    fn thousands_of_extra_fields(comm in hostile_comm(), extra in 0usize..3000) {
        let mut big = with_comm(CAT, &comm);
        big.pop();
        big.extend(std::iter::repeat_n(b" 18446744073709551616", extra).flatten());
        prop_assert_eq!(parse_stat(&big).map(|s| s.comm), Ok(comm.clone()));
        prop_assert_eq!(parse_stat_brief(&big).map(|s| s.comm), Some(comm));
    }
}

/// One `/proc/PID/cgroup` line's parts: a hierarchy id, controllers, and a path that may hold
/// any byte but a newline or NUL (cgroup names are directory names: `:` included).
fn cgroup_line() -> impl Strategy<Value = (u32, Vec<u8>, Vec<u8>)> {
    let path_byte = any::<u8>().prop_filter("no line breaks", |b| *b != b'\n' && *b != 0);
    (
        0u32..16,
        prop::collection::vec(
            prop::sample::select(b"abcdefghijklmnopqrstuvwxyz=,_".to_vec()),
            0..12,
        ),
        prop::collection::vec(path_byte, 0..40),
    )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn cgroup_never_panics_on_arbitrary_bytes(buf in prop::collection::vec(any::<u8>(), 0..600)) {
        for l in parse_cgroup(&buf) {
            let _ = l.is_root();
        }
        let _ = cgroup_v2_path(&buf);
    }

    /// Lines the kernel could write come back part for part, whatever their paths hold, and
    /// the v2 path is the `0::` line's.
    #[test]
    fn cgroup_lines_round_trip(lines in prop::collection::vec(cgroup_line(), 0..10)) {
        let mut raw = Vec::new();
        for (id, ctl, path) in &lines {
            raw.extend_from_slice(format!("{id}:").as_bytes());
            raw.extend_from_slice(ctl);
            raw.push(b':');
            raw.extend_from_slice(path);
            raw.push(b'\n');
        }
        let got: Vec<_> = parse_cgroup(&raw).collect();
        prop_assert_eq!(got.len(), lines.len());
        for (g, (id, ctl, path)) in got.iter().zip(&lines) {
            let id = id.to_string();
            prop_assert_eq!(g.hierarchy, id.as_bytes());
            prop_assert_eq!(g.controllers, &ctl[..]);
            prop_assert_eq!(g.path, &path[..]);
        }
        let v2 = lines.iter().find(|(id, ctl, _)| *id == 0 && ctl.is_empty());
        prop_assert_eq!(cgroup_v2_path(&raw), v2.map(|(_, _, p)| &p[..]));
    }
}
