//! The connections `tasksnap serve` holds, and which one goes when a newcomer needs a place
//! and the cap ([`super::budget`]) is full.
//!
//! Refusing the newcomer (503) would hand the exporter to whoever opens connections first
//! and keeps them: one local client holding the cap's worth of silent connections got every
//! scrape refused. So at the cap the newcomer is served and an old connection goes, chosen as
//! the query socket chooses ([`connection_to_displace`]): one of the peer holding the most
//! connections (a peer is the client's address and, on loopback, where every client is
//! 127.0.0.1, the uid owning the client's socket: [`TcpOwners`]), one that never sent a
//! request before one that did (a scraper sends its request as soon as it connects), the one
//! silent longest.
//!
//! Silent connections end on their own too (the header-read timeout, see [`super::http`]);
//! this is what keeps the scrapes going in between.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tasksnap_collect::{connection_to_displace, ConnectionCandidate as Candidate, TcpOwners};
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
    owners: TcpOwners,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    conns: HashMap<u64, Entry>,
}

impl Conns {
    /// No connections; `owners` tells loopback clients' owners.
    pub fn new(owners: TcpOwners) -> Conns {
        Conns {
            owners,
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
        let cands: Vec<Candidate<Peer>> = inner
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
        let Some(id) = connection_to_displace(&cands) else {
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

    /// Fills in the owner of every loopback client's socket not looked up yet.
    fn look_up_owners(&self, inner: &mut Inner) {
        let pending: Vec<&mut Entry> = inner
            .conns
            .values_mut()
            .filter(|e| e.uid.is_none())
            .collect();
        if pending.is_empty() {
            return;
        }
        let sockets: Vec<(SocketAddr, SocketAddr)> = pending
            .iter()
            .map(|e| (e.peer_addr, e.local_addr))
            .collect();
        for (e, uid) in pending.into_iter().zip(self.owners.owners(&sockets)) {
            e.uid = Some(uid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_evicted_connection_is_told_once() {
        let conns = Conns::new(tasksnap_collect::Host::tcp_owners());
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
