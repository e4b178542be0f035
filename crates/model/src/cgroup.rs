//! A task's control groups, parsed once: the text of /proc/PID/cgroup (one
//! `hierarchy-ID:controllers:path` line per hierarchy, cgroups(7)) kept as the kernel wrote it
//! (recordings store it so), shared between copies; its lines are split when asked for.
//!
//! The one cgroup parser: the procfs collector parses what it reads, the replay decoder what
//! a recording stored, so front ends read the v2 path, the v1 controllers' paths or the
//! container name from here and never split /proc text themselves. Every byte is untrusted:
//! a line without two `:` (never written by a kernel) is skipped, nothing is assumed UTF-8.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A task's /proc/PID/cgroup, raw and parsed.
///
/// Kept small and shared: the text only (its lines are found again when asked for, a few
/// bytes each), behind an `Arc`, so the threads of a process and a reading's copies of a task
/// share one allocation. (It held each line's offsets too, 32 bytes a line: 580 bytes a
/// process on a host with ten v1 hierarchies, and a copy per thread.)
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cgroup {
    /// The text as read.
    raw: Arc<[u8]>,
}

impl Cgroup {
    /// Parses the text of /proc/PID/cgroup (or a recording's copy of it).
    pub fn parse(raw: Vec<u8>) -> Cgroup {
        Cgroup { raw: raw.into() }
    }

    /// The text as the kernel wrote it (what a recording keeps).
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// The well-formed lines, in the kernel's order (v1 hierarchies and the v2 line).
    pub fn lines(&self) -> impl Iterator<Item = CgroupLine<'_>> {
        parse_lines(&self.raw)
    }

    /// The cgroup v2 path (the `0::PATH` line), when there is one.
    pub fn v2_path(&self) -> Option<&[u8]> {
        self.lines()
            .find(|l| l.hierarchy == b"0" && l.controllers.is_empty())
            .map(|l| l.path)
    }

    /// The v2 path, else the first hierarchy's path: the one path that names the group.
    pub fn main_path(&self) -> Option<&[u8]> {
        self.v2_path()
            .or_else(|| self.lines().next().map(|l| l.path))
    }

    /// Every non-empty line as written, a `\r` before its newline cut off, malformed lines
    /// included (dump's `cgroup` column when there is no v2 line).
    pub fn text_lines(&self) -> impl Iterator<Item = &[u8]> {
        self.raw
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .filter(|l| !l.is_empty())
    }

    /// The container name procps's `lxc` column shows, `None` when the task is in no LXC
    /// container.
    pub fn lxc_name(&self) -> Option<&[u8]> {
        lxc_name(&self.raw)
    }
}

/// Serialized as the raw text, as `Task::cgroup` was before it was parsed.
impl Serialize for Cgroup {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.raw)
    }
}

/// Read back from the raw text it is serialized as (the query service's answers).
impl<'de> Deserialize<'de> for Cgroup {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Cgroup, D::Error> {
        serde_bytes::ByteBuf::deserialize(d).map(|b| Cgroup::parse(b.into_vec()))
    }
}

/// One line of `/proc/PID/cgroup`: `hierarchy-ID:controller-list:cgroup-path` (cgroups(7);
/// `proc_cgroup_show()`, kernel/cgroup/cgroup.c). The cgroup v2 line is `0::PATH`; a v1
/// hierarchy names its controllers (`4:memory:/x`) or itself (`9:name=systemd:/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CgroupLine<'a> {
    /// The whole line, without its newline.
    pub line: &'a [u8],
    /// The hierarchy ID (`0` for cgroup v2).
    pub hierarchy: &'a [u8],
    /// Comma-separated controllers bound to the hierarchy (empty for v2).
    pub controllers: &'a [u8],
    /// The path within the hierarchy, from its root (`/`). May itself hold `:`.
    pub path: &'a [u8],
}

impl CgroupLine<'_> {
    /// Whether this is the hierarchy's root (procps leaves those out of `ps -o cgroup`).
    pub fn is_root(&self) -> bool {
        self.path.ends_with(b"/")
    }
}

/// The lines of `/proc/PID/cgroup`, in the kernel's order. A line without two `:` (never
/// written by a kernel) is skipped, not an error: every byte here is untrusted.
pub fn parse_lines(buf: &[u8]) -> impl Iterator<Item = CgroupLine<'_>> {
    buf.split(|&b| b == b'\n' || b == 0).filter_map(|line| {
        let mut parts = line.splitn(3, |&b| b == b':');
        let hierarchy = parts.next()?;
        let controllers = parts.next()?;
        let path = parts.next()?;
        Some(CgroupLine {
            line,
            hierarchy,
            controllers,
            path,
        })
    })
}

/// The task's cgroup v2 path (the `0::PATH` line), when it has one.
pub fn cgroup_v2_path(buf: &[u8]) -> Option<&[u8]> {
    parse_lines(buf)
        .find(|l| l.hierarchy == b"0" && l.controllers.is_empty())
        .map(|l| l.path)
}

