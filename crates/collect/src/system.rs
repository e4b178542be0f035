//! The machine and the odd per-task file, as the front ends name them: one path for what
//! [`crate::machine`] (machine-wide figures), [`crate::task_files`] (a task's links and
//! label, the caller's tty and capabilities), [`crate::probes`] (bench and doctor
//! baselines) and [`crate::numa`] (CPU to NUMA node) own. New code asks [`crate::Host`].

pub use crate::machine::*;
pub use crate::numa::*;
pub use crate::probes::*;
pub use crate::task_files::*;
