//! A fake /proc tree of real kernel lines, for running any front end on a machine of the
//! test's making (`TASKSNAP_PROC_ROOT`, see tasksnap-collect's `HostOptions::from_env`).
//!
//! The tree: the machine files (`stat`, `meminfo`, `loadavg`, `uptime`, `vmstat`,
//! `sys/kernel/pid_max`, `sys/kernel/task_delayacct`, the identity files
//! `sys/kernel/hostname` and `sys/kernel/random/boot_id`: [`HOSTNAME`], [`BOOT_ID`], or
//! another machine's with [`FakeProc::set_identity`]) and three processes, each with its
//! `task/TID` directories: pid 1 `systemd`; pid 4032 `bash` (8,986,624 bytes of address
//! space, 1,280 resident pages, on pts/0); pid 6000 `worker` with a second thread 6001 in D.
//! The lines were taken from a 6.x kernel; the page counts are pages of whatever page size
//! the test says the machine has (`status` then says the matching kB for 4 KiB pages,
//! [`FakeProc::build_with_page_size`] for others).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The processes of the tree, by pid.
pub const PIDS: [i32; 3] = [1, 4032, 6000];
/// `bash`'s address space, bytes (`vsize` of its stat).
pub const BASH_VSIZE_BYTES: u64 = 8_986_624;
/// `bash`'s resident pages (`rss` of its stat).
pub const BASH_RSS_PAGES: u64 = 1280;
/// The tree's host name (`sys/kernel/hostname`).
pub const HOSTNAME: &str = "fakehost";
/// The tree's boot id (`sys/kernel/random/boot_id`).
pub const BOOT_ID: &str = "6b1d3c0e-5a4f-4f2e-8d7c-2b9a1e0f3c44";
/// The tree's boot time, seconds since the epoch.
pub const BTIME: u64 = 1_763_784_000;

const STAT_SYSTEMD: &str = "1 (systemd) S 0 1 1 0 -1 4194560 44322 2412873 86 1047 141 200 4339 2129 20 0 1 0 33 23556096 3187 18446744073709551615 1 1 0 0 0 0 671173123 4096 1260 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
const STAT_BASH: &str = "4032 (bash) S 4020 4032 4032 34816 4070 4194560 1466 5066 0 3 2 1 9 6 20 0 1 0 2418 8986624 1280 18446744073709551615 94318090862592 94318091771469 140729152453424 0 0 0 65536 3686404 1266761467 1 0 0 17 1 0 0 0 0 0 94318091998448 94318092045980 94318124355584 140729152456591 140729152456596 140729152456596 140729152458734 0\n";
const STAT_WORKER: &str = "6000 (worker) S 1 6000 6000 0 -1 4194560 10 0 0 0 50 20 0 0 20 0 2 0 5000 100000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
const STAT_WORKER_IO: &str = "6001 (worker:io) D 1 6000 6000 0 -1 4194368 3 0 0 0 30 10 0 0 20 0 2 0 5001 100000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 -1 1 0 0 0 0 0\n";

#[allow(clippy::too_many_arguments)] // One status file: each argument is one of its lines.
fn status(
    name: &str,
    state: &str,
    tgid: i32,
    pid: i32,
    ppid: i32,
    uid: u32,
    vm: Option<(u64, u64)>,
    threads: u32,
) -> String {
    let mut s = format!(
        "Name:\t{name}\nUmask:\t0022\nState:\t{state}\nTgid:\t{tgid}\nNgid:\t0\nPid:\t{pid}\nPPid:\t{ppid}\nTracerPid:\t0\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t{uid}\t{uid}\t{uid}\t{uid}\nFDSize:\t256\nGroups:\t{uid} \n"
    );
    if let Some((size_kib, rss_kib)) = vm {
        s += &format!(
            "VmPeak:\t{:>8} kB\nVmSize:\t{size_kib:>8} kB\nVmLck:\t       0 kB\nVmRSS:\t{rss_kib:>8} kB\nVmSwap:\t       0 kB\n",
            size_kib
        );
    }
    s += &format!(
        "Threads:\t{threads}\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t7\n"
    );
    s
}

/// Writes `files` (name, content) into `root`/`rel`, making the directory.
pub fn task(root: &Path, rel: &str, files: &[(&str, &[u8])]) -> io::Result<()> {
    let dir = root.join(rel);
    fs::create_dir_all(&dir)?;
    for (name, content) in files {
        fs::write(dir.join(name), content)?;
    }
    Ok(())
}

/// Writes the identity files as the kernel prints them (the value and a newline).
fn write_identity(root: &Path, hostname: &[u8], boot_id: &str) -> io::Result<()> {
    fs::create_dir_all(root.join("sys/kernel/random"))?;
    fs::write(root.join("sys/kernel/hostname"), [hostname, b"\n"].concat())?;
    fs::write(
        root.join("sys/kernel/random/boot_id"),
        format!("{boot_id}\n"),
    )
}

/// A fake /proc tree on disk.
#[derive(Debug)]
pub struct FakeProc {
    root: PathBuf,
}

