//! Kernel addresses to function names, from /proc/kallsyms (text symbols only; its lines are
//! parsed by tasksnap-procfs), and the
//! trimming of the frames every off-CPU stack starts with (the tracepoint's BPF trampoline
//! and the scheduler core), so that a stack's first frame is the reason it waits.
//!
//! kallsyms shows real addresses only to root (kptr_restrict); the BPF source, the only user,
//! runs as root.

/// Sorted text symbols.
#[derive(Debug, Default)]
pub struct Kallsyms {
    /// (address, start and length of the name in `names`), sorted by address. One string
    /// for all names instead of one allocation per symbol: the table is kept for the whole
    /// run (in `tasksnap top` too), and 60,000 small strings were ~4 MB.
    syms: Vec<(u64, u32, u32)>,
    names: String,
}

impl Kallsyms {
    /// Reads an open kallsyms file a line at a time, without holding its 5 MB of text.
    /// Whether /proc/kallsyms shows real addresses was decided when it was opened, with the
    /// opener's capabilities (CAP_SYSLOG; kallsyms_open() keeps kallsyms_show_value()), so a
    /// file opened before the privileges were dropped may be read after.
    pub fn read(file: std::fs::File) -> std::io::Result<Kallsyms> {
        use std::io::BufRead;
        let mut r = std::io::BufReader::with_capacity(64 << 10, file);
        let mut k = Kallsyms::empty();
        let mut line = String::new();
        while r.read_line(&mut line)? > 0 {
            k.push_line(&line);
            line.clear();
        }
        k.finish();
        Ok(k)
    }

    #[cfg(any(test, feature = "testing"))]
    /// Parses kallsyms text: `ffffffff821fcd20 t rwsem_down_write_slowpath`, optionally with
    /// a module (`ffffffffc0a01000 t ext4_foo\t[ext4]`). Lines that do not parse are skipped;
    /// data symbols are left out.
    pub fn parse(text: &str) -> Kallsyms {
        let mut k = Kallsyms::empty();
        for l in text.lines() {
            k.push_line(l);
        }
        k.finish();
        k
    }

    fn empty() -> Kallsyms {
        Kallsyms {
            syms: Vec::new(),
            names: String::new(),
        }
    }

    fn push_line(&mut self, l: &str) {
        let Some((addr, name)) = tasksnap_procfs::parse::parse_kallsyms_text_symbol(l) else {
            return;
        };
        let (Ok(start), Ok(len)) = (u32::try_from(self.names.len()), u32::try_from(name.len()))
        else {
            return;
        };
        self.names.push_str(name);
        self.syms.push((addr, start, len));
    }

    fn finish(&mut self) {
        self.syms.sort_by_key(|s| s.0);
        self.syms.shrink_to_fit();
        self.names.shrink_to_fit();
    }

    #[cfg(any(test, feature = "testing"))]
    /// Number of text symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    #[cfg(any(test, feature = "testing"))]
    /// Whether there are none (e.g. read without privileges: every address is 0).
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The function containing `addr`: the last symbol at or below it.
    pub fn name(&self, addr: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 <= addr);
        let (_, start, len) = *self.syms.get(i.checked_sub(1)?)?;
        self.names.get(start as usize..(start + len) as usize)
    }

    /// Names for a stack, innermost first; unknown addresses as hex.
    pub fn frames(&self, addrs: &[u64]) -> Vec<String> {
        addrs
            .iter()
            .take_while(|&&a| a != 0)
            .map(|&a| match self.name(a) {
                Some(n) => n.to_string(),
                None => format!("{a:#x}"),
            })
            .collect()
    }
}

/// Whether a frame is part of the switch itself rather than the reason for it: the BPF
/// program and its tracepoint glue, and the scheduler core. Lock slow paths
/// (`rwsem_down_write_slowpath`) and wait helpers stay: they are reasons.
pub fn is_switch_frame(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "bpf_prog_",
        "bpf_trampoline_",
        "__bpf_prog_",
        "__bpf_trace_",
        "bpf_trace_run",
        "__traceiter_",
        "perf_trace_",
        "trace_event_raw_event_",
        "__schedule",
        "schedule",
        "preempt_schedule",
        "io_schedule",
        "__cond_resched",
        "0x",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// `frames` without the leading switch frames (see [`is_switch_frame`]).
pub fn trim(frames: Vec<String>) -> Vec<String> {
    let skip = frames.iter().take_while(|f| is_switch_frame(f)).count();
    if skip == frames.len() {
        return frames;
    }
    frames.into_iter().skip(skip).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real lines from /proc/kallsyms on Linux 6.18 (x86_64), with a data symbol, a module
    // symbol and an unprivileged (zeroed) line mixed in.
    const KALLSYMS: &str = "\
ffffffff81000000 T _stext
ffffffff815b9750 T vm_mmap_pgoff
ffffffff815db730 T __mm_populate
ffffffff81611db0 T __vm_munmap
ffffffff821f7be0 T __sched_text_start
ffffffff821f7c80 t __schedule
ffffffff821fc530 t rwsem_down_read_slowpath
ffffffff821fcd20 t rwsem_down_write_slowpath
ffffffff821fd470 T down_write_killable
ffffffff82a00000 D jiffies
ffffffffc0a01000 t ext4_file_read_iter\t[ext4]
0000000000000000 T hidden_from_non_root
";

    #[test]
    fn parses_text_symbols_and_looks_up_addresses() {
        let k = Kallsyms::parse(KALLSYMS);
        assert_eq!(k.len(), 10);
        assert_eq!(
            k.name(0xffffffff821fcd20),
            Some("rwsem_down_write_slowpath")
        );
        assert_eq!(
            k.name(0xffffffff821fcd20 + 0x2b3),
            Some("rwsem_down_write_slowpath")
        );
        assert_eq!(k.name(0xffffffff815b9750 + 0x10), Some("vm_mmap_pgoff"));
        assert_eq!(k.name(0xffffffffc0a01004), Some("ext4_file_read_iter"));
        assert_eq!(k.name(0x1000), None);
        assert_eq!(
            k.frames(&[0xffffffff821fcd30, 0xffffffff815b9760, 0, 5]),
            vec!["rwsem_down_write_slowpath", "vm_mmap_pgoff"]
        );
    }

    #[test]
    fn an_open_file_is_read_line_by_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kallsyms");
        std::fs::write(
            &path,
            "ffffffff815b9750 T vm_mmap_pgoff\nffffffff821fcd20 t rwsem_down_write_slowpath\n",
        )
        .expect("write");
        let k = Kallsyms::read(std::fs::File::open(&path).expect("open")).expect("read");
        assert_eq!(k.len(), 2);
        assert_eq!(
            k.name(0xffffffff821fcd30),
            Some("rwsem_down_write_slowpath")
        );
    }

    #[test]
    fn unprivileged_kallsyms_is_empty() {
        let k = Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 t __schedule\n");
        assert!(k.is_empty());
    }

    #[test]
    fn trims_the_switch_but_keeps_lock_slow_paths() {
        let f: Vec<String> = [
            "bpf_prog_6deef7357e7b4530_on_switch",
            "bpf_trace_run4",
            "__bpf_trace_sched_switch",
            "__traceiter_sched_switch",
            "__schedule",
            "schedule",
            "schedule_preempt_disabled",
            "rwsem_down_write_slowpath",
            "down_write_killable",
            "vm_mmap_pgoff",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            trim(f),
            vec![
                "rwsem_down_write_slowpath",
                "down_write_killable",
                "vm_mmap_pgoff"
            ]
        );
    }
}
