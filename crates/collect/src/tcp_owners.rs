//! Who owns a TCP socket of this kernel, by its two ends: asked of the kernel one socket at a
//! time by sock_diag, or, where netlink is not allowed, from one read of each TCP table that
//! has such a socket (a walk of every socket of the host). `tasksnap serve` tells its
//! loopback clients apart by it.

use std::net::SocketAddr;
use std::path::PathBuf;

use tasksnap_procfs::net;

/// Looks up the owners of TCP sockets ([`Host::tcp_owners`](crate::Host::tcp_owners)).
#[derive(Debug, Clone)]
pub struct TcpOwners {
    /// The /proc whose `net/tcp` and `net/tcp6` are read when sock_diag cannot be asked.
    proc_root: PathBuf,
}

impl TcpOwners {
    /// The running kernel's sockets (the ones this process accepted).
    pub(crate) fn of_this_kernel() -> TcpOwners {
        TcpOwners {
            proc_root: PathBuf::from(tasksnap_sys::roots::PROC),
        }
    }

    /// The uid owning each socket, in order (`None`: not found). A socket is named by its
    /// own address and the address it is connected to: a client of this process's listener
    /// by the client's address and the listener's.
    pub fn owners(&self, sockets: &[(SocketAddr, SocketAddr)]) -> Vec<Option<u32>> {
        if sockets.is_empty() {
            return Vec::new();
        }
        if let Some(diag) = net::SockDiag::open() {
            return sockets
                .iter()
                .map(|&(own, remote)| diag.socket_owner(own, remote))
                .collect();
        }
        let mut owners = vec![None; sockets.len()];
        for (v6, table) in [(false, "net/tcp"), (true, "net/tcp6")] {
            if !sockets.iter().any(|(own, _)| own.is_ipv6() == v6) {
                continue;
            }
            let text = std::fs::read(self.proc_root.join(table)).unwrap_or_default();
            for (owner, &(own, remote)) in owners.iter_mut().zip(sockets) {
                if own.is_ipv6() == v6 {
                    *owner = net::socket_uid(&text, own, remote);
                }
            }
        }
        owners
    }
}
