//! Claim positions: where the claims of a queue with a backlog stopped, so that the next claim
//! continues from there instead of from the head of the queue.
//!
//! A claim that starts at the head of a queue walks the claim index from its first entry. On
//! PostgreSQL that index keeps an entry for every job claimed since cleanup last ran, and a
//! transaction elsewhere in the database that holds an old snapshot (a report, a backup, a
//! `REPEATABLE READ` session) keeps cleanup from removing any of them: each claim then walks
//! every job claimed since that snapshot began, and a drain slows the longer it runs. A claim
//! that continues from the last position of the queue skips them.
//!
//! The position is a hint, kept per queue by the engine of this process, and these rules keep
//! it from hiding a job for long:
//! - It is kept only after a claim that came back full (the queue has a backlog), and is the
//!   last job in claim order of the claims that continued from it.
//! - Jobs of a higher priority come first whatever the position: the claim reads them from
//!   the head of the queue (a short walk unless the queue is full of them).
//! - A claim from the position that comes back short claims the rest from the head of the
//!   queue at once, and the position is forgotten; so is it after a claim that went on into a
//!   lower priority.
//! - It is forgotten whenever this engine makes a job of the queue claimable other than by a
//!   push (a retry due now, a release, a rescue, a promotion, a schedule, a change of
//!   controls: every `wake`), so that job is claimed by the next claim as before.
//! - Every [`RESCAN`] the next claim starts from the head of the queue again. A job that
//!   became due behind the position meanwhile (its row locked by another transaction while
//!   claims passed it, released by another process, pushed by a transaction that committed
//!   after claims passed its `run_at`) waits for that claim at most.
//! - A position cleared for any of these reasons is not set again by a claim that began
//!   before it was cleared (a generation count per queue).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::ClaimAfter;
use crate::job::Leased;

/// How long claims of a queue continue from its position before one starts from the head of
/// the queue again.
pub(crate) const RESCAN: Duration = Duration::from_secs(1);

/// The positions of the queues this engine claims from.
#[derive(Debug, Default)]
pub(super) struct ClaimCursors {
    queues: Mutex<HashMap<String, QueueCursor>>,
}

#[derive(Debug, Default)]
struct QueueCursor {
    /// Counts the times the position was cleared (forgotten, past its rescan, or after a short
    /// claim): a claim that began before records nothing.
    generation: u64,
    position: Option<Position>,
}

#[derive(Clone, Copy, Debug)]
struct Position {
    after: ClaimAfter,
    /// When a claim starts from the head of the queue again.
    rescan_at: Instant,
}

/// What a claim of a queue began from: its position (`None`: the head of the queue) and the
/// generation it saw.
#[derive(Clone, Copy, Debug)]
pub(super) struct ClaimStart {
    pub(super) after: Option<ClaimAfter>,
    generation: u64,
}

impl ClaimStart {
    /// A claim from the head of the queue, by an engine that keeps no position.
    pub(super) const HEAD: ClaimStart = ClaimStart {
        after: None,
        generation: 0,
    };
}

impl ClaimStart {
    /// This start, for a claim that reads from the head of the queue.
    pub(super) fn at_head(self) -> Self {
        ClaimStart {
            after: None,
            ..self
        }
    }
}

impl ClaimCursors {
    /// Where the next claim of `queue` starts.
    pub(super) fn start(&self, queue: &str) -> ClaimStart {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        let Some(q) = queues.get_mut(queue) else {
            return ClaimStart::HEAD;
        };
        if q.position.is_some_and(|p| Instant::now() >= p.rescan_at) {
            q.clear();
        }
        ClaimStart {
            after: q.position.map(|p| p.after),
            generation: q.generation,
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
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        let full = got >= asked && asked > 0;
        let Some(last) = last.filter(|_| full) else {
            // Short: the queue is drained past where the claim began.
            if let Some(q) = queues.get_mut(queue) {
                if q.generation == start.generation {
                    q.clear();
                }
            }
            return;
        };
        let q = queues.entry(queue.to_owned()).or_default();
        if q.generation != start.generation {
            return;
        }
        if start.after.is_some_and(|a| last.priority < a.priority) {
            // The claim went on into a lower priority: a job of the position's priority that
            // appeared behind it must not wait for those, so the next claim reads the head.
            q.clear();
            return;
        }
        match (&mut q.position, start.after) {
            (Some(p), Some(_)) => {
                if p.after.precedes(&last) {
                    p.after = last;
                }
            }
            // Began from a position that is gone: the claims from the head decide again.
            (None, Some(_)) => {}
            (slot, None) => {
                let rescan_at = match slot {
                    Some(p) => p.rescan_at,
                    None => Instant::now() + RESCAN,
                };
                let after = match slot {
                    Some(p) if last.precedes(&p.after) => p.after,
                    _ => last,
                };
                *slot = Some(Position { after, rescan_at });
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
    fn a_position_is_kept_after_full_claims_only() {
        let c = ClaimCursors::default();
        let s = c.start("q");
        assert_eq!(s.after, None, "the first claim reads from the head");
        c.record_last("q", s, 10, 4, Some(at(0, 4)));
        assert_eq!(c.start("q").after, None, "a short claim keeps no position");
        let s = c.start("q");
        c.record_last("q", s, 10, 10, Some(at(0, 10)));
        let s = c.start("q");
        assert_eq!(s.after, Some(at(0, 10)), "a full claim leaves its last job");
        // Claims from the position move it forward, never back.
        c.record_last("q", s, 10, 10, Some(at(0, 20)));
        c.record_last("q", s, 10, 10, Some(at(0, 15)));
        let s = c.start("q");
        assert_eq!(s.after, Some(at(0, 20)));
        // A short claim from the position: the queue past it is drained.
        c.record_last("q", s, 10, 3, Some(at(0, 23)));
        assert_eq!(c.start("q").after, None);
        assert_eq!(c.start("other").after, None, "positions are per queue");
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
        {
            let mut queues = c.queues.lock().unwrap();
            let p = queues.get_mut("q").unwrap().position.as_mut().unwrap();
            p.rescan_at = Instant::now() - Duration::from_millis(1);
        }
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
        {
            let mut queues = c.queues.lock().unwrap();
            let p = queues.get_mut("q").unwrap().position.as_mut().unwrap();
            p.rescan_at = Instant::now() - Duration::from_millis(1);
        }
        assert_eq!(
            c.start("q").after,
            None,
            "past RESCAN the claim reads from the head"
        );
    }
}