/// The container name procps's `lxc` column shows (library/readproc.c `lxc_containers()`),
/// from the text of /proc/PID/cgroup: the first of `lxc.payload.` (LXC 4), `lxc.payload/`
/// (to LXC 3.2.1) and `lxc/` (to LXC 3.0.3) found anywhere in it, on that line the name
/// after its last occurrence, up to the next `/`. `None` when no delimiter is there.
fn lxc_name(buf: &[u8]) -> Option<&[u8]> {
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
    let buf = &buf[..buf.iter().position(|&c| c == 0).unwrap_or(buf.len())];
    let (at, delim) = [&b"lxc.payload."[..], b"lxc.payload/", b"lxc/"]
        .into_iter()
        .find_map(|d| find(buf, d).map(|at| (at, d)))?;
    let line_end = buf[at..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(buf.len(), |n| at + n);
    let line = &buf[..line_end];
    // Nested containers: the name after the last delimiter on the line.
    let mut name_at = at + delim.len();
    while let Some(next) = find(&line[name_at..], delim) {
        name_at += next + delim.len();
    }
    let name = &line[name_at..];
    Some(&name[..name.iter().position(|&c| c == b'/').unwrap_or(name.len())])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as a hybrid (v1 + v2) host writes them, from this project's CI machine.
    #[test]
    fn cgroup_lines_split_on_the_first_two_colons() {
        let raw = b"9:name=systemd:/\n4:memory:/process_api/b588aa57\n0::/a:b\n\ngarbage\n";
        let lines: Vec<_> = parse_lines(raw).collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].is_root());
        assert_eq!(lines[0].controllers, b"name=systemd");
        assert_eq!(lines[1].hierarchy, b"4");
        assert_eq!(lines[1].path, b"/process_api/b588aa57");
        assert!(!lines[1].is_root());
        assert_eq!(lines[2].path, b"/a:b");
        assert_eq!(cgroup_v2_path(raw), Some(&b"/a:b"[..]));
        assert_eq!(cgroup_v2_path(b"4:memory:/x\n"), None);
        assert_eq!(parse_lines(b"").count(), 0);
    }

    #[test]
    fn a_parsed_cgroup_gives_the_lines_the_parser_gives() {
        let raw =
            b"9:name=systemd:/user.slice\n4:memory:/process_api/b588aa57\n0::/a:b\n\ngarbage\r\n";
        let c = Cgroup::parse(raw.to_vec());
        assert_eq!(c.raw(), raw);
        assert!(c.lines().eq(parse_lines(raw)));
        assert_eq!(c.v2_path(), Some(&b"/a:b"[..]));
        assert_eq!(c.main_path(), Some(&b"/a:b"[..]));
        assert_eq!(
            c.text_lines().collect::<Vec<_>>(),
            [
                &b"9:name=systemd:/user.slice"[..],
                b"4:memory:/process_api/b588aa57",
                b"0::/a:b",
                b"garbage"
            ]
        );
        let v1 = Cgroup::parse(b"4:memory:/x\n".to_vec());
        assert_eq!(v1.v2_path(), None);
        assert_eq!(v1.main_path(), Some(&b"/x"[..]));
        assert_eq!(Cgroup::parse(Vec::new()).lines().count(), 0);
    }

    #[test]
    fn lxc_names_follow_procps_delimiters() {
        let cases: [(&[u8], &[u8]); 6] = [
            // procps's own examples (library/readproc.c), nested privileged and unprivileged.
            (b"10:cpuset:/lxc/lxc-P/lxc/lxc-P-nested\n", b"lxc-P-nested"),
            (
                b"10:cpuset:/user.slice/user-1000.slice/session-c2.scope/lxc/lxc-U/lxc/lxc-U-nested\n",
                b"lxc-U-nested",
            ),
            (b"10:cpuset:/lxc/lxc-P/lxc/lxc-P-nested/MY-NEW-CGROUP\n", b"lxc-P-nested"),
            (
                b"2:name=systemd:/\n1:cpuset,cpu,cpuacct,devices,freezer,net_cls,blkio,perf_event,net_prio:/lxc/lxc-P\n",
                b"lxc-P",
            ),
            // LXC 4's payload cgroup, on a unified host.
            (b"0::/lxc.payload.web/system.slice/nginx.service\n", b"web"),
            // The first kind found wins, even on a later line than another kind.
            (b"4:memory:/lxc/a\n0::/lxc.payload.b\n", b"b"),
        ];
        for (cgroup, name) in cases {
            assert_eq!(
                lxc_name(cgroup),
                Some(name),
                "{:?}",
                String::from_utf8_lossy(cgroup)
            );
        }
        assert_eq!(lxc_name(b"0::/x/lxc/\n"), Some(&b""[..]));
        assert_eq!(lxc_name(b"0::/user.slice\n9:name=systemd:/\n"), None);
        assert_eq!(lxc_name(b""), None);
    }
}
