//! Property tests of the thread-state sources' text handling: kallsyms parsing and
//! frame trimming, the task_delayacct switch, and the whole /proc source over fake trees of
//! hostile files (stat, schedstat and wchan are read inside the sampler). No input may panic
//! (arbitrary bytes, truncated and oversized lines, huge and negative numbers, comms with
//! `(`, `)`, spaces, newlines and invalid UTF-8). The stat, state-letter and schedstat
//! parsers the source uses are tasksnap-procfs's, property-tested there
//! (crates/procfs/tests/proptest_parse.rs).
//!
//! `PROPTEST_CASES` overrides the case count (512 by default here; the fake-tree test runs
//! an eighth of it).

use std::fs;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use proptest::prelude::*;

#[path = "../../procfs/tests/strategies/mod.rs"]
mod strategies;
use strategies::{brief_line, cases, hostile_comm};
use tasksnap_collect::testing::states::procfs::{delayacct_on, Options, ProcfsSource};
use tasksnap_collect::testing::states::symbolize::{is_switch_frame, trim, Kallsyms};
use tasksnap_collect::testing::states::Filter;
use tasksnap_collect::testing::StateSource;
use tasksnap_states::{between, Rollup};

const KALLSYMS: &str = "ffffffff81000138 t syscall_return_via_sysret\nffffffff81000f70 t common_interrupt_return\nffffffff810011a6 t native_irq_return_ldt\nffffffff821f7c80 t __schedule\nffffffff821fcd20 t rwsem_down_write_slowpath\nffffffff82a00000 D jiffies\nffffffffc0a01000 t ext4_file_read_iter\t[ext4]\n0000000000000000 T hidden_from_non_root\n";

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn kallsyms_never_panics(text in ".{0,400}", lines in prop::collection::vec("[0-9a-fA-Fx]{0,18}[ \t]{1,2}[tTwWdDbBrR?]{0,2}[ \t]{1,2}[^\n]{0,30}", 0..20), addrs in prop::collection::vec(any::<u64>(), 0..10)) {
        let k = Kallsyms::parse(&text);
        let _ = k.frames(&addrs);
        let k = Kallsyms::parse(&lines.join("\n"));
        for &a in &addrs {
            let _ = k.name(a);
        }
        let _ = trim(k.frames(&addrs));
    }

    /// Text symbols at distinct addresses are found at their address and just above it; data
    /// symbols and zeroed (unprivileged) addresses are left out.
    #[test]
    fn kallsyms_lookups(
        syms in prop::collection::btree_map(1u64..u64::MAX - 0x1000, ("[a-zA-Z_][a-zA-Z0-9_.$]{0,40}", prop::sample::select(vec!["t", "T", "w", "W", "d", "D", "b", "r"]), prop::option::of("[a-z0-9_]{1,10}")), 1..40),
        offset in 0u64..0x1000,
    ) {
        let mut text = String::from(KALLSYMS);
        for (a, (name, kind, module)) in &syms {
            text.push_str(&format!("{a:016x} {kind} {name}"));
            if let Some(m) = module {
                text.push_str(&format!("\t[{m}]"));
            }
            text.push('\n');
        }
        let k = Kallsyms::parse(&text);
        let base = Kallsyms::parse(KALLSYMS);
        let texts: Vec<(u64, &str)> = syms
            .iter()
            .filter(|(_, (_, kind, _))| matches!(*kind, "t" | "T" | "w" | "W"))
            .map(|(&a, (n, _, _))| (a, n.as_str()))
            .collect();
        prop_assert!(k.len() >= texts.len());
        prop_assert!(k.len() <= texts.len() + base.len());
        let real_addrs = [0xffffffff81000138u64, 0xffffffff81000f70, 0xffffffff810011a6, 0xffffffff821f7c80, 0xffffffff821fcd20, 0xffffffffc0a01000];
        for (i, &(a, n)) in texts.iter().enumerate() {
            // Unambiguous only if no real symbol shares the address.
            if real_addrs.contains(&a) {
                continue;
            }
            prop_assert_eq!(k.name(a), Some(n));
            let next = texts.get(i + 1).map_or(u64::MAX, |t| t.0);
            let real_between = real_addrs.iter().any(|&r| r > a && r <= a + offset);
            if a + offset < next && !real_between {
                prop_assert_eq!(k.name(a + offset), Some(n));
            }
        }
    }

    #[test]
    fn trim_drops_only_the_leading_switch_frames(
        names in prop::collection::vec("[a-zA-Z_][a-zA-Z0-9_.]{0,40}", 0..20),
    ) {
        let trimmed = trim(names.clone());
        let skipped = names.iter().take_while(|n| is_switch_frame(n)).count();
        if skipped < names.len() {
            prop_assert_eq!(trimmed, names[skipped..].to_vec());
        } else {
            prop_assert_eq!(trimmed, names);
        }
    }

    #[test]
    fn delayacct_switch(content in prop::collection::vec(any::<u8>(), 0..20)) {
        let tmp = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(tmp.path().join("sys/kernel")).expect("mkdir");
        fs::write(tmp.path().join("sys/kernel/task_delayacct"), &content).expect("write");
        let want = std::str::from_utf8(&content).is_ok_and(|s| s.trim() == "1");
        prop_assert_eq!(delayacct_on(tmp.path()), want);
    }
}

