//! The times and sizes the history commands take: a moment (`--at`, `--from`, `--to`) as RFC
//! 3339 (`2026-11-23T03:00:00Z`, UTC), epoch seconds (`1763866800`, `1763866800.5`) or
//! relative to now (`-10m`, `-1h30m`, `now`); a size (`--max-size 10G`). A duration
//! (`--retain-for 7d`, and the span of a relative moment) is [`crate::input`]'s one grammar,
//! re-exported here. Every parser returns a message a user can act on.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now, ns since the Unix epoch.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64)
        .unwrap_or(0)
}

/// A moment, ns since the Unix epoch, relative ones counted back from `now_ns`.
pub fn parse_time_at(text: &str, now_ns: u64) -> Result<u64, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "'{text}' is not a time: give RFC 3339 in UTC (2026-11-23T03:00:00Z), epoch \
             seconds (1763866800), or a time relative to now (-10m, -2h30m, now)"
        )
    };
    if t == "now" {
        return Ok(now_ns);
    }
    if let Some(rel) = t.strip_prefix('-') {
        let d = crate::input::duration(rel, crate::input::Spelling::Units).ok_or_else(bad)?;
        return Ok(now_ns.saturating_sub(d.as_nanos().min(u128::from(u64::MAX)) as u64));
    }
    if t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = t.parse().map_err(|_| bad())?;
        if !secs.is_finite() || !(0.0..=1.8e10).contains(&secs) {
            return Err(bad());
        }
        return Ok((secs * 1e9) as u64);
    }
    let st = humantime::parse_rfc3339_weak(t).map_err(|_| bad())?;
    st.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64)
        .map_err(|_| bad())
}

/// [`parse_time_at`] against the clock.
pub fn parse_time(text: &str) -> Result<u64, String> {
    parse_time_at(text, now_ns())
}

pub use crate::input::parse_duration;

/// A duration ([`parse_duration`]'s grammar) from `min` to `max`; outside them, the error is
/// `allowed` (what the option takes, in words).
pub fn parse_duration_within(
    text: &str,
    min: Duration,
    max: Duration,
    allowed: &str,
) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d < min || d > max {
        return Err(allowed.into());
    }
    Ok(d)
}

/// A size in bytes: `1000000`, or with a binary suffix `512K`, `100M`, `10G`, `1T` (`KiB`,
/// `MB`... read the same: powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let bad = || format!("'{text}' is not a size: give bytes, or e.g. 512M, 10G");
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad())?;
    let mult: f64 = match unit.trim().to_ascii_uppercase().trim_end_matches('B') {
        "" => 1.0,
        "K" | "KI" => 1024.0,
        "M" | "MI" => 1024.0 * 1024.0,
        "G" | "GI" => 1024.0 * 1024.0 * 1024.0,
        "T" | "TI" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let v = n * mult;
    if !v.is_finite() || !(1.0..=1.8e19).contains(&v) {
        return Err(bad());
    }
    Ok(v as u64)
}

pub use tasksnap_history::rfc3339;

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_763_866_800_000_000_000;

    #[test]
    fn moments() {
        assert_eq!(parse_time_at("1763866800", NOW), Ok(NOW));
        assert_eq!(parse_time_at("1763866800.5", NOW), Ok(NOW + 500_000_000));
        assert_eq!(parse_time_at("2025-11-23T03:00:00Z", NOW), Ok(NOW));
        assert_eq!(parse_time_at("-10m", NOW), Ok(NOW - 600_000_000_000));
        assert_eq!(parse_time_at("-1h30m", NOW), Ok(NOW - 5_400_000_000_000));
        assert_eq!(parse_time_at("now", NOW), Ok(NOW));
        for bad in [
            "",
            "yesterday",
            "-",
            "-10x",
            "1e99",
            "2025-13-01T00:00:00Z",
            "\u{ff}",
        ] {
            assert!(parse_time_at(bad, NOW).is_err(), "{bad}");
        }
        assert_eq!(rfc3339(NOW + 123_000_000), "2025-11-23T03:00:00.123Z");
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(
            parse_duration("7d"),
            Ok(std::time::Duration::from_secs(7 * 86400))
        );
        assert_eq!(parse_duration("90"), Ok(std::time::Duration::from_secs(90)));
        assert!(parse_duration("soon").is_err());
        assert_eq!(parse_size("10G"), Ok(10 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1000"), Ok(1000));
        for bad in ["", "0", "10Q", "-5M", "G"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
