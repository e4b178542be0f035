//! The live view of `tasksnap top` (ratatui over crossterm): header, column header, the rows
//! that fit, a prompt line; keys as in procps top and htop. This thread only draws and
//! answers keys: the collection runs on its own thread ([`super::worker`]) and sends pages
//! with the rows on screen already formatted; keys and pages arrive on one channel, so
//! nothing here polls. The terminal is restored on every exit path, panics included.

use std::io;
use std::sync::mpsc::{self, Sender};

use crossterm::event::{
    self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind,
};
use crossterm::terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line as TextLine, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Terminal;

use super::arrange::Filter;
use super::columns::Column;
use super::options::Options;
use super::replay::Replay;
use super::session::Page;
use super::worker::{self, Request, Update};
use crate::input::{Nice, Pid, Signal};

/// Smallest terminal the view draws in; below it a message says so.
const MIN_COLS: u16 = 20;
const MIN_ROWS: u16 = 4;

const HELP: &str = "\
tasksnap top: keys
  P M T N   sort by %CPU, %MEM, TIME+, PID      < >  sort column left/right
  R         reverse the order                  V    tree       H  threads
  c         full command lines                 /    filter by name
  w         each process's top wait reason (the kernel stack it spent most off-CPU time in)
  g         the cgroup view: a row per cgroup (as tasksnap cgroups), tree order;
            Enter there: the processes of the cgroup on the top row
  G         a CGROUP column (as ps -o cgroup)
  e         the processes that exited in the interval, as <name>; EXIT: code or signal
  u         filter by user                     o    filter FIELD=text, FIELD>n, FIELD<n
  =         clear the filters                  k    send a signal   r  renice
  z, space  freeze / unfreeze                  d    refresh interval
  arrows, PgUp/PgDn, Home/End, mouse wheel: scroll       q  quit
  RUNQ% = waiting for a CPU behind others; THR% = held back by the cgroup's CPU quota;
  DISK% = in uninterruptible sleep (D).
  Any key closes this help.";

/// What a replay's help says besides (before its last line).
const REPLAY_HELP: &str = "\
  Replay: t next sample   T previous sample   b jump to a time (TIME+ sort: < >)
  k and r are off: the pids of a recording may be other processes now.
";

#[derive(Debug, Clone)]
enum Prompt {
    Name,
    User,
    Other,
    Delay,
    KillPid,
    KillSignal {
        pid: Pid,
    },
    KillConfirm {
        pid: Pid,
        signal: Signal,
    },
    RenicePid,
    ReniceValue {
        pid: Pid,
    },
    ReniceConfirm {
        pid: Pid,
        nice: Nice,
    },
    /// A replay: the time to jump to.
    Jump,
}

impl Prompt {
    fn question(&self) -> String {
        match self {
            Prompt::Name => "Show only commands containing (empty: all): ".into(),
            Prompt::User => "Which user (name or uid, empty: all): ".into(),
            Prompt::Other => {
                "Filter (e.g. %CPU>1.0, COMMAND=sshd, !USER=root; empty: none): ".into()
            }
            Prompt::Delay => "Seconds between refreshes: ".into(),
            Prompt::KillPid => "PID to signal (empty: the top row): ".into(),
            Prompt::KillSignal { pid } => format!("Signal to send to {pid} (default 15): "),
            Prompt::KillConfirm { pid, signal } => {
                format!("Send signal {} to pid {pid}? [y/N] ", signal.get())
            }
            Prompt::RenicePid => "PID to renice (empty: the top row): ".into(),
            Prompt::ReniceValue { pid } => format!("Nice value for {pid}: "),
            Prompt::ReniceConfirm { pid, nice } => {
                format!("Renice pid {pid} to {}? [y/N] ", nice.get())
            }
            Prompt::Jump => "Jump to (RFC 3339 UTC, epoch seconds, -10m): ".into(),
        }
    }
}

