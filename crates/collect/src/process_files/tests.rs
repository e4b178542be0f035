//! Tests of [`ProcessFiles`] on fake trees and on this process.

use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tasksnap_procfs::proc_files;

use super::process::*;
use super::sockets::*;
use std::ffi::OsStr;
use std::os::unix::fs::symlink;

/// This machine's /proc/self/stat of `cat`, its state and pid changed as a test needs.
fn stat_line(pid: i32, state: char) -> String {
    format!(
        "{pid} (cat) {state} 2585766 2585766 2554076 0 -1 4194304 98 0 0 0 0 0 0 0 20 0 1 0 \
         5338170 3133440 362 18446744073709551615 94816437612544 94816437632425 \
         140732304158992 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94816437648432 94816437650048 \
         94817155207168 140732304161460 140732304161480 140732304161480 140732304162795 0\n"
    )
}

struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        let t = Tree {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        std::fs::create_dir_all(t.proc().join("net")).expect("test");
        std::fs::create_dir_all(t.dir.path().join("dev/pts")).expect("test");
        t
    }
    fn proc(&self) -> PathBuf {
        self.dir.path().join("proc")
    }
    fn files(&self) -> ProcessFiles {
        ProcessFiles::new(self.proc(), self.dir.path().join("dev"))
            .with_smaps_deadline(Duration::from_millis(40))
    }
    /// A process directory with its stat, an empty fd/ and fdinfo/.
    fn process(&self, pid: i32, state: char) -> PathBuf {
        let d = self.proc().join(pid.to_string());
        std::fs::create_dir_all(d.join("fd")).expect("test");
        std::fs::create_dir_all(d.join("fdinfo")).expect("test");
        std::fs::write(d.join("stat"), stat_line(pid, state)).expect("test");
        d
    }
    fn real_file(&self, name: &[u8], body: &[u8]) -> PathBuf {
        let p = self.dir.path().join(std::ffi::OsStr::from_bytes(name));
        std::fs::write(&p, body).expect("test");
        p
    }
}

#[test]
fn cwd_is_cleaned_and_a_zombie_or_gone_process_says_so() {
    let t = Tree::new();
    let d = t.process(10, 'S');
    // A name that is not UTF-8, with the kernel's suffix of an unlinked directory.
    symlink(
        OsStr::from_bytes(b"/nowhere/\xff dir (deleted)"),
        d.join("cwd"),
    )
    .expect("test");
    assert_eq!(t.files().cwd(10).expect("test"), b"/nowhere/\xff dir");
    // A live process whose link cannot be read: "" (psutil's fallback).
    t.process(11, 'S');
    assert_eq!(t.files().cwd(11).expect("test"), b"");
    t.process(12, 'Z');
    assert!(matches!(
        t.files().cwd(12),
        Err(FilesError::Zombie {
            pid: 12,
            ppid: Some(2585766)
        })
    ));
    assert!(matches!(
        t.files().cwd(13),
        Err(FilesError::Gone { pid: 13 })
    ));
}

#[test]
fn open_files_are_the_regular_files_with_fdinfo() {
    let t = Tree::new();
    let d = t.process(20, 'S');
    let plain = t.real_file(b"plain", b"0123456789");
    let odd = t.real_file(b"new\nline \xfe", b"");
    symlink(&plain, d.join("fd/3")).expect("test");
    symlink(&odd, d.join("fd/4")).expect("test");
    symlink("socket:[5551]", d.join("fd/5")).expect("test");
    symlink(t.dir.path(), d.join("fd/6")).expect("test"); // a directory: not listed
    std::fs::write(
        d.join("fdinfo/3"),
        "pos:\t7\nflags:\t0102002\nmnt_id:\t31\nino:\t9\n",
    )
    .expect("test");
    std::fs::write(
        d.join("fdinfo/4"),
        "pos:\t0\nflags:\t0100001\nmnt_id:\t31\n",
    )
    .expect("test");
    let mut got = t.files().open_files(20).expect("test");
    got.sort_by_key(|f| f.fd);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(
        (got[0].fd, got[0].position_bytes, got[0].mode, got[0].flags),
        (3, 7, "a+", 0o102002)
    );
    assert_eq!(got[0].path, plain.as_os_str().as_bytes());
    assert_eq!((got[1].fd, got[1].mode), (4, "w"));
    assert_eq!(got[1].path, odd.as_os_str().as_bytes());

    // The descriptor closed between its link and its fdinfo, the process still there:
    // the file is left out (psutil's `_raise_if_not_alive` finds the process).
    let d = t.process(21, 'S');
    symlink(&plain, d.join("fd/3")).expect("test");
    assert_eq!(t.files().open_files(21).expect("test"), vec![]);
    // The process exited: gone.
    std::fs::remove_dir_all(&d).expect("test");
    assert!(matches!(
        t.files().open_files(21),
        Err(FilesError::Gone { pid: 21 })
    ));
}

