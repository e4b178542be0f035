//! The host on the fake tree of tasksnap-loadgen (`fake_proc`): every answer from the tree.

use super::*;
use std::ffi::OsStr;
use tasksnap_loadgen::fake_proc::{FakeProc, BASH_RSS_PAGES, BTIME};
use tasksnap_model::Group;
use tasksnap_model::{Memory, Selector, SnapshotStats, SystemFigures};

fn tree(page_size: u64) -> (tempfile::TempDir, Host) {
    let dir = tempfile::tempdir().expect("tempdir");
    FakeProc::build_with_page_size(dir.path(), page_size).expect("tree");
    let opts = HostOptions::from_values(
        Some(dir.path().as_os_str()),
        Some(OsStr::new(&page_size.to_string())),
    );
    (dir, Host::open(opts))
}

fn stat_query(sel: Selector) -> Query {
    Query::new(sel, Groups::of(&[Group::Base, Group::Stat]))
}

#[test]
fn the_environment_names_a_tree_and_a_page_size() {
    let o = HostOptions::from_values(Some(OsStr::new("/t")), Some(OsStr::new("65536")));
    assert_eq!(o.proc_root, Path::new("/t"));
    assert_eq!(o.sys_root, Path::new("/t/sys"));
    assert_eq!(o.dev_root, Path::new("/t/dev"));
    assert_eq!(o.run_root, Path::new("/t/run"));
    assert_eq!(o.utmp_path, Path::new("/t/utmp"));
    assert_eq!(o.page_size_bytes, Some(65536));
    assert!(!o.is_this_kernel());
    // Nothing, an empty root, a page size that is no page size: the machine's.
    assert_eq!(HostOptions::from_values(None, None), HostOptions::default());
    assert_eq!(
        HostOptions::from_values(Some(OsStr::new("")), Some(OsStr::new("5000"))),
        HostOptions::default()
    );
    assert!(HostOptions::default().is_this_kernel());
}

#[test]
fn another_proc_root_moves_only_proc() {
    let o = HostOptions::default().with_proc_root("/host/proc".into());
    assert_eq!(o.proc_root, Path::new("/host/proc"));
    assert_eq!(o.sys_root, Path::new("/sys"));
    assert_eq!(o.dev_root, Path::new("/dev"));
    assert_eq!(o.utmp_path, HostOptions::default().utmp_path);
    assert!(!o.is_this_kernel());
    assert_eq!(o.query_socket, None);
    // At the kernel's: the options it had.
    let back = HostOptions::default().with_proc_root("/proc".into());
    assert_eq!(back, HostOptions::default());
}

#[test]
fn units_are_the_hosts_and_tasks_are_counted_in_them() {
    let (_dir, mut host) = tree(65536);
    let u = host.units();
    assert_eq!(u.page_size_bytes, 65536);
    assert_eq!(u.boot_time_unix_s, BTIME);
    assert_eq!(u.clock_ticks_per_s, clock_ticks_per_s());
    host.open_snapshots(Backend::Auto, &Groups::default())
        .expect("open");
    let r = host.report();
    assert_eq!(r.backend, Backend::Procfs);
    assert!(
        r.why.contains("not the running kernel's /proc"),
        "{}",
        r.why
    );
    let snap = host
        .snapshot(&stat_query(Selector::Pid(4032)))
        .expect("snapshot");
    let stat = snap.tasks[0].stat.as_ref().expect("stat");
    assert_eq!(stat.rss_bytes, BASH_RSS_PAGES * 65536);
    assert_eq!(snap.boot_time_unix_s, BTIME);
}

#[test]
fn bpf_never_answers_for_a_tree() {
    let (_dir, mut host) = tree(4096);
    assert!(host
        .open_snapshots(Backend::Bpf, &Groups::default())
        .is_err());
    assert!(host.open_live(Backend::Bpf).is_err());
    assert!(matches!(
        host.open_states(Backend::Bpf, StatesOptions::default()),
        Err(Error::BpfUnavailable(_))
    ));
    assert!(matches!(host.open_waits(), Err(Error::BpfUnavailable(_))));
    assert!(host.probe_bpf().is_err());
    // Auto takes the /proc sources, which read the tree.
    let mut states = host
        .open_states(Backend::Auto, StatesOptions::default())
        .expect("states");
    assert_eq!(states.report().0, Backend::Procfs);
    let sample = states.sample().expect("sample");
    let mut tids: Vec<i32> = sample.threads.keys().map(|id| id.tid).collect();
    tids.sort_unstable();
    assert_eq!(tids, [1, 4032, 6000, 6001]);
}

#[test]
fn a_live_view_of_a_tree_hands_over_every_task_first() {
    let (_dir, mut host) = tree(4096);
    host.open_live(Backend::Auto).expect("live");
    let q = stat_query(Selector::AllThreads);
    assert!(host.next_changes_full(&q));
    let mut tids = Vec::new();
    let summary = host
        .changes_into(&q, &mut |t| tids.push(t.id.tid))
        .expect("changes");
    assert!(summary.full);
    tids.sort_unstable();
    assert_eq!(tids, [1, 4032, 6000, 6001]);
}

