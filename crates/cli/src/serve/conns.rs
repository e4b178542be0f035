//! The connections `tasksnap serve` holds, and which one goes when a newcomer needs a place
//! and the cap ([`super::budget`]) is full.
//!
//! Refusing the newcomer (503) would hand the exporter to whoever opens connections first
//! and keeps them: one local client holding the cap's worth of silent connections got every
//! scrape refused. So at the cap the newcomer is served and an old connection goes:
//!
//! 1. from the peer holding the most connections (a peer is the client's address and, on
//!    loopback, where every client is 127.0.0.1, the uid owning the client's socket, asked
//!    of the kernel by sock_diag), so that a flood from one client costs that client;
//! 2. of that peer's, one that never sent a request before one that did (a scraper sends
//!    its request as soon as it connects);
//! 3. the one silent longest (since it was accepted or since its last request).
//!
//! Silent connections end on their own too (the header-read timeout, see [`super::http`]);
//! this is what keeps the scrapes going in between.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::Notify;

/// Who is at the other end: the address, and the owner of a loopback client's socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Peer {
    ip: std::net::IpAddr,
    uid: Option<u32>,
}

#[derive(Debug)]
struct Entry {
    peer_addr: SocketAddr,
    local_addr: SocketAddr,
    /// The owner of a loopback client's socket, once looked up (`Some(None)`: not found).
    uid: Option<Option<u32>>,
    /// Accepted, or the last request.
    since: Instant,
    requests: u64,
    /// Told to go, not gone yet.
    leaving: bool,
    evict: Arc<Notify>,
}

impl Entry {
    fn peer(&self) -> Peer {
        Peer {
            ip: self.peer_addr.ip(),
            uid: self.uid.flatten(),
        }
    }
}

/// The connections being served.
#[derive(Debug)]
pub struct Conns {
    proc_root: PathBuf,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    conns: HashMap<u64, Entry>,
}

/// What the victim choice looks at of one connection (`P`: who holds it, [`Peer`] here, a
/// uid on the query socket).
#[derive(Debug, Clone, Copy)]
pub struct Candidate<P = Peer> {
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

impl Conns {
    /// No connections; `proc_root` is where the TCP tables are read.
    pub fn new(proc_root: PathBuf) -> Conns {
        Conns {
            proc_root,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing panics while holding it; the map is still whole if something did.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A connection accepted from `peer` on `local`: its id, and what tells it to go.
    pub fn add(&self, peer: SocketAddr, local: SocketAddr) -> (u64, Arc<Notify>) {
        // An IPv4 client of an IPv6 listener is an IPv4 peer.
        let peer = SocketAddr::new(peer.ip().to_canonical(), peer.port());
        let local = SocketAddr::new(local.ip().to_canonical(), local.port());
        let mut inner = self.lock();
        let id = inner.next;
        inner.next += 1;
        let evict = Arc::new(Notify::new());
        inner.conns.insert(
            id,
            Entry {
                peer_addr: peer,
                local_addr: local,
                uid: (!peer.ip().is_loopback()).then_some(None),
                since: Instant::now(),
                requests: 0,
                leaving: false,
                evict: evict.clone(),
            },
        );
        (id, evict)
    }

    /// Connection `id` sent a request.
    pub fn request(&self, id: u64) {
        if let Some(e) = self.lock().conns.get_mut(&id) {
            e.requests += 1;
            e.since = Instant::now();
        }
    }

    /// Connection `id` is closed.
    pub fn remove(&self, id: u64) {
        self.lock().conns.remove(&id);
    }

    /// Tells one connection to go (see the module header); false when none could be.
    pub fn evict_one(&self) -> bool {
        let mut inner = self.lock();
        self.look_up_owners(&mut inner);
        let cands: Vec<Candidate> = inner
            .conns
            .iter()
            .filter(|(_, e)| !e.leaving)
            .map(|(&id, e)| Candidate {
                id,
                peer: e.peer(),
                requests: e.requests,
                since: e.since,
            })
            .collect();
        let Some(id) = victim(&cands) else {
            return false;
        };
        match inner.conns.get_mut(&id) {
            Some(e) => {
                e.leaving = true;
                e.evict.notify_one();
                true
            }
            None => false,
        }
    }

    /// Fills in the owner of every loopback client's socket not looked up yet: asked of the
    /// kernel one socket at a time, or, where netlink is not allowed, from one read of each
    /// TCP table that has such a client (a walk of every socket of the host).
    fn look_up_owners(&self, inner: &mut Inner) {
        if !inner.conns.values().any(|e| e.uid.is_none()) {
            return;
        }
        if let Some(diag) = tasksnap_procfs::net::SockDiag::open() {
            for e in inner.conns.values_mut().filter(|e| e.uid.is_none()) {
                e.uid = Some(diag.socket_owner(e.peer_addr, e.local_addr));
            }
            return;
        }
        for (v6, table) in [(false, "net/tcp"), (true, "net/tcp6")] {
            let wanted = |e: &Entry| e.uid.is_none() && e.peer_addr.is_ipv6() == v6;
            if !inner.conns.values().any(wanted) {
                continue;
            }
            let text = std::fs::read(self.proc_root.join(table)).unwrap_or_default();
            for e in inner.conns.values_mut().filter(|e| wanted(e)) {
                e.uid = Some(tasksnap_procfs::net::socket_uid(
                    &text,
                    e.peer_addr,
                    e.local_addr,
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn peer(ip: &str, uid: Option<u32>) -> Peer {
        Peer {
            ip: ip.parse().expect("ip"),
            uid,
        }
    }

    #[test]
    fn the_heaviest_peer_loses_its_longest_silent_connection() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let lo = |uid| peer("127.0.0.1", Some(uid));
        let c = |id, peer, requests, since| Candidate {
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
        let same = peer("127.0.0.1", None);
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

    #[test]
    fn an_evicted_connection_is_told_once() {
        let conns = Conns::new(PathBuf::from("/nonexistent"));
        let a: SocketAddr = "10.0.0.1:5000".parse().expect("addr");
        let l: SocketAddr = "10.0.0.2:8275".parse().expect("addr");
        let (first, _) = conns.add(a, l);
        let (second, _) = conns.add(a, l);
        conns.request(second);
        assert!(conns.evict_one());
        assert!(conns.lock().conns[&first].leaving);
        assert!(conns.evict_one());
        assert!(conns.lock().conns[&second].leaving);
        assert!(!conns.evict_one());
        conns.remove(first);
        conns.remove(second);
        assert!(conns.lock().conns.is_empty());
    }
}