#[test]
fn sockets_are_matched_by_inode_as_psutil_does() {
    let t = Tree::new();
    let d = t.process(30, 'S');
    symlink("socket:[5551]", d.join("fd/3")).expect("test");
    symlink("socket:[5551]", d.join("fd/4")).expect("test"); // dup of a unix socket
    symlink("socket:[7001]", d.join("fd/5")).expect("test");
    symlink("socket:[7001]", d.join("fd/6")).expect("test"); // dup of a TCP socket
    let lo = format!("{:08X}", u32::from_ne_bytes([127, 0, 0, 1]));
    std::fs::write(
        t.proc().join("net/tcp"),
        format!(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             \x20  0: {lo}:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7001 1 000000006138feb2 100 0 0 10 0\n\
             \x20  1: {lo}:07E9 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7002 1 000000006138feb2 100 0 0 10 0\n\
             \x20  2: {lo}:07EA {lo}:9\n"
        ),
    )
    .expect("test");
    std::fs::write(
        t.proc().join("net/unix"),
        "Num       RefCount Protocol Flags    Type St Inode Path\n\
         000000002c03658f: 00000003 00000000 00000000 0001 03 5551 /run/x.sock\n\
         000000002c036590: 00000003 00000000 00000000 0002 03 5552\n",
    )
    .expect("test");
    let f = t.files();
    // No tcp6/udp/udp6 files: the IPv6 ones are skipped, udp is an error (psutil).
    let tcp = f
        .connections(30, SocketTable::for_kind("tcp").expect("test"))
        .expect("test");
    assert_eq!(
        tcp.len(),
        1,
        "the first descriptor of an inet socket only: {tcp:?}"
    );
    assert_eq!(tcp[0].fd, 5);
    assert_eq!(tcp[0].status, "LISTEN");
    assert_eq!(tcp[0].local, Endpoint::Inet("127.0.0.1".into(), 0x7E8));
    assert_eq!(tcp[0].remote, Endpoint::None);
    assert!(f
        .connections(30, SocketTable::for_kind("inet").expect("test"))
        .is_err());
    let unix = f
        .connections(30, SocketTable::for_kind("unix").expect("test"))
        .expect("test");
    assert_eq!(unix.iter().map(|c| c.fd).collect::<Vec<_>>(), vec![3, 4]);
    assert_eq!(unix[0].local, Endpoint::Unix(b"/run/x.sock".to_vec()));
    assert_eq!(unix[0].kind, libc::SOCK_STREAM);
    // The host's: every row, the unheld ones with fd -1 and no pid.
    let all = f
        .all_connections(&[SocketTable::Tcp4, SocketTable::Unix])
        .expect("test");
    assert_eq!(all.len(), 5, "{all:?}");
    assert!(all
        .iter()
        .any(|c| c.fd == -1 && c.pid.is_none() && c.status == "LISTEN"));
    assert!(all.iter().filter(|c| c.pid == Some(30)).count() == 3);
    // A process without sockets has none, whatever the tables hold.
    t.process(31, 'S');
    assert!(f
        .connections(31, SocketTable::for_kind("all").expect("test"))
        .expect("test")
        .is_empty());
}

