//! Turning numbers into the names ps prints: user and group names ([`Names`]: cached, one NSS
//! lookup per id, from tasksnap-sys's `users`) and terminal names (procps's `dev_to_tty` rules: /proc/tty/drivers, then the task's
//! fd/2, then the well-known majors, then fd/255; each candidate checked against /dev). The
//! driver table, the task links and the /dev root are the [`tasksnap_collect::Host`]'s
//! ([`HostFacts`]).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;

use tasksnap_collect::TaskLinks;

/// Cached uid/gid -> name lookups: the one NSS lookup, in tasksnap-sys.
pub use tasksnap_sys::users::Names;

/// glibc's major() of a 32-bit `tty_nr` (the kernel's `new_encode_dev` layout).
pub fn dev_major(dev: u32) -> u32 {
    (dev >> 8) & 0xfff
}

/// glibc's minor() of a 32-bit `tty_nr`.
pub fn dev_minor(dev: u32) -> u32 {
    (dev & 0xff) | ((dev >> 12) & 0xfff00)
}

use tasksnap_collect::TtyDriver as Driver;

/// What ps reads of the machine while it prints, taken from the [`tasksnap_collect::Host`]
/// it opened: the tty driver table, the task links and the /dev root (terminal names), each
/// CPU's NUMA node. Cheap to clone: each formatting thread's [`Ttys`] holds one.
#[derive(Debug, Clone)]
pub struct HostFacts {
    drivers: Arc<Vec<Driver>>,
    links: TaskLinks,
    dev_root: PathBuf,
    /// Each CPU's NUMA node, by CPU number (empty unless asked for).
    pub cpu_nodes: Arc<Vec<i32>>,
}

impl HostFacts {
    /// The host's figures; the NUMA map only with `numa` (it reads sysfs).
    pub fn of(host: &tasksnap_collect::Host, numa: bool) -> HostFacts {
        HostFacts {
            drivers: Arc::new(host.tty_drivers()),
            links: host.task_links(),
            dev_root: host.dev_root().to_path_buf(),
            cpu_nodes: Arc::new(if numa { host.cpu_nodes() } else { Vec::new() }),
        }
    }
}

/// Terminal names, cached by device number.
#[derive(Debug)]
pub struct Ttys {
    machine: HostFacts,
    cache: HashMap<u32, Option<String>>,
}

impl Ttys {
    /// A namer with the host's driver table, task links and /dev root.
    pub fn new(machine: HostFacts) -> Ttys {
        Ttys {
            machine,
            cache: HashMap::new(),
        }
    }

    fn load_drivers(&self) -> &[Driver] {
        &self.machine.drivers
    }

    fn is_dev(&self, path: &str, major: u32, minor: u32) -> bool {
        let rel = path.strip_prefix("/dev/").unwrap_or(path);
        match std::fs::metadata(self.machine.dev_root.join(rel)) {
            Ok(m) => {
                let rdev = m.rdev();
                let (ma, mi) = (libc::major(rdev), libc::minor(rdev));
                ma == major && mi == minor
            }
            Err(_) => false,
        }
    }

    fn driver_name(&mut self, major: u32, minor: u32) -> Option<String> {
        let hit = self
            .load_drivers()
            .iter()
            .find(|d| d.major == major && d.minor_first <= minor && d.minor_last >= minor)
            .map(|d| (d.name.clone(), d.devfs))?;
        let (name, devfs) = hit;
        let a = format!("/dev/{name}{minor}");
        if self.is_dev(&a, major, minor) {
            return Some(a);
        }
        let b = format!("/dev/{name}/{minor}");
        if self.is_dev(&b, major, minor) {
            return Some(b);
        }
        if devfs {
            return None;
        }
        let c = format!("/dev/{name}");
        self.is_dev(&c, major, minor).then_some(c)
    }

