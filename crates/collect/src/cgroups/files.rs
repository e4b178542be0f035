//! One cgroup directory's control files: which files a hierarchy's controllers give, read
//! relative to the directory's descriptor (never through a link), and the parse of each kind
//! into a [`CgroupCounters`]. Every byte is untrusted: a file that is missing, unreadable or
//! not what the kernel writes leaves its fields `None`.

use std::os::fd::BorrowedFd;

use rustix::fs::{Mode, OFlags};
use tasksnap_model::{CgroupCounters, Limit};

/// v1's "no memory limit": `LONG_MAX` rounded down to a 4 KiB page (`PAGE_COUNTER_MAX` ×
/// `PAGE_SIZE`). Larger pages round it further down, so anything at or above 2^62 is taken as
/// none (no machine has 4 EiB).
const V1_NO_MEMORY_LIMIT_FROM: u64 = 1 << 62;

/// The largest control file read (ours are a few hundred bytes).
const MAX_FILE_BYTES: usize = 4096;

/// The counters a directory's files give, for a hierarchy of `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// cgroup v2: every file the unified hierarchy may have.
    V2,
    /// cgroup v1, with which of the controllers we read it has.
    V1 {
        cpu: bool,
        cpuacct: bool,
        memory: bool,
        pids: bool,
        blkio: bool,
    },
}

/// Reads the file `name` of the directory `dir` (what fits in [`MAX_FILE_BYTES`]): `None` when
/// it is missing, unreadable, a link, or not a regular file's worth of text.
pub(crate) fn read_file(dir: BorrowedFd<'_>, name: &str) -> Option<Vec<u8>> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fd = rustix::fs::openat(dir, name, flags, Mode::empty()).ok()?;
    let mut buf = vec![0u8; MAX_FILE_BYTES];
    let mut len = 0;
    while len < buf.len() {
        match rustix::io::read(&fd, &mut buf[len..]) {
            Ok(0) => break,
            // A control file is a seq_file: a read returns all of it that fits, so a read
            // shorter than the room is its end (no second read to see 0: a system call a
            // file, a third of the walk's reads).
            Ok(n) if n < buf.len() - len => {
                len += n;
                break;
            }
            Ok(n) => len += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return None,
        }
    }
    buf.truncate(len);
    Some(buf)
}

/// Fills `c` from the files of `dir` that a hierarchy of `kind` has; whether any of them was
/// read (a cgroup removed meanwhile has none).
pub(crate) fn read_counters(dir: BorrowedFd<'_>, kind: Kind, c: &mut CgroupCounters) -> bool {
    let any = std::cell::Cell::new(false);
    let read = |name: &str| {
        let text = read_file(dir, name);
        any.set(any.get() || text.is_some());
        text
    };
    match kind {
        Kind::V2 => {
            if let Some(t) = read("cpu.stat") {
                c.cpu_usage_ns = key_value(&t, "usage_usec").map(|v| v.saturating_mul(1000));
                fill_cpu_stat(c, &t, "throttled_usec", 1000);
            }
            if let Some((quota, period)) = read("cpu.max").and_then(|t| parse_cpu_max(&t)) {
                c.cpu_quota_us = Some(quota);
                c.cpu_period_us = Some(period);
            }
            c.memory_current_bytes = read("memory.current").and_then(|t| single(&t));
            c.memory_limit_bytes = read("memory.max").and_then(|t| parse_max(&t));
            if let Some(t) = read("memory.events") {
                c.oom_kills = key_value(&t, "oom_kill");
                c.memory_high_events = key_value(&t, "high");
                c.memory_max_events = key_value(&t, "max");
                c.memory_oom_events = key_value(&t, "oom");
            }
            c.swap_current_bytes = read("memory.swap.current").and_then(|t| single(&t));
            if let Some(t) = read("io.stat") {
                fill_io_stat(c, &t);
            }
            c.pids_current = read("pids.current").and_then(|t| single(&t));
            for resource in ["cpu", "memory", "io"] {
                if let Some(t) = read(&format!("{resource}.pressure")) {
                    let p = tasksnap_procfs::system::parse_pressure(resource, &t);
                    if p.some.is_some() || p.full.is_some() {
                        c.pressure.push(p);
                    }
                }
            }
        }
        Kind::V1 {
            cpu,
            cpuacct,
            memory,
            pids,
            blkio,
        } => {
            if cpu {
                if let Some(t) = read("cpu.stat") {
                    fill_cpu_stat(c, &t, "throttled_time", 1);
                }
                c.cpu_quota_us = read("cpu.cfs_quota_us").and_then(|t| parse_v1_quota(&t));
                c.cpu_period_us = read("cpu.cfs_period_us").and_then(|t| single(&t));
            }
            if cpuacct {
                c.cpu_usage_ns = read("cpuacct.usage").and_then(|t| single(&t));
            }
            if memory {
                c.memory_current_bytes = read("memory.usage_in_bytes").and_then(|t| single(&t));
                c.memory_limit_bytes =
                    read("memory.limit_in_bytes").and_then(|t| parse_v1_memory_limit(&t));
                c.oom_kills = read("memory.oom_control").and_then(|t| key_value(&t, "oom_kill"));
                c.memory_max_events = read("memory.failcnt").and_then(|t| single(&t));
                let memsw = read("memory.memsw.usage_in_bytes").and_then(|t| single(&t));
                c.swap_current_bytes = memsw
                    .zip(c.memory_current_bytes)
                    .map(|(m, u)| m.saturating_sub(u));
            }
            if blkio {
                let bytes = read("blkio.throttle.io_service_bytes_recursive");
                (c.io_read_bytes, c.io_write_bytes) =
                    bytes.map_or((None, None), |t| blkio_read_write(&t));
                let ops = read("blkio.throttle.io_serviced_recursive");
                (c.io_read_ops, c.io_write_ops) =
                    ops.map_or((None, None), |t| blkio_read_write(&t));
            }
            if pids {
                c.pids_current = read("pids.current").and_then(|t| single(&t));
            }
        }
    }
    any.get()
}

