//! Timestamps as text: RFC 3339 in UTC with microseconds (`2023-11-14T22:13:20.123456Z`),
//! the form the CSV and JSON dumps write and DuckDB, pandas and polars parse. The same
//! microsecond precision as the Parquet dump's TIMESTAMP columns, so the formats agree.
//! The calendar is humantime's (what `tasksnap_history::rfc3339` uses too).

use std::time::{Duration, UNIX_EPOCH};

/// `unix_ns` (ns since the Unix epoch, UTC) as RFC 3339 text with microseconds. A time
/// before the epoch (only a corrupt figure can be) is shown as the epoch: humantime formats
/// 1970 to 9999, and an i64 of ns ends in 2262.
pub fn rfc3339_micros(unix_ns: i64) -> String {
    let micros = u64::try_from(unix_ns.div_euclid(1000)).unwrap_or(0);
    humantime::format_rfc3339_micros(UNIX_EPOCH + Duration::from_micros(micros)).to_string()
}

#[cfg(test)]
mod tests {
    use crate::dump::clock::*;

    #[test]
    fn known_instants() {
        assert_eq!(rfc3339_micros(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            rfc3339_micros(1_700_000_000_123_456_789),
            "2023-11-14T22:13:20.123456Z"
        );
        // A leap day, and the last second of a leap year.
        assert_eq!(
            rfc3339_micros(951_782_400_000_000_000),
            "2000-02-29T00:00:00.000000Z"
        );
        assert_eq!(
            rfc3339_micros(1_735_689_599_999_999_000),
            "2024-12-31T23:59:59.999999Z"
        );
        assert_eq!(rfc3339_micros(-1_000), "1970-01-01T00:00:00.000000Z");
        assert_eq!(rfc3339_micros(i64::MAX), "2262-04-11T23:47:16.854775Z");
    }
}
