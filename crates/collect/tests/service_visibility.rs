//! The service's visibility rules against the kernel: root takes a snapshot of every group
//! (BPF when it loads), `service::visibility::view` turns it into what a caller of uid 65534
//! may see, and a process of the test binary, re-run as 65534, reads /proc itself through a
//! procfs `Host`. For each task this test spawned (its own process as nobody, dumpable and
//! not, root's, another user's, a setuid-started one, a dumpable zombie of nobody) every gated
//! value (io, environ, exe, smaps_rollup, ns, wchan, the stat layout, the fd count, the label)
//! must be what the caller read. Root only; CI runs it with TASKSNAP_REQUIRE_PRIVILEGED=1.
//! Also under `hidepid=invisible` and `ptraceable` in a private mount namespace.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use tasksnap_loadgen::skip_unless_root;

use tasksnap_collect::testing::service::peer::{Caller, HidePid, ProcMount};
use tasksnap_collect::testing::service::visibility;
use tasksnap_collect::testing::service::wire;
use tasksnap_collect::Host;
use tasksnap_model::{Backend, Group, Groups, Query, Selector, Task};

const NOBODY: u32 = 65534;
const OTHER: u32 = 12345;
/// The environment variable that makes this binary the caller's reader.
const READER: &str = "TASKSNAP_TEST_VIS_READER";
/// Set (to anything) for a reader of [`light`] groups rather than every group.
const READER_LIGHT: &str = "TASKSNAP_TEST_VIS_LIGHT";
/// The environment variable that makes this binary a client connecting to a socket.
const CLIENT: &str = "TASKSNAP_TEST_VIS_CLIENT";

/// Groups that need no /proc/PID/stat: under `hidepid=noaccess` the procfs reader keeps a
/// row it cannot read, with what it could tell.
fn light() -> Groups {
    Groups::of(&[
        Group::CredEffective,
        Group::Ns,
        Group::Fds,
        Group::Io,
        Group::Environ,
        Group::Exe,
        Group::Wchan,
    ])
}

/// A process this test forked, killed (with its children) when dropped.
struct Target {
    pid: i32,
    /// The pid the target reported (its zombie child's for the zombie target).
    shown: i32,
    what: &'static str,
    /// Its dumpability, as the test made it.
    dumpable: bool,
}

impl Drop for Target {
    fn drop(&mut self) {
        // SAFETY: plain syscalls on a child of ours.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

/// Raw system calls only between fork and the target's pause (the harness has threads).
fn raw(nr: libc::c_long, a: u64, b: u64, c: u64) {
    // SAFETY: credential and prctl system calls with integer arguments.
    unsafe {
        libc::syscall(nr, a, b, c);
    }
}

/// Forks a target: `(ruid, euid, suid)`, gid, dumpable, and whether it makes a zombie child.
fn spawn(
    what: &'static str,
    uids: (u32, u32, u32),
    gid: u32,
    dumpable: bool,
    zombie: bool,
) -> Target {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a writable array of two ints.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child makes only raw system calls and never returns.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        raw(libc::SYS_setgroups, 0, 0, 0);
        raw(libc::SYS_setresgid, gid as u64, gid as u64, gid as u64);
        raw(
            libc::SYS_setresuid,
            uids.0 as u64,
            uids.1 as u64,
            uids.2 as u64,
        );
        // Changing the euid made it not dumpable (commit_creds()): set what the test wants.
        raw(
            libc::SYS_prctl,
            libc::PR_SET_DUMPABLE as u64,
            dumpable as u64,
            0,
        );
        // SAFETY: async-signal-safe calls only.
        unsafe {
            let mut shown = libc::getpid();
            if zombie {
                let child = libc::fork();
                if child == 0 {
                    libc::_exit(0);
                }
                // Wait for it to exit without reaping it.
                let mut info: libc::siginfo_t = std::mem::zeroed();
                libc::waitid(
                    libc::P_PID,
                    child as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                );
                shown = child;
            }
            libc::write(fds[1], (&shown as *const i32).cast(), 4);
            loop {
                libc::pause();
            }
        }
    }
    // SAFETY: closing our copy of the write end; the read end is ours.
    unsafe { libc::close(fds[1]) };
    // SAFETY: the pipe's read end is ours alone.
    let mut r = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fds[0]) });
    let mut b = [0u8; 4];
    r.read_exact(&mut b).expect("the target started");
    Target {
        pid,
        shown: i32::from_ne_bytes(b),
        what,
        dumpable,
    }
}