/// `cpu.stat`'s bandwidth lines: `nr_periods`, `nr_throttled` and the throttled time under
/// `throttled_key` in units of `scale` ns.
fn fill_cpu_stat(c: &mut CgroupCounters, text: &[u8], throttled_key: &str, scale: u64) {
    c.cpu_periods = key_value(text, "nr_periods");
    c.cpu_throttled_periods = key_value(text, "nr_throttled");
    c.cpu_throttled_ns = key_value(text, throttled_key).map(|v| v.saturating_mul(scale));
}

/// v2 `io.stat`: one line per device (`8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0`),
/// summed over the devices. No line (no I/O yet) is zero of each.
fn fill_io_stat(c: &mut CgroupCounters, text: &[u8]) {
    let Ok(t) = std::str::from_utf8(text) else {
        return;
    };
    let mut sums = [0u64; 4];
    for pair in t.split_whitespace().filter_map(|w| w.split_once('=')) {
        let slot = ["rbytes", "wbytes", "rios", "wios"]
            .iter()
            .position(|k| *k == pair.0);
        if let (Some(i), Ok(v)) = (slot, pair.1.parse::<u64>()) {
            sums[i] = sums[i].saturating_add(v);
        }
    }
    [
        c.io_read_bytes,
        c.io_write_bytes,
        c.io_read_ops,
        c.io_write_ops,
    ] = sums.map(Some);
}

/// v1 `blkio.throttle.io_service*_recursive`: `MAJ:MIN Read N`, `MAJ:MIN Write N` (and Sync,
/// Async, Discard, Total) per device, then `Total N`: the Read and Write lines summed.
fn blkio_read_write(text: &[u8]) -> (Option<u64>, Option<u64>) {
    let Ok(t) = std::str::from_utf8(text) else {
        return (None, None);
    };
    let (mut read, mut write) = (0u64, 0u64);
    for line in t.lines() {
        let mut f = line.split_whitespace();
        let (Some(_dev), Some(op), Some(v), None) = (f.next(), f.next(), f.next(), f.next()) else {
            continue;
        };
        let Ok(v) = v.parse::<u64>() else { continue };
        match op {
            "Read" => read = read.saturating_add(v),
            "Write" => write = write.saturating_add(v),
            _ => {}
        }
    }
    (Some(read), Some(write))
}

/// The file's one number (`pids.current`, `memory.current`, `cpuacct.usage`...).
pub(crate) fn single(text: &[u8]) -> Option<u64> {
    std::str::from_utf8(text).ok()?.trim().parse().ok()
}