struct App {
    /// The options as keys left them (the collection thread gets a copy of each change).
    opts: Options,
    /// The last page the collection thread sent.
    shown: Option<Page>,
    /// The first row the user wants to see.
    scroll: usize,
    frozen: bool,
    help: bool,
    prompt: Option<(Prompt, String)>,
    message: Option<String>,
    quit: bool,
    /// A replay (`--replay DIR`): t, T and b step through it; k and r are off.
    replay: bool,
    /// Rows of the table on the last draw (for paging).
    page: usize,
    /// The window (first row, rows) last asked of the collection thread.
    asked: (usize, usize),
    requests: Sender<Request>,
}

/// What reaches the terminal thread: a terminal event or word from the collection thread.
enum Input {
    Terminal(Event),
    Collector(Update),
}

/// Puts the terminal back however the view ends.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
        let _ = crossterm::execute!(
            io::stdout(),
            crossterm::event::DisableMouseCapture,
            terminal::LeaveAlternateScreen,
            crossterm::cursor::Show
        );
    }
}

/// Runs the live view until `q` (or `-n` refreshes); over the recording `replay` if given.
pub fn run(opts: Options, replay: Option<Replay>) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    if !io::stdout().is_terminal() || !io::stdin().is_terminal() {
        anyhow::bail!("not a terminal: use -b for batch output (tasksnap top -b -n 1)");
    }
    terminal::enable_raw_mode()?;
    let _restore = Restore;
    crossterm::execute!(
        io::stdout(),
        terminal::EnterAlternateScreen,
        crossterm::event::EnableMouseCapture
    )?;
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = terminal::disable_raw_mode();
        let _ = crossterm::execute!(io::stdout(), terminal::LeaveAlternateScreen);
        default_hook(info);
    }));
    let mut term = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    let (tx, rx) = mpsc::channel::<Input>();
    let from_collector = tx.clone();
    let is_replay = replay.is_some();
    let requests = worker::spawn(opts.clone(), replay, move |u| {
        from_collector.send(Input::Collector(u)).is_ok()
    })?;
    // This thread draws and answers keys: it never needs what loading BPF needs
    // (capabilities are per thread; the collection thread drops its own once its programs
    // are loaded, see Top::refresh). Threads started from here on inherit the smaller set.
    let _ = tasksnap_collect::Host::drop_loading_privileges_of_this_thread();
    exit_on_hangup();
    std::thread::Builder::new()
        .name("keys".into())
        .spawn(move || {
            // Blocks in read(2) on the terminal: no wake-ups while nothing is typed.
            while let Ok(ev) = event::read() {
                if tx.send(Input::Terminal(ev)).is_err() {
                    return;
                }
            }
        })?;
    let rows_guess = terminal::size().map_or(24, |(_, r)| r as usize);
    let mut app = App {
        opts,
        shown: None,
        scroll: 0,
        frozen: false,
        help: false,
        prompt: None,
        message: None,
        quit: false,
        replay: is_replay,
        page: 10,
        asked: (0, rows_guess.saturating_sub(9).max(1)),
        requests,
    };
    app.send(Request::View {
        scroll: app.asked.0,
        room: app.asked.1,
    });
    while !app.quit {
        term.draw(|f| draw(f, &mut app))?;
        // The window drawn may differ from the page on hand (a resize, a scroll, a header
        // of another height): ask for the rows it needs.
        let want = (app.scroll, app.page);
        if want != app.asked {
            app.asked = want;
            app.send(Request::View {
                scroll: want.0,
                room: want.1,
            });
        }
        match rx.recv() {
            Ok(Input::Terminal(ev)) => match ev {
                Event::Key(k) if k.kind != KeyEventKind::Release => on_key(&mut app, k),
                Event::Mouse(m) => match m.kind {
                    MouseEventKind::ScrollDown => scroll_by(&mut app, 3),
                    MouseEventKind::ScrollUp => scroll_by(&mut app, -3),
                    _ => {}
                },
                _ => {}
            },
            Ok(Input::Collector(Update::Page(p))) => app.shown = Some(*p),
            Ok(Input::Collector(Update::Failed(why))) => anyhow::bail!("{why}"),
            Ok(Input::Collector(Update::Message(m))) => app.message = Some(m),
            Ok(Input::Collector(Update::Done)) | Err(_) => break,
        }
    }
    Ok(())
}

