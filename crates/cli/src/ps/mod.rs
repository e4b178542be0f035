//! `tasksnap ps`: a procps-ng 4.0 compatible `ps` over tasksnap snapshots.
//!
//! The pieces, in the order a run uses them: [`args`] turns argv into [`settings::Settings`];
//! [`format`] is the table of columns, one row per specifier (header, width, alignment,
//! where the value comes from, what it sorts by); this module takes the attribute groups the
//! rows of the listing read and one snapshot; [`select`] keeps the tasks procps would;
//! [`order`] sorts and builds the forest; [`layout`] lays the cells out and [`fields`] and
//! [`printers`] print every value byte for byte as procps would; [`machine`] prints
//! JSON/CSV.

pub mod args;
pub mod cell;
pub mod fields;
pub mod format;
pub mod layout;
pub mod machine;
pub mod names;
pub mod order;
pub mod printers;
pub mod select;
pub mod settings;
pub mod text;

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use tasksnap_collect::Host;
use tasksnap_model::{Backend, Group, Groups, PassReport, Query, Selector, Task};

use cell::Cell;
use format::{Just, Spec};
use layout::Column;
use settings::{Criterion, Output, Settings, Threads};

/// Digits of `kernel.pid_max`: procps sizes pid columns with it (procps_pid_length()).
fn pid_digits(host: &Host) -> usize {
    host.pid_max_width().unwrap_or(5)
}

/// Resolves requested columns into specs with widths and headers (procps `do_one_spec`).
pub fn resolve_columns(s: &Settings, pid_len: usize) -> Vec<Column> {
    s.columns
        .iter()
        .filter_map(|c| {
            if c.name.is_empty() {
                // AIX literal text: its own width, no gap to its neighbours.
                let text = c.header.clone().unwrap_or_default();
                return Some(Column {
                    spec: &format::TEXT,
                    width: text.len(),
                    header: text,
                });
            }
            let spec: &'static Spec = format::find(&c.name)?;
            let mut w = if spec.pidmax {
                pid_len.max(spec.head.len())
            } else {
                spec.width
            };
            let header = match &c.header {
                Some(h) => {
                    w = w.max(h.len());
                    h.clone()
                }
                None => spec.head.to_string(),
            };
            if let Some(explicit) = c.width {
                w = explicit;
            }
            Some(Column {
                spec,
                header,
                width: w,
            })
        })
        .collect()
}

/// The attribute groups a run needs: what its columns and sort keys read ([`Spec::ask`]),
/// and the real ids when a list selects by them.
fn groups_for(s: &Settings, cols: &[Column]) -> Groups {
    let mut g = Groups::of(&[Group::Base, Group::CredEffective]);
    let sort_keys = s.sort.iter().filter_map(|k| format::find(&k.name));
    for spec in cols.iter().map(|c| c.spec).chain(sort_keys) {
        spec.ask(s, &mut g);
    }
    if s.criteria
        .iter()
        .any(|c| matches!(c, Criterion::Ruid(_) | Criterion::Rgid(_)))
    {
        g.insert(Group::CredFull);
    }
    g
}

/// The snapshot query: per thread when threads are shown, one pid at a time when only
/// `-p`/`-q` lists select, every process otherwise.
fn selectors_for(s: &Settings) -> Vec<Selector> {
    let threads = s.threads != Threads::Off;
    if let Some(order) = &s.quick_order {
        return order
            .iter()
            .map(|&p| {
                if threads {
                    Selector::ThreadsOf(p)
                } else {
                    Selector::Pid(p)
                }
            })
            .collect();
    }
    let only_pids = !s.all
        && !s.negate
        && s.select_bits.is_none()
        && !s.criteria.is_empty()
        && s.criteria.iter().all(|c| matches!(c, Criterion::Pid(_)));
    if only_pids {
        let mut pids: Vec<i32> = s
            .criteria
            .iter()
            .flat_map(|c| match c {
                Criterion::Pid(v) => v.clone(),
                _ => Vec::new(),
            })
            .collect();
        pids.sort_unstable();
        pids.dedup();
        return pids
            .into_iter()
            .map(|p| {
                if threads {
                    Selector::ThreadsOf(p)
                } else {
                    Selector::Pid(p)
                }
            })
            .collect();
    }
    vec![if threads {
        Selector::AllThreads
    } else {
        Selector::AllProcesses
    }]
}

