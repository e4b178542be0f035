//! procfs's permission rules, applied to a snapshot for one caller.
//! (Stub: filled in by the visibility work.)

use std::borrow::Cow;

use tasksnap_model::{Groups, Task};

use super::peer::Caller;

/// The groups the service reads to answer `asked` for `caller`: `asked`, plus what the rules
/// need to decide (the full credentials, when a task's visibility or a gated group depends on
/// the ptrace rule).
pub fn groups_to_read(caller: &Caller, asked: &Groups) -> Groups {
    let _ = caller;
    let mut g = *asked;
    g.cred_full = true;
    g
}

/// The rows `caller` may see of `tasks` (read with [`groups_to_read`]), each holding only
/// `asked` groups and what procfs would show the caller of them. `dumpable` tells whether a
/// task's mm is dumpable (`SUID_DUMP_USER`); it is asked only of tasks whose credentials
/// already match the caller's.
pub fn view<'a>(
    caller: &Caller,
    asked: &Groups,
    tasks: &'a [Task],
    dumpable: &mut dyn FnMut(&Task) -> bool,
) -> Vec<Cow<'a, Task>> {
    let _ = (caller, asked, tasks, dumpable);
    Vec::new()
}
