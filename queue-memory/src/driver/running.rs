//! The in-memory store's [`Running`](queue_core::engine::Running) implementation: completion,
//! failure, snoozes, metadata, lease extension.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{
    JobClaim, JobComplete, JobCompleteMany, JobFailDead, JobFailRetry, JobMetaSet, JobSnooze,
    Running, StoredMeta, Target,
};
use queue_core::{JobId, JobState, Lease, Leased};

use crate::error::MemoryError;
use crate::faults::Statement;
use crate::store::MemoryTx;

use super::{
    after, claim, complete_many, complete_row, end_lease, fenced, json, record_failure, touch,
    MemoryDriver, Result,
};

#[async_trait]
impl Running for MemoryDriver {
    /// Completes the job if `p.lease` is current: completed and finished `now`, the handler's
    /// output stored (or cleared), the lease ended, the worker kept; rows changed.
    async fn job_complete(&self, target: Target<'_, MemoryTx>, p: JobComplete<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobComplete).await?;
        self.on(target, |w, now| {
            let Some(mut row) = fenced(w, p.lease)? else {
                return Ok(0);
            };
            // The completion stores the output it is given, or clears it.
            if p.output.is_none() {
                row.output = None;
            }
            complete_row(w, row, p.output, p.completion, now)?;
            Ok(1)
        })
        .await
    }

    /// Completes every listed job whose lease is current (as `job_complete`, its output left
    /// as it is); rows changed.
    async fn job_complete_many(&self, c: JobCompleteMany<'_>) -> Result<u64> {
        let JobCompleteMany { leases, completion } = c;
        let _call = self.enter(Statement::JobCompleteMany).await?;
        self.pool(|w, now| complete_many(w, leases, completion, now))
            .await
    }

    /// `job_complete_many` of `leases`, then `job_claim` of `p`, as one statement: both or
    /// neither.
    async fn job_complete_and_claim(
        &self,
        c: JobCompleteMany<'_>,
        p: JobClaim<'_>,
    ) -> Result<Option<(u64, Vec<Leased>)>> {
        let JobCompleteMany { leases, completion } = c;
        let _call = self.enter(Statement::JobCompleteAndClaim).await?;
        self.pool(|w, now| {
            let done = complete_many(w, leases, completion, now)?;
            let claimed = claim(w, p, now)?;
            Ok(Some((done, claimed)))
        })
        .await
    }

    /// Back to pending, due `now` plus `p.delay`, if `p.lease` is current: the failure
    /// recorded in `last_error` and the history, the worker cleared (no one holds the job
    /// now), the lease ended; rows changed.
    async fn job_fail_retry(&self, p: JobFailRetry<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobFailRetry).await?;
        self.pool(|w, now| {
            let Some(mut row) = fenced(w, p.lease)? else {
                return Ok(0);
            };
            record_failure(&mut row, p.error, now, p.errors_kept);
            row.state = JobState::Pending;
            row.run_at = after(now, p.delay, "a job's run time")?;
            row.worker = None;
            end_lease(&mut row);
            touch(&mut row, now);
            w.update_job(row)?;
            Ok(1)
        })
        .await
    }

    /// Dead and finished `now`, if `p.lease` is current: the failure recorded, the lease
    /// ended, the worker kept; rows changed.
    async fn job_fail_dead(&self, p: JobFailDead<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobFailDead).await?;
        self.pool(|w, now| {
            let Some(mut row) = fenced(w, p.lease)? else {
                return Ok(0);
            };
            record_failure(&mut row, p.error, now, p.errors_kept);
            row.state = JobState::Dead;
            row.finished_at = Some(now);
            end_lease(&mut row);
            touch(&mut row, now);
            w.update_job(row)?;
            Ok(1)
        })
        .await
    }

    /// Back to pending, due `now` plus `p.delay`, if `p.lease` is current and the job has
    /// snoozed fewer than `p.max_snoozes` times: the attempt given back, the snooze counted,
    /// the worker cleared, the lease ended; rows changed.
    async fn job_snooze(&self, p: JobSnooze<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobSnooze).await?;
        self.pool(|w, now| {
            let Some(mut row) = fenced(w, p.lease)?.filter(|r| r.snoozes < p.max_snoozes) else {
                return Ok(0);
            };
            row.state = JobState::Pending;
            row.run_at = after(now, p.delay, "a job's run time")?;
            row.attempts = row.attempts.saturating_sub(1);
            row.snoozes = row.snoozes.saturating_add(1);
            row.worker = None;
            end_lease(&mut row);
            touch(&mut row, now);
            w.update_job(row)?;
            Ok(1)
        })
        .await
    }

    /// The metadata and version of the job if `lease` is current.
    async fn job_meta_get(&self, lease: &Lease) -> Result<Option<StoredMeta>> {
        let _call = self.enter(Statement::JobMetaGet).await?;
        self.read(|t, _| {
            Ok(t.schema()?
                .jobs
                .get(lease.job_id)
                .filter(|row| row.leased_by(lease))
                .map(|row| StoredMeta {
                    meta: row.meta.as_ref().map(|m| m.get().to_owned()),
                    version: row.version,
                }))
        })
        .await
    }

    /// Writes the merged metadata if `p.lease` is current and the row still has `p.version`;
    /// rows changed.
    async fn job_meta_set(&self, p: JobMetaSet<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobMetaSet).await?;
        self.pool(|w, now| {
            let Some(mut row) = fenced(w, p.lease)?.filter(|r| r.version == p.version) else {
                return Ok(0);
            };
            row.meta = Some(json(p.meta, "meta")?);
            touch(&mut row, now);
            w.update_job(row)?;
            Ok(1)
        })
        .await
    }

    /// Back to pending, due `now`, if `lease` is current: the attempt given back, the worker
    /// cleared, the lease ended; rows changed.
    async fn job_release(&self, lease: &Lease) -> Result<u64> {
        let _call = self.enter(Statement::JobRelease).await?;
        self.pool(|w, now| {
            let Some(mut row) = fenced(w, lease)? else {
                return Ok(0);
            };
            row.state = JobState::Pending;
            row.run_at = now;
            row.attempts = row.attempts.saturating_sub(1);
            row.worker = None;
            end_lease(&mut row);
            touch(&mut row, now);
            w.update_job(row)?;
            Ok(1)
        })
        .await
    }

    /// The lease ends `by` after `now`, if it is current; the new expiry.
    async fn job_extend(&self, lease: &Lease, by: Duration) -> Result<Option<DateTime<Utc>>> {
        let _call = self.enter(Statement::JobExtend).await?;
        self.pool(|w, now| {
            let Some(mut row) = fenced(w, lease)? else {
                return Ok(None);
            };
            let expires =
                Lease::expiry(now, by).ok_or(MemoryError::TimeOutOfRange("the lease's expiry"))?;
            row.lease_expires_at = Some(expires);
            touch(&mut row, now);
            w.update_job(row)?;
            Ok(Some(expires))
        })
        .await
    }

    /// The job's state (why a transition changed nothing).
    async fn job_state(&self, target: Target<'_, MemoryTx>, id: JobId) -> Result<Option<JobState>> {
        let _call = self.enter(Statement::JobState).await?;
        self.read_on(target, |t, _| {
            Ok(t.schema()?.jobs.get(id).map(|row| row.state))
        })
        .await
    }
}