/// The snapshot the caller itself reads, through a procfs `Host` in a process of the test
/// binary re-run as `uid` (under `hidepid`, in a private mount namespace with a procfs
/// mounted so).
fn read_as(uid: u32, hidepid: Option<&str>, groups: &Groups) -> Vec<Task> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a writable array of two ints; no O_CLOEXEC on the write end, which
    // the reader inherits.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both ends are ours alone.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // The test binary where `uid` can execute it, wherever the checkout lives.
    let exe = tasksnap_loadgen::reachable::this_test_binary();
    let mut cmd = match hidepid {
        None => {
            let mut c = Command::new(&exe);
            std::os::unix::process::CommandExt::uid(&mut c, uid);
            std::os::unix::process::CommandExt::gid(&mut c, uid);
            c
        }
        Some(h) => {
            // unshare(1) mounts a private procfs, then setpriv drops to the caller.
            let mut c = Command::new("unshare");
            c.args(["-m", "--propagation", "private", "sh", "-c"]);
            c.arg(format!(
                "mount -t proc -o hidepid={h} proc /proc && exec setpriv --reuid={uid} --regid={uid} --clear-groups \"$0\" \"$@\""
            ));
            c.arg(&exe);
            c
        }
    };
    cmd.args(["--exact", "reader", "--nocapture", "--test-threads=1"])
        .env(READER, w.as_raw_fd().to_string())
        .env(READER_LIGHT, if *groups == light() { "1" } else { "" })
        .stdout(std::process::Stdio::null());
    let mut child = cmd.spawn().expect("re-run the test binary");
    drop(w);
    let mut frame = Vec::new();
    std::fs::File::from(r)
        .read_to_end(&mut frame)
        .expect("the reader's frame");
    assert!(
        child.wait().expect("the reader ends").success(),
        "the reader failed"
    );
    // Chunks of tasks until the end of what the reader wrote.
    let mut tasks = Vec::new();
    let mut at = frame.as_slice();
    while !at.is_empty() {
        let (kind, payload) = wire::read_frame(&mut at, usize::MAX).expect("a frame");
        assert_eq!(kind, wire::Kind::Tasks);
        wire::decode_tasks(&payload, &mut tasks).expect("a chunk of tasks");
    }
    tasks
}

/// The reader: a procfs snapshot of every group, written as an answer frame to the pipe the
/// test gave (does nothing when run as a test of its own).
#[test]
fn reader() {
    let Some(fd) = std::env::var(READER)
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
    else {
        return;
    };
    let groups = match std::env::var(READER_LIGHT) {
        Ok(v) if !v.is_empty() => light(),
        _ => Groups::all(),
    };
    let mut host = Host::from_env();
    host.open_snapshots(Backend::Procfs, &groups)
        .expect("procfs opens");
    let snap = host
        .snapshot(&Query::new(Selector::AllProcesses, groups))
        .expect("a snapshot");
    let rows: Vec<Cow<'_, Task>> = snap.tasks.iter().map(Cow::Borrowed).collect();
    let mut bytes = Vec::new();
    for chunk in rows.chunks(wire::CHUNK_TASKS) {
        bytes.extend(wire::tasks(chunk).expect("a frame of tasks"));
    }
    // SAFETY: the descriptor the test passed us, ours to write and close.
    let mut f = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    std::io::Write::write_all(&mut f, &bytes).expect("the frame written");
}

fn targets() -> Vec<Target> {
    vec![
        spawn(
            "own, dumpable",
            (NOBODY, NOBODY, NOBODY),
            NOBODY,
            true,
            false,
        ),
        spawn(
            "own, not dumpable",
            (NOBODY, NOBODY, NOBODY),
            NOBODY,
            false,
            false,
        ),
        spawn("root's", (0, 0, 0), 0, true, false),
        spawn("another user's", (OTHER, OTHER, OTHER), OTHER, true, false),
        spawn("setuid-started", (NOBODY, 0, 0), NOBODY, true, false),
        spawn(
            "own zombie, dumpable",
            (NOBODY, NOBODY, NOBODY),
            NOBODY,
            true,
            true,
        ),
    ]
}

/// Root's snapshot of every group (BPF when it loads).
fn roots_snapshot() -> (Vec<Task>, String) {
    let mut host = Host::from_env();
    if let Err(e) = host.open_snapshots(Backend::Bpf, &Groups::all()) {
        eprintln!("BPF does not load ({e}): root's snapshot from procfs");
        host.open_snapshots(Backend::Procfs, &Groups::all())
            .expect("procfs opens");
    }
    let snap = host
        .snapshot(&Query::new(Selector::AllProcesses, Groups::all()))
        .expect("root's snapshot");
    (snap.tasks, format!("{:?}", host.report().backend))
}