/// procps's `boot_tics`: the first number of /proc/uptime times Hertz, truncated.
fn uptime_ticks(host: &Host, hertz: u64) -> Option<u64> {
    let secs = host.uptime_s()?;
    Some((secs * hertz as f64) as u64)
}

/// The recorded reading `ps --replay DIR [--at TIME]` lists: the last sample at or before
/// TIME (the last one of the recording without it).
fn replay_host(dir: &Path, at: Option<&str>) -> anyhow::Result<Host> {
    let history = crate::recording::open("tasksnap ps", dir)?;
    let t = match at {
        Some(text) => crate::when::parse_time(text).map_err(anyhow::Error::msg)?,
        None => u64::MAX,
    };
    let reading = history.reading_at(t)?;
    let why = format!(
        "replay of {} at {}",
        dir.display(),
        crate::when::rfc3339(reading.snapshot.taken_at_unix_ns)
    );
    Ok(Host::replay(reading, why))
}

/// Rows from which a text listing is formatted on two threads.
const PARALLEL_ROWS: usize = 8192;

/// Runs ps with parsed settings, writing to `out`. Returns the exit code procps would use.
pub fn run(s: &Settings, loc: text::Locale, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    // A replay: the recorded reading's figures stand in for the host's.
    let mut host = match &s.replay {
        Some((dir, at)) => replay_host(dir, at.as_deref())?,
        None => Host::from_env(),
    };
    let cols = resolve_columns(s, pid_digits(&host));
    let groups = groups_for(s, &cols);
    let report = open_collector(&mut host, s, &groups)?;
    let chosen = started.elapsed();
    let (mut tasks, taken) = snapshot_all(&mut host, s, groups, &report)?;
    let snapped = started.elapsed();
    // Signal masks print 16 digits when the line has room (procps check_header_width); the
    // machine formats, which have no line, always get all of them.
    let wide_signals = s.output != Output::Text
        || layout::wide_signals(&cols, layout::active_cols(&cols, s.screen_cols));
    let env = print_env(&host, s, loc, taken, wide_signals);
    // What printing reads of the machine, from the host (the NUMA map only when a column or
    // a sort key needs it).
    let numa = cols.iter().any(|c| c.spec.needs_numa())
        || s.sort
            .iter()
            .any(|k| format::find(&k.name).is_some_and(Spec::needs_numa));
    let facts = names::HostFacts::of(&host, numa);
    let mut caches = fields::Caches::new(&facts);

    let me = select::Me::current(&host);
    tasks.retain(|t| select::want(s, &me, t, loc));
    let rows = order::arrange(s, &tasks, &env, &mut caches);
    let arranged = started.elapsed();

    let listing = Listing {
        s,
        cols: &cols,
        tasks: &tasks,
        rows: &rows,
        env: &env,
        facts: &facts,
        active_cols: layout::active_cols(&cols, s.screen_cols),
    };
    match s.output {
        Output::Json => {
            let cols = listing.data_cols();
            machine::json(out, &tasks, &cols, &rows, &env, &mut caches)?
        }
        Output::Csv => {
            let cols = listing.data_cols();
            machine::csv(out, &tasks, &cols, &rows, &env, &mut caches)?
        }
        Output::Text => {
            listing.write_text(&mut caches, out)?;
            if rows.is_empty() {
                out.flush()?;
                // procps exits 1 when nothing matched.
                return Ok(ExitCode::from(1));
            }
        }
    }
    out.flush()?;
    // The process ends right after this: freeing 50,000 tasks one by one would only add
    // time (a few ms at that size) that nobody gets anything for.
    std::mem::forget(tasks);
    if s.verbose {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        warn!(
            "tasksnap: {:.1} ms: backend ready {:.1}, snapshot {:.1}, select+sort {:.1}, print {:.1}",
            ms(started.elapsed()),
            ms(chosen),
            ms(snapped - chosen),
            ms(arranged - snapped),
            ms(started.elapsed() - arranged),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens the host's collector for `groups` (a replay's host has its reading already) and
/// gives up what opening needed; `--verbose` says which way it chose. Returns its report.
fn open_collector(host: &mut Host, s: &Settings, groups: &Groups) -> anyhow::Result<PassReport> {
    let replayed = s.replay.is_some();
    if !replayed {
        // Ready for these groups: whatever needed the caller's privileges is done.
        host.open_snapshots(s.backend, groups)
            .context("no collector")?;
    }
    let report = host.report();
    if s.verbose {
        warn!("tasksnap: {}", report.why);
    }
    // Loaded (or opened): what loading needed is no longer needed.
    let now = host.drop_loading_privileges();
    if report.backend == Backend::Bpf && !replayed && s.verbose {
        match now {
            Ok(eff) => warn!("tasksnap: capabilities after setup: {eff:#018x}"),
            Err(e) => warn!("tasksnap: could not drop capabilities: {e}"),
        }
    }
    Ok(report)
}

/// When the (last) snapshot was taken: the boot time (s since the epoch), the boot clock
/// (ns) and the wall clock (ns since the epoch); all 0 when nothing was read.
#[derive(Debug, Clone, Copy, Default)]
struct Taken {
    boot_time_unix_s: u64,
    boottime_ns: u64,
    unix_ns: u64,
}

/// The tasks of one snapshot per selector the options need, in that order; `--verbose`
/// says how each pass went (and why, when it chose otherwise than `report` said).
fn snapshot_all(
    host: &mut Host,
    s: &Settings,
    groups: Groups,
    report: &PassReport,
) -> anyhow::Result<(Vec<Task>, Taken)> {
    let mut tasks: Vec<Task> = Vec::new();
    let mut taken = Taken::default();
    for sel in selectors_for(s) {
        let mut query = Query::new(sel.clone(), groups);
        query.leader_as_process = true;
        let snap = host.snapshot(&query)?;
        if s.verbose {
            let now = host.report();
            // A collector that chose another way for this pass (the query service not
            // answering: /proc read instead) says why.
            if now.why != report.why {
                warn!("tasksnap: {}", now.why);
            }
            if !now.pass.is_empty() {
                warn!("tasksnap: pass: {}", now.pass);
            }
            if !now.phases.is_empty() {
                warn!("tasksnap: snapshot phases: {}", now.phases_line());
            }
            warn!(
                "tasksnap: backend {} read {} tasks ({} vanished, {} denied, {} cmdline timeouts)",
                snap.backend,
                snap.tasks.len(),
                snap.stats.vanished,
                snap.stats.denied,
                snap.stats.cmdline_timeouts
            );
        }
        taken = Taken {
            boot_time_unix_s: snap.boot_time_unix_s,
            boottime_ns: snap.taken_at_boottime_ns,
            unix_ns: snap.taken_at_unix_ns,
        };
        if tasks.is_empty() {
            tasks = snap.tasks;
        } else {
            tasks.extend(snap.tasks);
        }
    }
    Ok((tasks, taken))
}

/// What the printers read besides a task: units, clocks, the memory total and the options
/// that change how values print. A replay's clocks are its reading's; a live run's uptime is
/// the host's, read now, as procps reads it.
fn print_env(
    host: &Host,
    s: &Settings,
    loc: text::Locale,
    taken: Taken,
    wide_signals: bool,
) -> fields::Env {
    let replayed = s.replay.is_some();
    let units = host.units();
    let hertz = units.clock_ticks_per_s;
    let live_uptime = (!replayed).then(|| uptime_ticks(host, hertz)).flatten();
    // procps's boot_tics at the sample: its boot-clock time in ticks.
    let sample_uptime = taken.boottime_ns / (1_000_000_000 / hertz);
    fields::Env {
        hertz,
        page_size: units.page_size_bytes,
        mem_total_kb: match replayed {
            true => host.mem_total_kib().unwrap_or(0).max(1),
            false => host.mem_total_kib().unwrap_or(1),
        },
        boot_time_s: taken.boot_time_unix_s as i64,
        now_s: (taken.unix_ns / 1_000_000_000) as i64,
        uptime_ticks: match replayed {
            true => sample_uptime,
            false => live_uptime.unwrap_or(sample_uptime),
        },
        uptime_read: replayed || live_uptime.is_some(),
        locale: loc,
        unix_f_option: s.unix_f,
        bsd_c_option: s.bsd_c,
        bsd_e_option: s.bsd_e,
        include_dead_children: s.include_dead_children,
        user_is_number: s.user_is_number,
        wide_signals,
    }
}

/// One listing ready to print: the options, its columns, the tasks and the rows they print
/// as (selected, sorted, the forest drawn), and what the printers read of the machine.
struct Listing<'a> {
    s: &'a Settings,
    cols: &'a [Column],
    tasks: &'a [Task],
    rows: &'a [order::Row],
    env: &'a fields::Env,
    facts: &'a names::HostFacts,
    /// The line's width in cells (procps's `active_cols`).
    active_cols: usize,
}

impl Listing<'_> {
    /// The columns with data: AIX literal text is layout, not data.
    fn data_cols(&self) -> Vec<Column> {
        self.cols
            .iter()
            .filter(|c| c.spec.just != Just::Text)
            .cloned()
            .collect()
    }

    /// Lays one line out: the header's, or a row's with `value` giving each column's cell.
    fn render_line(&self, out: &mut Vec<u8>, value: &mut dyn FnMut(usize, usize) -> Cell) {
        layout::render_line(
            out,
            self.cols,
            self.active_cols,
            self.s.user_is_number,
            self.s.delimiter,
            self.env.wide_signals,
            value,
        )
    }

    /// The text listing: the header (again every screenful under BSD `h`), then the rows. A
    /// long listing is formatted in two halves at once: the second on its own thread (with
    /// its own caches), into memory, written after the first.
    fn write_text(&self, caches: &mut fields::Caches, out: &mut dyn Write) -> anyhow::Result<()> {
        let (s, cols, rows) = (self.s, self.cols, self.rows);
        let any_header = cols.iter().any(|c| !c.header.is_empty());
        let mut header = Vec::new();
        self.render_line(&mut header, &mut |i, _| Cell {
            bytes: cell::CellBytes::from_slice(cols[i].header.as_bytes()),
            cells: cols[i].header.len(),
        });
        let show_header = s.headers && any_header && !cols.is_empty();
        let gap = if s.multi_header {
            s.screen_rows.saturating_sub(1).max(1)
        } else {
            usize::MAX
        };
        if show_header {
            out.write_all(&header)?;
        }
        let split = if rows.len() >= PARALLEL_ROWS && gap == usize::MAX {
            rows.len() / 2
        } else {
            rows.len()
        };
        let (first, second) = rows.split_at(split);
        let countdown = |n: usize| header_countdown(n, gap, show_header);
        let render = |first_row: usize,
                      rows: &[order::Row],
                      caches: &mut fields::Caches,
                      sink: &mut dyn Write| {
            let mut line = Vec::with_capacity(256);
            for (n, row) in rows.iter().enumerate() {
                line.clear();
                let countdown = countdown(first_row + n);
                self.render_line(&mut line, &mut |i, max| {
                    order::cell(self.tasks, row, &cols[i], max, countdown, self.env, caches)
                });
                sink.write_all(&line)?;
            }
            io::Result::Ok(())
        };
        std::thread::scope(|scope| -> anyhow::Result<()> {
            let later = (!second.is_empty()).then(|| {
                scope.spawn(|| {
                    let mut caches = fields::Caches::new(self.facts);
                    let mut buf = Vec::with_capacity(second.len() * 128);
                    render(split, second, &mut caches, &mut buf).map(|()| buf)
                })
            });
            if gap == usize::MAX {
                render(0, first, caches, out)?;
            } else {
                for (n, row) in first.iter().enumerate() {
                    if show_header && n > 0 && n % gap == 0 {
                        out.write_all(&header)?;
                    }
                    render(n, std::slice::from_ref(row), caches, out)?;
                }
            }
            if let Some(h) = later {
                let buf = h
                    .join()
                    .map_err(|_| anyhow::anyhow!("a formatting thread panicked"))??;
                out.write_all(&buf)?;
            }
            Ok(())
        })
    }
}