/// What one fake thread's files hold.
#[derive(Clone)]
struct FakeThread {
    stat: Vec<u8>,
    /// Before and after the first sample.
    schedstat: (Vec<u8>, Vec<u8>),
    wchan: Vec<u8>,
}

impl std::fmt::Debug for FakeThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        f.debug_struct("FakeThread")
            .field("stat", &s(&self.stat))
            .field("schedstat", &(s(&self.schedstat.0), s(&self.schedstat.1)))
            .field("wchan", &s(&self.wchan))
            .finish()
    }
}

fn file_bytes(real: impl Strategy<Value = Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => real,
        1 => prop::collection::vec(any::<u8>(), 0..200),
        1 => Just(Vec::new()),
    ]
}

/// A thread of hostile files. With `max` below `u64::MAX`, the numbers of its stat and
/// schedstat stay at or below it.
fn fake_thread(max: u64) -> impl Strategy<Value = FakeThread> {
    let num = move || prop_oneof![0..=max, 0u64..1_000_000];
    let stat = (
        hostile_comm(),
        prop::sample::select(b"RSDTtXZPI".to_vec()),
        any::<u64>(),
        num(),
        num(),
        any::<[u64; 52]>(),
    )
        .prop_map(|(c, s, f, st, b, o)| brief_line(&c, s, f, st, b, &o));
    let sched =
        (num(), num(), any::<u64>()).prop_map(|(a, b, c)| format!("{a} {b} {c}\n").into_bytes());
    let wchan = prop_oneof![
        Just(b"0".to_vec()),
        Just(b"do_wait".to_vec()),
        "[a-z_]{1,30}".prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..100),
    ];
    (
        file_bytes(stat),
        file_bytes(sched.clone()),
        file_bytes(sched),
        wchan,
    )
        .prop_map(|(stat, s0, s1, wchan)| FakeThread {
            stat,
            schedstat: (s0, s1),
            wchan,
        })
}

/// Writes `threads` (all of process 100) and the delay-accounting switch into a fake /proc,
/// takes two samples of it through the /proc fallback (schedstat changed in between) and
/// their interval in every rollup. Panics of the sampler thread are counted (see
/// [`SAMPLER_PANICS`]).
fn sample_fake_proc(threads: &[FakeThread], delayacct: &str, track_sleep: bool) {
    watch_sampler_panics();
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    fs::create_dir_all(root.join("sys/kernel")).expect("mkdir");
    fs::write(root.join("sys/kernel/task_delayacct"), delayacct).expect("sysctl");
    for (i, t) in threads.iter().enumerate() {
        let d = root.join(format!("100/task/{}", 100 + i));
        fs::create_dir_all(&d).expect("mkdir");
        fs::write(d.join("stat"), &t.stat).expect("stat");
        fs::write(d.join("schedstat"), &t.schedstat.0).expect("schedstat");
        fs::write(d.join("wchan"), &t.wchan).expect("wchan");
    }
    let mut src = ProcfsSource::new(Options {
        filter: Filter::default(),
        sample_hz: 1000,
        track_sleep,
        proc_root: root.to_path_buf(),
        ..Options::default()
    })
    .expect("source");
    let a = src.sample().expect("first sample");
    std::thread::sleep(Duration::from_millis(3));
    for (i, t) in threads.iter().enumerate() {
        let d = root.join(format!("100/task/{}", 100 + i));
        fs::write(d.join("schedstat"), &t.schedstat.1).expect("schedstat");
    }
    std::thread::sleep(Duration::from_millis(3));
    let b = src.sample().expect("second sample");
    for rollup in [Rollup::Thread, Rollup::Process, Rollup::Command] {
        let _ = between(&a, &b, rollup);
    }
}

/// Plausible magnitudes: start and block I/O delay up to 10^11 ticks (31 years at 100 Hz),
/// schedstat up to 10^18 ns (31 years), so that no sum of a few of them can overflow.
const PLAUSIBLE: u64 = 100_000_000_000;

