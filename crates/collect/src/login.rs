//! What systemd's login library says about a task: its unit, user unit, slice, login session,
//! owner uid, machine and seat (`ps -o unit,uunit,slice,lsession,ouid,machine,seat`).
//!
//! procps-ng 4.0.2 asks libsystemd (`sd_pid_get_unit()` and friends, `sd_session_get_seat()`);
//! tasksnap derives the same answers itself, from the task's cgroup text (the `cgroup` group,
//! which both backends give) and from systemd's runtime files, following the rules of
//! systemd 252 (the libsystemd Debian 12's procps links): src/basic/cgroup-util.c
//! (`cg_pid_get_path`, `cg_path_get_unit`/`_user_unit`/`_slice`/`_session`/`_owner_uid`/
//! `_machine_name`), src/basic/unit-name.c (`unit_name_is_valid`) and
//! src/libsystemd/sd-login/sd-login.c. In short:
//!
//! - The path is the one of systemd's own hierarchy: the cgroup v2 line (`0::PATH`) when
//!   cgroup2 is mounted on /sys/fs/cgroup or (hybrid layout) on /sys/fs/cgroup/unified, the
//!   v1 `name=systemd` line otherwise (`cg_unified_cached()`'s statfs tests). It is taken
//!   relative to pid 1's path without its `/init.scope` (`cg_shift_path()`).
//! - The slice is the last of the leading `*.slice` components (`-.slice` when there is
//!   none), the unit the first component after them; the user unit is the unit after a
//!   `user@UID.service` or `session-ID.scope` that follows the slices; the session is the ID
//!   of a `session-ID.scope` unit; the owner the UID of a `user-UID.slice` slice.
//! - The machine is where /run/systemd/machines/unit:UNIT points; the seat the `SEAT=` of
//!   /run/systemd/sessions/SESSION.
//!
//! Whatever libsystemd would fail on prints `-`, as procps prints it.
//!
//! The answers are the `login` attribute group (`Extra::login`, `tasksnap_model::Login`):
//! the procfs and BPF collectors and the replay call [`Login::fill`] after their pass, from
//! the cgroup text they read (read for `login` alone too, then dropped), so no front end
//! reads systemd's files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tasksnap_sys::roots;

/// Which line of /proc/PID/cgroup holds systemd's own hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hierarchy {
    /// The cgroup v2 line, `0::PATH` (unified and hybrid layouts).
    Unified,
    /// The v1 line whose controllers include `name=systemd` (legacy layout).
    NameSystemd,
}

/// The layout of the cgroup mounts under `cgroup_fs` (normally /sys/fs/cgroup) as systemd
/// tells it (`cg_unified_cached()`): cgroup2 there, or (tmpfs there) cgroup2 on `unified`, or
/// cgroup2 on `systemd` (the v232 hybrid) is [`Hierarchy::Unified`]; anything else on
/// `systemd` is [`Hierarchy::NameSystemd`]. `None` when systemd would give up (nothing or an
/// unknown file system there, no `systemd` directory): then every answer is `-`.
pub fn detect_hierarchy(cgroup_fs: &Path) -> Option<Hierarchy> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
    let magic = |p: &Path| -> Option<i64> {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).ok()?;
        let mut st = std::mem::MaybeUninit::<libc::statfs>::uninit();
        // SAFETY: `c` is NUL-terminated and `st` is writable memory sized for `statfs`.
        let rc = unsafe { libc::statfs(c.as_ptr(), st.as_mut_ptr()) };
        if rc != 0 {
            return None;
        }
        // SAFETY: statfs returned 0, so it filled the structure.
        let st = unsafe { st.assume_init() };
        // f_type is __fsword_t: i64 on x86-64, narrower elsewhere.
        #[allow(clippy::unnecessary_cast)]
        Some(st.f_type as i64)
    };
    match magic(cgroup_fs)? {
        CGROUP2_SUPER_MAGIC => Some(Hierarchy::Unified),
        TMPFS_MAGIC => {
            if magic(&cgroup_fs.join("unified")) == Some(CGROUP2_SUPER_MAGIC) {
                return Some(Hierarchy::Unified);
            }
            match magic(&cgroup_fs.join("systemd"))? {
                CGROUP2_SUPER_MAGIC => Some(Hierarchy::Unified),
                _ => Some(Hierarchy::NameSystemd),
            }
        }
        _ => None,
    }
}