/// The gated values of a row, side by side with their names.
fn gated(t: &Task) -> Vec<(&'static str, String)> {
    let x = t.extra.as_deref();
    vec![
        ("io", format!("{:?}", t.io)),
        ("environ", format!("{:?}", t.environ)),
        ("exe", format!("{:?}", t.exe)),
        // PSS moves as the pages' other sharers (this test's processes) come and go: the
        // USS and whether it is there at all are compared.
        (
            "smaps_rollup",
            format!("{:?}", x.and_then(|x| x.smaps_kb).map(|(_, uss)| uss)),
        ),
        ("ns", format!("{:?}", x.and_then(|x| x.ns))),
        ("wchan", format!("{:?}", t.wchan)),
        ("layout", format!("{:?}", t.layout)),
        ("fds", format!("{:?}", t.fds)),
        ("label", format!("{:?}", x.and_then(|x| x.label.clone()))),
    ]
}

/// Each target's row in the view (`seen`) against the one procfs read (`read`): a target
/// missing from either, and each gated group whose values differ, is a line in `wrong`. The
/// targets in both, with their two rows.
fn compare_gated<'a>(
    targets: &'a [Target],
    seen: &'a HashMap<i32, Task>,
    read: &'a HashMap<i32, Task>,
    wrong: &mut Vec<String>,
) -> Vec<(&'a Target, &'a Task, &'a Task)> {
    let mut both = Vec::new();
    for t in targets {
        let (Some(v), Some(r)) = (seen.get(&t.shown), read.get(&t.shown)) else {
            wrong.push(format!(
                "{} ({}): in the view {}, read {}",
                t.what,
                t.shown,
                seen.contains_key(&t.shown),
                read.contains_key(&t.shown)
            ));
            continue;
        };
        for ((name, a), (_, b)) in gated(v).into_iter().zip(gated(r)) {
            if a != b {
                wrong.push(format!(
                    "{} ({}) {name}: view {a}, procfs {b}",
                    t.what, t.shown
                ));
            }
        }
        both.push((t, v, r));
    }
    both
}

fn nobody(proc_mount: ProcMount) -> Caller {
    Caller {
        // Not any target's thread group.
        pid: i32::MAX,
        fsuid: NOBODY,
        fsgid: NOBODY,
        groups: Vec::new(),
        proc_mount,
        // This test's host: read as the service would.
        rules: tasksnap_collect::testing::service::peer::host_rules(
            std::path::Path::new("/sys"),
            std::path::Path::new("/proc"),
        ),
        ..Caller::default()
    }
}

/// `view` of root's snapshot for `caller`, on the targets' rows.
fn viewed(
    caller: &Caller,
    asked: &Groups,
    targets: &[Target],
    snap: &[Task],
) -> HashMap<i32, Task> {
    let dumpable: HashMap<i32, bool> = targets.iter().map(|t| (t.shown, t.dumpable)).collect();
    // Root's snapshot has every group: whatever the rules read besides `asked` is there.
    visibility::view(caller, asked, snap, &mut |t| {
        // The test knows what it made of its targets (a zombie's cached dumpability is
        // not in /proc); others as the service can tell.
        dumpable.get(&t.id.tgid).copied().unwrap_or_else(|| {
            tasksnap_collect::testing::service::answer::dumpable_by_owner("/proc".as_ref(), t)
        })
    })
    .into_iter()
    .filter(|r| dumpable.contains_key(&r.id.tgid))
    .map(|r| (r.id.tgid, r.into_owned()))
    .collect()
}

#[test]
fn the_view_of_nobody_is_what_nobody_reads() {
    skip_unless_root!("service visibility against procfs as nobody");
    let targets = targets();
    let (snap, backend) = roots_snapshot();
    let caller = nobody(ProcMount::default());
    if caller.rules.lsm_gates {
        eprintln!("SKIP: an LSM gates ptrace reads here; the rules then show less than procfs");
        return;
    }
    eprintln!("root's snapshot by {backend}");
    let seen = viewed(&caller, &Groups::all(), &targets, &snap);
    let read: HashMap<i32, Task> = read_as(NOBODY, None, &Groups::all())
        .into_iter()
        .filter(|t| targets.iter().any(|g| g.shown == t.id.tgid))
        .map(|t| (t.id.tgid, t))
        .collect();
    let mut wrong = Vec::new();
    compare_gated(&targets, &seen, &read, &mut wrong);
    assert!(
        wrong.is_empty(),
        "root's snapshot by {backend}:\n{}",
        wrong.join("\n")
    );
    // The test is able to fail: the dumpable own process shows what the others do not.
    let own = &seen[&targets[0].shown];
    assert!(own.environ.is_some() && own.exe.is_some(), "{own:?}");
    assert!(seen[&targets[2].shown].environ.is_none());
}

