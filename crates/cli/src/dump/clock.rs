//! Timestamps as text: RFC 3339 in UTC with microseconds (`2023-11-14T22:13:20.123456Z`),
//! the form the CSV and JSON dumps write and DuckDB, pandas and polars parse. The same
//! microsecond precision as the Parquet dump's TIMESTAMP columns, so the formats agree.

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar, by
/// counting 400-year eras of 146,097 days from 0000-03-01 (a March-based year puts the leap
/// day last).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, 0..146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // 0..399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of March-based year
    let mp = (5 * doy + 2) / 153; // month, March = 0
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `unix_ns` (ns since the Unix epoch, UTC) as RFC 3339 text with microseconds.
pub fn rfc3339_micros(unix_ns: i64) -> String {
    let micros = unix_ns.div_euclid(1000);
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let (y, mo, d) = civil(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{frac:06}Z",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(rfc3339_micros(-1_000), "1969-12-31T23:59:59.999999Z");
    }

    #[test]
    fn every_day_of_four_centuries_follows_the_last() {
        let mut prev = civil(-1);
        for d in 0..146_097 * 2 {
            let c = civil(d);
            let next_day = (prev.0, prev.1, prev.2 + 1);
            let next_month = (prev.0, prev.1 + 1, 1);
            let next_year = (prev.0 + 1, 1, 1);
            assert!(
                c == next_day || c == next_month || c == next_year,
                "{prev:?} -> {c:?}"
            );
            prev = c;
        }
        assert_eq!(civil(146_097 * 2 - 1), (2769, 12, 31));
    }
}
