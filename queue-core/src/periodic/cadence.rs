//! [`Cadence`]: a cron expression in a time zone, and the instants ("slots") it names.
//!
//! The expression is matched against the zone's wall clock with `croner` (on a zone without
//! daylight saving time, so the crate's own DST handling never comes into play); the wall
//! clock times are then turned into instants here, by these rules (those of Vixie cron and of
//! the Open Cron Pattern Specification that `croner` follows):
//!
//! - A **fixed-time** expression names one second, one minute and one hour (`30 2 * * *`,
//!   `0 0 9 * * MON`); any other is an **interval** expression (`0 * * * *`, `*/10 * * * * *`).
//! - **Gap** (the clocks go forward, e.g. 02:00 → 03:00): a fixed-time slot whose wall clock
//!   time does not exist that day runs once, at the first instant after the gap (03:00 new
//!   time); interval slots inside the gap do not exist and are not run.
//! - **Overlap** (the clocks go back, e.g. 03:00 → 02:00): a fixed-time slot whose wall clock
//!   time happens twice runs once, at the first of the two instants; interval slots run at
//!   both, so an hourly expression runs every real hour, 25 times on that day.
//!
//! Slots are instants (UTC) at whole seconds, strictly increasing; [`Cadence::next_after`]
//! always moves forward in real time, whichever pass over a repeated hour it starts from.

use std::str::FromStr;

use chrono::{DateTime, Duration as Span, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds};
use croner::{Cron, JobType};

use crate::error::{Error, Result};

/// The longest shift of a wall clock at one transition, with room to spare (real ones are at
/// most two hours): how far around an instant the search for repeated or missing wall clock
/// times looks.
const MAX_SHIFT: Span = Span::hours(3);

/// Most slots one walk of [`Cadence::due`] visits before it starts again closer to now (a
/// schedule of every second that was not run for a day has 86,400 missed slots; only the
/// latest few matter).
const MAX_WALK: usize = 4_096;

/// Longest cron expression, in characters (every dialect stores up to 255).
pub const MAX_EXPRESSION: usize = 255;

/// A parsed cron expression in a time zone.
#[derive(Clone, Debug)]
pub struct Cadence {
    cron: Cron,
    tz: Tz,
    fixed: bool,
}