impl App {
    /// Tells the collection thread; if it is gone, its last word (an error) is on the way.
    fn send(&self, r: Request) {
        let _ = self.requests.send(r);
    }

    /// Sends the options as keys left them: `recollect` when the rows change (threads,
    /// filters) and a new snapshot is needed, not only a new order or new columns.
    fn options_changed(&mut self, recollect: bool) {
        if recollect {
            self.scroll = 0;
        }
        self.send(Request::Options {
            opts: Box::new(self.opts.clone()),
            recollect,
        });
    }
}

/// Ends the program when the terminal hangs up (window closed, ssh session lost).
///
/// SIGHUP normally does that, but not when it is ignored (under `nohup`, or as pid 1 of a pid
/// namespace, which gets no signal it has no handler for). Then every read of the terminal
/// returns 0 at once, and crossterm's reader loops on those reads inside `event::poll`
/// without ever returning: 100% of a CPU, forever. A thread blocked in poll(2) on standard
/// input with no events asked for wakes only on a hang-up or an error, at no cost until then.
fn exit_on_hangup() {
    let spawned = std::thread::Builder::new()
        .name("hangup".into())
        .spawn(|| loop {
            let mut p = libc::pollfd {
                fd: 0,
                events: 0,
                revents: 0,
            };
            // SAFETY: one valid pollfd; blocks until the descriptor reports HUP or ERR.
            let n = unsafe { libc::poll(&mut p, 1, -1) };
            if n > 0 && p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                // Nobody is left to read a message or restore a terminal that is gone.
                std::process::exit(0);
            }
            if n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return;
            }
        });
    // Without the thread a hang-up with SIGHUP ignored spins, as before: not a reason to
    // refuse to start.
    drop(spawned);
}

/// In the cgroup view, Enter: the task view of the cgroup on the top row (its `CGROUP`
/// filter; `=` clears it).
fn drill_into_cgroup(app: &mut App) {
    let Some(text) = app.shown.as_ref().and_then(|p| p.cgroup_filters.first()) else {
        return;
    };
    if text.is_empty() {
        app.message = Some("a hierarchy's root holds every process: scroll to a cgroup".into());
        return;
    }
    let Some(filter) = Filter::parse(&format!("CGROUP={text}")) else {
        return;
    };
    app.opts.other_filter = Some(filter);
    app.opts.cgroups = false;
    app.scroll = 0;
    app.message = Some("the cgroup's processes (CGROUP filter; = clears it)".into());
    refresh_now(app);
}

fn rows_total(app: &App) -> usize {
    app.shown.as_ref().map_or(0, |p| p.total)
}

fn scroll_by(app: &mut App, delta: isize) {
    let max = rows_total(app).saturating_sub(1);
    app.scroll = app.scroll.saturating_add_signed(delta).min(max);
}

/// Re-sort and refresh now (a changed view needs a new snapshot for threads and filters).
fn refresh_now(app: &mut App) {
    app.options_changed(true);
}

/// The task on the top row of the screen.
fn top_row_pid(app: &App) -> Option<Pid> {
    let p = app.shown.as_ref()?;
    p.ids
        .get(app.scroll.checked_sub(p.scroll)?)
        .and_then(|&tid| Pid::of_task(tid))
}

fn on_key(app: &mut App, k: KeyEvent) {
    if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
        app.quit = true;
        return;
    }
    if app.help {
        app.help = false;
        return;
    }
    if let Some((prompt, input)) = app.prompt.take() {
        return on_prompt_key(app, prompt, input, k);
    }
    app.message = None;
    if app.replay && on_replay_key(app, k) {
        return;
    }
    on_view_key(app, k);
}

