//! Laying values out in columns exactly as procps's `show_one_proc` (ps/output.c) does: each
//! column has a "correct" position; a value wider than its column pushes the rest of the line
//! right, and later columns win the space back where they can. Command-line columns take what
//! is left of the line; a user name too long for its column is cut with a '+'.

use super::cell::{Cell, OUTBUF_SIZE};
use super::format::{Just, Spec};

/// At most this much padding is written before one value (procps SPACE_AMOUNT).
const SPACE_AMOUNT: usize = 144;

/// One output column.
#[derive(Debug, Clone)]
pub struct Column {
    /// The specifier.
    pub spec: &'static Spec,
    /// The header text (the default or the user's `-o spec=HEADER`).
    pub header: String,
    /// The width.
    pub width: usize,
}

/// procps `check_header_width`: the line width in use, a multiple of the screen width wide
/// enough for every column's nominal width.
pub fn active_cols(cols: &[Column], screen_cols: usize) -> usize {
    let total = nominal_width(cols);
    let screen = screen_cols.max(1);
    let mut i = 1;
    loop {
        let active = screen * i;
        if active >= total || active >= OUTBUF_SIZE / 2 {
            return active;
        }
        i += 1;
    }
}

/// The columns' nominal widths and the gaps between them (procps `check_header_width`).
fn nominal_width(cols: &[Column]) -> usize {
    let mut total = 0usize;
    let mut was_normal = 0usize;
    for (i, c) in cols.iter().enumerate() {
        let last = i + 1 == cols.len();
        if c.spec.just == Just::Text {
            // AIX text: no gap counted before or after it.
            total += c.width;
            was_normal = 0;
            continue;
        }
        total += match c.spec.just {
            Just::Unlimited if last => 3,
            _ => c.width,
        };
        total += was_normal;
        was_normal = 1;
    }
    total
}

/// Whether signal columns print all 16 hex digits (procps `wide_signals`): when the line in
/// use has room for each of them to be 7 cells wider than its nominal width.
pub fn wide_signals(cols: &[Column], active_cols: usize) -> bool {
    let sigs = cols.iter().filter(|c| c.spec.just == Just::Signal).count();
    nominal_width(cols) + sigs * 7 <= active_cols
}

/// Renders one line (a header when `value` returns the header) into `out`.
///
/// `value(index, max_cells)` formats column `index` using at most `max_cells` cells where the
/// column honours a limit (commands, names, wchan).
///
/// With `delimiter` (`--delimiter`, procps newer than 4.0.2), no column is padded: columns
/// are separated by that one byte where they would have been by at least a space. `wide` is
/// [`wide_signals`] of the listing (the same for every line: computed once by the caller).
pub fn render_line(
    out: &mut Vec<u8>,
    cols: &[Column],
    active_cols: usize,
    user_is_number: bool,
    delimiter: Option<u8>,
    wide: bool,
    value: &mut dyn FnMut(usize, usize) -> Cell,
) {
    let active = active_cols as isize;
    let (mut correct, mut actual, mut dospace) = (0isize, 0isize, 0isize);
    for (i, col) in cols.iter().enumerate() {
        let last = i + 1 == cols.len();
        let width = col.width as isize;
        let (max_rightward, tmpspace) = if !last {
            (width, 0)
        } else {
            let t = correct - actual;
            if t < 1 {
                (active - actual - dospace, dospace)
            } else {
                (active - correct.max(actual), t)
            }
        };
        let max_rightward = max_rightward.clamp(0, OUTBUF_SIZE as isize - 1) as usize;
        let mut cell = value(i, max_rightward);
        let amount = cell.cells as isize;
        // Cells a wide signal column takes beyond its width ("legitimately stolen").
        let mut legit = 0;
        let leftpad = match col.spec.just {
            Just::Left | Just::Text => 0,
            Just::Right => (width - amount).max(0),
            Just::User => {
                if user_is_number {
                    (width - amount).max(0)
                } else {
                    0
                }
            }
            Just::Signal if wide => {
                legit = 7;
                (16 - amount).max(0)
            }
            Just::Signal => (9 - amount).max(0),
            Just::Wchan | Just::Unlimited => {
                if active - actual - tmpspace < 1 {
                    // "oops, we (mostly) lose this column": procps keeps one byte.
                    cell.bytes.truncate(1);
                }
                0
            }
        };
        let mut space = correct - actual + leftpad;
        if space < 1 || delimiter.is_some() {
            space = dospace;
        }
        let space = space.min(SPACE_AMOUNT as isize).max(0) as usize;
        out.extend(std::iter::repeat_n(delimiter.unwrap_or(b' '), space));
        out.extend_from_slice(&cell.bytes);
        if last {
            out.push(b'\n');
            break;
        }
        actual += space as isize + amount;
        correct += width + legit;
        // No gap where either side is AIX text.
        dospace = isize::from(col.spec.just != Just::Text && cols[i + 1].spec.just != Just::Text);
        correct += dospace;
    }
}

