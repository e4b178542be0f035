//! A [`Reading`]: everything tasksnap knows about the host at one moment (its tasks, every
//! thread's state-time totals, the machine-wide figures). The recorder takes one per
//! interval and stores it; replay hands the same type back, so that a front end shows the
//! past through the code it shows the present with.

use crate::states::Sample;
use crate::{Snapshot, SystemFigures};

/// The host at one moment.
#[derive(Debug, Clone)]
pub struct Reading {
    /// Every task (processes and their threads), with the groups that were read. Command lines
    /// and cgroups may be carried over from an earlier read of the same task identity.
    pub snapshot: Snapshot,
    /// Every thread's cumulative state-time totals, when a state source ran.
    pub states: Option<Sample>,
    /// The machine-wide figures.
    pub system: SystemFigures,
}