pub use tasksnap_model::login::What;

/// The sd-login answers for one run: the layout, pid 1's path and the runtime files read
/// once each.
#[derive(Debug)]
pub struct Login {
    hierarchy: Option<Hierarchy>,
    proc_root: PathBuf,
    run_dir: PathBuf,
    /// Pid 1's path, `/init.scope` cut off (read on first use).
    root: Option<Option<Vec<u8>>>,
    seats: HashMap<Vec<u8>, Option<Vec<u8>>>,
    machines: HashMap<Vec<u8>, Option<Vec<u8>>>,
}

impl Login {
    /// The host's: /sys/fs/cgroup's layout, pid 1 of `proc_root`, /run/systemd.
    pub fn system(proc_root: &Path) -> Login {
        Login::new(
            detect_hierarchy(&Path::new(roots::SYS).join("fs/cgroup")),
            proc_root,
            &Path::new(roots::RUN).join("systemd"),
        )
    }

    /// With the layout given, pid 1 read from `proc_root` and the runtime files from
    /// `run_dir` (normally /run/systemd: `sessions/ID`, `machines/unit:UNIT`).
    pub fn new(hierarchy: Option<Hierarchy>, proc_root: &Path, run_dir: &Path) -> Login {
        Login {
            hierarchy,
            proc_root: proc_root.to_path_buf(),
            run_dir: run_dir.to_path_buf(),
            root: None,
            seats: HashMap::new(),
            machines: HashMap::new(),
        }
    }

    fn root(&mut self) -> Option<&[u8]> {
        if self.root.is_none() {
            let pid1 = std::fs::read(self.proc_root.join("1/cgroup")).ok();
            self.root = Some(
                pid1.zip(self.hierarchy)
                    .and_then(|(text, h)| systemd_path(&text, h).map(root_of)),
            );
        }
        self.root.as_ref().and_then(|r| r.as_deref())
    }

    /// What procps prints in the column for `what` of a task whose /proc/PID/cgroup text is
    /// `cgroup` (`None`: not read): `-` where libsystemd would fail.
    pub fn text(&mut self, cgroup: Option<&[u8]>, what: What) -> Vec<u8> {
        cgroup
            .map(|c| self.answers(c))
            .and_then(|a| a.text(what).map(|t| t.into_owned()))
            .unwrap_or_else(|| b"-".to_vec())
    }

    /// Every answer for a task whose /proc/PID/cgroup text is `cgroup`.
    pub fn answers(&mut self, cgroup: &[u8]) -> tasksnap_model::Login {
        let Some(path) = self.path(cgroup) else {
            return tasksnap_model::Login::default();
        };
        let unit = unit(&path);
        let session = session(&path);
        tasksnap_model::Login {
            machine: unit.as_deref().and_then(|u| self.machine(u)),
            seat: session.as_deref().and_then(|s| self.seat(s)),
            user_unit: user_unit(&path),
            slice: slice(&path),
            owner_uid: owner_uid(&path),
            unit,
            session,
        }
    }

    /// The `login` group of every task that has its cgroup read (`Extra::login`); then
    /// the cgroup dropped again unless `keep_cgroup` (it was read for this alone).
    pub fn fill(&mut self, tasks: &mut [tasksnap_model::Task], keep_cgroup: bool) {
        for t in tasks {
            let Some(answers) = t.cgroup.as_deref().map(|c| self.answers(c.raw())) else {
                continue;
            };
            t.extra_mut().login = Some(Box::new(answers));
            if !keep_cgroup {
                t.cgroup = None;
            }
        }
    }

