//! The terminal: its size in character cells.

use std::os::fd::RawFd;

/// The size of the terminal on `fd` in character cells, `(columns, rows)`, as `TIOCGWINSZ`
/// gives it; `None` when `fd` is not a terminal. Either figure may be 0 (a pty nobody sized):
/// callers decide what an unsized terminal means.
pub fn terminal_size(fd: RawFd) -> Option<(u16, u16)> {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into the valid struct we pass and keeps no pointer.
    let rc = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) };
    (rc != -1).then_some((ws.ws_col, ws.ws_row))
}