/// The value of the `key value` line named `key` (`cpu.stat`, `memory.events`,
/// `memory.oom_control`).
pub(crate) fn key_value(text: &[u8], key: &str) -> Option<u64> {
    text.split(|&b| b == b'\n').find_map(|line| {
        let line = std::str::from_utf8(line).ok()?;
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

/// A v2 limit: `max` (none) or a number (`memory.max`, `pids.max`).
pub(crate) fn parse_max(text: &[u8]) -> Option<Limit> {
    let t = std::str::from_utf8(text).ok()?.trim();
    if t == "max" {
        Some(Limit::Unlimited)
    } else {
        t.parse().ok().map(Limit::At)
    }
}

/// v2 `cpu.max`: `$MAX $PERIOD` (`max 100000`, `20000 100000`), µs.
pub(crate) fn parse_cpu_max(text: &[u8]) -> Option<(Limit, u64)> {
    let t = std::str::from_utf8(text).ok()?;
    let mut f = t.split_whitespace();
    let quota = parse_max(f.next()?.as_bytes())?;
    let period = f.next()?.parse().ok()?;
    f.next().is_none().then_some((quota, period))
}

/// v1 `cpu.cfs_quota_us`: `-1` (none) or a number of µs.
pub(crate) fn parse_v1_quota(text: &[u8]) -> Option<Limit> {
    let v: i64 = std::str::from_utf8(text).ok()?.trim().parse().ok()?;
    match v {
        -1 => Some(Limit::Unlimited),
        v if v >= 0 => Some(Limit::At(v as u64)),
        _ => None,
    }
}

/// v1 `memory.limit_in_bytes`: bytes, the page-rounded `LONG_MAX` meaning none.
pub(crate) fn parse_v1_memory_limit(text: &[u8]) -> Option<Limit> {
    let v = single(text)?;
    Some(if v >= V1_NO_MEMORY_LIMIT_FROM {
        Limit::Unlimited
    } else {
        Limit::At(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real lines of this machine's files (v1 `cpu.stat`, `memory.oom_control`; v2 root).
    const V1_CPU_STAT: &[u8] =
        b"nr_periods 118\nnr_throttled 112\nthrottled_time 3208366426\nnr_bursts 0\nburst_time 0\n";
    const V2_CPU_STAT: &[u8] = b"usage_usec 12171\nuser_usec 0\nsystem_usec 12171\nnice_usec 0\n";
    const OOM_CONTROL: &[u8] = b"oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";

    #[test]
    fn each_kind_of_file_parses() {
        assert_eq!(
            key_value(V1_CPU_STAT, "throttled_time"),
            Some(3_208_366_426)
        );
        assert_eq!(key_value(V1_CPU_STAT, "nr_throttled"), Some(112));
        assert_eq!(key_value(V2_CPU_STAT, "usage_usec"), Some(12171));
        assert_eq!(key_value(V2_CPU_STAT, "throttled_usec"), None);
        assert_eq!(key_value(OOM_CONTROL, "oom_kill"), Some(3));
        assert_eq!(key_value(OOM_CONTROL, "oom_kill_disable"), Some(0));
        assert_eq!(single(b"21910245500431\n"), Some(21_910_245_500_431));
        assert_eq!(
            parse_cpu_max(b"max 100000\n"),
            Some((Limit::Unlimited, 100_000))
        );
        assert_eq!(
            parse_cpu_max(b"20000 100000\n"),
            Some((Limit::At(20_000), 100_000))
        );
        assert_eq!(parse_max(b"max\n"), Some(Limit::Unlimited));
        assert_eq!(parse_max(b"536870912\n"), Some(Limit::At(536_870_912)));
        assert_eq!(parse_v1_quota(b"-1\n"), Some(Limit::Unlimited));
        assert_eq!(parse_v1_quota(b"20000\n"), Some(Limit::At(20_000)));
        assert_eq!(
            parse_v1_memory_limit(b"9223372036854771712\n"),
            Some(Limit::Unlimited)
        );
        assert_eq!(
            parse_v1_memory_limit(b"1073741824\n"),
            Some(Limit::At(1 << 30))
        );
    }

    // io.stat of a v2 cgroup with two devices (kernel 6.x), and v1's blkio throttle file.
    const IO_STAT: &[u8] = b"259:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n\
        8:0 rbytes=100 wbytes=0 rios=3 wios=0 dbytes=0 dios=0\n";
    const BLKIO: &[u8] = b"8:0 Read 4096\n8:0 Write 12288\n8:0 Sync 0\n8:0 Async 16384\n\
        8:0 Discard 0\n8:0 Total 16384\n8:16 Read 1\n8:16 Write 0\nTotal 16385\n";

    #[test]
    fn io_files_sum_their_devices() {
        let mut c = CgroupCounters::new(b"/".to_vec(), tasksnap_model::CgroupHierarchy::V2);
        fill_io_stat(&mut c, IO_STAT);
        assert_eq!(
            [
                c.io_read_bytes,
                c.io_write_bytes,
                c.io_read_ops,
                c.io_write_ops
            ],
            [Some(4196), Some(8192), Some(4), Some(2)]
        );
        fill_io_stat(&mut c, b"");
        assert_eq!(c.io_read_bytes, Some(0), "no device line: no I/O yet");
        assert_eq!(blkio_read_write(BLKIO), (Some(4097), Some(12288)));
        assert_eq!(blkio_read_write(b"Total 0\n"), (Some(0), Some(0)));
        assert_eq!(blkio_read_write(b"\xff"), (None, None));
        assert_eq!(
            blkio_read_write(b"8:0 Read x\n8:0 Write 1 2\n"),
            (Some(0), Some(0))
        );
    }

    #[test]
    fn garbage_is_none_never_a_panic() {
        for t in [
            &b""[..],
            b"\xff\xfe",
            b"-2",
            b"max max",
            b"1 2 3",
            b"99999999999999999999999",
            b"nr_periods\n",
            b"nr_periods x\n",
            b"\n\n\n",
        ] {
            assert_eq!(single(t), None, "{t:?}");
            assert_eq!(parse_cpu_max(t), None, "{t:?}");
            assert_eq!(key_value(t, "nr_periods"), None, "{t:?}");
            assert_eq!(parse_v1_quota(t), None, "{t:?}");
            assert_eq!(parse_v1_memory_limit(t), None, "{t:?}");
        }
        assert_eq!(parse_max(b"-1"), None);
    }
}
