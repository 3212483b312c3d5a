//! Work on many jobs at once: bulk operations by filter, and the retention task's rounds.
//! Both go in bounded statements, each its own short transaction, so that neither holds many
//! locks or a long transaction however many jobs it touches.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{count_by, Driver, DriverFault, Engine, JobMatch, JobPrune, LOG_TARGET, PRUNE_CHUNK};
use crate::error::{Error, Result};
use crate::job::{JobId, JobState};
use crate::queue::{BulkAction, BulkOutcome, JobFilter};
use crate::retention::{Retention, RetentionReport, RETENTION_ROUND, RETENTION_TASK};
use crate::workflow::WorkflowId;

/// The maintenance task of the queue gauge sampler (its lease row is made by a migration).
pub(crate) const GAUGES_TASK: &str = "gauges";

/// Jobs per batch of a bulk operation: each batch is one read of ids and one statement over
/// them.
pub(crate) const BULK_CHUNK: usize = 1_000;

/// A retention round stops deleting this long before its lease runs out, so that it never
/// deletes beside the next holder.
const ROUND_MARGIN: Duration = Duration::from_secs(30);

/// Workflows deleted per `workflow_prune` statement. Each takes its steps and dependencies
/// along (a few rows per job), so fewer than the jobs of a `job_prune` statement.
const WORKFLOW_PRUNE_CHUNK: usize = 500;

/// The least UUID v7 of the millisecond of `at` (counter and random bits zero): every UUID v7
/// made in that millisecond or later sorts at or above it, every one made earlier below it.
/// The least UUID v7 of all for an instant before the Unix epoch.
pub(crate) fn uuid_v7_floor(at: DateTime<Utc>) -> Uuid {
    let millis = u64::try_from(at.timestamp_millis()).unwrap_or(0);
    uuid::Builder::from_unix_timestamp_millis(millis, &[0; 10]).into_uuid()
}

impl<D: Driver> Engine<D> {
    /// How many jobs a bulk operation would touch now.
    ///
    /// # Errors
    /// As [`crate::Queue::count_matching`].
    pub async fn count_matching(&self, action: BulkAction, filter: &JobFilter) -> Result<u64> {
        let states = filter.states_for(action)?;
        let m = matching(filter, &states, None);
        self.driver().job_count(m).await.map_err(|e| self.error(e))
    }

    /// Cancels, retries or deletes every job `filter` matches, batch by batch, newest first.
    ///
    /// # Errors
    /// As [`crate::Queue::bulk`].
    pub async fn bulk(&self, action: BulkAction, filter: &JobFilter) -> Result<BulkOutcome> {
        let states = filter.states_for(action)?;
        let d = self.driver();
        let mut outcome = BulkOutcome::default();
        let mut before: Option<JobId> = None;
        loop {
            let m = matching(filter, &states, before);
            let batch = self
                .retried("bulk read", || d.job_ids(m))
                .await
                .map_err(|e| self.error(e))?;
            let Some((last, _)) = batch.last() else { break };
            before = Some(*last);
            let ids: Vec<JobId> = batch.iter().map(|(id, _)| *id).collect();
            let changed = match action {
                BulkAction::Cancel => {
                    let changed = self
                        .retried("bulk cancel", || d.job_cancel_many(&ids))
                        .await
                        .map_err(|e| self.error(e))?;
                    let first = batch[0].1.as_str();
                    let queue = if batch.iter().all(|(_, q)| q == first) {
                        first
                    } else {
                        ""
                    };
                    self.inner.metrics.cancelled(queue).increment(changed);
                    if changed > 0 {
                        self.settle_after(&ids, true).await;
                    }
                    changed
                }
                BulkAction::Delete => {
                    let changed = self
                        .retried("bulk delete", || d.job_delete_many(&ids, &states))
                        .await
                        .map_err(|e| self.error(e))?;
                    // A deleted dependency holds nothing back.
                    if changed > 0 {
                        self.settle_after(&ids, true).await;
                    }
                    changed
                }
                BulkAction::Retry => self.retry_batch(&batch).await?,
            };
            outcome.changed += changed;
            outcome.skipped += ids.len() as u64 - changed.min(ids.len() as u64);
            if batch.len() < BULK_CHUNK {
                break;
            }
        }
        tracing::info!(target: LOG_TARGET, %action, changed = outcome.changed, skipped = outcome.skipped, "bulk operation done");
        Ok(outcome)
    }

