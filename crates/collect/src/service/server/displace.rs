//! Which connection goes when a newcomer needs a place and every place is taken: the query
//! socket's slots and `tasksnap serve`'s HTTP connections choose alike.
//!
//! 1. one of the peer holding the most connections (a peer is whatever the caller groups
//!    connections by: a uid on the query socket; an address and the owner of a loopback
//!    client's socket over HTTP), so that a flood from one client costs that client;
//! 2. of that peer's, one that never sent a request before one that did (a well-behaved
//!    client sends its request as soon as it connects);
//! 3. the one silent longest (since it was accepted or since its last request).

use std::collections::HashMap;
use std::time::Instant;

/// What the choice looks at of one connection held by a peer `P`.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<P> {
    /// Its id.
    pub id: u64,
    /// Its peer.
    pub peer: P,
    /// Requests it has sent.
    pub requests: u64,
    /// Accepted, or its last request.
    pub since: Instant,
}

/// The connection to drop for a newcomer (see the module header); `None` when there is none.
pub fn victim<P: Copy + Eq + std::hash::Hash>(cands: &[Candidate<P>]) -> Option<u64> {
    let mut per_peer: HashMap<P, usize> = HashMap::new();
    for c in cands {
        *per_peer.entry(c.peer).or_default() += 1;
    }
    cands
        .iter()
        .max_by_key(|c| {
            (
                per_peer.get(&c.peer).copied().unwrap_or(0),
                c.requests == 0,
                std::cmp::Reverse(c.since),
                std::cmp::Reverse(c.id),
            )
        })
        .map(|c| c.id)
}

#[cfg(test)]
mod tests {
    use crate::service::server::displace::*;
    use std::time::Duration;

    /// An address and the owner of its socket, as the exporter groups its clients.
    type Peer = (&'static str, Option<u32>);

    #[test]
    fn the_heaviest_peer_loses_its_longest_silent_connection() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let lo = |uid| ("127.0.0.1", Some(uid));
        let c = |id, peer: Peer, requests, since| Candidate {
            id,
            peer,
            requests,
            since,
        };
        // Prometheus (uid 107): one connection, silent longest of all.
        // A local client (uid 1000): three, one of which scraped.
        let cands = [
            c(1, lo(107), 5, at(0)),
            c(2, lo(1000), 0, at(3)),
            c(3, lo(1000), 0, at(2)),
            c(4, lo(1000), 1, at(1)),
        ];
        assert_eq!(victim(&cands), Some(3));
        // Same peer for everyone (uid unknown): one that never asked, silent longest.
        let same = ("127.0.0.1", None);
        let cands = [
            c(1, same, 5, at(0)),
            c(2, same, 0, at(3)),
            c(3, same, 0, at(2)),
        ];
        assert_eq!(victim(&cands), Some(3));
        // Only scrapers: the one silent longest.
        let cands = [c(1, same, 5, at(4)), c(2, same, 1, at(3))];
        assert_eq!(victim(&cands), Some(2));
        assert_eq!(victim::<Peer>(&[]), None);
    }
}