/// A key while a prompt is open: editing its answer, Enter to answer, Esc to drop it (a
/// confirmation answers at its first key).
fn on_prompt_key(app: &mut App, prompt: Prompt, mut input: String, k: KeyEvent) {
    match k.code {
        KeyCode::Esc => app.message = None,
        KeyCode::Enter => answer(app, prompt, input.trim().to_string()),
        KeyCode::Backspace => {
            input.pop();
            app.prompt = Some((prompt, input));
        }
        KeyCode::Char(c) => {
            input.push(c);
            if matches!(
                prompt,
                Prompt::KillConfirm { .. } | Prompt::ReniceConfirm { .. }
            ) {
                answer(app, prompt, input);
            } else {
                app.prompt = Some((prompt, input));
            }
        }
        _ => app.prompt = Some((prompt, input)),
    }
}

/// The keys a replay answers otherwise than the live view (stepping, and refusals of what
/// only the host can do); false for the others.
fn on_replay_key(app: &mut App, k: KeyEvent) -> bool {
    match k.code {
        KeyCode::Char('t') => app.send(Request::Step(true)),
        KeyCode::Char('T') => app.send(Request::Step(false)),
        KeyCode::Char('b') => app.prompt = Some((Prompt::Jump, String::new())),
        KeyCode::Char('k') | KeyCode::Char('r') => {
            app.message =
                Some("not in a replay: the pids of a recording may be other processes now".into());
        }
        KeyCode::Char('d') | KeyCode::Char('s') | KeyCode::Char('z') | KeyCode::Char(' ') => {
            app.message = Some("a replay stays on its sample: t and T step, b jumps".into());
        }
        _ => return false,
    }
    true
}

/// A key of the view: sorting, toggles, prompts, freezing and scrolling.
fn on_view_key(app: &mut App, k: KeyEvent) {
    let o = &mut app.opts;
    match k.code {
        KeyCode::Char('q') => app.quit = true,
        KeyCode::Char('h') | KeyCode::Char('?') => app.help = true,
        KeyCode::Char('P') => set_sort(app, Column::CPU),
        KeyCode::Char('M') => set_sort(app, Column::MEM),
        KeyCode::Char('T') => set_sort(app, Column::TIME),
        KeyCode::Char('N') => set_sort(app, Column::PID),
        KeyCode::Char('<') | KeyCode::Char('>') => {
            let next = o
                .sort
                .cycled(if k.code == KeyCode::Char('<') { -1 } else { 1 });
            set_sort(app, next);
        }
        KeyCode::Char('R') => {
            o.ascending = !o.ascending;
            refresh_now(app);
        }
        KeyCode::Char('V') => {
            o.tree = !o.tree;
            refresh_now(app);
        }
        KeyCode::Char('H') => {
            o.threads = !o.threads;
            refresh_now(app);
        }
        KeyCode::Char('c') => {
            o.full_command = !o.full_command;
            app.options_changed(false);
        }
        KeyCode::Char('w') => {
            o.show_wait = !o.show_wait;
            app.options_changed(false);
        }
        KeyCode::Char('g') => {
            o.cgroups = !o.cgroups;
            app.scroll = 0;
            app.options_changed(true);
        }
        KeyCode::Enter => drill_into_cgroup(app),
        KeyCode::Char('G') => {
            o.show_cgroup = !o.show_cgroup;
            app.options_changed(false);
        }
        KeyCode::Char('e') => {
            o.show_exited = !o.show_exited;
            app.scroll = 0;
            app.options_changed(false);
        }
        KeyCode::Char('=') => {
            o.name_filter = None;
            o.user = None;
            o.other_filter = None;
            refresh_now(app);
        }
        KeyCode::Char('/') => app.prompt = Some((Prompt::Name, String::new())),
        KeyCode::Char('u') | KeyCode::Char('U') => app.prompt = Some((Prompt::User, String::new())),
        KeyCode::Char('o') | KeyCode::Char('O') => {
            app.prompt = Some((Prompt::Other, String::new()))
        }
        KeyCode::Char('d') | KeyCode::Char('s') => {
            app.prompt = Some((Prompt::Delay, String::new()))
        }
        KeyCode::Char('k') => app.prompt = Some((Prompt::KillPid, String::new())),
        KeyCode::Char('r') => app.prompt = Some((Prompt::RenicePid, String::new())),
        KeyCode::Char('z') | KeyCode::Char(' ') => {
            app.frozen = !app.frozen;
            app.send(Request::Freeze(app.frozen));
        }
        KeyCode::Down | KeyCode::Char('j') => scroll_by(app, 1),
        KeyCode::Up | KeyCode::Char('K') => scroll_by(app, -1),
        KeyCode::PageDown => scroll_by(app, app.page as isize),
        KeyCode::PageUp => scroll_by(app, -(app.page as isize)),
        KeyCode::Home => app.scroll = 0,
        KeyCode::End => app.scroll = rows_total(app).saturating_sub(app.page),
        _ => {}
    }
}

