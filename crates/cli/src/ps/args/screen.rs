//! The terminal procps lays a listing out for (ps/global.c `set_screen_size`): its width
//! and height from `COLUMNS` and `LINES`, else from the first of stdout, stderr and stdin
//! that is a terminal; and the caller's own terminal, which BSD `T` and a bare `t` select.

use crate::ps::cell::OUTBUF_SIZE;

/// The caller's controlling tty (procps's `cached_tty`).
pub fn my_tty() -> u32 {
    tasksnap_collect::Host::from_env().own_tty_nr()
}

/// The terminal size procps uses: the first of stdout, stderr, stdin that is a terminal.
fn terminal_size() -> Option<(usize, usize)> {
    [libc::STDOUT_FILENO, libc::STDERR_FILENO, libc::STDIN_FILENO]
        .into_iter()
        .filter_map(tasksnap_sys::terminal_size)
        .find(|&(cols, rows)| cols > 0 && rows > 0)
        .map(|(cols, rows)| (usize::from(cols), usize::from(rows)))
}

/// A positive size from the environment (`COLUMNS`, `LINES`), as procps accepts it.
fn env_size(name: &str) -> Option<usize> {
    let t = std::env::var(name).ok()?.parse::<i64>().ok()?;
    (t > 0 && (t as usize) < OUTBUF_SIZE).then_some(t as usize)
}

/// The terminal's height (for `--headers`), 24 when unknown; `LINES` wins.
pub fn screen_rows() -> usize {
    env_size("LINES").unwrap_or_else(|| terminal_size().map_or(24, |(_, rows)| rows))
}

/// procps set_screen_size: the terminal's width, unlimited when stdout is not a terminal;
/// `COLUMNS` wins.
pub fn screen_cols() -> usize {
    if let Some(cols) = env_size("COLUMNS") {
        return cols;
    }
    // SAFETY: isatty only inspects the descriptor.
    if unsafe { libc::isatty(libc::STDOUT_FILENO) } == 0 {
        return OUTBUF_SIZE;
    }
    terminal_size().map_or(80, |(cols, _)| cols)
}