#[cfg(test)]
mod tests {
    use crate::ps::cell::CellBytes;
    use crate::ps::format::find;
    use crate::ps::layout::*;

    fn cols(names: &[(&str, usize)]) -> Vec<Column> {
        names
            .iter()
            .map(|(n, w)| {
                let spec = find(n).expect("known spec");
                Column {
                    spec,
                    header: spec.head.to_string(),
                    width: *w,
                }
            })
            .collect()
    }

    fn line(cols: &[Column], vals: &[&str]) -> String {
        let mut out = Vec::new();
        render_line(
            &mut out,
            cols,
            200,
            false,
            None,
            wide_signals(cols, 200),
            &mut |i, max| {
                let v = vals[i].as_bytes();
                let n = v
                    .len()
                    .min(max.max(if cols[i].spec.just == Just::Unlimited {
                        0
                    } else {
                        v.len()
                    }));
                Cell {
                    bytes: CellBytes::from_slice(&v[..n]),
                    cells: n,
                }
            },
        );
        String::from_utf8(out).expect("ascii")
    }

    #[test]
    fn right_aligned_numbers_and_left_text() {
        let c = cols(&[("pid", 5), ("tty", 8), ("args", 27)]);
        assert_eq!(
            line(&c, &["PID", "TT", "COMMAND"]),
            "  PID TT       COMMAND\n"
        );
        assert_eq!(
            line(&c, &["1", "?", "/sbin/init"]),
            "    1 ?        /sbin/init\n"
        );
    }

    #[test]
    fn signal_columns_take_16_cells_when_the_line_has_room() {
        // procps 4.0.2, `ps -o caught:20,pid -p 1` on an 80-column line: the value is
        // right-aligned in 16 cells whatever the width, and the width plus 7 is kept.
        let c = cols(&[("caught", 20), ("pid", 7)]);
        assert!(wide_signals(&c, 80));
        assert_eq!(
            line(&c, &["CAUGHT", "PID"]),
            "          CAUGHT                PID\n"
        );
        assert_eq!(
            line(&c, &["00000000000004e8", "1"]),
            "00000000000004e8                  1\n"
        );
        // Four of them on 40 columns: 39 cells nominal, no room for 28 more.
        let four = cols(&[("sig", 9), ("sigmask", 9), ("caught", 9), ("ignored", 9)]);
        assert_eq!(active_cols(&four, 40), 40);
        assert!(!wide_signals(&four, 40));
        assert!(wide_signals(&four, 80));
    }

    #[test]
    fn an_overflowing_value_pushes_and_the_next_column_recovers() {
        let c = cols(&[("tty", 8), ("pid", 5), ("pid", 5), ("args", 27)]);
        // A 10-character tty name overflows by 2 (plus the separator); the first pid column
        // has 4 spare cells of padding, so it gives up 2 of them and the rest lines up again.
        assert_eq!(
            line(&c, &["0123456789", "1", "22", "x"]),
            "0123456789   1    22 x\n"
        );
    }

    #[test]
    fn aix_text_has_no_gap_and_a_delimiter_replaces_padding() {
        let text = |t: &str| Column {
            spec: &crate::ps::format::TEXT,
            header: t.to_string(),
            width: t.len(),
        };
        let mut c = cols(&[("pid", 5)]);
        c.push(text(": "));
        c.extend(cols(&[("tty", 8)]));
        c.push(text(""));
        // "%p: %y": no space either side of the text; the trailing empty text pads TT.
        assert_eq!(line(&c, &["1", ": ", "?", ""]), "    1: ?       \n");
        let c = cols(&[("pid", 5), ("tty", 8), ("args", 27)]);
        let mut out = Vec::new();
        let vals = ["1", "?", "init"];
        render_line(&mut out, &c, 200, false, Some(b':'), false, &mut |i, _| {
            Cell {
                bytes: CellBytes::from_slice(vals[i].as_bytes()),
                cells: vals[i].len(),
            }
        });
        assert_eq!(String::from_utf8(out).expect("ascii"), "1:?:init\n");
    }
}
