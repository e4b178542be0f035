//! The descriptors of `tasksnap serve`: how many connections it may hold under its
//! open-files limit (RLIMIT_NOFILE), so that a collection always has the descriptors it
//! needs and a newcomer can always be accepted.
//!
//! Every connection is a descriptor of the process's one table, and so is every file a
//! collection opens on the collection thread (the /proc walk's directories, the BPF
//! iterators, the system figures, a user lookup); the procfs reader threads have tables of
//! their own. The soft limit is raised to the hard one at start; after the first
//! collection, what is open then (listener, runtime, BPF programs and maps, the /proc state
//! source's files) is counted, [`RESERVE`] more are set aside for what a collection opens
//! while it runs, and the rest, up to [`MAX_CONNECTIONS`], is the connection cap. The /proc
//! state source, the one user of descriptors that grows with the host, is told to leave
//! [`STATES_FDS_LEFT`] for everything else, which holds the cap, the reserve and more.

/// Connections served at once when the open-files limit allows.
pub const MAX_CONNECTIONS: usize = 1024;

/// Descriptors kept free for a collection's own opens (it holds a handful at once on the
/// collection thread; the procfs readers use tables of their own).
pub const RESERVE: usize = 64;

/// Descriptors a newcomer may need past the cap: the one being accepted while the cap is
/// full (it waits for the connection it displaces to close) and the two that may be being
/// answered 503 at once (see [`super::http`]).
pub const NEWCOMERS: usize = 3;

/// What the /proc thread-state source must leave of the limit for everything else: the
/// connections, the reserve and the descriptors open at start (BPF programs and maps,
/// listener, runtime: ~40), with room to spare.
pub const STATES_FDS_LEFT: usize = 2048;

// The state source's share leaves room for the whole cap, the reserve, newcomers and 512
// more for what is open at start.
const _: () = assert!(STATES_FDS_LEFT >= MAX_CONNECTIONS + RESERVE + NEWCOMERS + 512);

/// Raises the soft open-files limit to the hard one and returns the soft limit in force.
pub fn raise_nofile() -> u64 {
    tasksnap_sys::raise_nofile_limit().unwrap_or(1024)
}

/// How the limit is shared out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The open-files limit.
    pub limit: u64,
    /// Connections served at once.
    pub connections: usize,
    /// Descriptors set aside for collections.
    pub reserve: usize,
}

/// The budget under a limit of `limit` with `open` descriptors in use: the reserve (at
/// most half of what is free), then [`NEWCOMERS`], then the connections.
/// At least one connection, whatever the limit: a limit so low that even that does not fit
/// is said at start.
pub fn budget(limit: u64, open: usize) -> Budget {
    let free = usize::try_from(limit)
        .unwrap_or(usize::MAX)
        .saturating_sub(open);
    let reserve = RESERVE.min(free / 2);
    let connections = free
        .saturating_sub(reserve)
        .saturating_sub(NEWCOMERS)
        .clamp(1, MAX_CONNECTIONS);
    Budget {
        limit,
        connections,
        reserve,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_follows_the_limit_and_keeps_the_reserve() {
        // A limit of 256 with 40 open (BPF): 216 free, 64 kept, 3 for newcomers.
        assert_eq!(
            budget(256, 40),
            Budget {
                limit: 256,
                connections: 149,
                reserve: 64
            }
        );
        assert_eq!(budget(524_288, 40).connections, MAX_CONNECTIONS);
        assert_eq!(budget(1024, 40).connections, 1024 - 40 - 64 - 3);
        // Tiny limits: half of what is free stays for collections.
        assert_eq!(budget(64, 40).reserve, 12);
        assert_eq!(budget(64, 40).connections, 9);
        assert_eq!(budget(16, 40).connections, 1);
    }
}