proptest! {
    #![proptest_config(ProptestConfig { cases: (cases() / 8).max(8), ..ProptestConfig::default() })]

    /// The whole /proc fallback over a fake tree of hostile files (junk bytes, empty files,
    /// hostile comms, hostile wchan) with plausible numbers: no panic, in the caller or the
    /// sampler thread.
    #[test]
    fn fallback_over_hostile_fake_proc(
        threads in prop::collection::vec(fake_thread(PLAUSIBLE), 1..4),
        delayacct in prop::sample::select(vec!["1\n", "0\n", "junk"]),
        track_sleep in any::<bool>(),
    ) {
        sample_fake_proc(&threads, delayacct, track_sleep);
        prop_assert_eq!(SAMPLER_PANICS.load(Ordering::SeqCst), 0, "the sampler thread panicked");
    }

    /// As above with numbers over the whole u64 range.
    ///
    /// Minimal failing input found (debug build): one thread whose stat has start time (field
    /// 22) 1844674407371 ticks or more: `st.start_ticks * self.tick_ns` overflows in
    /// `ProcfsSource::sample` (crates/collect/src/states/procfs.rs; likewise `st.blkio_ticks *
    /// self.tick_ns` with delay accounting on); with those bounded, two threads' huge schedstat
    /// deltas overflow their sum in `Row::add` (crates/states/src/interval.rs). See the
    /// `defect_` tests below.
    #[test]
    fn fallback_over_hostile_fake_proc_full_range(
        threads in prop::collection::vec(fake_thread(u64::MAX), 1..4),
        delayacct in prop::sample::select(vec!["1\n", "0\n", "junk"]),
        track_sleep in any::<bool>(),
    ) {
        sample_fake_proc(&threads, delayacct, track_sleep);
        prop_assert_eq!(SAMPLER_PANICS.load(Ordering::SeqCst), 0, "the sampler thread panicked");
    }
}

/// A 6.18-shaped stat line of thread `tid` with the given start time (field 22) and block
/// I/O delay (field 42).
fn plain_stat(tid: i32, start: u64, blkio: u64) -> Vec<u8> {
    format!(
        "{tid} (x) S 1 {tid} {tid} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 {start} 1000 100 \
         18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 {blkio} 0 0 0 0 0 0 0 0 0 0\n"
    )
    .into_bytes()
}

fn thread_files(stat: Vec<u8>, sched: (&str, &str)) -> FakeThread {
    FakeThread {
        stat,
        schedstat: (sched.0.as_bytes().to_vec(), sched.1.as_bytes().to_vec()),
        wchan: b"0".to_vec(),
    }
}

/// Minimal input: stat field 22 (start time) = 1844674407371 (`* 10_000_000` ns per tick
/// overflows u64). Panics in `ProcfsSource::sample` (crates/collect/src/states/procfs.rs,
/// `st.start_ticks * self.tick_ns`).
#[test]
fn defect_huge_start_time() {
    let t = thread_files(
        plain_stat(100, 1_844_674_407_371, 0),
        ("0 0 0\n", "0 0 0\n"),
    );
    sample_fake_proc(&[t], "0\n", false);
}

/// Minimal input: delay accounting on, stat field 42 (block I/O delay) = 1844674407371.
/// Panics in `ProcfsSource::sample` (crates/collect/src/states/procfs.rs,
/// `st.blkio_ticks * self.tick_ns`).
#[test]
fn defect_huge_blkio_delay() {
    let t = thread_files(
        plain_stat(100, 100, 1_844_674_407_371),
        ("0 0 0\n", "0 0 0\n"),
    );
    sample_fake_proc(&[t], "1\n", false);
}

/// schedstat `0 0 0` then `18446744073709551615 1 0`: the run + wait deltas overflowed in
/// `thread_row` (crates/states/src/interval.rs) until b1e8466 bounded the wait by the
/// interval.
#[test]
fn huge_schedstat_delta() {
    let t = thread_files(
        plain_stat(100, 100, 0),
        ("0 0 0\n", "18446744073709551615 1 0\n"),
    );
    sample_fake_proc(&[t], "0\n", false);
}

/// Minimal input: two threads of one process, schedstat `0 0 0` then
/// `9223372036854775808 0 0` each; their rows summed for `Rollup::Process` overflow.
/// Panics in `Row::add` (crates/states/src/interval.rs, `self.ns[i] += other.ns[i]`).
#[test]
fn defect_rollup_sum_overflow() {
    let t = |tid| {
        thread_files(
            plain_stat(tid, 100, 0),
            ("0 0 0\n", "9223372036854775808 0 0\n"),
        )
    };
    sample_fake_proc(&[t(100), t(101)], "0\n", false);
}

/// Panics of the sampler thread, which the test thread would not see otherwise.
static SAMPLER_PANICS: AtomicUsize = AtomicUsize::new(0);

/// Counts sampler panics (and keeps the default report).
fn watch_sampler_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some("tasksnap-sampler") {
                SAMPLER_PANICS.fetch_add(1, Ordering::SeqCst);
            }
            prev(info);
        }));
    });
}
