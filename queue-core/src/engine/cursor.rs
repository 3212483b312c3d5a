//! Claim positions: where the claims of a queue stopped, so that the next claim continues from
//! there instead of from the head of the queue.
//!
//! A claim that starts at the head of a queue walks the claim index from its first entry. On
//! PostgreSQL that index keeps an entry for every job claimed since cleanup last ran, and a
//! transaction elsewhere in the database that holds an old snapshot (a report, a backup, a
//! `REPEATABLE READ` session) keeps cleanup from removing any of them: each claim then walks
//! every job claimed since that snapshot began, and a drain slows the longer it runs. Cleanup
//! that runs rarely does the same more slowly: a queue that pushes and drains at once without
//! vacuum grows that walk by every job it runs. A claim that continues from the last position
//! of the queue skips them.
//!
//! The position is a hint, kept per queue by the engine of this process, and these rules keep
//! it from hiding a job for long:
//! - It is the last job in claim order that this engine's claims of the queue took, set by
//!   the first claim that took any and moved forward by the later ones.
//! - Jobs of a higher priority come first whatever the position: the claim reads them from
//!   the head of the queue (a short walk unless the queue is full of them).
//! - After a claim that came back short (the queue is drained up to the present), the next
//!   claim starts [`LOOK_BEHIND`] before the position: a job pushed by a transaction that
//!   began before the jobs claimed last but committed after them sorts just behind the
//!   position, and is claimed by the next claim. Claims that come back full continue from the
//!   position itself.
//! - It is forgotten whenever this engine makes a job of the queue claimable other than by a
//!   push (a retry due now, a release, a rescue, a promotion, a schedule, a change of
//!   controls: every `wake`), so that job is claimed by the next claim; so is it after a claim
//!   that went on into a lower priority.
//! - Every [`RESCAN`] the next claim starts from the head of the queue again. A job that
//!   became due further behind the position meanwhile (its row locked by another transaction
//!   while claims passed it, released by another process, pushed by a transaction that ran
//!   longer than [`LOOK_BEHIND`]) waits for that claim at most. Claims from the head are kept
//!   to about a [`HEAD_SHARE`]th of the time: after one that took `d`, the next comes at
//!   the earliest `HEAD_SHARE * d` later, so where cleanup lags and a walk from the head takes
//!   long, the walks come less often instead of taking the claims' time.
//! - A position cleared for any of these reasons is not set again by a claim that began
//!   before it was cleared (a generation count per queue).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::ClaimAfter;
use crate::ids::JobId;
use crate::job::Leased;

/// How long claims of a queue continue from its position before one starts from the head of
/// the queue again (at the least: see [`HEAD_SHARE`]).
pub(crate) const RESCAN: Duration = Duration::from_secs(1);

/// How far before the position (in `run_at`) a claim starts after the last claim came back
/// short.
pub(crate) const LOOK_BEHIND: Duration = Duration::from_millis(500);

/// The share of the time claims from the head of a queue may take, inverted: the next one
/// starts no sooner than this many times the last one's duration after it.
pub(crate) const HEAD_SHARE: u32 = 20;

/// The positions of the queues this engine claims from.
#[derive(Debug, Default)]
pub(super) struct ClaimCursors {
    queues: Mutex<HashMap<String, QueueCursor>>,
}

#[derive(Debug, Default)]
struct QueueCursor {
    /// Counts the times the position was cleared or rescanned: a claim that began before
    /// records nothing.
    generation: u64,
    position: Option<Position>,
}

#[derive(Clone, Copy, Debug)]
struct Position {
    after: ClaimAfter,
    /// When a claim starts from the head of the queue again.
    rescan_at: Instant,
    /// The last claim came back short: the next starts [`LOOK_BEHIND`] before `after`.
    drained: bool,
    /// Claims read from the head until one records: the rescan is under way.
    rescanning: bool,
}

/// What a claim of a queue began from: its position (`None`: the head of the queue), the
/// generation it saw, and when.
#[derive(Clone, Copy, Debug)]
pub(super) struct ClaimStart {
    pub(super) after: Option<ClaimAfter>,
    generation: u64,
    began: Option<Instant>,
}

