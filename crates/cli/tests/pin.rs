//! `tasksnap pin` / `unpin`: the pinned iterator is used instead of a fresh load, prints the
//! same rows as procfs, is root-only on disk, is refused when its directory is not root-only,
//! and goes away with `unpin`. One test, run in order: the steps share the pin directory.

mod common;

use std::collections::HashSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tasksnap_loadgen::skip_unless_root;

use common::ps::*;
use common::*;

const ROOT: &str = "/sys/fs/bpf/tasksnap";
const LOCK_DIR: &str = "/run/tasksnap";
const FORMAT: &[&str] = &["-e", "-o", "pid,ppid,user,stat,nlwp,tty,comm,args"];

/// The rows of the load under `backend`, with the verbose lines.
fn rows(backend: &str, pids: &HashSet<i32>) -> (Vec<Vec<u8>>, String) {
    let mut a = vec!["ps"];
    a.extend_from_slice(FORMAT);
    a.push("--verbose");
    a.push(backend);
    let out = tasksnap_c(&a);
    assert_eq!(out.code, Some(0), "{a:?}: {}", text(&out.stderr));
    (load_rows(&out.stdout, pids).1, text(&out.stderr))
}

fn pin_dirs() -> Vec<PathBuf> {
    std::fs::read_dir(ROOT)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default()
}

fn mode(p: &Path) -> (u32, u32) {
    let m = std::fs::metadata(p).expect("metadata");
    (m.mode() & 0o7777, m.uid())
}

#[test]
fn pinned_iterator_is_used_root_only_and_removable() {
    skip_unless_root!("tasksnap pin");
    let was_pinned = Path::new(ROOT).exists();
    let load = spawn_load();
    let pids: HashSet<i32> = load.info.known_pids().into_iter().collect();
    let (reference, _) = rows("--backend=procfs", &pids);
    assert!(reference.len() >= 20, "the load is listed");

    let out = tasksnap_c(&["pin"]);
    assert_eq!(out.code, Some(0), "pin: {}", text(&out.stderr));
    let dirs = pin_dirs();
    assert_eq!(dirs.len(), 1, "one pinned set: {dirs:?}");
    let dir = &dirs[0];
    pins_are_root_only(dir);
    the_pinned_set_is_used_and_its_arena_reused(&pids, &reference);
    a_held_slot_sends_a_run_to_the_next(dir, &pids, &reference);
    // auto takes the pinned iterator whatever the task count.
    let (_, verbose) = rows("--backend=auto", &pids);
    assert!(verbose.contains("tasksnap: bpf:"), "{verbose}");
    the_walk_keeps_to_a_pid_namespace();
    others_can_neither_list_nor_open_the_pins(dir);
    a_pin_directory_others_could_enter_is_not_trusted(dir, &pids, &reference);
    unpin_removes_the_pins_and_the_slot_locks(&pids);

    if was_pinned {
        assert_eq!(tasksnap_c(&["pin"]).code, Some(0), "re-pin as it was");
    }
}

/// The pin directory and each pinned object are root's alone, and they are the objects a
/// pinned set has.
fn pins_are_root_only(dir: &Path) {
    assert_eq!(mode(Path::new(ROOT)), (0o700, 0), "{ROOT}");
    assert_eq!(mode(dir), (0o700, 0), "{}", dir.display());
    let mut pins: Vec<String> = std::fs::read_dir(dir)
        .expect("pin dir")
        .filter_map(|e| e.ok())
        .map(|e| {
            assert_eq!(mode(&e.path()), (0o600, 0), "{}", e.path().display());
            e.file_name().to_string_lossy().into_owned()
        })
        .collect();
    pins.sort();
    assert_eq!(
        pins,
        [
            "arenas",
            "cmd_prog",
            "cmdline_link",
            "lines_prog",
            "list_prog",
            "reader_cfg",
            "task_link",
            "task_prog",
            "walk_prog"
        ],
        "the pinned objects"
    );
}

/// Used, and with the same rows as /proc (command lines included). A pinned set walks into
/// an arena that the next run reuses.
fn the_pinned_set_is_used_and_its_arena_reused(pids: &HashSet<i32>, reference: &[Vec<u8>]) {
    let (pinned, verbose) = rows("--backend=bpf", pids);
    assert!(verbose.contains("pinned programs at"), "{verbose}");
    assert!(verbose.contains("pass: walk into the arena"), "{verbose}");
    assert!(verbose.contains("command lines from the walk"), "{verbose}");
    assert_eq!(pinned, reference, "pinned iterator vs procfs");
    let (again, verbose) = rows("--backend=bpf", pids);
    assert!(
        verbose.contains("slot 0, reused from an earlier run"),
        "{verbose}"
    );
    assert_eq!(again, reference, "reused arena vs procfs");
}