    /// Retries one batch in one statement; when a unique or dedup key refuses it as a whole,
    /// job by job, skipping those whose key a live job holds.
    async fn retry_batch(&self, batch: &[(JobId, String)]) -> Result<u64> {
        let d = self.driver();
        let ids: Vec<JobId> = batch.iter().map(|(id, _)| *id).collect();
        let changed = match self.retried("bulk retry", || d.job_retry_many(&ids)).await {
            Ok(n) => n,
            Err(e) if matches!(d.classify(&e), DriverFault::UniqueViolation(_)) => {
                let mut n = 0;
                for id in &ids {
                    match self.retry(*id).await {
                        Ok(()) => n += 1,
                        Err(
                            Error::UniqueTaken { .. }
                            | Error::Duplicate { .. }
                            | Error::InvalidState { .. }
                            | Error::NotFound { .. },
                        ) => {}
                        Err(e) => return Err(e),
                    }
                }
                return Ok(n);
            }
            Err(e) => return Err(self.error(e)),
        };
        if changed > 0 {
            for (queue, n) in count_by(batch.iter().map(|(_, q)| q.as_str())) {
                self.wake(queue, n).await;
            }
            self.reopen_after_retry(&ids).await;
        }
        Ok(changed)
    }

    /// Takes or renews the gauge sampler's lease for `holder`.
    ///
    /// # Errors
    /// As [`crate::Queue::gauge_lease`].
    pub async fn gauge_lease(&self, holder: Uuid, lease: Duration) -> Result<bool> {
        let d = self.driver();
        self.retried("gauge lease", || {
            d.maintenance_claim(GAUGES_TASK, holder, lease)
        })
        .await
        .map_err(|e| self.error(e))
    }

    /// Gives up the gauge sampler's lease if `holder` holds it (the next turn is due at once).
    ///
    /// # Errors
    /// As [`crate::Queue::gauge_release`].
    pub async fn gauge_release(&self, holder: Uuid) -> Result<()> {
        self.driver()
            .maintenance_release(GAUGES_TASK, holder, Duration::ZERO)
            .await
            .map_err(|e| self.error(e))
    }

    /// One retention round, unless another process holds the round's lease or the last round
    /// ended less than the rules' interval ago.
    ///
    /// # Errors
    /// As [`crate::Queue::run_retention`].
    pub async fn run_retention(&self, rules: &Retention) -> Result<Option<RetentionReport>> {
        rules.validate()?;
        let d = self.driver();
        let token = Uuid::new_v4();
        let taken = self
            .retried("retention lease", || {
                d.maintenance_claim(RETENTION_TASK, token, RETENTION_ROUND)
            })
            .await
            .map_err(|e| self.error(e))?;
        if !taken {
            return Ok(None);
        }
        let deadline = Instant::now() + RETENTION_ROUND.saturating_sub(ROUND_MARGIN);
        let mut report = RetentionReport::default();
        let deleted = self.retention_round(rules, deadline, &mut report).await;
        // The next round is due an interval after this one ended, even after an error (the
        // lease would otherwise keep others out for the whole round's length).
        let released = d
            .maintenance_release(RETENTION_TASK, token, rules.every())
            .await
            .map_err(|e| self.error(e));
        if report.total() > 0
            || report.key_rate_counts > 0
            || report.workflows > 0
            || report.unfinished
        {
            tracing::info!(
                target: LOG_TARGET,
                completed = report.completed,
                cancelled = report.cancelled,
                dead = report.dead,
                key_rate_counts = report.key_rate_counts,
                workflows = report.workflows,
                unfinished = report.unfinished,
                "retention deleted finished jobs"
            );
        }
        deleted?;
        released?;
        Ok(Some(report))
    }

    async fn retention_round(
        &self,
        rules: &Retention,
        deadline: Instant,
        report: &mut RetentionReport,
    ) -> Result<()> {
        // The key rate counts first: a few rows, and a backlog of jobs that outlasts every
        // round would otherwise keep them forever.
        self.prune_key_rate_counts(deadline, report).await?;
        for (state, after) in rules.rules() {
            let states = [state];
            let p = JobPrune {
                states: &states,
                older_than: after,
                queue: None,
                limit: PRUNE_CHUNK,
            };
            loop {
                if Instant::now() >= deadline {
                    report.unfinished = true;
                    return Ok(());
                }
                let n = self
                    .retried("retention", || self.driver().job_prune(p))
                    .await
                    .map_err(|e| self.error(e))?;
                report.add(state, n);
                if n < PRUNE_CHUNK as u64 {
                    break;
                }
            }
        }
        // The workflows last: their jobs' deletion (just now, or earlier) is what frees them.
        self.prune_workflows(rules, deadline, report).await
    }

