//! The live view's collection thread: it owns the collector and everything a refresh keeps
//! ([`Top`]), refreshes every `-d` seconds, and sends the terminal thread ready [`Page`]s.
//!
//! The terminal thread only draws and answers keys: a refresh at 100,000 tasks, loading the
//! BPF programs, or reading the command lines of the rows on screen (which may wait on a
//! target's mmap lock up to the collector's deadline) never keeps a key waiting (bottom's
//! pattern: collection and drawing joined by channels). The terminal thread says what it
//! wants ([`Request`]): options changed by keys, the window of rows it shows, freeze; this
//! thread answers with a page whenever a refresh or a request changes what is shown.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use super::options::Options;
use super::replay::Replay;
use super::session::{self, Frame, Page, Top};

/// What the terminal thread asks of the collection thread.
#[derive(Debug)]
pub enum Request {
    /// New options. `recollect`: the rows change (threads, filters), so refresh now;
    /// otherwise the frame on hand is re-sorted and re-rendered (sort order, command lines).
    Options { opts: Box<Options>, recollect: bool },
    /// Show rows `scroll..scroll + room`.
    View { scroll: usize, room: usize },
    /// Stop (true) or resume (false) refreshing; pages for scrolling still come.
    Freeze(bool),
    /// A replay: show the next sample (true) or the previous one.
    Step(bool),
    /// A replay: show the sample in force at this time (ns since the epoch).
    Jump(u64),
}

/// What the collection thread sends back.
#[derive(Debug)]
pub enum Update {
    /// A page to draw.
    Page(Box<Page>),
    /// The view cannot go on (the collector failed to start or a refresh failed).
    Failed(String),
    /// `-n` refreshes were shown.
    Done,
    /// A word for the prompt line (a replay's step refused, and why).
    Message(String),
}

/// Starts the collection thread for `opts`. The collector is created on it, so the terminal
/// answers keys (`q` included) while the programs load. `send` delivers an update to the
/// terminal thread and says whether it is still listening. With `replay` (a recording
/// already open) the thread shows its samples instead, one until told to step.
pub fn spawn(
    opts: Options,
    replay: Option<Replay>,
    send: impl Fn(Update) -> bool + Send + 'static,
) -> std::io::Result<Sender<Request>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("collect".into())
        .spawn(move || run(opts, replay, &rx, &send))?;
    Ok(tx)
}

/// How long a replay waits for a request before it looks again (it never refreshes by
/// itself).
const IDLE: Duration = Duration::from_secs(3600);

fn run(
    opts: Options,
    replay: Option<Replay>,
    requests: &Receiver<Request>,
    send: &dyn Fn(Update) -> bool,
) {
    let top = match replay {
        Some(r) => Ok(Top::replay(opts, r)),
        None => Top::new(opts),
    };
    let top = match top {
        Ok(t) => t,
        Err(e) => {
            send(Update::Failed(format!("{e:#}")));
            return;
        }
    };
    let mut c = Collection {
        replay: top.is_replay(),
        top,
        frame: None,
        scroll: 0,
        room: 20,
        frozen: false,
        next_refresh: Instant::now(),
        refreshes: 0,
    };
    loop {
        if !c.frozen && Instant::now() >= c.next_refresh {
            if !c.refresh(send) {
                return;
            }
            if !c.send_page(send) {
                return;
            }
            if !c.replay && c.top.opts.iterations.is_some_and(|n| c.refreshes > n) {
                send(Update::Done);
                return;
            }
        }
        let timeout = if c.frozen {
            Duration::from_secs(3600)
        } else {
            c.next_refresh.saturating_duration_since(Instant::now())
        };
        let first = match requests.recv_timeout(timeout) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        // A burst (the mouse wheel, a held key) is answered with one page.
        let mut rerender = false;
        for r in std::iter::once(first).chain(requests.try_iter()) {
            match c.answer(r, send) {
                Some(again) => rerender |= again,
                None => return,
            }
        }
        if rerender && (c.frozen || Instant::now() < c.next_refresh) && !c.send_page(send) {
            return;
        }
    }
}

