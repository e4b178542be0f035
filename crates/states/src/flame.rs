//! The off-CPU flame graph: every interval's (command, state, kernel stack) times are
//! accumulated and written as one SVG by inferno, root frame first: `comm;state;outermost;...;
//! innermost`, widths in microseconds. This is what perf record + stackcollapse + flamegraph.pl
//! gave the seed's author, from the same exact accounting as the table.

use std::collections::HashMap;
use std::io::Write;

use crate::interval::Interval;

/// Folded stacks gathered over intervals.
#[derive(Debug, Default)]
pub struct Flame {
    folded_us: HashMap<String, u64>,
}

/// inferno folds on `;` and splits the count off at the last space: keep both out of names.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == ';' || c.is_whitespace() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

impl Flame {
    /// Adds an interval's off-CPU reasons (thread rows give one stack per thread and reason).
    pub fn add(&mut self, iv: &Interval) {
        for row in &iv.rows {
            for r in &row.reasons {
                let us = r.ns / 1000;
                if us == 0 {
                    continue;
                }
                let mut line = clean(&row.comm);
                line.push(';');
                line.push_str(r.state.name());
                for f in r.frames.iter().rev() {
                    line.push(';');
                    line.push_str(&clean(f));
                }
                *self.folded_us.entry(line).or_default() += us;
            }
        }
    }

    /// Whether nothing was gathered.
    pub fn is_empty(&self) -> bool {
        self.folded_us.is_empty()
    }

    /// The folded lines (`a;b;c 123`), sorted.
    pub fn folded(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .folded_us
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        v.sort();
        v
    }

    /// Writes the SVG and flushes `out`: an error of the last buffered write is returned, not
    /// lost when the caller drops a buffered writer (a full disk would otherwise leave a short
    /// file behind a success).
    pub fn write_svg<W: Write>(&self, title: &str, mut out: W) -> std::io::Result<()> {
        use inferno::flamegraph::{color::BasicPalette, Options, Palette};

        let mut opts = Options::default();
        opts.title = title.to_string();
        opts.count_name = "us".to_string();
        opts.colors = Palette::Basic(BasicPalette::Io);
        let lines = self.folded();
        if lines.is_empty() {
            // inferno refuses an empty graph; say so in an SVG rather than fail.
            write!(
                out,
                "<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"600\" \
                 height=\"40\"><text x=\"10\" y=\"25\">{}: no off-CPU stacks recorded</text></svg>",
                title.replace('&', "&amp;").replace('<', "&lt;")
            )?;
        } else {
            inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut out)?;
        }
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interval::{Reason, Row};
    use std::sync::Arc;
    use tasksnap_model::states::Mode;
    use tasksnap_model::states::State;

    #[test]
    fn folds_reasons_root_first_and_writes_an_svg() {
        let row = Row {
            comm: "query thread;1".into(),
            reasons: vec![Reason {
                state: State::Disk,
                frames: Arc::from(vec![
                    "rwsem_down_write_slowpath".to_string(),
                    "vm_mmap_pgoff".to_string(),
                ]),
                ns: 2_500_000,
            }],
            ..Row::default()
        };
        let iv = Interval {
            mode: Mode::Bpf,
            length_ns: 1,
            rows: vec![row],
            exited: 0,
            notes: vec![],
        };
        let mut f = Flame::default();
        f.add(&iv);
        f.add(&iv);
        assert_eq!(
            f.folded(),
            vec!["query_thread_1;disk;vm_mmap_pgoff;rwsem_down_write_slowpath 5000"]
        );
        let mut svg = Vec::new();
        f.write_svg("off-CPU", &mut svg).expect("svg");
        let svg = String::from_utf8(svg).expect("utf8");
        assert!(svg.contains("<svg"));
        assert!(svg.contains("rwsem_down_write_slowpath"));
    }

    /// Regression (#16, writes on a full disk): the SVG was left in the caller's buffered
    /// writer, whose flush error is lost when it is dropped: `--flamegraph /dev/full` exited 0
    /// with nothing written. The last write's error must come back from write_svg.
    #[test]
    fn regression_a_full_disk_under_a_buffered_writer_was_not_an_error() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let empty = Flame::default();
        let e = empty
            .write_svg("t", std::io::BufWriter::new(Full))
            .expect_err("an empty graph on a full disk");
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
        let mut f = Flame::default();
        f.folded_us.insert("a;disk;f".into(), 5);
        let e = f
            .write_svg("t", std::io::BufWriter::with_capacity(1 << 20, Full))
            .expect_err("a graph on a full disk");
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
    }
}