fn set_sort(app: &mut App, key: Column) {
    app.opts.sort = key;
    app.opts.ascending = key.spec().sort.is_some_and(|s| s.ascending);
    // The frame on hand is re-sorted at once; the next refresh keeps the order.
    app.scroll = 0;
    app.options_changed(false);
}

fn answer(app: &mut App, prompt: Prompt, input: String) {
    let o = &mut app.opts;
    // Only ever one real process: an empty answer is the highlighted row's, anything else
    // must be a pid (`-1` or `0` would signal a group or every process: see crate::input).
    let pid_or_top = |input: &str, app: &App| -> Result<Pid, String> {
        if input.is_empty() {
            top_row_pid(app).ok_or_else(|| "no row to act on".to_string())
        } else {
            Pid::parse(input)
        }
    };
    match prompt {
        Prompt::Name => {
            o.name_filter = (!input.is_empty()).then_some(input);
            refresh_now(app);
        }
        Prompt::User => {
            if input.is_empty() {
                o.user = None;
                refresh_now(app);
            } else {
                match crate::input::uid_of(&input) {
                    Some(uid) => {
                        o.user = Some(uid);
                        refresh_now(app);
                    }
                    None => app.message = Some(format!("Invalid user: '{input}'")),
                }
            }
        }
        Prompt::Other => {
            if input.is_empty() {
                o.other_filter = None;
                refresh_now(app);
            } else {
                match Filter::parse(&input) {
                    Some(f) => {
                        o.other_filter = Some(f);
                        refresh_now(app);
                    }
                    None => app.message = Some(format!("not a filter: '{input}'")),
                }
            }
        }
        Prompt::Delay => match crate::input::parse_seconds(&input, 0.1) {
            Ok(d) => {
                o.delay = d;
                app.options_changed(false);
            }
            Err(e) => app.message = Some(e),
        },
        Prompt::KillPid => match pid_or_top(&input, app) {
            Ok(pid) => app.prompt = Some((Prompt::KillSignal { pid }, String::new())),
            Err(e) => app.message = Some(e),
        },
        Prompt::KillSignal { pid } => {
            let signal = if input.is_empty() {
                Ok(Signal::TERM)
            } else {
                Signal::parse(&input)
            };
            match signal {
                Ok(signal) => {
                    app.prompt = Some((Prompt::KillConfirm { pid, signal }, String::new()))
                }
                Err(e) => app.message = Some(e),
            }
        }
        Prompt::KillConfirm { pid, signal } => {
            app.message = Some(confirmed(&input, "nothing sent", || {
                match pid.signal(signal) {
                    Ok(()) => format!("sent signal {} to {pid}", signal.get()),
                    Err(e) => format!("kill {pid}: {e}"),
                }
            }));
        }
        Prompt::RenicePid => match pid_or_top(&input, app) {
            Ok(pid) => app.prompt = Some((Prompt::ReniceValue { pid }, String::new())),
            Err(e) => app.message = Some(e),
        },
        Prompt::ReniceValue { pid } => match Nice::parse(&input) {
            Ok(nice) => app.prompt = Some((Prompt::ReniceConfirm { pid, nice }, String::new())),
            Err(e) => app.message = Some(e),
        },
        Prompt::Jump => match crate::when::parse_time(&input) {
            Ok(t) => app.send(Request::Jump(t)),
            Err(e) => app.message = Some(e),
        },
        Prompt::ReniceConfirm { pid, nice } => {
            app.message = Some(confirmed(&input, "not reniced", || {
                match pid.renice(nice) {
                    Ok(()) => format!("reniced {pid} to {}", nice.get()),
                    Err(e) => format!("renice {pid}: {e}"),
                }
            }));
        }
    }
}

