//! What the changed-only tests (bpf_changes.rs, bpf_change_set.rs, procfs_changes.rs)
//! share: the shell children they spawn and the guard that kills them, the query both
//! backends answer, and the check of a killed sleeper.
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};

use tasksnap_collect::testing::Changes;
use tasksnap_model::{Group, Groups, Query, Selector, TaskId};

/// `/bin/sh -c script`, its stdin closed.
pub fn spawn(script: &str) -> Child {
    Command::new("/bin/sh")
        .args(["-c", script])
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn /bin/sh")
}

/// Every thread, leaders as their processes, with what a live view shows of them: identity,
/// effective credentials, CPU times and scheduling.
pub fn changes_query() -> Query {
    let groups = Groups::of(&[Group::Base, Group::CredEffective, Group::Stat, Group::Sched]);
    let mut q = Query::new(Selector::AllThreads, groups);
    q.leader_as_process = true;
    q
}

/// `c` reports the killed sleeper `gone` gone, with the identity it had, and not the sleeper
/// `alive`.
pub fn assert_gone(c: &Changes, gone: TaskId, alive: TaskId) {
    assert!(
        c.gone.contains(&gone),
        "{:?} not among the gone: {:?}",
        gone,
        c.gone
    );
    assert!(!c.gone.contains(&alive), "a live sleeper is not gone");
}

/// Children killed (and reaped) when the test ends, however it ends.
pub struct Kids(pub Vec<Child>);

impl Drop for Kids {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