/// What the collection thread keeps: the refresh state, the frame on hand, the window the
/// terminal shows and when the next refresh is due.
struct Collection {
    top: Top,
    /// A replay: it refreshes only when told to step.
    replay: bool,
    frame: Option<Frame>,
    scroll: usize,
    room: usize,
    frozen: bool,
    next_refresh: Instant,
    refreshes: u64,
}

impl Collection {
    /// Makes the next frame and sets when the one after is due. False when it failed (the
    /// terminal is told).
    fn refresh(&mut self, send: &dyn Fn(Update) -> bool) -> bool {
        // The old frame goes before the new one is built, and its memory is reused for
        // it: at 50,000 tasks that keeps ~10 MB of rows out of the peak.
        if let Some(old) = self.frame.take() {
            self.top.recycle_frame(old);
        }
        match self.top.refresh(&session::clock()) {
            Ok(f) => self.frame = Some(f),
            Err(e) => {
                send(Update::Failed(format!("{e:#}")));
                return false;
            }
        }
        self.refreshes += 1;
        // The first frame has no rates yet: the next one comes soon, the rest at -d.
        let wait = if self.replay {
            IDLE
        } else if self.refreshes == 1 {
            Duration::from_millis(500).min(self.top.opts.delay)
        } else {
            self.top.opts.delay
        };
        self.next_refresh = Instant::now() + wait;
        true
    }

    /// Sends the page of the frame on hand (if there is one). False when nobody listens.
    fn send_page(&mut self, send: &dyn Fn(Update) -> bool) -> bool {
        match self.frame.as_mut() {
            Some(f) => send(Update::Page(Box::new(self.top.page(
                f,
                self.scroll,
                self.room,
            )))),
            None => true,
        }
    }

    /// Answers one request: whether the page on hand must be drawn again, or `None` when
    /// nobody listens any more.
    fn answer(&mut self, r: Request, send: &dyn Fn(Update) -> bool) -> Option<bool> {
        match r {
            Request::Options { opts, recollect } => {
                self.set_options(*opts, recollect, send);
                return Some(!recollect);
            }
            Request::View { scroll, room } => {
                let again = (scroll, room) != (self.scroll, self.room);
                (self.scroll, self.room) = (scroll, room);
                return Some(again);
            }
            Request::Freeze(on) => {
                self.frozen = on;
                if !on && !self.replay {
                    self.next_refresh = Instant::now();
                }
            }
            Request::Step(forward) => {
                let moved = self.top.step(forward);
                if !self.moved(moved, send) {
                    return None;
                }
            }
            Request::Jump(t) => {
                let moved = self.top.jump(t);
                if !self.moved(moved, send) {
                    return None;
                }
            }
        }
        Some(false)
    }

    /// Options changed by keys: `recollect` refreshes now; otherwise the frame on hand is
    /// re-sorted when the order changed, and the exited view's rows come or go.
    fn set_options(&mut self, opts: Options, recollect: bool, send: &dyn Fn(Update) -> bool) {
        let top = &mut self.top;
        let resort = opts.sort != top.opts.sort || opts.ascending != top.opts.ascending;
        let exited_view = opts.show_exited != top.opts.show_exited;
        if opts.delay != top.opts.delay && !self.replay {
            self.next_refresh = Instant::now() + opts.delay;
        }
        top.opts = opts;
        if exited_view {
            // The interval's exits on hand come or go: a refresh now would
            // show those of a moment instead.
            if let Some(f) = self.frame.as_mut() {
                top.exited_view_changed(f);
            }
            if let Some(why) = top.exits_missing().filter(|_| top.opts.show_exited) {
                send(Update::Message(format!("no exited processes: {why}")));
            }
        }
        if recollect {
            self.next_refresh = Instant::now();
        } else if resort {
            if let Some(f) = self.frame.as_mut() {
                top.order(&mut f.lines);
            }
        }
    }

