//! Values a user types (on the command line or at a prompt) that tasksnap acts on, checked
//! once, here: process ids to signal or renice, durations (one grammar for every command:
//! [`duration`]), user names.
//!
//! A [`Pid`] is the only thing [`Pid::signal`] and [`Pid::renice`] take, and it is always a
//! single real process id (1 or more): kill(2) with 0 or -1 would signal a whole process
//! group or every process the caller may signal (as root, the whole host), and
//! setpriority(2) with 0 means the caller itself. Durations are bounded so that a typo
//! (`1e20`) is an error message, not a panic in `Duration::from_secs_f64`.

use std::io;
use std::time::Duration;

/// The largest pid the kernel can hand out (`PID_MAX_LIMIT` on 64-bit, include/linux/threads.h).
pub const PID_MAX_LIMIT: i64 = 4 * 1024 * 1024;

/// One existing-or-not, but always single, process (or thread) id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pid(i32);

impl Pid {
    /// Parses a decimal pid in 1..=[`PID_MAX_LIMIT`] (surrounding blanks allowed).
    pub fn parse(s: &str) -> Result<Pid, String> {
        let t = s.trim();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("bad pid '{s}'"));
        }
        match t.parse::<i64>() {
            Ok(n) if (1..=PID_MAX_LIMIT).contains(&n) => Ok(Pid(n as i32)),
            _ => Err(format!("pid out of range '{s}' (1-{PID_MAX_LIMIT})")),
        }
    }

    /// A task id taken from a snapshot (never 0 or negative there, but checked anyway).
    pub fn of_task(id: i32) -> Option<Pid> {
        (id > 0).then_some(Pid(id))
    }

    /// The number.
    pub fn get(self) -> i32 {
        self.0
    }

    /// Sends `signal` (1..=64) to this one process.
    pub fn signal(self, signal: Signal) -> io::Result<()> {
        // SAFETY: kill takes plain integers; the pid is positive, so exactly one process
        // (never a group, never every process) is addressed.
        if unsafe { libc::kill(self.0, signal.0) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Sets this process's nice value.
    pub fn renice(self, nice: Nice) -> io::Result<()> {
        // SAFETY: setpriority takes plain integers; the pid is positive, so it never means
        // "the caller" (0).
        let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, self.0 as libc::id_t, nice.0) };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

impl std::fmt::Display for Pid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A signal number, 1..=64 (0 only probes; kill(1) calls it "no signal").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signal(i32);

impl Signal {
    /// SIGTERM, the default of every kill prompt.
    pub const TERM: Signal = Signal(libc::SIGTERM);

    /// Parses a number (1-64) or a name (`KILL`, `SIGKILL`, `kill`).
    pub fn parse(s: &str) -> Result<Signal, String> {
        let t = s.trim();
        if let Ok(n) = t.parse::<i64>() {
            return if (1..=64).contains(&n) {
                Ok(Signal(n as i32))
            } else {
                Err(format!("not a signal: '{s}' (1-64 or a name)"))
            };
        }
        let up = t.to_ascii_uppercase();
        let name = up.strip_prefix("SIG").unwrap_or(&up);
        let n = match name {
            "HUP" => libc::SIGHUP,
            "INT" => libc::SIGINT,
            "QUIT" => libc::SIGQUIT,
            "KILL" => libc::SIGKILL,
            "USR1" => libc::SIGUSR1,
            "USR2" => libc::SIGUSR2,
            "TERM" => libc::SIGTERM,
            "CONT" => libc::SIGCONT,
            "STOP" => libc::SIGSTOP,
            "TSTP" => libc::SIGTSTP,
            _ => return Err(format!("not a signal: '{s}' (1-64 or a name)")),
        };
        Ok(Signal(n))
    }

    /// The number.
    pub fn get(self) -> i32 {
        self.0
    }
}

/// A nice value, -20..=19.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nice(i32);

impl Nice {
    /// Parses -20..=19.
    pub fn parse(s: &str) -> Result<Nice, String> {
        match s.trim().parse::<i32>() {
            Ok(n) if (-20..=19).contains(&n) => Ok(Nice(n)),
            _ => Err(format!("not a nice value (-20..19): '{s}'")),
        }
    }

    /// The number.
    pub fn get(self) -> i32 {
        self.0
    }
}

/// The longest interval accepted anywhere (about 31 years): longer is surely a typo, and far
/// below what `Duration` and the kernel's timers hold.
pub const MAX_SECONDS: f64 = 1e9;

/// Which spellings a duration may take where it is typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// A number of seconds only (`2`, `0.5`, `1e3`), as procps's `top -d` takes it.
    Seconds,
    /// A number of seconds, or humantime's units (`90s`, `10m`, `1h30m`, `1h 30m`, `7d`).
    Units,
}

/// The one duration grammar: `text` (surrounding blanks ignored) as a duration in
/// `0..=MAX_SECONDS`, spelt as `spelling` allows; `None` when it is not one (no number, a
/// unit humantime does not know, negative, not finite, or longer than [`MAX_SECONDS`]). The
/// callers word their own message, since each names its own option and range.
pub fn duration(text: &str, spelling: Spelling) -> Option<Duration> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<f64>() {
        return (secs.is_finite() && (0.0..=MAX_SECONDS).contains(&secs))
            .then(|| Duration::from_secs_f64(secs));
    }
    match spelling {
        Spelling::Seconds => None,
        Spelling::Units => humantime::parse_duration(t)
            .ok()
            .filter(|d| d.as_secs_f64() <= MAX_SECONDS),
    }
}

