//! The tasksnap data model: what a task is, which groups of attributes can be asked for, how a
//! query names a set of tasks, and what a snapshot holds.
//!
//! This crate does no I/O. Collectors (`tasksnap-collect`) fill these types; front ends
//! (`tasksnap` ps/top/states) read them. Every quantity carries its unit in its name
//! (`rss_bytes`, `utime_ns`), and every attribute group is an `Option`: `None` means "not asked
//! for, or not readable", never zero.
//!
//! [`fields`] is the one definition of every task field a front end shows (name, type, unit,
//! group, getter); [`cgroup`] the one cgroup parser (a task's /proc/PID/cgroup);
//! [`CgroupCounters`] a cgroup's own counters ([`CGROUP_FIELDS`] their table, [`cgroup_rates`]
//! their rates between two readings); [`login`] the sd-login answers.
#![deny(missing_docs)]

mod backend;
pub mod cgroup;
mod cgroup_counters;
mod cgroup_fields;
mod cgroup_rates;
mod exit;
pub mod fields;
mod groups;
pub mod hash;
mod identity;
pub mod login;
mod query;
mod reading;
mod snapshot;
pub mod states;
mod system;
mod task;

pub use backend::{Backend, CmdlineSource, PassKind, PassReport, UnknownBackend};
pub use cgroup::Cgroup;
pub use cgroup_counters::{CgroupCounters, CgroupHierarchy, CgroupListing, Limit};
pub use cgroup_fields::{
    cgroup_field, CgroupField, CgroupKind, CgroupUnit, CgroupValue, CGROUP_FIELDS,
};
pub use cgroup_rates::{cgroup_rates, CgroupRates};
pub use exit::{CmdlineMissing, Exit, ExitBatch, ExitReason};
pub use identity::{HostIdentity, BOOT_ID_MAX_BYTES, HOSTNAME_MAX_BYTES};
pub use login::Login;

pub use groups::{Group, Groups};
pub use query::{Query, Selector};
pub use reading::{Reading, ReadingChanges};
pub use snapshot::{Snapshot, SnapshotStats};
pub use system::{
    CpuTicks, LoadAverages, Memory, Pressure, PressureLine, StatCounters, SystemFigures,
};
pub use task::{
    Base, Comm, Cred, Extra, Io, Layout, Mem, Sched, Signals, Stat, Task, TaskId, TaskState,
    NS_NAMES, PF_KTHREAD, SCHED_BATCH, SCHED_OTHER,
};