    /// Deletes the rows of workflows none of whose jobs exists any more (`workflows`,
    /// `workflow_jobs`, `job_deps`: nothing else ever deletes them). Only workflows older than
    /// the rules' shortest age are looked at, by id: a UUID v7, time-ordered, so the statement
    /// reads a range of the primary key from its start up to that bound. A workflow whose jobs
    /// were all pruned by age is older than that (its id was made before its jobs finished);
    /// one whose jobs an operator deleted waits until it is. The bound is taken from the
    /// database's clock, as the ages are; ids are made by the clocks of the pushing hosts, so a
    /// host whose clock is far off only moves when its workflows are looked at, never whether
    /// one with a job left is deleted (the statement checks that).
    async fn prune_workflows(
        &self,
        rules: &Retention,
        deadline: Instant,
        report: &mut RetentionReport,
    ) -> Result<()> {
        let Some(shortest) = rules.rules().into_iter().map(|(_, after)| after).min() else {
            return Ok(());
        };
        let now = self.now().await?;
        // Ages are validated to at most 10 years: always in range.
        let since = chrono::Duration::from_std(shortest)
            .ok()
            .and_then(|age| now.checked_sub_signed(age))
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        let before = WorkflowId(uuid_v7_floor(since));
        let d = self.driver();
        loop {
            if Instant::now() >= deadline {
                report.unfinished = true;
                return Ok(());
            }
            let n = self
                .retried("retention", || {
                    d.workflow_prune(before, WORKFLOW_PRUNE_CHUNK)
                })
                .await
                .map_err(|e| self.error(e))?;
            report.workflows += n;
            if n < WORKFLOW_PRUNE_CHUNK as u64 {
                break;
            }
        }
        Ok(())
    }

    /// Deletes the key rate counts of windows that ended a whole window ago or more (one row
    /// per key that started a job of a queue with a key rate limit; without this the table
    /// keeps a row for every key ever seen). The window is the database's clock's, as the
    /// claims count it; the one just ended is kept, so a claim that read the clock just
    /// before a window turned never finds its count gone.
    async fn prune_key_rate_counts(
        &self,
        deadline: Instant,
        report: &mut RetentionReport,
    ) -> Result<()> {
        let d = self.driver();
        let controls = self
            .retried("retention", || d.queue_control_list())
            .await
            .map_err(|e| self.error(e))?;
        let limited: Vec<_> = controls
            .into_iter()
            .filter_map(|c| c.key_rate_limit.map(|r| (c.queue, r)))
            .collect();
        if limited.is_empty() {
            return Ok(());
        }
        let now_us = self.now().await?.timestamp_micros();
        for (queue, rate) in limited {
            let before = now_us.div_euclid(rate.period_us()) - 1;
            loop {
                if Instant::now() >= deadline {
                    report.unfinished = true;
                    return Ok(());
                }
                let n = self
                    .retried("retention", || {
                        d.queue_key_rate_prune(&queue, before, PRUNE_CHUNK)
                    })
                    .await
                    .map_err(|e| self.error(e))?;
                report.key_rate_counts += n;
                if n < PRUNE_CHUNK as u64 {
                    break;
                }
            }
        }
        Ok(())
    }
}

fn matching<'a>(
    filter: &'a JobFilter,
    states: &'a [JobState],
    before: Option<JobId>,
) -> JobMatch<'a> {
    JobMatch {
        queue: filter.queue.as_deref(),
        states,
        kind: filter.kind.as_deref(),
        older_than: filter.older_than,
        before,
        limit: BULK_CHUNK,
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone as _;

    use super::*;

    #[test]
    fn the_v7_floor_is_below_every_id_of_its_millisecond_and_above_every_earlier_one() {
        let at = Utc.timestamp_millis_opt(1_750_000_000_123).unwrap();
        let floor = uuid_v7_floor(at);
        assert_eq!(floor.get_version_num(), 7);
        let ts = floor.get_timestamp().unwrap().to_unix();
        assert_eq!((ts.0, ts.1), (1_750_000_000, 123_000_000));
        let made = |millis: u64, rand: [u8; 10]| {
            uuid::Builder::from_unix_timestamp_millis(millis, &rand).into_uuid()
        };
        for rand in [[0; 10], [0xff; 10], [0x5a; 10]] {
            assert!(made(1_750_000_000_123, rand) >= floor);
            assert!(made(1_750_000_000_124, rand) > floor);
            assert!(made(1_750_000_000_122, rand) < floor);
        }
        assert_eq!(floor, made(1_750_000_000_123, [0; 10]));
        // Before the epoch: the least of all.
        let before = Utc.timestamp_millis_opt(-5).unwrap();
        assert_eq!(uuid_v7_floor(before), made(0, [0; 10]));
    }
}