impl Cadence {
    /// Parses `expression` (five fields, or six with seconds first) in the IANA time zone
    /// `time_zone` (`UTC`, `Europe/Berlin`, `America/New_York`, ...).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `expression` or `time_zone`.
    pub fn parse(expression: &str, time_zone: &str) -> Result<Self> {
        let tz = Tz::from_str(time_zone).map_err(|_| {
            Error::invalid(
                "time_zone",
                format!(
                    "must be an IANA time zone name such as UTC or Europe/Berlin (got {time_zone:?})"
                ),
            )
        })?;
        if expression.chars().count() > MAX_EXPRESSION {
            return Err(Error::invalid(
                "expression",
                format!("must be at most {MAX_EXPRESSION} characters"),
            ));
        }
        if expression.trim().is_empty() {
            return Err(Error::invalid(
                "expression",
                "must be a cron expression of 5 fields (minute hour day month weekday) or 6 (seconds first), not empty",
            ));
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .build()
            .parse(expression)
            .map_err(|e| {
                Error::invalid(
                    "expression",
                    format!(
                        "must be a cron expression of 5 fields (minute hour day month weekday) or 6 (seconds first): {e}"
                    ),
                )
            })?;
        let fixed = cron.determine_job_type() == JobType::FixedTime;
        let cadence = Cadence { cron, tz, fixed };
        // An expression that parses but never matches (`0 0 30 2 *`) would never fire.
        if cadence.next_civil(&civil_min()).is_none() {
            return Err(Error::invalid(
                "expression",
                "never matches a date (e.g. 30 February)",
            ));
        }
        Ok(cadence)
    }

    /// The time zone.
    pub fn time_zone(&self) -> Tz {
        self.tz
    }

    /// Whether the expression names one time of day (see the module docs).
    pub fn is_fixed_time(&self) -> bool {
        self.fixed
    }

    /// The first wall clock time matching the expression strictly after `c`.
    fn next_civil(&self, c: &NaiveDateTime) -> Option<NaiveDateTime> {
        // Matched on UTC, a zone whose wall clock has neither gaps nor repeats.
        let carrier = Utc.from_utc_datetime(c);
        self.cron
            .find_next_occurrence(&carrier, false)
            .ok()
            .map(|d| d.naive_utc())
    }

    /// The instants of the wall clock time `c`, by the rules of the module docs: none, one, or
    /// (an interval slot in a repeated hour) two.
    fn instants(&self, c: &NaiveDateTime) -> Vec<DateTime<Utc>> {
        match self.tz.from_local_datetime(c) {
            LocalResult::Single(t) => vec![t.with_timezone(&Utc)],
            LocalResult::Ambiguous(first, second) if self.fixed => {
                let _ = second;
                vec![first.with_timezone(&Utc)]
            }
            LocalResult::Ambiguous(first, second) => {
                vec![first.with_timezone(&Utc), second.with_timezone(&Utc)]
            }
            LocalResult::None if self.fixed => self.after_gap(c).into_iter().collect(),
            LocalResult::None => Vec::new(),
        }
    }

    /// The first instant after the gap that the missing wall clock time `c` falls in: the
    /// instant of the first existing wall clock time after `c`.
    fn after_gap(&self, c: &NaiveDateTime) -> Option<DateTime<Utc>> {
        // Wall clock times after `c` are missing up to the end of the gap and exist from then
        // on: search the first that exists, to the second.
        let exists = |s: i64| {
            let t = *c + Span::seconds(s);
            !matches!(self.tz.from_local_datetime(&t), LocalResult::None)
        };
        let (mut lo, mut hi) = (0i64, MAX_SHIFT.num_seconds());
        if !exists(hi) {
            return None;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if exists(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        self.tz
            .from_local_datetime(&(*c + Span::seconds(hi)))
            .earliest()
            .map(|t| t.with_timezone(&Utc))
    }

    /// The first wall clock time of the repeated range that `c` (a repeated wall clock time)
    /// lies in.
    fn overlap_start(&self, c: &NaiveDateTime) -> NaiveDateTime {
        let repeated = |s: i64| {
            let t = *c - Span::seconds(s);
            matches!(self.tz.from_local_datetime(&t), LocalResult::Ambiguous(..))
        };
        let (mut lo, mut hi) = (0i64, MAX_SHIFT.num_seconds());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if repeated(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        *c - Span::seconds(lo)
    }

    /// The first slot strictly after the instant `t`, or `None` when the expression matches
    /// nothing more (a year field in the past).
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let civil = t.with_timezone(&self.tz).naive_local();
        if let LocalResult::Ambiguous(first, _) = self.tz.from_local_datetime(&civil) {
            if !self.fixed && first.with_timezone(&Utc) == t {
                // On the first pass over a repeated range, an interval expression's next slot
                // is its next wall clock time on this pass, or else its first on the second
                // pass, which starts again at the beginning of the range.
                let c = self.next_civil(&civil)?;
                if let LocalResult::Ambiguous(next, _) = self.tz.from_local_datetime(&c) {
                    return Some(next.with_timezone(&Utc));
                }
                let start = self.overlap_start(&civil) - Span::seconds(1);
                let s = self.next_civil(&start)?;
                if let LocalResult::Ambiguous(_, second) = self.tz.from_local_datetime(&s) {
                    return Some(second.with_timezone(&Utc));
                }
            }
        }
        // Everywhere else the wall clock runs with real time: the first instant after `t` of
        // the following wall clock times is the next slot. (On the second pass, a repeated
        // time's first instant lies behind `t` and is passed over.)
        let mut cursor = civil;
        loop {
            let c = self.next_civil(&cursor)?;
            if let Some(slot) = self.instants(&c).into_iter().find(|s| *s > t) {
                return Some(slot);
            }
            cursor = c;
        }
    }

    /// The slots in `(after, now]` to enqueue when at most `keep` of them may be: the latest
    /// `keep`, oldest first. Slots before those are missed for good.
    pub fn due(&self, after: DateTime<Utc>, now: DateTime<Utc>, keep: usize) -> Vec<DateTime<Utc>> {
        if keep == 0 || now <= after {
            return Vec::new();
        }
        let mut from = after;
        loop {
            match self.walk(from, now, keep) {
                Some(slots) => return slots,
                // More than MAX_WALK slots lie between `from` and now: only the latest `keep`
                // are wanted, so start again halfway to now.
                None => {
                    let half = (now - from) / 2;
                    if half <= Span::seconds(1) {
                        return Vec::new();
                    }
                    from = now - half;
                }
            }
        }
    }

    /// The latest `keep` slots in `(from, now]`, or `None` when there are more than
    /// [`MAX_WALK`] slots to visit.
    fn walk(
        &self,
        from: DateTime<Utc>,
        now: DateTime<Utc>,
        keep: usize,
    ) -> Option<Vec<DateTime<Utc>>> {
        let mut slots = std::collections::VecDeque::with_capacity(keep.min(64));
        let mut t = from;
        for _ in 0..MAX_WALK {
            match self.next_after(t) {
                Some(slot) if slot <= now => {
                    if slots.len() == keep {
                        slots.pop_front();
                    }
                    slots.push_back(slot);
                    t = slot;
                }
                _ => return Some(slots.into_iter().collect()),
            }
        }
        None
    }
}

/// The earliest wall clock time an expression is searched from when checking that it matches
/// anything at all: the start of the Unix epoch.
fn civil_min() -> NaiveDateTime {
    DateTime::<Utc>::UNIX_EPOCH.naive_utc()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
    }

    fn slots(c: &Cadence, from: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
        let mut out = Vec::new();
        let mut t = from;
        for _ in 0..n {
            t = c.next_after(t).unwrap();
            out.push(t);
        }
        out
    }

    #[test]
    fn five_and_six_fields() {
        let every_minute = Cadence::parse("* * * * *", "UTC").unwrap();
        assert_eq!(
            every_minute.next_after(utc(2026, 1, 1, 0, 0, 30)),
            Some(utc(2026, 1, 1, 0, 1, 0))
        );
        let every_ten_seconds = Cadence::parse("*/10 * * * * *", "UTC").unwrap();
        assert_eq!(
            slots(&every_ten_seconds, utc(2026, 1, 1, 0, 0, 0), 3),
            vec![
                utc(2026, 1, 1, 0, 0, 10),
                utc(2026, 1, 1, 0, 0, 20),
                utc(2026, 1, 1, 0, 0, 30)
            ]
        );
        // Strictly after: a slot is never its own successor.
        assert_eq!(
            every_ten_seconds.next_after(utc(2026, 1, 1, 0, 0, 10)),
            Some(utc(2026, 1, 1, 0, 0, 20))
        );
    }

    #[test]
    fn aliases_and_special_characters() {
        // 2026-01-31 is a Saturday.
        let after = utc(2026, 1, 30, 12, 0, 0);
        for (expression, next) in [
            ("@daily", utc(2026, 1, 31, 0, 0, 0)),
            ("@hourly", utc(2026, 1, 30, 13, 0, 0)),
            ("0 0 L * *", utc(2026, 1, 31, 0, 0, 0)),
            // The last Friday of January 2026 is the 30th; of February, the 27th.
            ("0 0 * * 5#L", utc(2026, 2, 27, 0, 0, 0)),
            // The weekday nearest Saturday the 31st is Friday the 30th.
            ("0 18 31W * *", utc(2026, 1, 30, 18, 0, 0)),
            ("0 9 * * MON-FRI", utc(2026, 2, 2, 9, 0, 0)),
            ("0 0 1 JAN *", utc(2027, 1, 1, 0, 0, 0)),
        ] {
            let c = Cadence::parse(expression, "UTC").unwrap();
            assert_eq!(c.next_after(after), Some(next), "{expression}");
        }
    }

    #[test]
    fn time_zones_shift_the_wall_clock() {
        let nine = Cadence::parse("0 9 * * *", "America/New_York").unwrap();
        // 09:00 EST is 14:00 UTC in January.
        assert_eq!(
            nine.next_after(utc(2026, 1, 5, 0, 0, 0)),
            Some(utc(2026, 1, 5, 14, 0, 0))
        );
    }

    #[test]
    fn bad_input_names_the_field() {
        let field = |r: Result<Cadence>| match r {
            Err(Error::InvalidInput { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(Cadence::parse("* * *", "UTC")), "expression");
        assert_eq!(field(Cadence::parse("", "UTC")), "expression");
        assert_eq!(field(Cadence::parse("61 * * * *", "UTC")), "expression");
        assert_eq!(field(Cadence::parse("0 0 30 2 *", "UTC")), "expression");
        assert_eq!(
            field(Cadence::parse("* * * * *", "Mars/Olympus")),
            "time_zone"
        );
        assert_eq!(field(Cadence::parse("* * * * *", "")), "time_zone");
    }

    /// Europe/Berlin, 29 March 2026: at 02:00 CET the clocks go forward to 03:00 CEST, so
    /// 02:00..02:59 does not exist that day.
    #[test]
    fn dst_gap_runs_a_fixed_time_once_after_the_gap() {
        let c = Cadence::parse("30 2 * * *", "Europe/Berlin").unwrap();
        assert!(c.is_fixed_time());
        let got = slots(&c, utc(2026, 3, 27, 12, 0, 0), 4);
        assert_eq!(
            got,
            vec![
                // 28 March, 02:30 CET.
                utc(2026, 3, 28, 1, 30, 0),
                // 29 March: 02:30 does not exist; run at 03:00 CEST, the end of the gap.
                utc(2026, 3, 29, 1, 0, 0),
                // 30 and 31 March, 02:30 CEST.
                utc(2026, 3, 30, 0, 30, 0),
                utc(2026, 3, 31, 0, 30, 0),
            ]
        );
    }

    #[test]
    fn dst_gap_skips_interval_slots_inside_it() {
        let c = Cadence::parse("*/30 * * * *", "Europe/Berlin").unwrap();
        assert!(!c.is_fixed_time());
        // From 01:00 CET (00:00 UTC): 01:30 CET, then 03:00 CEST (02:00 and 02:30 do not exist).
        let got = slots(&c, utc(2026, 3, 29, 0, 0, 0), 3);
        assert_eq!(
            got,
            vec![
                utc(2026, 3, 29, 0, 30, 0),
                utc(2026, 3, 29, 1, 0, 0),
                utc(2026, 3, 29, 1, 30, 0),
            ]
        );
    }

    /// Europe/Berlin, 25 October 2026: at 03:00 CEST the clocks go back to 02:00 CET, so
    /// 02:00..02:59 happens twice.
    #[test]
    fn dst_overlap_runs_an_hourly_slot_every_real_hour() {
        let c = Cadence::parse("0 * * * *", "Europe/Berlin").unwrap();
        // Midnight CEST on 25 October is 22:00 UTC on the 24th; the day has 25 hours.
        let start = utc(2026, 10, 24, 22, 0, 0);
        let mut day = vec![start];
        day.extend(slots(&c, start, 25));
        let next_day = day.pop().unwrap();
        assert_eq!(day.len(), 25, "{day:?}");
        for pair in day.windows(2) {
            assert_eq!(pair[1] - pair[0], Span::hours(1), "{day:?}");
        }
        // 02:00 CEST (00:00 UTC) and 02:00 CET (01:00 UTC) are both slots.
        assert!(day.contains(&utc(2026, 10, 25, 0, 0, 0)));
        assert!(day.contains(&utc(2026, 10, 25, 1, 0, 0)));
        // Midnight CET on the 26th.
        assert_eq!(next_day, utc(2026, 10, 25, 23, 0, 0));
    }

    #[test]
    fn dst_overlap_moves_forward_from_either_pass() {
        let hourly = Cadence::parse("0 * * * *", "Europe/Berlin").unwrap();
        // From 02:30 CEST (first pass): 02:00 CET is next, an hour of real time later.
        assert_eq!(
            hourly.next_after(utc(2026, 10, 25, 0, 30, 0)),
            Some(utc(2026, 10, 25, 1, 0, 0))
        );
        // From 02:00 CEST exactly: 02:00 CET.
        assert_eq!(
            hourly.next_after(utc(2026, 10, 25, 0, 0, 0)),
            Some(utc(2026, 10, 25, 1, 0, 0))
        );
        // From 02:00 CET (second pass): 03:00 CET, never back into the first pass.
        assert_eq!(
            hourly.next_after(utc(2026, 10, 25, 1, 0, 0)),
            Some(utc(2026, 10, 25, 2, 0, 0))
        );
        let every_minute = Cadence::parse("* * * * *", "Europe/Berlin").unwrap();
        // From 02:30 CET (second pass): 02:31 CET, not 02:31 CEST (an hour in the past).
        assert_eq!(
            every_minute.next_after(utc(2026, 10, 25, 1, 30, 0)),
            Some(utc(2026, 10, 25, 1, 31, 0))
        );
        // From 02:59 CEST (end of the first pass): 02:00 CET.
        assert_eq!(
            every_minute.next_after(utc(2026, 10, 25, 0, 59, 0)),
            Some(utc(2026, 10, 25, 1, 0, 0))
        );
    }

    #[test]
    fn dst_overlap_runs_a_fixed_time_once() {
        let c = Cadence::parse("30 2 * * *", "Europe/Berlin").unwrap();
        let got = slots(&c, utc(2026, 10, 24, 12, 0, 0), 2);
        // 02:30 CEST (00:30 UTC) only, not 02:30 CET; then 02:30 CET on the 26th.
        assert_eq!(
            got,
            vec![utc(2026, 10, 25, 0, 30, 0), utc(2026, 10, 26, 1, 30, 0)]
        );
    }

    #[test]
    fn new_york_transitions() {
        // 8 March 2026, 02:00 EST -> 03:00 EDT; 1 November 2026, 02:00 EDT -> 01:00 EST.
        let daily = Cadence::parse("30 2 * * *", "America/New_York").unwrap();
        assert_eq!(
            daily.next_after(utc(2026, 3, 8, 0, 0, 0)),
            // 03:00 EDT = 07:00 UTC.
            Some(utc(2026, 3, 8, 7, 0, 0))
        );
        let hourly = Cadence::parse("0 * * * *", "America/New_York").unwrap();
        // 01:00 EDT (05:00 UTC), 01:00 EST (06:00 UTC), 02:00 EST (07:00 UTC).
        assert_eq!(
            slots(&hourly, utc(2026, 11, 1, 4, 30, 0), 3),
            vec![
                utc(2026, 11, 1, 5, 0, 0),
                utc(2026, 11, 1, 6, 0, 0),
                utc(2026, 11, 1, 7, 0, 0)
            ]
        );
    }

    #[test]
    fn due_keeps_the_latest_slots() {
        let c = Cadence::parse("*/10 * * * * *", "UTC").unwrap();
        let t0 = utc(2026, 1, 1, 0, 0, 0);
        // 25 slots missed: (t0, t0 + 250 s].
        let now = t0 + Span::seconds(255);
        assert_eq!(c.due(t0, now, 1), vec![t0 + Span::seconds(250)]);
        let five = c.due(t0, now, 5);
        assert_eq!(
            five,
            (21..=25)
                .map(|i| t0 + Span::seconds(10 * i))
                .collect::<Vec<_>>()
        );
        assert_eq!(c.due(t0, now, 100).len(), 25);
        assert!(c.due(now, now, 5).is_empty());
        assert!(c.due(t0, t0 + Span::seconds(9), 5).is_empty());
        // A slot exactly at now is due.
        assert_eq!(
            c.due(t0, t0 + Span::seconds(10), 5),
            vec![t0 + Span::seconds(10)]
        );
    }

    #[test]
    fn due_after_a_long_outage_stays_bounded() {
        let c = Cadence::parse("* * * * * *", "UTC").unwrap();
        let t0 = utc(2026, 1, 1, 0, 0, 0);
        // A week of one slot per second: 604,800 missed slots.
        let now = t0 + Span::days(7);
        let latest = c.due(t0, now, 3);
        assert_eq!(
            latest,
            vec![now - Span::seconds(2), now - Span::seconds(1), now]
        );
    }
}
