//! Which machine, and which boot of it, a reading was taken on ([`HostIdentity`]): the host
//! name (the kernel's nodename, `/proc/sys/kernel/hostname`) and the boot id
//! (`/proc/sys/kernel/random/boot_id`, a random UUID the kernel makes at each boot). A
//! recording keeps them so that readings from several machines, or from both sides of a
//! reboot, stay apart when they are read together. Both are bytes as the kernel gave them
//! (a host name is whatever `sethostname(2)` was given), cut to a bound.

/// The most bytes of a host name: the kernel's `__NEW_UTS_LEN` (64); a longer value (a fake
/// tree, a damaged store) is cut there when read and refused when decoded.
pub const HOSTNAME_MAX_BYTES: usize = 64;

/// The most bytes of a boot id (a UUID is 36 characters; the same bound as a host name).
pub const BOOT_ID_MAX_BYTES: usize = 64;

/// The host name and boot id of the machine a reading was taken on. Each is `None` when it
/// could not be read (or, from a recording, when the recording did not say: stores written
/// before tasksnap kept them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct HostIdentity {
    /// The host name (the nodename of the reader's UTS namespace), at most
    /// [`HOSTNAME_MAX_BYTES`] bytes, not necessarily UTF-8.
    pub hostname: Option<Vec<u8>>,
    /// The boot id, at most [`BOOT_ID_MAX_BYTES`] bytes.
    pub boot_id: Option<Vec<u8>>,
}

impl HostIdentity {
    /// Neither value is known.
    pub fn is_unknown(&self) -> bool {
        self.hostname.is_none() && self.boot_id.is_none()
    }
}
