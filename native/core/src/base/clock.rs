//! Wall-clock time as the lock database and the messages agents read need it: milliseconds since the
//! unix epoch (what every process on the machine agrees on, unlike `Instant`), and RFC 3339 in UTC.
//!
//! Formatting is done here with the civil-from-days algorithm (Howard Hinnant's, exact over the
//! proleptic Gregorian calendar) rather than with a date crate: one function, no time zones, no
//! leap seconds (unix time has none), and nothing to keep up to date.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since 1970-01-01T00:00:00Z. A clock set before the epoch reads as 0 rather than
/// failing: a lease stamped 0 merely looks expired, which is the safe way to be wrong.
pub fn now_ms() -> u64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(since) => u64::try_from(since.as_millis()).unwrap_or(u64::MAX),
        Err(_) => 0,
    }
}

/// `ms` since the epoch as RFC 3339 in UTC with milliseconds, e.g. `2026-11-22T04:30:05.123Z`.
pub fn format_utc(ms: u64) -> String {
    let days = ms / MS_PER_DAY;
    let in_day = ms % MS_PER_DAY;
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second, milli) = (in_day / 3_600_000, in_day / 60_000 % 60, in_day / 1000 % 60, in_day % 1000);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z")
}

const MS_PER_DAY: u64 = 86_400_000;

/// (year, month 1-12, day 1-31) of the day `days` after 1970-01-01.
///
/// The calendar is shifted to start on March 1st so that the leap day is the last day of a "year"
/// and month lengths repeat in a 153-day pattern; an era is the 400-year Gregorian cycle (146 097
/// days). Unsigned arithmetic suffices because a `u64` of milliseconds never precedes the epoch.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // 719 468 days from 0000-03-01 (the start of era 0) to 1970-01-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097; // day of era, [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // year of era, [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the March-based year, [0, 365]
    let mp = (5 * doy + 2) / 153; // month from March, [0, 11]
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    // January and February belong to the next civil year.
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The forward direction (days-from-civil), only to check the inverse over a long range.
    fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
        let y = if month <= 2 { year - 1 } else { year };
        let era = y / 400;
        let yoe = y - era * 400;
        let mp = if month > 2 { month - 3 } else { month + 9 };
        let doy = (153 * mp + 2) / 5 + day - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    #[test]
    fn the_epoch() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_utc(1), "1970-01-01T00:00:00.001Z");
        assert_eq!(format_utc(MS_PER_DAY - 1), "1970-01-01T23:59:59.999Z");
    }

    // Expected values from `date -u -d <timestamp> +%s`.
    #[test]
    fn known_timestamps() {
        assert_eq!(format_utc(1_795_321_805_123), "2026-11-22T04:30:05.123Z");
        assert_eq!(format_utc(94_694_399_000), "1972-12-31T23:59:59.000Z");
        assert_eq!(format_utc(4_102_444_799_999), "2099-12-31T23:59:59.999Z");
        assert_eq!(format_utc(253_402_300_799_000), "9999-12-31T23:59:59.000Z");
    }

    #[test]
    fn leap_days() {
        // 2000 is a leap year (divisible by 400), 2024 an ordinary one, 2100 is not (divisible by 100).
        assert_eq!(format_utc(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(format_utc(951_782_400_000 - 1), "2000-02-28T23:59:59.999Z");
        assert_eq!(format_utc(951_782_400_000 + MS_PER_DAY), "2000-03-01T00:00:00.000Z");
        assert_eq!(format_utc(1_709_210_096_000), "2024-02-29T12:34:56.000Z");
        assert_eq!(format_utc(4_107_456_000_000), "2100-02-28T00:00:00.000Z");
        assert_eq!(format_utc(4_107_456_000_000 + MS_PER_DAY), "2100-03-01T00:00:00.000Z");
    }

    #[test]
    fn round_trips_every_day_for_a_thousand_years() {
        let mut previous = None;
        for days in 0..366_000 {
            let (y, m, d) = civil_from_days(days);
            assert!((1..=12).contains(&m) && (1..=31).contains(&d), "{days}: {y}-{m}-{d}");
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
            // Consecutive days are consecutive dates: the day advances, or it restarts at 1 in a new month.
            if let Some((py, pm, pd)) = previous {
                assert!((y, m, d) > (py, pm, pd));
                assert!(d == pd + 1 || (d == 1 && (m == pm + 1 || (m == 1 && y == py + 1))));
            }
            previous = Some((y, m, d));
        }
    }

    #[test]
    fn the_largest_timestamp_formats() {
        // No overflow on the way: the year just has more digits.
        assert!(format_utc(u64::MAX).ends_with('Z'));
    }

    #[test]
    fn now_is_after_this_code_was_written() {
        assert!(now_ms() > 1_795_000_000_000);
    }
}
