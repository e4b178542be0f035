//! Validated ps settings: what the option parser ([`super::args`]) produces and the rest of
//! `ps` consumes. Nothing here knows about option syntax.

/// One requested column before widths are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnReq {
    /// Specifier name (`pid`, `comm`, ...); empty for an AIX literal text column, whose text
    /// is `header`.
    pub name: String,
    /// `-o pid=HEADER`: replacement header (may be empty).
    pub header: Option<String>,
    /// `-o pid:10`: explicit width.
    pub width: Option<usize>,
}

impl ColumnReq {
    /// How tests name a column: its specifier, or an AIX text column's text in quotes.
    #[cfg(test)]
    pub fn label(&self) -> String {
        if self.name.is_empty() {
            format!("'{}'", self.header.as_deref().unwrap_or_default())
        } else {
            self.name.clone()
        }
    }
}

/// A list criterion (`-p`, `-u`, ...): a task is selected when any criterion matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Criterion {
    /// `-p`, `p`, trailing pids: these process ids.
    Pid(Vec<i32>),
    /// `--ppid`: children of these.
    Ppid(Vec<i32>),
    /// `-s`/`--sid`: these sessions.
    Sess(Vec<i32>),
    /// `-g`/`--group`... as process groups (`-g` numeric is a pgrp list in procps's reading).
    Pgrp(Vec<i32>),
    /// `-u`/`--user`/`U`: effective uid.
    Euid(Vec<u32>),
    /// `-U`: real uid.
    Ruid(Vec<u32>),
    /// `-G`: real gid.
    Rgid(Vec<u32>),
    /// `--group` / `-g` by name: effective gid.
    Egid(Vec<u32>),
    /// `-C`: command names.
    Comm(Vec<Vec<u8>>),
    /// `-t`/`t`: terminals, as tty_nr device numbers.
    Tty(Vec<u32>),
}

/// How threads are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// One row per process.
    Off,
    /// `-L`, `-T`: one row per thread.
    Each,
    /// `H`: threads shown as if they were processes.
    AsProcesses,
    /// `m`, `-m`: a process row followed by its thread rows.
    AfterProcess,
}

/// Tree art style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forest {
    /// `--forest`, `f`: ASCII art (` \_ `).
    Bsd,
    /// `-H`: indentation only.
    Unix,
}

/// Output encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// procps-compatible text.
    Text,
    /// One JSON object per row, as a JSON array.
    Json,
    /// Comma-separated values with a header row.
    Csv,
}

/// Which collector answers: the one backend enum of every command.
pub use tasksnap_model::Backend;

/// A sort key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    /// Specifier name; empty for a key procps keeps but that sorts nothing (the listing is
    /// still a sorted one).
    pub name: String,
    /// Descending (`-key`).
    pub reverse: bool,
}

/// Everything ps needs to run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `-e`, `-A`, `ax`...: every process.
    pub all: bool,
    /// procps's simple-selection bit table (see select.c); `None` when lists alone select.
    pub select_bits: Option<u32>,
    /// List criteria.
    pub criteria: Vec<Criterion>,
    /// `-N`/`--deselect`.
    pub negate: bool,
    /// `r`: running tasks only.
    pub running_only: bool,
    /// Thread display.
    pub threads: Threads,
    /// Columns.
    pub columns: Vec<ColumnReq>,
    /// Sort keys; empty means pid order.
    pub sort: Vec<SortKey>,
    /// Tree display.
    pub forest: Option<Forest>,
    /// Print the header line.
    pub headers: bool,
    /// Screen width.
    pub screen_cols: usize,
    /// `-f`: comm shows the command line.
    pub unix_f: bool,
    /// BSD `c`: command columns show the bare command name (Debian's procps 4.0.2 patch).
    pub bsd_c: bool,
    /// BSD `e`: command columns show the environment after the command.
    pub bsd_e: bool,
    /// `--delimiter C`: columns separated by this byte instead of padding.
    pub delimiter: Option<u8>,
    /// Terminal height, for `--headers`.
    pub screen_rows: usize,
    /// `--headers`: repeat the header every screen height.
    pub multi_header: bool,
    /// `S`: include reaped children's times.
    pub include_dead_children: bool,
    /// `n`: numeric user ids.
    pub user_is_number: bool,
    /// Output encoding.
    pub output: Output,
    /// `--verbose`: diagnostics to stderr.
    pub verbose: bool,
    /// `--backend`.
    pub backend: Backend,
    /// `--replay DIR [--at TIME]`: list a recording's sample (the last at or before TIME,
    /// the last one without it) instead of the host now.
    pub replay: Option<(std::path::PathBuf, Option<String>)>,
    /// `-q`: pids to show, in the order given (procps reads exactly these, in this order).
    pub quick_order: Option<Vec<i32>>,
}
