//! The live view of `tasksnap top` (ratatui over crossterm): header, column header, the rows
//! that fit, a prompt line; keys as in procps top and htop. Only the rows on screen are
//! formatted. The terminal is restored on every exit path, panics included.

use std::io;
use std::time::{Duration, Instant};

use crossterm::event::{
    self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind,
};
use crossterm::terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line as TextLine, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Terminal;

use super::view::{Filter, SortKey};
use super::{Frame, Top};
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
  u         filter by user                     o    filter FIELD=text, FIELD>n, FIELD<n
  =         clear the filters                  k    send a signal   r  renice
  z, space  freeze / unfreeze                  d    refresh interval
  arrows, PgUp/PgDn, Home/End, mouse wheel: scroll       q  quit
  RUNQ% = share of the interval waiting for a CPU; DISK% = in uninterruptible sleep (D).
  Any key closes this help.";

#[derive(Debug, Clone)]
enum Prompt {
    Name,
    User,
    Other,
    Delay,
    KillPid,
    KillSignal { pid: Pid },
    KillConfirm { pid: Pid, signal: Signal },
    RenicePid,
    ReniceValue { pid: Pid },
    ReniceConfirm { pid: Pid, nice: Nice },
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
        }
    }
}

struct App {
    top: Top,
    frame: Option<Frame>,
    scroll: usize,
    frozen: bool,
    help: bool,
    prompt: Option<(Prompt, String)>,
    message: Option<String>,
    next_refresh: Instant,
    quit: bool,
    /// Rows of the table on the last draw (for paging).
    page: usize,
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

/// Runs the live view until `q` (or `-n` refreshes).
pub fn run(top: Top) -> anyhow::Result<()> {
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
    exit_on_hangup();
    let mut app = App {
        top,
        frame: None,
        scroll: 0,
        frozen: false,
        help: false,
        prompt: None,
        message: None,
        next_refresh: Instant::now(),
        quit: false,
        page: 10,
    };
    let mut refreshes = 0u64;
    while !app.quit {
        if !app.frozen && Instant::now() >= app.next_refresh {
            let first = app.frame.is_none();
            // The old frame goes before the new one is built, and its memory is reused for
            // it: at 50,000 tasks that keeps ~10 MB of rows out of the peak.
            if let Some(old) = app.frame.take() {
                app.top.recycle_frame(old);
            }
            app.frame = Some(app.top.refresh(&super::clock())?);
            refreshes += 1;
            // The first frame has no rates yet: the next one comes soon, the rest at -d.
            let wait = if first {
                Duration::from_millis(500).min(app.top.opts.delay)
            } else {
                app.top.opts.delay
            };
            app.next_refresh = Instant::now() + wait;
        }
        term.draw(|f| draw(f, &mut app))?;
        if app.top.opts.iterations.is_some_and(|n| refreshes > n) {
            break;
        }
        let timeout = if app.frozen {
            Duration::from_secs(3600)
        } else {
            app.next_refresh.saturating_duration_since(Instant::now())
        };
        if event::poll(timeout)? {
            match event::read()? {
                Event::Key(k) if k.kind != KeyEventKind::Release => on_key(&mut app, k),
                Event::Mouse(m) => match m.kind {
                    MouseEventKind::ScrollDown => scroll_by(&mut app, 3),
                    MouseEventKind::ScrollUp => scroll_by(&mut app, -3),
                    _ => {}
                },
                _ => {}
            }
        }
    }
    Ok(())
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

fn rows_total(app: &App) -> usize {
    app.frame.as_ref().map_or(0, |f| f.lines.len())
}

fn scroll_by(app: &mut App, delta: isize) {
    let max = rows_total(app).saturating_sub(1);
    app.scroll = app.scroll.saturating_add_signed(delta).min(max);
}

/// Re-sort and refresh now (a changed view needs a new snapshot for threads and filters).
fn refresh_now(app: &mut App) {
    app.next_refresh = Instant::now();
    app.scroll = 0;
}

fn top_row_pid(app: &App) -> Option<Pid> {
    app.frame
        .as_ref()
        .and_then(|f| f.lines.get(app.scroll))
        .and_then(|l| Pid::of_task(l.id.tid))
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
    if let Some((prompt, mut input)) = app.prompt.take() {
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
        return;
    }
    app.message = None;
    let o = &mut app.top.opts;
    match k.code {
        KeyCode::Char('q') => app.quit = true,
        KeyCode::Char('h') | KeyCode::Char('?') => app.help = true,
        KeyCode::Char('P') => set_sort(app, SortKey::Cpu),
        KeyCode::Char('M') => set_sort(app, SortKey::Mem),
        KeyCode::Char('T') => set_sort(app, SortKey::Time),
        KeyCode::Char('N') => set_sort(app, SortKey::Pid),
        KeyCode::Char('<') | KeyCode::Char('>') => {
            let order = SortKey::ORDER;
            let at = order.iter().position(|&s| s == o.sort).unwrap_or(0);
            let next = if k.code == KeyCode::Char('<') {
                at.checked_sub(1).unwrap_or(order.len() - 1)
            } else {
                (at + 1) % order.len()
            };
            set_sort(app, order[next]);
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
        KeyCode::Char('c') => o.full_command = !o.full_command,
        KeyCode::Char('w') => o.show_wait = !o.show_wait,
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
            if !app.frozen {
                app.next_refresh = Instant::now();
            }
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

fn set_sort(app: &mut App, key: SortKey) {
    app.top.opts.sort = key;
    app.top.opts.ascending = matches!(key, SortKey::Pid | SortKey::User | SortKey::Command);
    if let Some(f) = &mut app.frame {
        // Re-sort what is on screen now; the next refresh keeps the order.
        app.top.order(&mut f.lines);
    }
    app.scroll = 0;
}

fn answer(app: &mut App, prompt: Prompt, input: String) {
    let o = &mut app.top.opts;
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
                app.next_refresh = Instant::now() + o.delay;
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
            app.message = Some(if !input.eq_ignore_ascii_case("y") {
                "nothing sent".into()
            } else {
                match pid.signal(signal) {
                    Ok(()) => format!("sent signal {} to {pid}", signal.get()),
                    Err(e) => format!("kill {pid}: {e}"),
                }
            });
        }
        Prompt::RenicePid => match pid_or_top(&input, app) {
            Ok(pid) => app.prompt = Some((Prompt::ReniceValue { pid }, String::new())),
            Err(e) => app.message = Some(e),
        },
        Prompt::ReniceValue { pid } => match Nice::parse(&input) {
            Ok(nice) => app.prompt = Some((Prompt::ReniceConfirm { pid, nice }, String::new())),
            Err(e) => app.message = Some(e),
        },
        Prompt::ReniceConfirm { pid, nice } => {
            app.message = Some(if !input.eq_ignore_ascii_case("y") {
                "not reniced".into()
            } else {
                match pid.renice(nice) {
                    Ok(()) => format!("reniced {pid} to {}", nice.get()),
                    Err(e) => format!("renice {pid}: {e}"),
                }
            });
        }
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
    let mut frame = app.frame.take();
    if let Some(fr) = &mut frame {
        // The full header needs room: on short terminals only its first line stays.
        let header_lines = if height >= fr.header.len() + 4 {
            fr.header.len()
        } else {
            1
        };
        for h in fr.header.iter().take(header_lines) {
            text.push(TextLine::raw(h.clone()));
        }
        let state = if app.frozen {
            "  [frozen: z or space]"
        } else {
            ""
        };
        text.push(TextLine::styled(
            format!("{}{state}", app.top.column_header()),
            Style::default().add_modifier(Modifier::REVERSED),
        ));
        let room = height.saturating_sub(text.len() + 1);
        app.page = room.max(1);
        app.scroll = app.scroll.min(fr.lines.len().saturating_sub(1));
        for row in app.top.rows(fr, app.scroll..app.scroll + room) {
            text.push(TextLine::raw(row));
        }
    } else {
        text.push(TextLine::raw("tasksnap top: reading tasks..."));
    }
    app.frame = frame;
    while text.len() + 1 < height {
        text.push(TextLine::raw(""));
    }
    let status = match (&app.prompt, &app.message) {
        (Some((p, input)), _) => format!("{}{input}", p.question()),
        (None, Some(m)) => m.clone(),
        (None, None) if app.top.rows_error().is_some() => format!(
            "no command lines or SHR: {}",
            app.top.rows_error().unwrap_or_default()
        ),
        (None, None) => format!(
            "sort {}{}  {}{}{}  h: help  q: quit",
            app.top.opts.sort.name(),
            if app.top.opts.ascending { " asc" } else { "" },
            if app.top.opts.threads { "threads " } else { "" },
            if app.top.opts.tree { "tree " } else { "" },
            if app.top.opts.full_command {
                "full commands "
            } else {
                ""
            },
        ),
    };
    text.push(TextLine::from(Span::styled(
        status,
        Style::default().add_modifier(Modifier::BOLD),
    )));
    f.render_widget(Paragraph::new(text), area);
    if app.help {
        let w = area.width.min(92);
        let h = area.height.min(15);
        let r = ratatui::layout::Rect::new(area.x, area.y, w, h);
        f.render_widget(Clear, r);
        f.render_widget(
            Paragraph::new(HELP).block(Block::default().borders(Borders::ALL).title("help")),
            r,
        );
    }
}