impl ClaimStart {
    /// A claim from the head of the queue, by an engine that keeps no position.
    pub(super) const HEAD: ClaimStart = ClaimStart {
        after: None,
        generation: 0,
        began: None,
    };
}

impl ClaimAfter {
    /// The position `by` earlier in `run_at`, before every job due at that time.
    fn earlier_by(self, by: Duration) -> ClaimAfter {
        let by = chrono::Duration::from_std(by).unwrap_or(chrono::Duration::zero());
        ClaimAfter {
            priority: self.priority,
            run_at: self.run_at - by,
            id: JobId(uuid::Uuid::nil()),
        }
    }
}

impl ClaimCursors {
    /// Where the next claim of `queue` starts.
    pub(super) fn start(&self, queue: &str) -> ClaimStart {
        let now = Instant::now();
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        let Some(q) = queues.get_mut(queue) else {
            return ClaimStart {
                began: Some(now),
                ..ClaimStart::HEAD
            };
        };
        if let Some(p) = &mut q.position {
            if !p.rescanning && now >= p.rescan_at {
                p.rescanning = true;
                q.generation += 1;
            }
        }
        let after = match q.position {
            Some(p) if p.rescanning => None,
            Some(p) if p.drained => Some(p.after.earlier_by(LOOK_BEHIND)),
            Some(p) => Some(p.after),
            None => None,
        };
        ClaimStart {
            after,
            generation: q.generation,
            began: Some(now),
        }
    }

    /// Records a claim of `queue` that began at `start`, asked for `asked` jobs and got `jobs`.
    pub(super) fn record(&self, queue: &str, start: ClaimStart, asked: usize, jobs: &[Leased]) {
        let last =
            jobs.iter()
                .map(|j| ClaimAfter::of(&j.job))
                .reduce(|a, b| if a.precedes(&b) { b } else { a });
        self.record_last(queue, start, asked, jobs.len(), last);
    }

    /// [`ClaimCursors::record`] of a claim that got `got` jobs, the last in claim order `last`.
    fn record_last(
        &self,
        queue: &str,
        start: ClaimStart,
        asked: usize,
        got: usize,
        last: Option<ClaimAfter>,
    ) {
        let now = Instant::now();
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        let full = got >= asked && asked > 0;
        let q = queues.entry(queue.to_owned()).or_default();
        if q.generation != start.generation {
            return;
        }
        // The next claim from the head of the queue: RESCAN after this one, or later where
        // this one (from the head) took long.
        let next_rescan = || {
            let took = start.began.map_or(Duration::ZERO, |b| now - b);
            now + RESCAN.max(took.saturating_mul(HEAD_SHARE))
        };
        let Some(last) = last else {
            // Nothing due: the queue is drained up to the present, and a position stays where
            // it was (a rescan that found nothing ends).
            if let Some(p) = &mut q.position {
                p.drained = true;
                if start.after.is_none() && p.rescanning {
                    p.rescanning = false;
                    p.rescan_at = next_rescan();
                }
            }
            return;
        };
        if start.after.is_some_and(|a| last.priority < a.priority) {
            // The claim went on into a lower priority: a job of the position's priority that
            // appeared behind it must not wait for those, so the next claim reads the head.
            q.clear();
            return;
        }
        match (&mut q.position, start.after) {
            // Began from a position that is gone: the claims from the head decide again.
            (None, Some(_)) => {}
            // The position moves forward, never back (also for a claim from the head that
            // began beside the one that set it).
            (Some(p), _) if !p.rescanning => {
                if p.after.precedes(&last) {
                    p.after = last;
                }
                p.drained = !full;
            }
            // The first claim that took jobs, or a rescan: the position starts again from what
            // the head held.
            (slot, _) => {
                *slot = Some(Position {
                    after: last,
                    rescan_at: next_rescan(),
                    drained: !full,
                    rescanning: false,
                });
            }
        }
    }

