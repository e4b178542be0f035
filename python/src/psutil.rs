//! psutil's rules for what the kernel gives: a state letter's status string, a command line
//! split as psutil splits it, the name completed from it, an environment block as a dict's
//! pairs, a denied executable guessed, threads in psutil's order, `cpu_percent`'s rounding,
//! and text from the kernel's bytes as Python's file system encoding makes it. Pure: no
//! host, no task.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use tasksnap_model::TaskState;

/// psutil's status string for a state letter (`psutil._pslinux.PROC_STATUSES`).
pub(crate) fn status_name(s: TaskState) -> &'static str {
    match s.letter() {
        b'R' => "running",
        b'S' => "sleeping",
        b'D' => "disk-sleep",
        b'T' => "stopped",
        b't' => "tracing-stop",
        b'Z' => "zombie",
        b'X' | b'x' => "dead",
        b'K' => "wake-kill",
        b'W' => "waking",
        b'I' => "idle",
        b'P' => "parked",
        _ => "?",
    }
}

/// A command line split as psutil splits /proc/PID/cmdline: on NULs when it ends with one,
/// else on spaces (a process that rewrote its arguments, setproctitle), one trailing
/// separator dropped, and a NUL-terminated line with one argument holding spaces split on
/// the spaces.
pub(crate) fn split_cmdline(data: &[u8]) -> Vec<&[u8]> {
    cmdline_args(data).collect()
}

/// [`split_cmdline`]'s arguments one by one, without a vector.
pub(crate) fn cmdline_args(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let sep = if data.ends_with(b"\0") { b'\0' } else { b' ' };
    let line = data.strip_suffix(&[sep]).unwrap_or(data);
    // One NUL-terminated argument holding spaces: split on the spaces.
    let sep = if sep == b'\0' && !line.contains(&b'\0') && line.contains(&b' ') {
        b' '
    } else {
        sep
    };
    let line = if data.is_empty() { None } else { Some(line) };
    line.into_iter()
        .flat_map(move |l| l.split(move |&b| b == sep))
}

/// psutil's `name()`: the comm, unless it is 15 bytes or more (the kernel cut it) and the
/// base name of the first argument starts with it, which is then the name.
pub(crate) fn long_name<'a>(comm: &'a [u8], cmdline: Option<&'a [u8]>) -> &'a [u8] {
    if comm.len() < 15 {
        return comm;
    }
    let Some(first) = cmdline.and_then(|c| split_cmdline(c).first().copied()) else {
        return comm;
    };
    let base = first.rsplit(|&b| b == b'/').next().unwrap_or(first);
    if base.starts_with(comm) {
        base
    } else {
        comm
    }
}

/// Text from the kernel's bytes as Python's file system encoding makes it (UTF-8 with
/// surrogate escapes, what psutil's `open_text` gives).
pub(crate) fn os_str<'py>(py: Python<'py>, b: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    OsStr::from_bytes(b).into_bound_py_any(py)
}

/// psutil's guess of a denied executable: the first argument when it is an absolute path to
/// an executable regular file.
pub(crate) fn guess_exe(cmdline: &[u8]) -> Option<&[u8]> {
    let first = *split_cmdline(cmdline).first()?;
    if !first.starts_with(b"/") {
        return None;
    }
    let path = std::ffi::CString::new(first).ok()?;
    let regular = std::fs::metadata(OsStr::from_bytes(first)).is_ok_and(|m| m.is_file());
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
    let executable = unsafe { libc::access(path.as_ptr(), libc::X_OK) } == 0;
    (regular && executable).then_some(first)
}

/// psutil's `environ()` of an environment block: `KEY=value` strings up to the first empty
/// one (or a NUL at the start), a string without `=` (or starting with it) skipped, a later
/// duplicate winning, a block that does not end in NUL cut at its last NUL.
pub(crate) fn environ_pairs(block: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out = Vec::new();
    let mut rest = block;
    while let Some(end) = rest.iter().position(|&b| b == 0) {
        if end == 0 {
            break;
        }
        let entry = &rest[..end];
        if let Some(eq) = entry.iter().position(|&b| b == b'=') {
            if eq > 0 {
                out.push((&entry[..eq], &entry[eq + 1..]));
            }
        }
        rest = &rest[end + 1..];
    }
    out
}

/// psutil's order of a process's threads: their ids sorted as text (it sorts the names of
/// /proc/PID/task), so 1 comes before 59 and 2016626 between them.
pub(crate) fn tid_order(a: i32, b: i32) -> std::cmp::Ordering {
    a.to_string().cmp(&b.to_string())
}

/// psutil's `cpu_percent` from the CPU seconds a process used and the timer's seconds
/// (monotonic seconds times `num_cpus`) between two calls: the share of one CPU, rounded to
/// one decimal as Python's `round(x, 1)` does (correctly rounded from the exact value).
/// `Process.cpu_percent()` calls it too.
#[pyfunction]
pub(crate) fn cpu_percent(delta_proc_s: f64, delta_timer_s: f64, num_cpus: f64) -> f64 {
    if delta_timer_s == 0.0 {
        return 0.0;
    }
    let pct = delta_proc_s / delta_timer_s * 100.0 * num_cpus;
    format!("{pct:.1}").parse().unwrap_or(pct)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdlines_split_as_psutil_splits_them() {
        assert_eq!(
            split_cmdline(b"sleep\x0010\x00"),
            vec![&b"sleep"[..], b"10"]
        );
        assert_eq!(split_cmdline(b""), Vec::<&[u8]>::new());
        // setproctitle: spaces, no NUL.
        assert_eq!(
            split_cmdline(b"sshd: bob [priv]"),
            vec![&b"sshd:"[..], b"bob", b"[priv]"]
        );
        // One NUL-terminated argument with spaces.
        assert_eq!(
            split_cmdline(b"nginx: worker\x00"),
            vec![&b"nginx:"[..], b"worker"]
        );
        // An empty argument survives.
        assert_eq!(split_cmdline(b"a\x00\x00b\x00"), vec![&b"a"[..], b"", b"b"]);
    }

    #[test]
    fn long_names_come_from_the_first_argument() {
        let comm = b"gnome-keyring-d";
        assert_eq!(
            long_name(comm, Some(b"/usr/bin/gnome-keyring-daemon\x00--start\x00")),
            b"gnome-keyring-daemon"
        );
        assert_eq!(long_name(comm, Some(b"/usr/bin/other\x00")), comm);
        assert_eq!(long_name(b"short", Some(b"/bin/shorter\x00")), b"short");
        assert_eq!(long_name(comm, None), comm);
    }
}