    /// systemd's path of a task (`cg_pid_get_path()` then `cg_shift_path()`).
    fn path(&mut self, cgroup: &[u8]) -> Option<Vec<u8>> {
        let full = systemd_path(cgroup, self.hierarchy?)?;
        Some(shift(&full, self.root()?).to_vec())
    }

    /// Where /run/systemd/machines/unit:UNIT points (`sd_pid_get_machine_name()`).
    fn machine(&mut self, unit: &[u8]) -> Option<Vec<u8>> {
        let dir = self.run_dir.join("machines");
        self.machines
            .entry(unit.to_vec())
            .or_insert_with_key(|u| {
                let link = entry(&dir, &[&b"unit:"[..], u].concat())?;
                std::fs::read_link(link)
                    .ok()
                    .map(|t| t.into_os_string().into_encoded_bytes())
            })
            .clone()
    }

    /// The `SEAT=` of /run/systemd/sessions/SESSION (`sd_session_get_seat()`).
    fn seat(&mut self, id: &[u8]) -> Option<Vec<u8>> {
        let dir = self.run_dir.join("sessions");
        self.seats
            .entry(id.to_vec())
            .or_insert_with_key(|id| {
                let text = std::fs::read(entry(&dir, id)?).ok()?;
                env_value(&text, b"SEAT").filter(|v| !v.is_empty())
            })
            .clone()
    }
}

/// The file `name` in `dir`; `None` for a name that would leave it (the names here are unit
/// names and session ids, which have no `/`, but they come from cgroup paths).
fn entry(dir: &Path, name: &[u8]) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    (!name.contains(&b'/') && name != b".." && !name.is_empty())
        .then(|| dir.join(std::ffi::OsStr::from_bytes(name)))
}

/// The path of systemd's hierarchy in the text of /proc/PID/cgroup (`cg_pid_get_path()`):
/// the first line that is the cgroup v2 one (`0:` then anything up to a `:`) or names
/// `name=systemd` among its comma-separated controllers; a zombie's ` (deleted)` suffix cut
/// off. Lines end at `\n`, `\r` or NUL, as systemd's `read_line()` has them.
pub fn systemd_path(text: &[u8], h: Hierarchy) -> Option<Vec<u8>> {
    for line in text.split(|&c| matches!(c, b'\n' | b'\r' | 0)) {
        let path = match h {
            Hierarchy::Unified => {
                let Some(rest) = line.strip_prefix(b"0:") else {
                    continue;
                };
                let Some(colon) = rest.iter().position(|&c| c == b':') else {
                    continue;
                };
                &rest[colon + 1..]
            }
            Hierarchy::NameSystemd => {
                let Some(first) = line.iter().position(|&c| c == b':') else {
                    continue;
                };
                let rest = &line[first + 1..];
                let Some(second) = rest.iter().position(|&c| c == b':') else {
                    continue;
                };
                if !rest[..second]
                    .split(|&c| c == b',')
                    .any(|w| w == b"name=systemd")
                {
                    continue;
                }
                &rest[second + 1..]
            }
        };
        let path = path.strip_suffix(b" (deleted)").unwrap_or(path);
        return Some(path.to_vec());
    }
    None
}

/// The root all paths are taken relative to (`cg_get_root_path()`): pid 1's path without a
/// final `/init.scope` (or the older `/system.slice`, `/system`).
fn root_of(mut pid1: Vec<u8>) -> Vec<u8> {
    for tail in [&b"/init.scope"[..], b"/system.slice", b"/system"] {
        if pid1.ends_with(tail) {
            pid1.truncate(pid1.len() - tail.len());
            break;
        }
    }
    pid1
}

/// One step of [`first_component`].
enum Step<'a> {
    /// No component left.
    End,
    /// A component and the rest of the path after it.
    Part(&'a [u8], &'a [u8]),
    /// A component longer than NAME_MAX (an error to systemd).
    TooLong,
}

