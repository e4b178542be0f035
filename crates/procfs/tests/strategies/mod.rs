//! The one set of proptest strategies for /proc text: hostile comms, hostile numbers, stat
//! lines built from values, and edits of real lines. Shared by this crate's property tests
//! and, through `#[path]`, by the tests of the crates whose /proc handling goes through
//! tasksnap-procfs (the thread-state source's fake-/proc tests, top's system header), so there is one
//! copy, not one per crate.
// Each test binary that includes this file uses a different subset.
#![allow(dead_code)]

use proptest::prelude::*;

/// The case count: `PROPTEST_CASES`, or 512.
pub fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

/// A config with [`cases`] cases.
pub fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        ..ProptestConfig::default()
    }
}

/// A comm as the kernel may print it: any bytes but NUL, up to 64 (kernel threads' full
/// names), biased towards the troublesome ones.
pub fn hostile_comm() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => prop::sample::select(b"() \n\t)(x1-:/Z".to_vec()),
        1 => 1u8..=255,
    ];
    prop::collection::vec(byte, 0..=64)
}

/// Numbers as text: huge, negative, with signs and junk, or plain; never empty, never with
/// whitespace (a token replaces one field).
pub fn number_token() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|v| v.to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        "[0-9]{19,40}",
        "-[0-9]{1,40}",
        Just("-".to_string()),
        Just("+1".to_string()),
        Just("18446744073709551616".to_string()),
        Just("-9223372036854775809".to_string()),
        Just("-9223372036854775808".to_string()),
        "[0-9a-fx+-]{1,8}",
    ]
}

/// `line` with its comm (between the first `(` and the last `)`) replaced.
pub fn with_comm(line: &[u8], comm: &[u8]) -> Vec<u8> {
    let open = line.iter().position(|&c| c == b'(').expect("(");
    let close = line.iter().rposition(|&c| c == b')').expect(")");
    let mut out = line[..=open].to_vec();
    out.extend_from_slice(comm);
    out.extend_from_slice(&line[close..]);
    out
}

/// `line`'s whitespace-separated field `i` (0-based, counted after the comm) replaced.
pub fn with_field(line: &[u8], i: usize, token: &str) -> Vec<u8> {
    let close = line.iter().rposition(|&c| c == b')').expect(")");
    let rest = std::str::from_utf8(&line[close + 1..]).expect("utf8");
    let mut fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    let i = i % fields.len();
    fields[i] = token;
    let mut out = line[..=close].to_vec();
    out.push(b' ');
    out.extend_from_slice(fields.join(" ").as_bytes());
    out.push(b'\n');
    out
}

/// A 52-field stat line with the given comm, state, flags (field 9), start (22) and block
/// I/O delay (42); every other field any u64 (the brief parser does not look at them).
pub fn brief_line(
    comm: &[u8],
    state: u8,
    flags: u64,
    start: u64,
    blkio: u64,
    other: &[u64; 52],
) -> Vec<u8> {
    let mut out = format!("{} (", other[0]).into_bytes();
    out.extend_from_slice(comm);
    out.extend_from_slice(b") ");
    out.push(state);
    for n in 4..=52 {
        let v = match n {
            9 => flags,
            22 => start,
            42 => blkio,
            n => other[n - 1],
        };
        out.extend_from_slice(format!(" {v}").as_bytes());
    }
    out.push(b'\n');
    out
}

/// This VM's /proc/stat after its `cpu` line (6.18), shortened.
pub const STAT_TAIL: &str = "cpu0 24251 0 5200 26454 190 0 46 110 0 0\ncpu1 27164 0 6190 22008 672 0 108 113 0 0\nintr 1234 0 0\nctxt 775683\nbtime 1795412457\nprocesses 72746\nprocs_running 4\nprocs_blocked 0\n";
/// The /proc/meminfo keys (6.18), shortened.
pub const MEMINFO_KEYS: [&str; 12] = [
    "MemTotal",
    "MemFree",
    "MemAvailable",
    "Buffers",
    "Cached",
    "SwapCached",
    "Active",
    "Inactive",
    "SwapTotal",
    "SwapFree",
    "SReclaimable",
    "Shmem",
];

/// A meminfo text with [`MEMINFO_KEYS`] set to `values`, laid out as the kernel does.
pub fn meminfo(values: &[u64; 12]) -> String {
    MEMINFO_KEYS
        .iter()
        .zip(values)
        .map(|(k, v)| format!("{:<16}{v:>8} kB\n", format!("{k}:")))
        .collect()
}

/// Numbers a kernel could plausibly show: up to 2^56 (no sum of a few overflows).
pub const PLAUSIBLE: u64 = 1 << 56;