    /// Forgets the position of `queue`: a job that may sort before it became claimable.
    pub(super) fn forget(&self, queue: &str) {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        // Also for a queue with no position yet: a claim in flight records none either.
        queues.entry(queue.to_owned()).or_default().clear();
    }
}

impl QueueCursor {
    /// No position, and nothing recorded by a claim that began before.
    fn clear(&mut self) {
        self.generation += 1;
        self.position = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobId;
    use chrono::{TimeZone, Utc};

    fn at(priority: i32, second: i64) -> ClaimAfter {
        ClaimAfter {
            priority,
            run_at: Utc.timestamp_opt(1_700_000_000 + second, 0).unwrap(),
            id: JobId(uuid::Uuid::from_u128(second as u128)),
        }
    }

    #[test]
    fn claim_order_is_priority_then_run_at_then_id() {
        assert!(at(5, 9).precedes(&at(0, 1)), "a higher priority first");
        assert!(at(0, 1).precedes(&at(0, 2)));
        let same_time = ClaimAfter {
            id: JobId(uuid::Uuid::from_u128(99)),
            ..at(0, 1)
        };
        assert!(at(0, 1).precedes(&same_time));
        assert!(!at(0, 1).precedes(&at(0, 1)));
    }

    #[test]
    fn a_position_is_kept_after_every_claim_that_took_jobs() {
        let c = ClaimCursors::default();
        let s = c.start("q");
        assert_eq!(s.after, None, "the first claim reads from the head");
        c.record_last("q", s, 10, 0, None);
        assert_eq!(
            c.start("q").after,
            None,
            "a claim that took nothing sets none"
        );
        let s = c.start("q");
        c.record_last("q", s, 10, 10, Some(at(0, 10)));
        let s = c.start("q");
        assert_eq!(s.after, Some(at(0, 10)), "a full claim leaves its last job");
        // Claims from the position move it forward, never back.
        c.record_last("q", s, 10, 10, Some(at(0, 20)));
        c.record_last("q", s, 10, 10, Some(at(0, 15)));
        let s = c.start("q");
        assert_eq!(s.after, Some(at(0, 20)));
        assert_eq!(c.start("other").after, None, "positions are per queue");
    }

    #[test]
    fn after_a_short_claim_the_next_starts_a_little_behind_the_position() {
        let c = ClaimCursors::default();
        let s = c.start("q");
        c.record_last("q", s, 10, 4, Some(at(0, 4)));
        let behind = ClaimAfter {
            priority: 0,
            run_at: at(0, 4).run_at - chrono::Duration::from_std(LOOK_BEHIND).unwrap(),
            id: JobId(uuid::Uuid::nil()),
        };
        let s = c.start("q");
        assert_eq!(s.after, Some(behind), "a short claim from the head");
        assert!(behind.precedes(&at(0, 4)));
        // A claim that found nothing keeps the position, still behind it.
        c.record_last("q", s, 10, 0, None);
        let s = c.start("q");
        assert_eq!(s.after, Some(behind));
        // A job that committed late, just behind the position, moves nothing back.
        let late = ClaimAfter {
            run_at: at(0, 4).run_at - chrono::Duration::milliseconds(3),
            ..at(0, 4)
        };
        c.record_last("q", s, 10, 1, Some(late));
        assert_eq!(c.start("q").after, Some(behind));
        // Full claims continue from the position itself again.
        let s = c.start("q");
        c.record_last("q", s, 10, 10, Some(at(0, 30)));
        assert_eq!(c.start("q").after, Some(at(0, 30)));
    }

    #[test]
    fn a_rescan_that_finds_nothing_keeps_the_position() {
        let c = ClaimCursors::default();
        let s = c.start("q");
        c.record_last("q", s, 10, 10, Some(at(0, 10)));
        past_rescan(&c);
        let head = c.start("q");
        assert_eq!(
            head.after, None,
            "past RESCAN the claim reads from the head"
        );
        assert_eq!(c.start("q").after, None, "so do the claims beside it");
        c.record_last("q", head, 10, 0, None);
        let s = c.start("q");
        assert!(
            s.after.is_some_and(|a| a.precedes(&at(0, 10))),
            "the claims continue from the position, behind it: {:?}",
            s.after
        );
        let rescan_at = c.queues.lock().unwrap()["q"].position.unwrap().rescan_at;
        assert!(rescan_at >= Instant::now() + RESCAN - Duration::from_millis(100));
    }

    #[test]
    fn a_head_claim_that_took_long_puts_the_next_further_off() {
        let c = ClaimCursors::default();
        let mut s = c.start("q");
        s.began = Some(Instant::now() - Duration::from_secs(2));
        c.record_last("q", s, 10, 10, Some(at(0, 10)));
        let rescan_at = c.queues.lock().unwrap()["q"].position.unwrap().rescan_at;
        let floor = Instant::now() + Duration::from_secs(2) * HEAD_SHARE - Duration::from_secs(1);
        assert!(rescan_at >= floor, "the next head claim comes too soon");
    }

    /// Moves the position of "q" past its rescan.
    fn past_rescan(c: &ClaimCursors) {
        let mut queues = c.queues.lock().unwrap();
        let p = queues.get_mut("q").unwrap().position.as_mut().unwrap();
        p.rescan_at = Instant::now() - Duration::from_millis(1);
    }

    #[test]
    fn forgetting_wins_over_claims_that_began_before() {
        let c = ClaimCursors::default();
        let s = c.start("q");
        c.record_last("q", s, 10, 10, Some(at(0, 10)));
        let before = c.start("q");
        let head = ClaimStart {
            after: None,
            ..before
        };
        c.forget("q");
        assert_eq!(c.start("q").after, None);
        // Claims in flight when a job became claimable behind the position record nothing.
        c.record_last("q", before, 10, 10, Some(at(0, 20)));
        c.record_last("q", head, 10, 10, Some(at(0, 20)));
        assert_eq!(c.start("q").after, None);
        // A claim that began after it keeps a position again.
        let s = c.start("q");
        c.record_last("q", s, 10, 10, Some(at(0, 30)));
        assert_eq!(c.start("q").after, Some(at(0, 30)));
    }

    #[test]
    fn a_claim_from_before_a_rescan_does_not_move_the_new_position() {
        let c = ClaimCursors::default();
        let s = c.start("q");
        c.record_last("q", s, 10, 10, Some(at(0, 10)));
        let in_flight = c.start("q");
        assert_eq!(in_flight.after, Some(at(0, 10)));
        past_rescan(&c);
        let head = c.start("q");
        assert_eq!(head.after, None);
        c.record_last("q", head, 10, 10, Some(at(0, 5)));
        // The claim that began from the old position ends after the new one was set: the jobs
        // between 5 and 30 that the head claim did not reach stay in front of the position.
        c.record_last("q", in_flight, 10, 10, Some(at(0, 30)));
        assert_eq!(c.start("q").after, Some(at(0, 5)));
    }

    #[test]
    fn a_claim_that_went_on_into_a_lower_priority_reads_the_head_next() {
        let c = ClaimCursors::default();
        let s = c.start("q");
        c.record_last("q", s, 10, 10, Some(at(5, 10)));
        let s = c.start("q");
        c.record_last("q", s, 10, 10, Some(at(4, 20)));
        assert_eq!(c.start("q").after, None);
    }

    #[test]
    fn forgetting_a_queue_without_a_position_stops_claims_in_flight() {
        let c = ClaimCursors::default();
        let head = c.start("q");
        c.forget("q");
        c.record_last("q", head, 10, 10, Some(at(0, 10)));
        assert_eq!(c.start("q").after, None);
    }

    #[test]
    fn claims_from_a_position_read_from_the_head_again_after_rescan() {
        let c = ClaimCursors::default();
        let s = c.start("q");
        c.record_last("q", s, 10, 10, Some(at(0, 10)));
        past_rescan(&c);
        assert_eq!(
            c.start("q").after,
            None,
            "past RESCAN the claim reads from the head"
        );
    }
}