/// The components of a path one at a time, as systemd's `path_find_first_component()`
/// gives them: slashes and `.` components skipped.
fn first_component(p: &[u8]) -> Step<'_> {
    let mut at = 0;
    loop {
        while p.get(at) == Some(&b'/') {
            at += 1;
        }
        // A "." component: skipped.
        if p.get(at) == Some(&b'.') && matches!(p.get(at + 1), None | Some(b'/')) {
            at += 1;
            continue;
        }
        break;
    }
    let rest = &p[at..];
    if rest.is_empty() {
        return Step::End;
    }
    let len = rest.iter().position(|&c| c == b'/').unwrap_or(rest.len());
    if len > 255 {
        return Step::TooLong;
    }
    Step::Part(&rest[..len], &rest[len..])
}

/// `cg_shift_path()`: `path` relative to `root` when `root` is a leading run of its
/// components (systemd's `path_startswith()`), with the `/` before the rest kept; `path`
/// itself otherwise.
pub fn shift<'a>(path: &'a [u8], root: &[u8]) -> &'a [u8] {
    // path_startswith(): both absolute or both relative.
    if (path.first() == Some(&b'/')) != (root.first() == Some(&b'/')) {
        return path;
    }
    let (mut p, mut r) = (path, root);
    let rest = loop {
        match (first_component(p), first_component(r)) {
            // The root ran out: the rest starts at the path's next component (or its end).
            (Step::Part(name, _), Step::End) => {
                break name.as_ptr() as usize - path.as_ptr() as usize;
            }
            (Step::End, Step::End) => break path.len(),
            (Step::Part(a, pa), Step::Part(b, rb)) if a == b => {
                p = pa;
                r = rb;
            }
            _ => return path,
        }
    };
    // The rest with the byte before it (a '/'), when the prefix took any byte at all.
    if rest > 0 {
        &path[rest - 1..]
    } else {
        path
    }
}

/// The unit types of systemd 252 (`unit_type_table`).
const UNIT_TYPES: [&[u8]; 11] = [
    b"service",
    b"mount",
    b"swap",
    b"socket",
    b"target",
    b"device",
    b"automount",
    b"timer",
    b"path",
    b"slice",
    b"scope",
];

/// `unit_name_is_valid()`: shorter than 256 bytes, a known type after the last `.` (which
/// is not the first byte), only `[A-Za-z0-9:_.\\@-]` before it, and no `@` first. `plain`
/// accepts a name without `@`; `instance` one with an `@` and something between it and the
/// type.
fn unit_name_is_valid(n: &[u8], plain: bool, instance: bool) -> bool {
    if n.is_empty() || n.len() >= 256 {
        return false;
    }
    let Some(dot) = n.iter().rposition(|&c| c == b'.') else {
        return false;
    };
    if dot == 0 || !UNIT_TYPES.contains(&&n[dot + 1..]) {
        return false;
    }
    let valid = |c: u8| c.is_ascii_alphanumeric() || b":-_.\\@".contains(&c);
    if !n[..dot].iter().all(|&c| valid(c)) {
        return false;
    }
    match n[..dot].iter().position(|&c| c == b'@') {
        Some(0) => false,
        None => plain,
        Some(at) => instance && dot > at + 1,
    }
}

/// `cg_unescape()`: one leading `_` dropped.
fn unescape(n: &[u8]) -> &[u8] {
    n.strip_prefix(b"_").unwrap_or(n)
}

/// The component at the start of `p` (up to a `/`).
fn head(p: &[u8]) -> &[u8] {
    &p[..p.iter().position(|&c| c == b'/').unwrap_or(p.len())]
}

/// `p` past its leading slashes.
fn skip_slashes(p: &[u8]) -> &[u8] {
    &p[p.iter().take_while(|&&c| c == b'/').count()..]
}

/// `valid_slice_name()`: a `.slice` name, valid unescaped as a plain unit.
fn is_slice(name: &[u8]) -> bool {
    name.len() >= b"x.slice".len()
        && name.ends_with(b".slice")
        && unit_name_is_valid(unescape(name), true, false)
}

/// `cg_path_decode_unit()`: the first component, unescaped, when it is a valid plain or
/// instance unit name of at least 3 bytes.
fn decode_unit(p: &[u8]) -> Option<Vec<u8>> {
    let name = head(p);
    if name.len() < 3 {
        return None;
    }
    let u = unescape(name);
    unit_name_is_valid(u, true, true).then(|| u.to_vec())
}

