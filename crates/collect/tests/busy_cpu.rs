//! The procfs collector on a saturated CPU: a command-line read that only waits
//! for a CPU is not a blocked one, and must not be abandoned at the deadline. In a test
//! binary of its own: its busy loops would slow down the other live tests running beside it
//! (the mmap-lock test bounds how long a snapshot takes).

use std::time::Duration;
use tasksnap_loadgen::ProcessGroup;
use tasksnap_loadgen::{settled_sleep, wait_until};

use tasksnap_collect::testing::procfs::ProcfsCollector;
use tasksnap_collect::testing::Collector;
use tasksnap_model::{Group, Groups, Query, Selector};

/// Regression: on a busy host, `ps -e H` printed `[sleep]` for a `sleep 1000` whose command
/// line procps printed. The deadline counted wall time since the read began, so a reader
/// that only waited for a CPU was abandoned. Here the readers and four busy loops share one
/// CPU and the deadline is 2 ms, so reads wait for the CPU for longer than the deadline all
/// the time; the sleepers' mmap locks are free, so none of their reads is blocked and every
/// command line must be there.
#[test]
fn a_busy_cpu_does_not_abandon_command_line_reads() {
    // This thread, the reader threads it starts and the busy loops (forked from it) on one
    // CPU: the one it is on now.
    // SAFETY: sched_getcpu takes no arguments.
    let cpu = unsafe { libc::sched_getcpu() }.max(0) as usize;
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it; the call reads
    // it for the calling thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0,
            "pin to CPU {cpu}"
        );
    }
    let sleepers = ProcessGroup::spawn(20, &["sleep", "1000"]).expect("spawn");
    // Each sleeper done with its exec (before that its command line is not sleep's), before
    // the busy loops take the CPU.
    wait_until("the sleepers to settle", || {
        sleepers.pids().into_iter().all(settled_sleep)
    });
    let _busy = ProcessGroup::spawn(4, &["sh", "-c", "while :; do :; done"]).expect("spawn");
    std::thread::sleep(Duration::from_millis(100));
    let mut c = ProcfsCollector::new()
        .expect("open /proc")
        .with_cmdline_deadline(Duration::from_millis(2));
    let q = Query::new(
        Selector::AllProcesses,
        Groups::of(&[Group::Base, Group::Cmdline]),
    );
    let want = b"sleep\x001000\x00".to_vec();
    let mut abandoned = Vec::new();
    for _ in 0..15 {
        let snap = c.snapshot(&q).expect("snapshot");
        for pid in sleepers.pids() {
            let t = snap
                .tasks
                .iter()
                .find(|t| t.id.tgid == pid)
                .unwrap_or_else(|| panic!("sleeper {pid} listed"));
            if t.cmdline_timed_out || t.cmdline.as_ref() != Some(&want) {
                abandoned.push(pid);
            }
        }
    }
    assert!(
        abandoned.is_empty(),
        "command lines of sleepers (mmap lock free) given up on a busy CPU: {abandoned:?}"
    );
}
