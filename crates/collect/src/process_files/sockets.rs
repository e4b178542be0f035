//! A process's sockets (and every process's, for the module-level `net_connections`),
//! matched by inode against the socket tables of the caller's network namespace; unix
//! sockets asked of the kernel over sock_diag when the roots are this kernel's.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;

use tasksnap_procfs::proc_files::{self, UnixRow};
use tasksnap_procfs::unix_diag;
use tasksnap_sys as sys;

use super::process::*;

/// A socket table of `ROOT/net`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketTable {
    /// `net/tcp`.
    Tcp4,
    /// `net/tcp6`.
    Tcp6,
    /// `net/udp`.
    Udp4,
    /// `net/udp6`.
    Udp6,
    /// `net/unix`.
    Unix,
}

impl SocketTable {
    /// The tables psutil reads for a `kind` of `net_connections` (`inet`, `tcp4`, `all`...),
    /// in its order; `None` for a kind psutil refuses.
    pub fn for_kind(kind: &str) -> Option<&'static [SocketTable]> {
        use SocketTable::*;
        Some(match kind {
            "all" => &[Tcp4, Tcp6, Udp4, Udp6, Unix],
            "tcp" => &[Tcp4, Tcp6],
            "tcp4" => &[Tcp4],
            "tcp6" => &[Tcp6],
            "udp" => &[Udp4, Udp6],
            "udp4" => &[Udp4],
            "udp6" => &[Udp6],
            "unix" => &[Unix],
            "inet" => &[Tcp4, Tcp6, Udp4, Udp6],
            "inet4" => &[Tcp4, Udp4],
            "inet6" => &[Tcp6, Udp6],
            _ => return None,
        })
    }

    /// Every kind psutil accepts, in its order (its error message lists them so).
    pub const KINDS: [&'static str; 11] = [
        "all", "tcp", "tcp4", "udp", "udp4", "inet", "inet4", "inet6", "tcp6", "udp6", "unix",
    ];

    fn file(self) -> &'static str {
        match self {
            SocketTable::Tcp4 => "net/tcp",
            SocketTable::Tcp6 => "net/tcp6",
            SocketTable::Udp4 => "net/udp",
            SocketTable::Udp6 => "net/udp6",
            SocketTable::Unix => "net/unix",
        }
    }

    /// `(AF_*, SOCK_*)`; a unix socket's type comes from its row.
    fn family_type(self) -> (i32, i32) {
        match self {
            SocketTable::Tcp4 => (libc::AF_INET, libc::SOCK_STREAM),
            SocketTable::Tcp6 => (libc::AF_INET6, libc::SOCK_STREAM),
            SocketTable::Udp4 => (libc::AF_INET, libc::SOCK_DGRAM),
            SocketTable::Udp6 => (libc::AF_INET6, libc::SOCK_DGRAM),
            SocketTable::Unix => (libc::AF_UNIX, 0),
        }
    }
}

/// One end of a connection.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// No address (psutil's empty tuple; a unix socket's remote end, `""`).
    None,
    /// An IP (as psutil prints it) and a port.
    Inet(String, u16),
    /// A unix socket's path (empty when unnamed).
    Unix(Vec<u8>),
}

/// A socket: psutil's `pconn` (and `sconn`, with `pid`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Connection {
    /// The descriptor; -1 when no process seen owns it.
    pub fd: i32,
    /// `AF_INET`, `AF_INET6`, `AF_UNIX`.
    pub family: i32,
    /// `SOCK_STREAM`, `SOCK_DGRAM`, `SOCK_SEQPACKET`...
    pub kind: i32,
    /// Local end.
    pub local: Endpoint,
    /// Remote end.
    pub remote: Endpoint,
    /// psutil's status (`LISTEN`, `ESTABLISHED`..., `NONE` for all but TCP).
    pub status: &'static str,
    /// The process that holds it (system-wide listing), when one seen does.
    pub pid: Option<i32>,
}

impl ProcessFiles {
    /// Socket inodes of `pid`: inode -> (pid, fd) in descriptor order.
    pub(super) fn socket_inodes(
        &self,
        pid: i32,
        into: &mut HashMap<u64, Vec<(i32, i32)>>,
    ) -> Result<(), FilesError> {
        let (links, _) = self.fd_links(pid)?;
        for (fd, link) in links {
            if let Some(inode) = proc_files::socket_inode(&link) {
                into.entry(inode).or_default().push((pid, fd));
            }
        }
        Ok(())
    }

    /// The sockets of `pid` in `tables` (psutil's `Process.net_connections(kind)`).
    pub fn connections(
        &self,
        pid: i32,
        tables: &[SocketTable],
    ) -> Result<Vec<Connection>, FilesError> {
        let mut inodes = HashMap::new();
        self.socket_inodes(pid, &mut inodes)?;
        if inodes.is_empty() {
            return Ok(Vec::new());
        }
        let out = self.match_tables(tables, &inodes, Some(pid))?;
        self.still_there(pid)?;
        Ok(out)
    }

