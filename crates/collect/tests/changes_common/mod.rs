//! What the changed-only tests (bpf_changes.rs, procfs_changes.rs) share: the shell children
//! they spawn and the query both backends answer.
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};

use tasksnap_model::{Groups, Query, Selector};

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
    let groups = Groups {
        base: true,
        cred_effective: true,
        stat: true,
        sched: true,
        ..Groups::default()
    };
    let mut q = Query::new(Selector::AllThreads, groups);
    q.leader_as_process = true;
    q
}