/// `skip_slices()`: past every leading slice component (and the slashes before the next).
fn skip_slices(mut p: &[u8]) -> &[u8] {
    loop {
        p = skip_slashes(p);
        let name = head(p);
        if !is_slice(name) {
            return p;
        }
        p = &p[name.len()..];
    }
}

/// `cg_path_get_unit()`: the unit after the slices (not a slice itself).
pub fn unit(path: &[u8]) -> Option<Vec<u8>> {
    let u = decode_unit(skip_slices(path))?;
    (!u.ends_with(b".slice")).then_some(u)
}

/// `session_id_valid()`: letters and digits, at least one.
fn session_id_valid(id: &[u8]) -> bool {
    !id.is_empty() && id.iter().all(u8::is_ascii_alphanumeric)
}

/// `parse_uid()` (strict since systemd 248): decimal digits only, no sign, space or
/// leading zero, within 32 bits, and neither of the invalid ids 4294967295 and 65535.
fn parse_uid(s: &[u8]) -> Option<u32> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) || (s[0] == b'0' && s.len() > 1) {
        return None;
    }
    let v: u32 = std::str::from_utf8(s).ok()?.parse().ok()?;
    (v != u32::MAX && v != 0xFFFF).then_some(v)
}

/// `skip_session()` or `skip_user_manager()`: past a leading `session-ID.scope` (valid ID)
/// or `user@UID.service` (valid UID) component and the slashes after it.
fn skip_unit<'a>(
    p: &'a [u8],
    prefix: &[u8],
    suffix: &[u8],
    ok: impl Fn(&[u8]) -> bool,
) -> Option<&'a [u8]> {
    if p.is_empty() {
        return None;
    }
    let p = skip_slashes(p);
    let name = head(p);
    if name.len() < prefix.len() + 1 + suffix.len() {
        return None;
    }
    let inner = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    ok(inner).then(|| skip_slashes(&p[name.len()..]))
}

/// `cg_path_get_user_unit()`: after the slices, a user manager (`user@UID.service`) or a
/// session scope (`session-ID.scope`), then the unit as [`unit`] finds it.
pub fn user_unit(path: &[u8]) -> Option<Vec<u8>> {
    let e = skip_slices(path);
    let t = skip_unit(e, b"user@", b".service", |u| parse_uid(u).is_some())
        .or_else(|| skip_unit(e, b"session-", b".scope", session_id_valid))?;
    unit(t)
}

/// `cg_path_get_slice()`: the last of the leading slices, `-.slice` when there is none.
pub fn slice(mut p: &[u8]) -> Option<Vec<u8>> {
    let mut last: Option<&[u8]> = None;
    loop {
        p = skip_slashes(p);
        let name = head(p);
        if !is_slice(name) {
            return match last {
                None => Some(b"-.slice".to_vec()),
                Some(e) => decode_unit(e),
            };
        }
        last = Some(p);
        p = &p[name.len()..];
    }
}

/// `cg_path_get_session()`: the ID of a `session-ID.scope` unit.
pub fn session(path: &[u8]) -> Option<Vec<u8>> {
    let u = unit(path)?;
    let id = u.strip_prefix(b"session-")?.strip_suffix(b".scope")?;
    session_id_valid(id).then(|| id.to_vec())
}

/// `cg_path_get_owner_uid()`: the UID of a `user-UID.slice` slice.
pub fn owner_uid(path: &[u8]) -> Option<u32> {
    let s = slice(path)?;
    parse_uid(s.strip_prefix(b"user-")?.strip_suffix(b".slice")?)
}