    /// Every socket of the host's tables (psutil's `net_connections(kind)`): each with the
    /// process and descriptor that hold it, when a process the caller may look into does.
    pub fn all_connections(&self, tables: &[SocketTable]) -> Result<Vec<Connection>, FilesError> {
        let mut inodes = HashMap::new();
        let dir = std::fs::read_dir(&self.proc_root).map_err(|error| FilesError::Io {
            what: self.proc_root.display().to_string(),
            error,
        })?;
        for entry in dir.flatten() {
            let Some(pid) = std::str::from_utf8(entry.file_name().as_bytes())
                .ok()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            match self.socket_inodes(pid, &mut inodes) {
                // Running out of descriptors or memory would shorten the listing silently:
                // an error instead.
                Err(FilesError::Io { error, what }) if sys::is_exhaustion(&error) => {
                    return Err(FilesError::Io { what, error });
                }
                // Gone or not ours to look into: its sockets are listed without a holder
                // (psutil's).
                _ => {}
            }
        }
        self.match_tables(tables, &inodes, None)
    }

    pub(super) fn match_tables(
        &self,
        tables: &[SocketTable],
        inodes: &HashMap<u64, Vec<(i32, i32)>>,
        only: Option<i32>,
    ) -> Result<Vec<Connection>, FilesError> {
        let mut out: Vec<Connection> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut push = |c: Connection| {
            if seen.insert(c.clone()) {
                out.push(c);
            }
        };
        for &table in tables {
            let (family, kind) = table.family_type();
            if table == SocketTable::Unix {
                for row in self.unix_rows()? {
                    let holders = inodes.get(&row.inode).map(Vec::as_slice).unwrap_or(&[]);
                    // A unix socket may be held by many descriptors: one row for each.
                    let holders: Vec<(Option<i32>, i32)> = if holders.is_empty() {
                        vec![(None, -1)]
                    } else {
                        holders.iter().map(|&(p, f)| (Some(p), f)).collect()
                    };
                    for (pid, fd) in holders {
                        if only.is_some() && pid != only {
                            continue;
                        }
                        push(Connection {
                            fd,
                            family,
                            kind: row.kind as i32,
                            local: Endpoint::Unix(row.path.clone()),
                            remote: Endpoint::Unix(Vec::new()),
                            status: "NONE",
                            pid: if only.is_some() { None } else { pid },
                        });
                    }
                }
                continue;
            }
            let path = self.proc_root.join(table.file());
            let data = match sys::read_small_file(&path) {
                Ok(d) => d,
                // No IPv6 here: psutil skips its tables.
                Err(e)
                    if io_kind(&e) == Some(libc::ENOENT)
                        && matches!(table, SocketTable::Tcp6 | SocketTable::Udp6) =>
                {
                    continue
                }
                Err(error) => {
                    return Err(FilesError::Io {
                        what: path.display().to_string(),
                        error,
                    })
                }
            };
            {
                for row in proc_files::parse_inet_table(&data) {
                    // psutil takes the first holder of an inet socket only.
                    let (pid, fd) = match inodes.get(&row.inode).and_then(|h| h.first()) {
                        Some(&(p, f)) => (Some(p), f),
                        None => (None, -1),
                    };
                    if only.is_some() && pid != only {
                        continue;
                    }
                    let status = if kind == libc::SOCK_STREAM {
                        // psutil has no name for another state (it would raise).
                        let Some(s) = proc_files::tcp_status(row.state) else {
                            continue;
                        };
                        s
                    } else {
                        "NONE"
                    };
                    let end = |a: Option<(std::net::IpAddr, u16)>| match a {
                        Some((ip, port)) => Endpoint::Inet(proc_files::ip_text(ip), port),
                        None => Endpoint::None,
                    };
                    push(Connection {
                        fd,
                        family,
                        kind,
                        local: end(row.local),
                        remote: end(row.remote),
                        status,
                        pid: if only.is_some() { None } else { pid },
                    });
                }
            }
        }
        Ok(out)
    }

    /// The unix sockets of the caller's network namespace: asked of the kernel (sock_diag)
    /// when the roots are this kernel's; else, or when sock_diag is not there (no netlink
    /// allowed, no unix_diag in the kernel, an answer that does not hold together), the rows
    /// of `ROOT/net/unix` its parser can trust (see [`proc_files::parse_unix_table`]).
    pub(super) fn unix_rows(&self) -> Result<Vec<UnixRow>, FilesError> {
        if self.unix_by_diag {
            // A dump the table's changes interrupted is asked again, once.
            for _ in 0..2 {
                match unix_diag::unix_sockets() {
                    Ok(rows) => return Ok(rows),
                    Err(unix_diag::UnixDiagError::Interrupted) => continue,
                    Err(_) => break,
                }
            }
        }
        let path = self.proc_root.join(SocketTable::Unix.file());
        let data = sys::read_small_file(&path).map_err(|error| FilesError::Io {
            what: path.display().to_string(),
            error,
        })?;
        Ok(proc_files::parse_unix_table(&data))
    }
}