/// Parses a number of seconds (`2`, `0.5`, `1e3`) in `min..=MAX_SECONDS`, with top's
/// messages.
pub fn parse_seconds(s: &str, min: f64) -> Result<Duration, String> {
    let d = duration(s, Spelling::Seconds).ok_or_else(|| format!("bad delay interval '{s}'"))?;
    if d.as_secs_f64() < min {
        return Err(format!("bad delay interval '{s}' (at least {min} seconds)"));
    }
    Ok(d)
}

/// A duration with units (`90s`, `10m`, `7d`, `1h 30m`) or plain seconds, as the history
/// commands take it (`--retain-for`, `--interval`, `--segment`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    duration(text, Spelling::Units)
        .ok_or_else(|| format!("'{text}' is not a duration: give e.g. 90s, 10m, 12h, 7d"))
}

/// The uid of a user given by number or by name; names are looked up through the C
/// library (NSS: files, LDAP, sssd...), as `ps -u` does, not by reading /etc/passwd.
pub fn uid_of(user: &str) -> Option<u32> {
    match user.parse::<u32>() {
        Ok(n) => Some(n),
        Err(_) => uid_by_name(user),
    }
}

/// The uid of the user named `name`, through the C library (NSS), reentrantly: the one
/// lookup, in tasksnap-procfs.
pub use tasksnap_sys::users::uid_by_name;

#[cfg(test)]
mod tests {
    use super::*;

    /// top's kill prompt once took `-1` and, as root, signalled every process on the host.
    #[test]
    fn top_kill_prompt_never_signals_minus_one_or_zero() {
        for bad in [
            "-1",
            "0",
            "-0",
            "",
            " ",
            "-2",
            "+5",
            "1.5",
            "0x10",
            "4194305",
            "99999999999",
        ] {
            assert!(Pid::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(Pid::parse("1").map(Pid::get), Ok(1));
        assert_eq!(Pid::parse(" 42 ").map(Pid::get), Ok(42));
        assert_eq!(Pid::of_task(-1), None);
        assert_eq!(Pid::of_task(0), None);
    }

    #[test]
    fn signals_and_nice_values_are_bounded() {
        assert_eq!(Signal::parse("9").map(Signal::get), Ok(9));
        assert_eq!(Signal::parse("sigkill").map(Signal::get), Ok(libc::SIGKILL));
        for bad in ["0", "-9", "65", "BOGUS"] {
            assert!(Signal::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Nice::parse("-21").is_err());
        assert!(Nice::parse("20").is_err());
        assert_eq!(Nice::parse("-20").map(Nice::get), Ok(-20));
    }

    /// `top -d 1e20` once panicked in Duration::from_secs_f64.
    #[test]
    fn top_huge_delay_is_an_error_not_a_panic() {
        for bad in ["1e20", "inf", "NaN", "-1", "1e10", "abc", ""] {
            assert!(parse_seconds(bad, 0.0).is_err(), "{bad:?}");
        }
        assert_eq!(parse_seconds("0.5", 0.0), Ok(Duration::from_millis(500)));
        assert!(parse_seconds("0.05", 0.1).is_err());
    }

    /// Every spelling either former grammar (top's seconds, the history commands' units)
    /// accepted is still accepted, and each is bounded.
    #[test]
    fn one_duration_grammar() {
        let s = Duration::from_secs;
        for (text, want) in [
            ("2", s(2)),
            (" 0.5 ", Duration::from_millis(500)),
            ("1e3", s(1000)),
            ("0", s(0)),
        ] {
            assert_eq!(duration(text, Spelling::Seconds), Some(want), "{text:?}");
            assert_eq!(duration(text, Spelling::Units), Some(want), "{text:?}");
        }
        for (text, want) in [
            ("90s", s(90)),
            ("10m", s(600)),
            ("1h30m", s(5400)),
            ("1h 30m", s(5400)),
            ("7d", s(7 * 86400)),
            ("250ms", Duration::from_millis(250)),
        ] {
            assert_eq!(duration(text, Spelling::Units), Some(want), "{text:?}");
            assert_eq!(duration(text, Spelling::Seconds), None, "{text:?}");
        }
        for bad in ["", "-1", "-5m", "inf", "NaN", "1e10", "soon", "10x", "40y"] {
            assert_eq!(duration(bad, Spelling::Units), None, "{bad:?}");
        }
        assert_eq!(parse_duration("7d"), Ok(s(7 * 86400)));
        assert_eq!(parse_duration("90"), Ok(s(90)));
        assert_eq!(
            parse_duration("soon"),
            Err("'soon' is not a duration: give e.g. 90s, 10m, 12h, 7d".into())
        );
        assert_eq!(
            parse_seconds("2m", 0.0),
            Err("bad delay interval '2m'".into())
        );
    }

    #[test]
    fn users_by_number_and_name() {
        assert_eq!(uid_of("0"), Some(0));
        assert_eq!(uid_of("root"), Some(0));
        assert_eq!(uid_of("no-such-user-tasksnap"), None);
    }
}
