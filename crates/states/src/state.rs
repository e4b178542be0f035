//! The six states time is charged to, their names, and how a /proc state letter maps to
//! them. The kernel-side classification of `prev_state` bits is in bpf/states.bpf.c
//! (`classify`); the two must agree (the workload tests check both against the same loads).

use serde::Serialize;

/// A thread's scheduler state, as tasksnap accounts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// On a CPU.
    Running,
    /// On a run queue waiting for a CPU (woken, or preempted).
    Runnable,
    /// Interruptible sleep (S).
    Sleeping,
    /// Uninterruptible sleep (D), TASK_NOLOAD idle excluded.
    Disk,
    /// Stopped or traced (T, t).
    Stopped,
    /// Parked, idle kernel threads (I), frozen, dead.
    Other,
}

/// Number of states.
pub const NSTATES: usize = 6;

impl State {
    /// Every state, in the order of the `ST_*` indices of states.h.
    pub const ALL: [State; NSTATES] = [
        State::Running,
        State::Runnable,
        State::Sleeping,
        State::Disk,
        State::Stopped,
        State::Other,
    ];

    /// Index into per-state arrays (`ST_*` in states.h).
    pub fn index(self) -> usize {
        self as usize
    }

    /// From an `ST_*` index; out of range is `Other`.
    pub fn from_index(i: u32) -> State {
        State::ALL.get(i as usize).copied().unwrap_or(State::Other)
    }

    /// Short lowercase name, as in JSON keys (`disk` -> `disk_pct`).
    pub fn name(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Runnable => "runnable",
            State::Sleeping => "sleeping",
            State::Disk => "disk",
            State::Stopped => "stopped",
            State::Other => "other",
        }
    }

    /// The state a `/proc/TID/stat` state letter stands for (fs/proc/array.c
    /// `task_state_array`). `R` is running or runnable: /proc cannot tell them apart, which is
    /// why the fallback takes both from schedstat instead.
    pub fn from_letter(c: u8) -> State {
        match c {
            b'R' => State::Running,
            b'S' => State::Sleeping,
            b'D' => State::Disk,
            b'T' | b't' => State::Stopped,
            // I (TASK_IDLE), P (parked), X/x (dead), Z (zombie), W, K: not waiting for
            // anything tasksnap can name.
            _ => State::Other,
        }
    }

    /// Whether time in this state is off the CPU for a reason worth a stack.
    pub fn is_blocked(self) -> bool {
        matches!(self, State::Sleeping | State::Disk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_map_to_states() {
        assert_eq!(State::from_letter(b'R'), State::Running);
        assert_eq!(State::from_letter(b'S'), State::Sleeping);
        assert_eq!(State::from_letter(b'D'), State::Disk);
        assert_eq!(State::from_letter(b'T'), State::Stopped);
        assert_eq!(State::from_letter(b't'), State::Stopped);
        assert_eq!(State::from_letter(b'I'), State::Other);
        assert_eq!(State::from_letter(b'Z'), State::Other);
        assert_eq!(State::from_letter(b'P'), State::Other);
    }

    #[test]
    fn indices_round_trip() {
        for s in State::ALL {
            assert_eq!(State::from_index(s.index() as u32), s);
        }
        assert_eq!(State::from_index(99), State::Other);
    }
}