/// A confirmation's outcome: what `act` says when the answer is `y` (any case), else `refused`.
fn confirmed(input: &str, refused: &str, act: impl FnOnce() -> String) -> String {
    if input.eq_ignore_ascii_case("y") {
        act()
    } else {
        refused.to_string()
    }
}

fn draw(f: &mut ratatui::Frame<'_>, app: &mut App) {
    let area = f.area();
    if area.width < MIN_COLS || area.height < MIN_ROWS {
        let msg = format!(
            "too small {}x{}, needs {MIN_COLS}x{MIN_ROWS}",
            area.width, area.height
        );
        f.render_widget(
            Paragraph::new(msg).wrap(ratatui::widgets::Wrap { trim: true }),
            area,
        );
        return;
    }
    let height = area.height as usize;
    let mut text: Vec<TextLine<'static>> = Vec::with_capacity(height);
    if let Some(p) = &app.shown {
        // The full header needs room: on short terminals only its first line stays.
        let header_lines = if height >= p.header.len() + 4 {
            p.header.len()
        } else {
            1
        };
        for h in p.header.iter().take(header_lines) {
            text.push(TextLine::raw(h.clone()));
        }
        let state = if app.frozen {
            "  [frozen: z or space]"
        } else {
            ""
        };
        text.push(TextLine::styled(
            format!("{}{state}", p.column_header),
            Style::default().add_modifier(Modifier::REVERSED),
        ));
        let room = height.saturating_sub(text.len() + 1);
        app.page = room.max(1);
        app.scroll = app.scroll.min(p.total.saturating_sub(1));
        // The rows of the page on hand that fall in the window: all of them once the
        // collection thread has answered the window's request (a moment after a scroll).
        let skip = app.scroll.saturating_sub(p.scroll);
        if app.scroll >= p.scroll {
            for row in p.rows.iter().skip(skip).take(room) {
                text.push(TextLine::raw(row.clone()));
            }
        }
    } else {
        text.push(TextLine::raw("tasksnap top: reading tasks..."));
    }
    while text.len() + 1 < height {
        text.push(TextLine::raw(""));
    }
    let rows_error = app.shown.as_ref().and_then(|p| p.rows_error.as_deref());
    let o = &app.opts;
    let status = match (&app.prompt, &app.message, rows_error) {
        (Some((p, input)), _, _) => format!("{}{input}", p.question()),
        (None, Some(m), _) => m.clone(),
        (None, None, Some(why)) => format!("no command lines or SHR: {why}"),
        (None, None, None) => format!(
            "{}sort {}{}  {}{}{}{}  h: help  q: quit",
            if app.replay {
                "replay: t next  T previous  b jump   "
            } else {
                ""
            },
            o.sort.name(),
            if o.ascending { " asc" } else { "" },
            if o.threads { "threads " } else { "" },
            if o.tree { "tree " } else { "" },
            if o.full_command { "full commands " } else { "" },
            if o.show_exited { "exited " } else { "" },
        ),
    };
    text.push(TextLine::from(Span::styled(
        status,
        Style::default().add_modifier(Modifier::BOLD),
    )));
    f.render_widget(Paragraph::new(text), area);
    if app.help {
        let w = area.width.min(92);
        let h = area.height.min(if app.replay { 18 } else { 16 });
        let r = ratatui::layout::Rect::new(area.x, area.y, w, h);
        f.render_widget(Clear, r);
        f.render_widget(
            Paragraph::new(if app.replay {
                let last = "  Any key closes this help.";
                HELP.replace(last, &format!("{REPLAY_HELP}{last}"))
            } else {
                HELP.to_string()
            })
            .block(Block::default().borders(Borders::ALL).title("help")),
            r,
        );
    }
}