#[test]
fn maps_group_by_path_and_totals_fall_back_to_smaps() {
    let t = Tree::new();
    let d = t.process(40, 'S');
    let block = |addr: &str, path: &str, rss: u64| {
        format!(
            "{addr} r--p 00000000 fe:00 247741                     {path}\n\
             Size:                 12 kB\nRss:                  {rss} kB\nPss:                  {rss} kB\n\
             Private_Clean:        {rss} kB\nPrivate_Hugetlb:       0 kB\nSwap:                  1 kB\n\
             SwapPss:               1 kB\nVmFlags: rd mr mw me \n"
        )
    };
    let smaps = block("1000-4000", "/usr/bin/sed", 8)
        + &block("4000-7000", "", 4)
        + &block("7000-a000", "/usr/bin/sed", 4);
    std::fs::write(d.join("smaps"), &smaps).expect("test");
    let f = t.files();
    let flat = f.memory_maps(40).expect("test");
    assert_eq!(flat.len(), 3);
    assert_eq!(flat[1].path, b"[anon]");
    let grouped = f.memory_maps_grouped(40).expect("test");
    assert_eq!(grouped.len(), 2);
    assert_eq!(grouped[0].0, b"/usr/bin/sed");
    assert_eq!(grouped[0].1.rss_bytes, 12 * 1024);
    assert_eq!(grouped[0].1.size_bytes, 24 * 1024);
    // No smaps_rollup (ENOENT): smaps, summed.
    let totals = f.smaps_totals(40).expect("test");
    assert_eq!(totals.uss_bytes, 16 * 1024);
    assert_eq!(totals.pss_bytes, 16 * 1024);
    assert_eq!(totals.swap_bytes, 3 * 1024);
    // A zombie's smaps is empty.
    let z = t.process(41, 'Z');
    std::fs::write(z.join("smaps"), "").expect("test");
    assert!(matches!(f.memory_maps(41), Err(FilesError::Zombie { .. })));
}

/// A read that blocks (here the open of a FIFO with no writer, asleep in the kernel as a
/// reader queued on an mmap lock is) is given up near its deadline, not waited for.
#[test]
fn a_blocked_smaps_read_is_given_up() {
    let t = Tree::new();
    let d = t.process(50, 'S');
    let fifo = d.join("smaps");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).expect("test");
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let started = std::time::Instant::now();
    let r = t.files().memory_maps(50);
    let took = started.elapsed();
    assert!(
        matches!(
            r,
            Err(FilesError::TimedOut {
                deadline_ms: 40,
                ..
            })
        ),
        "{r:?}"
    );
    assert!(took < Duration::from_secs(2), "given up after {took:?}");
    let msg = r.expect_err("timed out").to_string();
    assert!(
        msg.contains("blocked on the process's memory map lock"),
        "{msg}"
    );
    // The reader given up on is not kept; the next read gets a new one, which is kept.
    let f = t.files();
    assert!(matches!(
        f.memory_maps(50),
        Err(FilesError::TimedOut { .. })
    ));
    assert!(f.reader.lock().expect("test").is_none());
    let d = t.process(51, 'S');
    std::fs::write(
        d.join("smaps"),
        "1000-2000 r--p 00000000 00:00 0 \nRss: 4 kB\n",
    )
    .expect("test");
    assert_eq!(f.memory_maps(51).expect("test").len(), 1);
    let tid = f
        .reader
        .lock()
        .expect("test")
        .as_ref()
        .map(|r| r.tid.clone());
    assert_eq!(f.memory_maps(51).expect("test").len(), 1);
    let again = f
        .reader
        .lock()
        .expect("test")
        .as_ref()
        .map(|r| r.tid.clone());
    assert!(
        tid.zip(again).is_some_and(|(a, b)| Arc::ptr_eq(&a, &b)),
        "the reader thread is kept between reads"
    );
    // Let the abandoned readers go: a writer that opens and closes gives each end of
    // file.
    for _ in 0..2 {
        // SAFETY: `c` is a valid NUL-terminated path; the descriptor is closed at once.
        unsafe {
            let fd = libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK);
            if fd >= 0 {
                libc::close(fd);
            }
        }
    }
}