/// The value of `key` in an environment-like file as systemd writes its runtime state
/// (`KEY=value` lines, `#`/`;` comments, values optionally quoted), the last assignment
/// winning, as `parse_env_file()` reads it for the keys logind writes.
fn env_value(text: &[u8], key: &[u8]) -> Option<Vec<u8>> {
    let mut found = None;
    for line in text.split(|&c| c == b'\n') {
        let line = line.trim_ascii();
        if line.is_empty() || line[0] == b'#' || line[0] == b';' {
            continue;
        }
        let Some(eq) = line.iter().position(|&c| c == b'=') else {
            continue;
        };
        if line[..eq].trim_ascii() != key {
            continue;
        }
        let v = line[eq + 1..].trim_ascii();
        let v = match v {
            [q @ (b'"' | b'\''), inner @ .., last] if last == q => {
                let mut out = Vec::with_capacity(inner.len());
                let mut it = inner.iter();
                while let Some(&c) = it.next() {
                    if c == b'\\' && *q == b'"' {
                        match it.next() {
                            Some(&n) if b"\"\\`$".contains(&n) => out.push(n),
                            Some(&n) => out.extend_from_slice(&[b'\\', n]),
                            None => {}
                        }
                    } else {
                        out.push(c);
                    }
                }
                out
            }
            _ => v.to_vec(),
        };
        found = Some(v);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: Option<Vec<u8>>) -> Option<String> {
        v.map(|b| String::from_utf8(b).expect("utf-8"))
    }

    /// A cgroup path; its unit, user unit, slice and session; its owner uid.
    type Case = (&'static str, [Option<&'static str>; 4], Option<u32>);

    /// Cgroup paths as systemd 252 lays them out, and what sd-login says of each.
    #[test]
    fn derives_what_sd_login_derives() {
        let cases: &[Case] = &[
            // path: unit, user unit, slice, session; owner uid
            (
                "/user.slice/user-1000.slice/session-3.scope",
                [
                    Some("session-3.scope"),
                    None,
                    Some("user-1000.slice"),
                    Some("3"),
                ],
                Some(1000),
            ),
            (
                "/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service",
                [
                    Some("user@1000.service"),
                    Some("foo.service"),
                    Some("user-1000.slice"),
                    None,
                ],
                Some(1000),
            ),
            (
                "/system.slice/ssh.service",
                [Some("ssh.service"), None, Some("system.slice"), None],
                None,
            ),
            (
                "/machine.slice/machine-foo.scope/payload",
                [Some("machine-foo.scope"), None, Some("machine.slice"), None],
                None,
            ),
            (
                "/init.scope",
                [Some("init.scope"), None, Some("-.slice"), None],
                None,
            ),
            ("/", [None, None, Some("-.slice"), None], None),
            // A scope inside a session: the user unit is what follows the session.
            (
                "/user.slice/user-0.slice/session-c2.scope/tmux.scope",
                [
                    Some("session-c2.scope"),
                    Some("tmux.scope"),
                    Some("user-0.slice"),
                    Some("c2"),
                ],
                Some(0),
            ),
            // Escaped names (cg_escape(): a leading '_'), nested slices, an instance.
            (
                "/system.slice/system-getty.slice/getty@tty1.service",
                [
                    Some("getty@tty1.service"),
                    None,
                    Some("system-getty.slice"),
                    None,
                ],
                None,
            ),
            (
                "/_cpu.slice/_x.service",
                [Some("x.service"), None, Some("cpu.slice"), None],
                None,
            ),
            // Not units: LXC payloads, a template, bad names; a slice after a unit.
            (
                "/lxc.payload.web/init.scope",
                [None, None, Some("-.slice"), None],
                None,
            ),
            ("/a/b.service", [None, None, Some("-.slice"), None], None),
            ("/getty@.service", [None, None, Some("-.slice"), None], None),
            (
                "/x.slice/a@b.slice",
                [None, None, Some("x.slice"), None],
                None,
            ),
            ("/@x.service", [None, None, Some("-.slice"), None], None),
            ("/x.sevice", [None, None, Some("-.slice"), None], None),
            // Owner uids systemd refuses: a leading zero, the 16-bit -1.
            (
                "/user-01.slice/x.service",
                [Some("x.service"), None, Some("user-01.slice"), None],
                None,
            ),
            (
                "/user-65535.slice",
                [None, None, Some("user-65535.slice"), None],
                None,
            ),
            // A session id must be letters and digits; user@ needs a uid.
            (
                "/session-a_b.scope/x.service",
                [Some("session-a_b.scope"), None, Some("-.slice"), None],
                None,
            ),
            (
                "/user@me.service/x.service",
                [Some("user@me.service"), None, Some("-.slice"), None],
                None,
            ),
        ];
        for (path, [u, uu, sl, se], owner) in cases {
            let p = path.as_bytes();
            assert_eq!(s(unit(p)).as_deref(), *u, "unit of {path}");
            assert_eq!(s(user_unit(p)).as_deref(), *uu, "user unit of {path}");
            assert_eq!(s(slice(p)).as_deref(), *sl, "slice of {path}");
            assert_eq!(s(session(p)).as_deref(), *se, "session of {path}");
            assert_eq!(owner_uid(p), *owner, "owner of {path}");
        }
    }

    #[test]
    fn unit_names_are_checked_as_systemd_does() {
        assert!(unit_name_is_valid(b"foo.service", true, false));
        assert!(!unit_name_is_valid(b"foo@bar.service", true, false));
        assert!(unit_name_is_valid(b"foo@bar.service", false, true));
        assert!(
            !unit_name_is_valid(b"foo@.service", true, true),
            "a template"
        );
        assert!(!unit_name_is_valid(b".service", true, true));
        assert!(!unit_name_is_valid(b"a b.service", true, true));
        assert!(unit_name_is_valid(b"a\\x2db:c.mount", true, true));
        let long = [b"a".repeat(248), b".service".to_vec()].concat();
        assert!(!unit_name_is_valid(&long, true, true), "256 bytes");
        assert!(unit_name_is_valid(&long[1..], true, true), "255 bytes");
    }

    #[test]
    fn the_systemd_line_is_picked_by_layout() {
        // This VM's hybrid layout: v1 controllers, name=systemd at its root, the v2 line.
        let hybrid =
            b"9:name=systemd:/\n8:pids:/\n4:memory:/process_api/b7e7\n0::/tsx.slice/foo.service\n";
        assert_eq!(
            systemd_path(hybrid, Hierarchy::Unified).as_deref(),
            Some(&b"/tsx.slice/foo.service"[..])
        );
        assert_eq!(
            systemd_path(hybrid, Hierarchy::NameSystemd).as_deref(),
            Some(&b"/"[..])
        );
        let legacy = b"3:cpu,name=systemd:/system.slice/x.service (deleted)\n";
        assert_eq!(
            systemd_path(legacy, Hierarchy::NameSystemd).as_deref(),
            Some(&b"/system.slice/x.service"[..])
        );
        assert_eq!(systemd_path(b"4:memory:/x\n", Hierarchy::Unified), None);
        assert_eq!(
            systemd_path(b"1:name=systemdx:/x\n", Hierarchy::NameSystemd),
            None
        );
        assert_eq!(systemd_path(b"", Hierarchy::Unified), None);
    }

    #[test]
    fn paths_are_shifted_to_pid_1s_root() {
        assert_eq!(root_of(b"/init.scope".to_vec()), b"");
        assert_eq!(root_of(b"/lxc/c1/init.scope".to_vec()), b"/lxc/c1");
        assert_eq!(root_of(b"/".to_vec()), b"/");
        assert_eq!(shift(b"/a/b.service", b"/"), b"/a/b.service");
        assert_eq!(shift(b"/", b"/"), b"/");
        // Pid 1 in /init.scope: a relative root matches nothing.
        assert_eq!(
            shift(b"/system.slice/x.service", b""),
            b"/system.slice/x.service"
        );
        assert_eq!(
            shift(b"/lxc/c1/system.slice/x.service", b"/lxc/c1"),
            b"/system.slice/x.service"
        );
        assert_eq!(shift(b"/lxc//c1/x.service", b"/lxc/c1/"), b"/x.service");
        assert_eq!(
            shift(b"/lxc/c2/x.service", b"/lxc/c1"),
            b"/lxc/c2/x.service"
        );
        // The root itself: systemd's pointer arithmetic leaves the last byte.
        assert_eq!(shift(b"/lxc/c1", b"/lxc/c1"), b"1");
    }

    #[test]
    fn seats_and_machines_come_from_the_run_directory() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let run = tmp.path().join("run");
        let proc_root = tmp.path().join("proc");
        std::fs::create_dir_all(run.join("sessions")).expect("mkdir");
        std::fs::create_dir_all(run.join("machines")).expect("mkdir");
        std::fs::create_dir_all(proc_root.join("1")).expect("mkdir");
        std::fs::write(proc_root.join("1/cgroup"), "0::/init.scope\n").expect("pid 1");
        // What logind writes (src/login/logind-session.c session_save()).
        std::fs::write(
            run.join("sessions/3"),
            "# This is private data. Do not parse.\nUID=1000\nUSER=me\nACTIVE=1\nSTATE=active\nREMOTE=0\nSEAT=seat0\nVTNR=1\n",
        )
        .expect("session");
        std::fs::write(run.join("sessions/4"), "UID=1000\nSEAT=\n").expect("session");
        std::os::unix::fs::symlink("web", run.join("machines/unit:machine-web.scope"))
            .expect("link");
        let mut l = Login::new(Some(Hierarchy::Unified), &proc_root, &run);
        let cg = |p: &str| format!("4:memory:/x\n0::{p}\n").into_bytes();
        let at =
            |l: &mut Login, p: &str, w| String::from_utf8(l.text(Some(&cg(p)), w)).expect("utf-8");
        let sess = "/user.slice/user-1000.slice/session-3.scope";
        assert_eq!(at(&mut l, sess, What::Seat), "seat0");
        assert_eq!(at(&mut l, sess, What::Session), "3");
        assert_eq!(at(&mut l, sess, What::OwnerUid), "1000");
        assert_eq!(at(&mut l, sess, What::Machine), "-");
        // An empty SEAT= is no seat; a session without a file has none either.
        assert_eq!(at(&mut l, "/user.slice/session-4.scope", What::Seat), "-");
        assert_eq!(at(&mut l, "/user.slice/session-5.scope", What::Seat), "-");
        let m = "/machine.slice/machine-web.scope/payload/x.service";
        assert_eq!(at(&mut l, m, What::Machine), "web");
        assert_eq!(at(&mut l, m, What::Unit), "machine-web.scope");
        assert_eq!(at(&mut l, m, What::Seat), "-");
        assert_eq!(
            String::from_utf8(l.text(None, What::Slice)).expect("utf-8"),
            "-"
        );
        // Without a layout systemd knows, nothing.
        let mut none = Login::new(None, &proc_root, &run);
        assert_eq!(none.text(Some(&cg(sess)), What::Slice), b"-");
        // Pid 1's cgroup unreadable: nothing either.
        let mut no_pid1 = Login::new(Some(Hierarchy::Unified), &tmp.path().join("nope"), &run);
        assert_eq!(no_pid1.text(Some(&cg(sess)), What::Unit), b"-");
    }

    #[test]
    fn env_values_as_parse_env_file_reads_them() {
        assert_eq!(
            env_value(b"A=1\nSEAT=seat0\n", b"SEAT").as_deref(),
            Some(&b"seat0"[..])
        );
        assert_eq!(
            env_value(b"SEAT = \"se at\"\n", b"SEAT").as_deref(),
            Some(&b"se at"[..])
        );
        assert_eq!(
            env_value(b"SEAT='a\\b'\n", b"SEAT").as_deref(),
            Some(&b"a\\b"[..])
        );
        assert_eq!(
            env_value(b"SEAT=\"a\\\"b\"\n", b"SEAT").as_deref(),
            Some(&b"a\"b"[..])
        );
        assert_eq!(env_value(b"#SEAT=x\n;SEAT=y\nSEATS=z\n", b"SEAT"), None);
        assert_eq!(
            env_value(b"SEAT=a\nSEAT=b\n", b"SEAT").as_deref(),
            Some(&b"b"[..])
        );
    }
}