#[test]
fn hidden_pids_are_hidden_as_procfs_hides_them() {
    skip_unless_root!("service visibility under hidepid");
    let targets = targets();
    let (snap, _) = roots_snapshot();
    for (opt, hidepid) in [
        ("invisible", HidePid::Invisible),
        ("ptraceable", HidePid::Ptraceable),
    ] {
        let caller = nobody(ProcMount {
            hidepid,
            gid: None,
            subset_pid: false,
        });
        if caller.rules.lsm_gates {
            return;
        }
        let mut seen: Vec<i32> = viewed(&caller, &Groups::all(), &targets, &snap)
            .into_keys()
            .collect();
        let mut read: Vec<i32> = read_as(NOBODY, Some(opt), &Groups::all())
            .into_iter()
            .map(|t| t.id.tgid)
            .filter(|p| targets.iter().any(|g| g.shown == *p))
            .collect();
        seen.sort_unstable();
        read.sort_unstable();
        assert_eq!(seen, read, "hidepid={opt}");
        // Nobody's own dumpable process and its zombie, nothing else.
        assert_eq!(seen.len(), 2, "hidepid={opt}: {seen:?}");
    }
}

#[test]
fn noaccess_rows_are_what_the_procfs_reader_makes() {
    skip_unless_root!("service visibility under hidepid=noaccess");
    let targets = targets();
    let (snap, _) = roots_snapshot();
    let caller = nobody(ProcMount {
        hidepid: HidePid::NoAccess,
        gid: None,
        subset_pid: false,
    });
    if caller.rules.lsm_gates {
        return;
    }
    let ours = |tasks: Vec<Task>| -> HashMap<i32, Task> {
        tasks
            .into_iter()
            .filter(|t| targets.iter().any(|g| g.shown == t.id.tgid))
            .map(|t| (t.id.tgid, t))
            .collect()
    };
    // Every group (stat among them): the rows nobody may not read are dropped.
    let mut seen: Vec<i32> = viewed(&caller, &Groups::all(), &targets, &snap)
        .into_keys()
        .collect();
    let mut read: Vec<i32> = ours(read_as(NOBODY, Some("noaccess"), &Groups::all()))
        .into_keys()
        .collect();
    seen.sort_unstable();
    read.sort_unstable();
    assert_eq!(seen, read);
    assert_eq!(seen.len(), 2, "{seen:?}");
    // Groups without stat: every row, the unreadable ones with what the reader tells.
    let seen = viewed(&caller, &light(), &targets, &snap);
    let read = ours(read_as(NOBODY, Some("noaccess"), &light()));
    assert_eq!(seen.len(), targets.len());
    let mut wrong = Vec::new();
    for (t, v, r) in compare_gated(&targets, &seen, &read, &mut wrong) {
        let ids = |t: &Task| t.cred.as_ref().map(|c| (c.euid, c.egid));
        if ids(v) != ids(r) {
            wrong.push(format!(
                "{} ids: view {:?}, procfs {:?}",
                t.what,
                ids(v),
                ids(r)
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The client: connects to the socket the test named and waits for it to close.
#[test]
fn client() {
    let Ok(path) = std::env::var(CLIENT) else {
        return;
    };
    let mut s = std::os::unix::net::UnixStream::connect(path).expect("connect");
    let mut b = [0u8; 1];
    let _ = s.read(&mut b);
}

#[test]
fn identify_a_caller_in_a_private_mount_namespace() {
    use tasksnap_collect::testing::service::peer;
    use tasksnap_collect::testing::service::peer::Rules;
    skip_unless_root!("identify a caller as nobody under hidepid");
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let path = dir.path().join("q.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .expect("chmod");
    let exe = tasksnap_loadgen::reachable::this_test_binary();
    let (mut child, conn) = start_client(
        Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c"])
            .arg("mount -t proc -o hidepid=invisible,gid=27 proc /proc && exec setpriv --reuid=65534 --regid=65534 --groups=27,100 \"$0\" \"$@\""),
        &exe,
        &listener,
    );
    let p = peer::peer_of(std::os::fd::AsFd::as_fd(&conn)).expect("the peer");
    assert_eq!((p.uid, p.gid), (NOBODY, NOBODY));
    let caller = peer::identify_with("/proc".as_ref(), Rules::NONE, &p);
    // Under an LSM that gates ptrace reads such a caller is refused.
    let refused = peer::identify_with("/proc".as_ref(), Rules::UNKNOWN, &p);
    drop(conn);
    assert!(child.wait().expect("the client ends").success());
    let caller = caller.expect("identified");
    assert_eq!(caller.pid, p.pid);
    assert_eq!((caller.fsuid, caller.fsgid), (NOBODY, NOBODY));
    assert_eq!(caller.groups, vec![27, 100]);
    assert!(!caller.cap_sys_ptrace && !caller.cap_dac_read);
    assert_eq!(
        caller.proc_mount,
        ProcMount {
            hidepid: HidePid::Invisible,
            gid: Some(27),
            subset_pid: false
        }
    );
    assert!(
        matches!(refused, Err(peer::Refusal::HiddenPidsUnderLsm)),
        "{refused:?}"
    );
    // Gone once it has exited and been reaped.
    assert!(matches!(
        peer::identify_with("/proc".as_ref(), Rules::NONE, &p),
        Err(peer::Refusal::Gone)
    ));
}

/// Starts `cmd` with the test binary `exe` as its last arguments, in its `client` role,
/// connecting to `listener`'s socket, and accepts the connection: the client and the
/// connection.
fn start_client(
    cmd: &mut Command,
    exe: &std::path::Path,
    listener: &std::os::unix::net::UnixListener,
) -> (std::process::Child, std::os::unix::net::UnixStream) {
    let path = listener.local_addr().expect("the socket's address");
    let child = cmd
        .arg(exe)
        .args(["--exact", "client", "--nocapture", "--test-threads=1"])
        .env(CLIENT, path.as_pathname().expect("a path"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("the client starts");
    let (conn, _) = listener.accept().expect("the client connects");
    (child, conn)
}

/// Identifies a client of this binary started by `argv` (a command that ends by running the
/// binary it is given as its last arguments).
fn identify_client(
    argv: &[&str],
) -> Result<Caller, tasksnap_collect::testing::service::peer::Refusal> {
    use tasksnap_collect::testing::service::peer;
    use tasksnap_collect::testing::service::peer::Rules;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("q.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let exe = std::env::current_exe().expect("the test binary");
    let (mut child, conn) = start_client(Command::new(argv[0]).args(&argv[1..]), &exe, &listener);
    let p = peer::peer_of(std::os::fd::AsFd::as_fd(&conn)).expect("the peer");
    let caller = peer::identify_with("/proc".as_ref(), Rules::NONE, &p);
    drop(conn);
    assert!(child.wait().expect("the client ends").success());
    caller
}

/// [`identify_client`] for a client started in a mount namespace of its own, after the shell
/// command `mounts` ran there.
fn identify_client_after_mounts(
    mounts: &str,
) -> Result<Caller, tasksnap_collect::testing::service::peer::Refusal> {
    let script = format!("{mounts} && exec \"$0\" \"$@\"");
    identify_client(&[
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        &script,
    ])
}

#[test]
fn callers_of_other_namespaces_are_refused() {
    use tasksnap_collect::testing::service::peer::Refusal;
    skip_unless_root!("identify callers in other namespaces");
    let r = identify_client(&["unshare", "--user", "--map-root-user"]);
    assert!(matches!(r, Err(Refusal::OtherUserNamespace)), "{r:?}");
    let r = identify_client(&["unshare", "--pid", "--fork", "--mount-proc"]);
    assert!(matches!(r, Err(Refusal::OtherPidNamespace)), "{r:?}");
    // Its own pid namespace, but the /proc of another one (mounted by a child in a new pid
    // namespace, then bound over /proc): its /proc does not show the service's tasks.
    let r = identify_client_after_mounts(
        "mount -t tmpfs none /mnt && mkdir /mnt/p && unshare --pid --fork mount -t proc proc /mnt/p && mount --bind /mnt/p /proc",
    );
    assert!(matches!(r, Err(Refusal::OtherPidNamespace)), "{r:?}");
    // No procfs at /proc.
    let r = identify_client_after_mounts("mount -t tmpfs none /proc");
    assert!(matches!(r, Err(Refusal::NoProc)), "{r:?}");
    // Plain root: identified, with its capabilities.
    let c = identify_client(&["env"]).expect("root is identified");
    assert!(c.cap_sys_ptrace && c.cap_dac_read && c.fsuid == 0);
}