    /// After a replay's step or jump: on success the new sample is shown at once (frozen or
    /// not: it was asked for); otherwise the terminal is told why. False when nobody listens.
    fn moved(&mut self, result: Result<(), String>, send: &dyn Fn(Update) -> bool) -> bool {
        match result {
            Ok(()) => {
                self.frozen = false;
                self.next_refresh = Instant::now();
                true
            }
            Err(why) => send(Update::Message(why)),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::top::worker::*;
    use std::sync::mpsc::Receiver;

    fn next_page(rx: &Receiver<Update>) -> Page {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(Update::Page(p)) => *p,
            other => panic!("expected a page, got {other:?}"),
        }
    }

    /// The collection thread answers the terminal's requests: a page for the window asked
    /// for, a re-sorted page for a new sort key without a new snapshot, no refreshes while
    /// frozen (but pages for scrolling), and it stops when the terminal thread is gone.
    #[test]
    fn collection_thread_answers_requests() {
        let opts = Options {
            backend: tasksnap_model::Backend::Procfs,
            delay: Duration::from_millis(200),
            threads: true,
            ..Options::default()
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let requests = spawn(opts.clone(), None, move |u| tx.send(u).is_ok()).expect("spawn");
        requests
            .send(Request::View { scroll: 0, room: 5 })
            .expect("send");
        let mut p = next_page(&rx);
        while p.rows.len() < 5 {
            p = next_page(&rx);
        }
        assert_eq!(p.rows.len(), p.ids.len());
        assert!(p.total >= p.rows.len());
        assert!(p.column_header.contains("PID"), "{}", p.column_header);

        // Frozen: no refresh comes, but a new window is answered, from the same frame.
        requests.send(Request::Freeze(true)).expect("send");
        while rx.recv_timeout(Duration::from_millis(500)).is_ok() {}
        requests
            .send(Request::View { scroll: 1, room: 3 })
            .expect("send");
        let scrolled = next_page(&rx);
        assert_eq!(scrolled.scroll, 1);
        assert_eq!(scrolled.rows.len(), 3);
        assert_eq!(scrolled.total, p.total, "a frozen view took a new snapshot");
        assert!(
            rx.recv_timeout(Duration::from_millis(600)).is_err(),
            "refreshed while frozen"
        );

        // A new sort key re-sorts the frame on hand: by pid, ascending.
        let mut by_pid = opts.clone();
        by_pid.sort = crate::top::columns::Column::PID;
        by_pid.ascending = true;
        requests
            .send(Request::Options {
                opts: Box::new(by_pid),
                recollect: false,
            })
            .expect("send");
        requests
            .send(Request::View {
                scroll: 0,
                room: 50,
            })
            .expect("send");
        let sorted = next_page(&rx);
        assert_eq!(sorted.total, p.total, "a new sort key took a new snapshot");
        let pids: Vec<i32> = sorted
            .rows
            .iter()
            .filter_map(|r| r.split_whitespace().next()?.parse().ok())
            .collect();
        assert!(
            pids.len() > 1 && pids.windows(2).all(|w| w[0] <= w[1]),
            "{pids:?}"
        );

        // Gone: the thread ends once it has nobody to send to.
        drop(rx);
        drop(requests);
    }

    /// With the CGROUP column on (`g`), a row shows its process's cgroups as `ps -o cgroup`
    /// does, read through the collector for the rows on screen.
    #[test]
    fn cgroup_column_shows_what_ps_shows() {
        let me = std::process::id() as i32;
        let opts = Options {
            backend: tasksnap_model::Backend::Procfs,
            delay: Duration::from_millis(200),
            pids: vec![me],
            show_cgroup: true,
            ..Options::default()
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let requests = spawn(opts, None, move |u| tx.send(u).is_ok()).expect("spawn");
        requests
            .send(Request::View { scroll: 0, room: 5 })
            .expect("send");
        let mut p = next_page(&rx);
        while p.rows.is_empty() {
            p = next_page(&rx);
        }
        assert!(p.column_header.contains("CGROUP"), "{}", p.column_header);
        let raw = std::fs::read("/proc/self/cgroup").expect("own cgroup");
        let text = crate::ps::text::cgroup_text(Some(&tasksnap_model::Cgroup::parse(raw)));
        let want = String::from_utf8_lossy(&text[..text.len().min(render_width())]).into_owned();
        assert!(p.rows[0].contains(&want), "{want:?} not in {:?}", p.rows[0]);
    }

    fn render_width() -> usize {
        crate::top::columns::CGROUP_WIDTH
    }
}
