//! What systemd's login library (sd-login) says of a task: its unit, user unit, slice,
//! session, owner, machine and seat. The collector derives them (tasksnap-collect's
//! `login.rs`, from the task's cgroup path and systemd's runtime files); front ends read them
//! here, one typed answer per question.

use serde::{Deserialize, Serialize};

/// One of the sd-login questions (a `ps -o unit,uunit,slice,lsession,ouid,machine,seat`
/// column each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum What {
    /// `sd_pid_get_unit()`: `unit`.
    Unit,
    /// `sd_pid_get_user_unit()`: `uunit`.
    UserUnit,
    /// `sd_pid_get_slice()`: `slice`.
    Slice,
    /// `sd_pid_get_session()`: `lsession`.
    Session,
    /// `sd_pid_get_owner_uid()`: `ouid`.
    OwnerUid,
    /// `sd_pid_get_machine_name()`: `machine`.
    Machine,
    /// `sd_session_get_seat()` of the session: `seat`.
    Seat,
}

/// The sd-login answers for one task; each `None` where libsystemd would fail.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Login {
    /// The system unit (`sd_pid_get_unit()`).
    #[serde(with = "serde_bytes")]
    pub unit: Option<Vec<u8>>,
    /// The user unit (`sd_pid_get_user_unit()`).
    #[serde(with = "serde_bytes")]
    pub user_unit: Option<Vec<u8>>,
    /// The slice (`sd_pid_get_slice()`).
    #[serde(with = "serde_bytes")]
    pub slice: Option<Vec<u8>>,
    /// The login session id (`sd_pid_get_session()`).
    #[serde(with = "serde_bytes")]
    pub session: Option<Vec<u8>>,
    /// The uid owning the session or user slice (`sd_pid_get_owner_uid()`).
    pub owner_uid: Option<u32>,
    /// The machine (container or VM) name (`sd_pid_get_machine_name()`).
    #[serde(with = "serde_bytes")]
    pub machine: Option<Vec<u8>>,
    /// The seat of the session (`sd_session_get_seat()`).
    #[serde(with = "serde_bytes")]
    pub seat: Option<Vec<u8>>,
}

impl Login {
    /// The answer to `what` as text (the owner uid in decimal, as a C `int`, as procps
    /// prints `sd_pid_get_owner_uid()`'s answer); `None` where libsystemd would fail.
    pub fn text(&self, what: What) -> Option<std::borrow::Cow<'_, [u8]>> {
        use std::borrow::Cow::Borrowed;
        match what {
            What::Unit => self.unit.as_deref().map(Borrowed),
            What::UserUnit => self.user_unit.as_deref().map(Borrowed),
            What::Slice => self.slice.as_deref().map(Borrowed),
            What::Session => self.session.as_deref().map(Borrowed),
            What::OwnerUid => self
                .owner_uid
                .map(|u| (u as i32).to_string().into_bytes().into()),
            What::Machine => self.machine.as_deref().map(Borrowed),
            What::Seat => self.seat.as_deref().map(Borrowed),
        }
    }
}