/// Hostile smaps figures (`Rss: 18014398509481983 kB` in two mappings of one path)
/// saturate when grouped; they panicked in a debug build.
#[test]
fn hostile_figures_saturate_when_grouped() {
    let t = Tree::new();
    let d = t.process(45, 'S');
    let block = |addr: &str| {
        format!(
            "{addr} r--p 00000000 fe:00 1 /x\nRss: 18014398509481983 kB\n\
             Private_Dirty: 18014398509481983 kB\nSwap: 18446744073709551615 kB\n"
        )
    };
    std::fs::write(d.join("smaps"), block("1000-2000") + &block("2000-3000")).expect("test");
    let f = t.files();
    let grouped = f.memory_maps_grouped(45).expect("test");
    assert_eq!(grouped.len(), 1);
    assert_eq!(grouped[0].1.rss_bytes, u64::MAX);
    assert_eq!(grouped[0].1.private_dirty_bytes, u64::MAX);
    assert_eq!(grouped[0].1.swap_bytes, u64::MAX);
    let totals = f.smaps_totals(45).expect("test");
    assert_eq!((totals.uss_bytes, totals.swap_bytes), (u64::MAX, u64::MAX));
}

/// A stat that does not return (a FUSE server that does not answer), here one that
/// sleeps: blocked, not waiting for a CPU.
fn slow_stat(p: &Path) -> Option<io::Result<bool>> {
    std::thread::sleep(Duration::from_millis(600));
    full_stat(p)
}

/// The stats of the paths a process names are given up near the deadline, for
/// `open_files` and for the " (deleted)" check of `cwd` and `memory_maps`; a path
/// without that suffix costs no stat at all.
#[test]
fn a_blocked_stat_of_a_path_the_process_names_is_given_up() {
    let t = Tree::new();
    let d = t.process(60, 'S');
    let plain = t.real_file(b"plain", b"x");
    symlink(&plain, d.join("fd/3")).expect("test");
    std::fs::write(d.join("fdinfo/3"), "pos:\t0\nflags:\t0100000\n").expect("test");
    symlink("/nowhere/dir (deleted)", d.join("cwd")).expect("test");
    std::fs::write(
        d.join("smaps"),
        "1000-2000 r--p 00000000 00:00 0 /usr/lib/x\nRss: 4 kB\n\
         2000-3000 r--p 00000000 00:00 0 /tmp/gone (deleted)\nRss: 4 kB\n",
    )
    .expect("test");
    let f = t.files().with_stat(slow_stat);
    let started = std::time::Instant::now();
    let r = f.open_files(60);
    assert!(
        matches!(
            &r,
            Err(FilesError::TimedOut {
                on: ON_FILE_SYSTEM,
                deadline_ms: 40,
                ..
            })
        ),
        "{r:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    let msg = r.expect_err("timed out").to_string();
    assert!(msg.contains("blocked on the file system"), "{msg}");
    assert!(matches!(f.cwd(60), Err(FilesError::TimedOut { .. })));
    assert!(matches!(
        f.memory_maps(60),
        Err(FilesError::TimedOut {
            on: ON_FILE_SYSTEM,
            ..
        })
    ));
    // No suffix, no stat: the slow one is never called.
    let d = t.process(61, 'S');
    symlink("/nowhere/dir", d.join("cwd")).expect("test");
    let started = std::time::Instant::now();
    assert_eq!(f.cwd(61).expect("test"), b"/nowhere/dir");
    assert!(started.elapsed() < Duration::from_millis(500));
    // The ordinary stat answers as before; paths in the kernel's caches (just made) are
    // looked at on the caller's thread, without the reader.
    let f = t.files();
    let got = f.open_files(60).expect("test");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].path, plain.as_os_str().as_bytes());
    assert_eq!(f.cwd(60).expect("test"), b"/nowhere/dir");
    if cached_stat(&plain).is_some() {
        // A cached look fails now and then with the path in the caches all along (a rename
        // anywhere on the host restarts the lock-free walk, and RESOLVE_CACHED gives up
        // then): one of a few fresh readers must go without the hop.
        let hopped = |f: &ProcessFiles| {
            f.open_files(60).expect("test");
            f.reader.lock().expect("test").is_some()
        };
        let no_hop =
            !f.reader.lock().expect("test").is_some() || (0..5).any(|_| !hopped(&t.files()));
        assert!(no_hop, "no hop");
    }
    // Uncached (here: the cached look is skipped), the reader's full stat answers.
    let f = t.files().with_stat(full_stat);
    assert_eq!(f.open_files(60).expect("test"), got);
    assert!(f.reader.lock().expect("test").is_some());
}