impl FakeProc {
    /// Builds the tree at `root` (which must exist), for a machine with 4 KiB pages.
    pub fn build(root: &Path) -> io::Result<FakeProc> {
        FakeProc::build_with_page_size(root, 4096)
    }

    /// Builds the tree at `root` for a machine with `page_size` bytes per page: the page
    /// counts of stat and statm are the same, the kB of status follow from them.
    pub fn build_with_page_size(root: &Path, page_size: u64) -> io::Result<FakeProc> {
        let uid = {
            use std::os::unix::fs::MetadataExt;
            fs::metadata(root)?.uid()
        };
        fs::write(
            root.join("stat"),
            format!(
                "cpu  51415 0 11390 48463 862 0 155 223 0 0\ncpu0 24251 0 5200 26454 190 0 46 110 0 0\ncpu1 27164 0 6190 22009 672 0 109 113 0 0\nintr 1 0\nctxt 2000000\nbtime {BTIME}\nprocesses 7000\nprocs_running 1\nprocs_blocked 1\nsoftirq 0 0\n"
            ),
        )?;
        fs::write(
            root.join("meminfo"),
            "MemTotal:       24684148 kB\nMemFree:        13849736 kB\nMemAvailable:   20112652 kB\nBuffers:          412340 kB\nCached:          5732044 kB\nSwapCached:            0 kB\nSwapTotal:       8388604 kB\nSwapFree:        8388604 kB\nShmem:            352120 kB\nSReclaimable:     401352 kB\n",
        )?;
        fs::write(root.join("loadavg"), "0.52 0.33 0.20 1/4 6001\n")?;
        fs::write(root.join("uptime"), "5321.40 10400.19\n")?;
        fs::write(
            root.join("vmstat"),
            "pgfault 1000\npgmajfault 3\npswpin 0\npswpout 0\n",
        )?;
        fs::create_dir_all(root.join("sys/kernel"))?;
        fs::write(root.join("sys/kernel/pid_max"), "4194304\n")?;
        fs::write(root.join("sys/kernel/task_delayacct"), "0\n")?;
        write_identity(root, HOSTNAME.as_bytes(), BOOT_ID)?;
        let kib = |pages: u64| pages * page_size / 1024;
        let one = |rel: &str, stat: &str, status: String, cmdline: &[u8], wchan: &str| {
            task(
                root,
                rel,
                &[
                    ("stat", stat.as_bytes()),
                    ("status", status.as_bytes()),
                    ("cmdline", cmdline),
                    ("schedstat", b"5134790 211005 22\n"),
                    ("wchan", wchan.as_bytes()),
                    ("comm", b""),
                ],
            )
        };
        let systemd = status(
            "systemd",
            "S (sleeping)",
            1,
            1,
            0,
            uid,
            Some((23556096 / 1024, kib(3187))),
            1,
        );
        one(
            "1",
            STAT_SYSTEMD,
            systemd.clone(),
            b"/sbin/init\0splash\0",
            "ep_poll",
        )?;
        one(
            "1/task/1",
            STAT_SYSTEMD,
            systemd,
            b"/sbin/init\0splash\0",
            "ep_poll",
        )?;
        task(root, "1", &[("statm", b"5751 3187 2201 241 0 2467 0\n")])?;
        let bash = status(
            "bash",
            "S (sleeping)",
            4032,
            4032,
            4020,
            uid,
            Some((BASH_VSIZE_BYTES / 1024, kib(BASH_RSS_PAGES))),
            1,
        );
        one("4032", STAT_BASH, bash.clone(), b"-bash\0", "do_wait")?;
        one("4032/task/4032", STAT_BASH, bash, b"-bash\0", "do_wait")?;
        task(root, "4032", &[("statm", b"2194 1280 1024 227 0 258 0\n")])?;
        let worker = status(
            "worker",
            "S (sleeping)",
            6000,
            6000,
            1,
            uid,
            Some((97, kib(200))),
            2,
        );
        let worker_io = status(
            "worker:io",
            "D (disk sleep)",
            6000,
            6001,
            1,
            uid,
            Some((97, kib(200))),
            2,
        );
        let cmd = b"/usr/bin/worker\0--flag\0a b\0";
        one("6000", STAT_WORKER, worker.clone(), cmd, "futex_wait_queue")?;
        one(
            "6000/task/6000",
            STAT_WORKER,
            worker,
            cmd,
            "futex_wait_queue",
        )?;
        one(
            "6000/task/6001",
            STAT_WORKER_IO,
            worker_io,
            cmd,
            "io_schedule",
        )?;
        task(root, "6000", &[("statm", b"24 200 100 1 0 20 0\n")])?;
        // Not tasks: a tree's other entries must be ignored.
        fs::create_dir_all(root.join("self"))?;
        Ok(FakeProc {
            root: root.to_path_buf(),
        })
    }

    /// Makes the tree another machine (or another boot): its host name (any bytes, as
    /// `sethostname(2)` takes them) and boot id.
    pub fn set_identity(&self, hostname: &[u8], boot_id: &str) -> io::Result<()> {
        write_identity(&self.root, hostname, boot_id)
    }

    /// The tree's root.
    pub fn root(&self) -> &Path {
        &self.root
    }
}