/// procps's `lines_to_next_header` when row `n` prints (only procps's layout test columns
/// show it): it starts at 1, drops by one before each row and, reaching 0, prints the header
/// and restarts at the gap (-1 without `--headers`).
fn header_countdown(n: usize, gap: usize, show_header: bool) -> i64 {
    if gap != usize::MAX {
        (gap - n % gap) as i64
    } else if show_header {
        -1 - n as i64
    } else {
        -2 - n as i64
    }
}

/// Entry point for `tasksnap ps ARGS...`.
pub fn main(argv: &[OsString]) -> ExitCode {
    let loc = text::Locale::from_env();
    let settings = match args::parse(argv) {
        Ok(s) => s,
        Err(args::ArgError { code: 0, .. }) => {
            return crate::output::print(&args::info_text(argv).unwrap_or_default());
        }
        Err(args::ArgError { message, code }) => {
            let stderr = io::stderr();
            let mut e = stderr.lock();
            let _ = e.write_all(message.as_bytes());
            return ExitCode::from(code);
        }
    };
    // A listing is printed only once it is complete: a big buffer makes it a few writes
    // (at 50,000 processes `ps -ef` made 42 writes of 64 KiB).
    let mut out = crate::output::buffered(1 << 20);
    // `tasksnap ps | head` exits 0; any other write error is "write error", status 1.
    crate::output::exit_code(run(&settings, loc, &mut out))
}