    fn guess_name(&self, major: u32, minor: u32) -> Option<String> {
        let p = match major {
            3 => {
                if minor > 255 {
                    return None;
                }
                let t0 = b"pqrstuvwxyzabcde"[(minor >> 4) as usize] as char;
                let t1 = b"0123456789abcdef"[(minor & 15) as usize] as char;
                format!("/dev/tty{t0}{t1}")
            }
            4 if minor < 64 => format!("/dev/tty{minor}"),
            4 => format!("/dev/ttyS{}", minor - 64),
            136..=143 => format!("/dev/pts/{}", minor + (major - 136) * 256),
            166 => format!("/dev/ttyACM{minor}"),
            188 => format!("/dev/ttyUSB{minor}"),
            _ => return None,
        };
        self.is_dev(&p, major, minor).then_some(p)
    }

    fn link_name(&self, major: u32, minor: u32, pid: i32, fd: &str) -> Option<String> {
        let target = self.machine.links.link(pid, fd)?;
        let s = target.to_str()?.to_string();
        if s.is_empty() || s.len() >= 63 {
            return None;
        }
        self.is_dev(&s, major, minor).then_some(s)
    }

    /// The name ps prints for `tty_nr` of task `pid` ("pts/3", "tty1", "?").
    pub fn name(&mut self, tty_nr: u32, pid: i32) -> String {
        self.abbreviated(tty_nr, pid, false)
    }

    /// The name `tty4` prints ("3" for pts/3, "1" for tty1, "S0" for ttyS0, "?"): procps's
    /// TTY_NUMBER, `dev_to_tty` with ABBREV_TTY and ABBREV_PTS as well.
    pub fn number(&mut self, tty_nr: u32, pid: i32) -> String {
        self.abbreviated(tty_nr, pid, true)
    }

    fn abbreviated(&mut self, tty_nr: u32, pid: i32, numbers: bool) -> String {
        if tty_nr == 0 {
            return "?".to_string();
        }
        let (major, minor) = (dev_major(tty_nr), dev_minor(tty_nr));
        let found = match self.cache.get(&tty_nr) {
            Some(v) => v.clone(),
            None => {
                let v = self.driver_name(major, minor);
                if v.is_some() {
                    self.cache.insert(tty_nr, v.clone());
                }
                v
            }
        };
        let found = found
            .or_else(|| self.link_name(major, minor, pid, "fd/2"))
            .or_else(|| {
                let g = self.guess_name(major, minor);
                if g.is_some() {
                    self.cache.insert(tty_nr, g.clone());
                }
                g
            })
            .or_else(|| self.link_name(major, minor, pid, "fd/255"));
        match found {
            None => "?".to_string(),
            Some(p) => {
                let mut short = match p.strip_prefix("/dev/") {
                    Some(s) if !s.is_empty() => s,
                    _ => &p,
                };
                if numbers {
                    for prefix in ["tty", "pts/"] {
                        if let Some(rest) = short.strip_prefix(prefix).filter(|r| !r.is_empty()) {
                            short = rest;
                        }
                    }
                }
                short
                    .bytes()
                    .take(64)
                    .map(|c| if c <= b' ' || c > 126 { '?' } else { c as char })
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ps::names::*;

    #[test]
    fn splits_device_numbers_like_glibc() {
        // pts/0 is 136:0 -> tty_nr 34816; pts/300 is 137:44.
        assert_eq!((dev_major(34816), dev_minor(34816)), (136, 0));
        let pts300 = (137 << 8) | 44;
        assert_eq!((dev_major(pts300), dev_minor(pts300)), (137, 44));
        // A minor above 255 lives in bits 20-31.
        let big = (4 << 8) | (0x123 & 0xff) | ((0x123 & !0xff) << 12);
        assert_eq!((dev_major(big), dev_minor(big)), (4, 0x123));
    }

    #[test]
    fn no_tty_is_a_question_mark() {
        let mut t = Ttys::new(HostFacts::of(&tasksnap_collect::Host::from_env(), false));
        assert_eq!(t.name(0, 1), "?");
    }

    #[test]
    fn root_has_a_name() {
        let mut n = Names::default();
        assert_eq!(n.user(0), Some(&b"root"[..]));
        assert_eq!(n.group(0), Some(&b"root"[..]));
        assert_eq!(n.user(3_999_999_999), None);
    }
}