/// The slot locks are root-only (root's directory, writable by root alone: 0755 so that
/// serve's query socket beside them is reachable; the locks 0600); a run finding slot 0
/// taken (by a concurrent tasksnap: here this test, holding its lock) takes the next slot.
fn a_held_slot_sends_a_run_to_the_next(dir: &Path, pids: &HashSet<i32>, reference: &[Vec<u8>]) {
    let (dir_mode, dir_owner) = mode(Path::new(LOCK_DIR));
    assert_eq!(
        (dir_mode & 0o022, dir_owner),
        (0, 0),
        "{LOCK_DIR}: {dir_mode:o}"
    );
    // This build's slot 0 (other builds, pinned before, may have left theirs: an upgrade).
    let tag = dir.file_name().expect("tag").to_string_lossy().into_owned();
    let lock0 = Path::new(LOCK_DIR).join(format!("arena-{tag}-0.lock"));
    assert!(lock0.exists(), "slot 0's lock file {}", lock0.display());
    assert_eq!(mode(&lock0), (0o600, 0), "{}", lock0.display());
    let held = std::fs::File::open(&lock0).expect("open the lock");
    let fd = std::os::fd::AsRawFd::as_raw_fd(&held);
    // SAFETY: flock on a descriptor this test owns, valid for the call.
    let locked = unsafe { libc::flock(fd, libc::LOCK_EX) };
    assert_eq!(locked, 0, "lock slot 0");
    let (beside, verbose) = rows("--backend=bpf", pids);
    drop(held);
    assert!(verbose.contains("slot 1, created by this run"), "{verbose}");
    assert_eq!(beside, reference, "second slot vs procfs");
}

/// Inside a pid namespace the walk (which sees the whole machine's task lists) keeps to the
/// namespace's tasks and numbers them as the namespace does, like /proc there.
fn the_walk_keeps_to_a_pid_namespace() {
    let ns = ps_in_a_pid_namespace("pid,ppid,args", "--verbose");
    let (stdout, stderr) = (&ns.stdout, &ns.stderr);
    assert!(stderr.contains("pass: walk into the arena"), "{stderr}");
    assert!(stderr.contains("command lines from the walk"), "{stderr}");
    let walked = row_set(&ns.bpf, " ps -e -o");
    assert_eq!(
        walked,
        row_set(&ns.procfs, " ps -e -o"),
        "{stdout}\n{stderr}"
    );
    assert!(
        walked.iter().any(|r| r.ends_with(" sleep 30")
            && r.split_whitespace()
                .next()
                .and_then(|p| p.parse::<i32>().ok())
                < Some(100)),
        "the namespace's sleep, with a namespace-local pid: {stdout}"
    );
}

/// Another user can neither list nor open the pins.
fn others_can_neither_list_nor_open_the_pins(dir: &Path) {
    let task_link = dir.join("task_link");
    let denied = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "cat"])
        .arg(&task_link)
        .output()
        .expect("setpriv");
    assert!(
        !denied.status.success(),
        "nobody opened {}",
        task_link.display()
    );
}

/// A pin directory others could enter is never trusted: a fresh load is used instead.
fn a_pin_directory_others_could_enter_is_not_trusted(
    dir: &Path,
    pids: &HashSet<i32>,
    reference: &[Vec<u8>],
) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let (loaded, verbose) = rows("--backend=bpf", pids);
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    assert!(verbose.contains("pinned programs not used"), "{verbose}");
    assert!(verbose.contains("not a root-only directory"), "{verbose}");
    assert_eq!(loaded, reference, "fresh load vs procfs");
}

/// `unpin` takes the pins and the slot locks away; the next run loads afresh, and a second
/// `unpin` says nothing was pinned.
fn unpin_removes_the_pins_and_the_slot_locks(pids: &HashSet<i32>) {
    let out = tasksnap_c(&["unpin"]);
    assert_eq!(out.code, Some(0), "unpin: {}", text(&out.stderr));
    assert!(!Path::new(ROOT).exists(), "unpin removes {ROOT}");
    let locks = std::fs::read_dir(LOCK_DIR).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".lock"))
            .count()
    });
    assert_eq!(locks, 0, "unpin removes the slot locks");
    let (_, verbose) = rows("--backend=bpf", pids);
    assert!(verbose.contains("loaded in"), "{verbose}");
    assert!(text(&tasksnap_c(&["unpin"]).stdout).contains("nothing was pinned"));
}