/// On a fake tree `net/unix` is read, and a row forged by a socket's name (a newline,
/// then a well-formed row naming socket 5551 with a path of the binder's choosing) is
/// refused with the row it copies.
#[test]
fn a_fake_trees_forged_unix_row_is_refused() {
    let t = Tree::new();
    let d = t.process(70, 'S');
    symlink("socket:[5551]", d.join("fd/3")).expect("test");
    symlink("socket:[5553]", d.join("fd/4")).expect("test");
    std::fs::write(
        t.proc().join("net/unix"),
        "Num       RefCount Protocol Flags    Type St Inode Path\n\
         000000002c03658f: 00000003 00000000 00000000 0001 01 5551 /run/victim.sock\n\
         000000002c036590: 00000002 00000000 00000000 0002 01 6001 @e\n\
         0000000000000000: 00000002 00000000 00010000 0001 01 5551 /forged/path\n\
         000000002c036591: 00000003 00000000 00000000 0001 01 5553 /run/other.sock\n",
    )
    .expect("test");
    let unix = t
        .files()
        .connections(70, &[SocketTable::Unix])
        .expect("test");
    assert_eq!(unix.len(), 1, "{unix:?}");
    assert_eq!(unix[0].fd, 4);
    assert_eq!(unix[0].local, Endpoint::Unix(b"/run/other.sock".to_vec()));
}

/// On this kernel unix sockets are asked of sock_diag: a socket whose abstract name
/// forges a row of `/proc/net/unix` for another socket (here ours, as the review's
/// reproduction does to a victim's) changes nothing of that socket's path. psutil is
/// fooled by it, so the truth is what this compares with.
#[test]
fn a_socket_name_cannot_forge_another_sockets_path() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::io::AsRawFd;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("victim.sock");
    let victim = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let fd = victim.as_raw_fd();
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).expect("test");
    let inode = proc_files::socket_inode(link.as_os_str().as_bytes()).expect("a socket");
    let forged =
        format!("e\n0000000000000000: 00000002 00000000 00010000 0001 01 {inode} /forged/path");
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(forged.as_bytes()).expect("test");
    let _forger = std::os::unix::net::UnixDatagram::bind_addr(&addr).expect("bind");
    let f = ProcessFiles::new(PathBuf::from("/proc"), PathBuf::from("/dev"));
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    let unix = f.connections(me, &[SocketTable::Unix]).expect("test");
    let victims: Vec<&Connection> = unix.iter().filter(|c| c.fd == fd).collect();
    assert_eq!(
        victims.iter().map(|c| &c.local).collect::<Vec<_>>(),
        vec![&Endpoint::Unix(path.as_os_str().as_bytes().to_vec())],
        "{unix:?}"
    );
    assert!(
        !unix
            .iter()
            .any(|c| c.local == Endpoint::Unix(b"/forged/path".to_vec())),
        "{unix:?}"
    );
    let all = f.all_connections(&[SocketTable::Unix]).expect("test");
    assert!(
        !all.iter()
            .any(|c| c.local == Endpoint::Unix(b"/forged/path".to_vec())),
        "the host's listing neither"
    );
}

#[test]
fn terminals_are_found_by_device_number() {
    let t = Tree::new();
    let dev = t.dir.path().join("dev");
    symlink("/dev/null", dev.join("ttyFAKE")).expect("test");
    symlink("/dev/zero", dev.join("notatty")).expect("test");
    let f = t.files();
    let null = (1 << 8) | 3; // 1:3
    let zero = (1 << 8) | 5; // 1:5
    assert_eq!(
        f.terminal(null),
        Some(dev.join("ttyFAKE").into_os_string().into_vec())
    );
    assert_eq!(f.terminal(zero), None, "only tty* and pts/*");
    assert_eq!(f.terminal(0), None);
    // A terminal that appears later is found (the map is built again on a miss).
    symlink("/dev/zero", dev.join("pts/7")).expect("test");
    assert_eq!(
        f.terminal(zero),
        Some(dev.join("pts/7").into_os_string().into_vec())
    );
}