#[test]
fn asking_what_is_not_open_is_an_error() {
    let (_dir, mut host) = tree(4096);
    let q = stat_query(Selector::AllProcesses);
    assert!(matches!(host.snapshot(&q), Err(Error::Unsupported(_))));
    assert!(host.changes_into(&q, &mut |_| {}).is_err());
    host.open_snapshots(Backend::Procfs, &Groups::default())
        .expect("open");
    // Snapshots are not a live view.
    assert!(host.changes_into(&q, &mut |_| {}).is_err());
}

#[test]
fn machine_figures_come_from_the_tree() {
    let (dir, host) = tree(4096);
    assert_eq!(host.mem_total_kib(), Some(24_684_148));
    assert_eq!(host.pid_max_width(), Some(7));
    assert_eq!(host.task_count(), Some(4));
    assert_eq!(host.list_pids().expect("pids"), [1, 4032, 6000]);
    assert_eq!(host.load_averages().map(|l| l.avg[0]), Some(0.52));
    assert_eq!(host.users_logged_in(), 0, "no utmp in the tree");
    // Two USER_PROCESS records (type 7) among others.
    let mut utmp = Vec::new();
    for t in [2i16, 7, 8, 7] {
        let mut r = vec![0u8; 384];
        r[..2].copy_from_slice(&t.to_ne_bytes());
        utmp.extend(r);
    }
    std::fs::write(dir.path().join("utmp"), utmp).expect("utmp");
    assert_eq!(host.users_logged_in(), 2);
    assert_eq!(host.system().memory.map(|m| m.total_kib), Some(24_684_148));
}

/// The host name and boot id come from the tree (a renamed host is seen at the next
/// reading), a reading carries them, and a file the tree lacks leaves its part unknown.
#[test]
fn the_identity_comes_from_the_tree() {
    use tasksnap_loadgen::fake_proc::{BOOT_ID, HOSTNAME};
    let (dir, host) = tree(4096);
    let id = host.identity();
    assert_eq!(id.hostname.as_deref(), Some(HOSTNAME.as_bytes()));
    assert_eq!(id.boot_id.as_deref(), Some(BOOT_ID.as_bytes()));
    let mut readings = host
        .open_readings(ReadingOptions {
            backend: Backend::Procfs,
            states: false,
            ..ReadingOptions::default()
        })
        .expect("readings");
    assert_eq!(readings.read_mut().expect("reading").host, id);
    let fake = FakeProc::build(dir.path()).expect("tree");
    fake.set_identity(b"../other\xff", "b2").expect("identity");
    let r = readings.read_mut().expect("reading");
    assert_eq!(r.host.hostname.as_deref(), Some(&b"../other\xff"[..]));
    assert_eq!(r.host.boot_id.as_deref(), Some(&b"b2"[..]));
    // Longer than the kernel allows: cut; missing: unknown.
    std::fs::write(dir.path().join("sys/kernel/hostname"), [b'x'; 200]).expect("write");
    std::fs::remove_file(dir.path().join("sys/kernel/random/boot_id")).expect("rm");
    let id = host.identity();
    assert_eq!(id.hostname, Some(vec![b'x'; 64]));
    assert_eq!(id.boot_id, None);
}

#[test]
fn a_recording_answers_as_the_host_did() {
    let mut reading = Reading {
        snapshot: Snapshot {
            taken_at_unix_ns: 5,
            taken_at_boottime_ns: 4,
            boot_time_unix_s: BTIME,
            backend: Backend::Procfs,
            tasks: vec![Task::new(tasksnap_model::TaskId {
                tgid: 9,
                tid: 9,
                start_time_ns: 1,
            })],
            stats: SnapshotStats::default(),
        },
        states: None,
        system: SystemFigures::default(),
        exits: Vec::new(),
        exits_dropped: 0,
        exits_missing: None,
        host: tasksnap_model::HostIdentity {
            hostname: Some(b"recorded".to_vec()),
            boot_id: None,
        },
        cgroups: None,
    };
    reading.system.memory = Some(Memory {
        total_kib: 1234,
        ..Memory::default()
    });
    let mut host = Host::replay(reading, "replay of r".into());
    assert_eq!(host.units().boot_time_unix_s, BTIME);
    assert_eq!(host.mem_total_kib(), Some(1234));
    assert_eq!(host.identity().hostname.as_deref(), Some(&b"recorded"[..]));
    assert_eq!(host.report().why, "replay of r");
    let snap = host
        .snapshot(&Query::new(Selector::AllProcesses, Groups::default()))
        .expect("snapshot");
    assert_eq!(snap.tasks.len(), 1);
    // Nothing was loaded: nothing to drop.
    assert_eq!(host.drop_loading_privileges().expect("ready"), 0);
}

/// As root, a fake tree is taken only from a directory root alone could have written: one
/// that others may write (where a user could have planted links to root's files) is not.
#[test]
fn root_takes_a_fake_tree_only_from_a_directory_of_its_own() {
    use std::os::unix::fs::PermissionsExt;
    if !tasksnap_loadgen::root_or_skip("root's rule for a fake tree") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(super::options::only_root_could_have_made(
        dir.path().as_os_str()
    ));
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    assert!(!super::options::only_root_could_have_made(
        dir.path().as_os_str()
    ));
    let link = dir.path().with_extension("link");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::os::unix::fs::symlink(dir.path(), &link).expect("symlink");
    assert!(
        !super::options::only_root_could_have_made(link.as_os_str()),
        "a link is not the tree"
    );
    std::fs::remove_file(&link).expect("rm link");
}
