//! Which tasks ps lists: procps's `want_this_proc` (ps/select.c). Simple selections (`-a`,
//! `-d`, `a`, `x`, the default) use procps's bit table indexed by four facts about the task;
//! lists (`-p`, `-u`, ...) match any of their entries; `-N` negates the result.

use tasksnap_model::{Task, TaskState};

use super::fields;
use super::settings::{Criterion, Settings};
use super::text::Locale;

/// Facts about the caller the default selection compares against.
#[derive(Debug, Clone, Copy)]
pub struct Me {
    /// Our effective uid.
    pub euid: u32,
    /// Our controlling terminal (tty_nr of /proc/self/stat), 0 when none.
    pub tty: u32,
}

impl Me {
    /// Reads the facts for the calling process.
    pub fn current(host: &tasksnap_collect::Host) -> Me {
        // SAFETY: geteuid cannot fail and touches no memory.
        let euid = unsafe { libc::geteuid() };
        let tty = host.own_tty_nr();
        Me { euid, tty }
    }
}

fn table_accept(bits: u32, me: &Me, t: &Task) -> bool {
    let b = t.base.as_ref();
    let euid = t.cred.as_ref().map_or(u32::MAX, |c| c.euid);
    let tty = b.map_or(0, |b| b.tty_nr);
    let index = u32::from(euid == me.euid)
        | u32::from(b.is_some_and(|b| b.sid == t.id.tgid)) << 1
        | u32::from(tty == 0) << 2
        | u32::from(tty == me.tty) << 3;
    bits & (1 << index) != 0
}

fn listed(s: &Settings, t: &Task, loc: Locale) -> bool {
    let b = t.base.as_ref();
    let c = t.cred.as_ref();
    s.criteria.iter().any(|crit| match crit {
        Criterion::Pid(v) => v.contains(&t.id.tgid),
        Criterion::Ppid(v) => b.is_some_and(|b| v.contains(&b.ppid)),
        Criterion::Sess(v) => b.is_some_and(|b| v.contains(&b.sid)),
        Criterion::Pgrp(v) => b.is_some_and(|b| v.contains(&b.pgid)),
        Criterion::Tty(v) => b.is_some_and(|b| v.contains(&b.tty_nr)),
        Criterion::Euid(v) => c.is_some_and(|c| v.contains(&c.euid)),
        Criterion::Ruid(v) => c.is_some_and(|c| v.contains(&c.ruid)),
        Criterion::Rgid(v) => c.is_some_and(|c| v.contains(&c.rgid)),
        Criterion::Egid(v) => c.is_some_and(|c| v.contains(&c.egid)),
        Criterion::Comm(names) => {
            let comm = fields::comm_text(t, loc);
            names.iter().any(|n| {
                // comm is at most 15 bytes: a longer name matches on its first 15.
                (comm.len() == 15 && n.len() >= 15 && comm[..] == n[..15])
                    || comm[..comm.len().min(63)] == n[..n.len().min(63)]
            })
        }
    })
}

/// procps `want_this_proc`.
pub fn want(s: &Settings, me: &Me, t: &Task, loc: Locale) -> bool {
    let mut accepted =
        s.all || s.select_bits.is_some_and(|bits| table_accept(bits, me, t)) || listed(s, t, loc);
    if s.running_only {
        let running = t
            .base
            .as_ref()
            .is_some_and(|b| matches!(b.state, TaskState::Running | TaskState::DiskSleep));
        if !running {
            accepted = false;
        }
    }
    accepted != s.negate
}