#[cfg(test)]
mod tests {
    use crate::ps::*;

    /// Every column whose value comes from the model's field table asks for the group the
    /// table says the field needs, and a plain `ps -ef` asks for none of the new groups.
    #[test]
    fn columns_from_the_field_table_ask_for_their_groups() {
        let settings = args::parse(&["-ef".into()]).expect("ps -ef");
        let plain = groups_for(&settings, &[]);
        assert!(
            !plain.has(Group::Label) && !plain.has(Group::Login) && !plain.has(Group::Cgroup),
            "{plain:?}"
        );
        let mut n = 0;
        for spec in format::SPECS {
            let fields::Source::Table(model, _) = spec.value else {
                continue;
            };
            n += 1;
            let col = Column {
                spec,
                header: String::new(),
                width: 5,
            };
            let g = groups_for(&settings, std::slice::from_ref(&col));
            assert!(model.group.asked(g), "{}: {}", spec.name, model.name);
        }
        assert!(n >= 20, "{n} columns from the table");
        for (name, flag) in [
            (
                "label",
                (|g: &Groups| g.has(Group::Label)) as fn(&Groups) -> bool,
            ),
            ("unit", |g: &Groups| {
                g.has(Group::Login) && !g.has(Group::Cgroup)
            }),
            ("cgroup", |g: &Groups| g.has(Group::Cgroup)),
        ] {
            let spec = format::find(name).expect("known");
            let col = Column {
                spec,
                header: String::new(),
                width: 5,
            };
            assert!(flag(&groups_for(&settings, &[col])), "{name}");
        }
    }
}
