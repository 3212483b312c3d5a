//! The in-memory store's [`Maintenance`](queue_core::engine::Maintenance) implementation: expired
//! leases, retention and the maintenance tasks' leases.

use std::time::Duration;

use async_trait::async_trait;
use queue_core::engine::{
    Expired, JobPrune, JobRescue, KeyRatePrune, Maintenance, MaintenanceRound,
};
use queue_core::{JobId, JobState};

use crate::faults::Statement;
use crate::tables::MaintenanceRow;

use super::{after, before, end_lease, record_failure, touch, MemoryDriver, Result};

#[async_trait]
impl Maintenance for MemoryDriver {
    /// Up to `limit` running jobs whose lease expired before `now`, the longest expired first.
    async fn job_expired(&self, limit: usize) -> Result<Vec<Expired>> {
        let _call = self.enter(Statement::JobExpired).await?;
        self.read(|t, now| {
            Ok(t.schema()?
                .jobs
                .expired(now)
                .filter_map(|row| {
                    Some(Expired {
                        id: row.id,
                        token: row.lease_token?,
                        queue: row.queue.clone(),
                        attempts: row.attempts,
                        max_attempts: row.max_attempts,
                    })
                })
                .take(limit)
                .collect())
        })
        .await
    }

    /// Each listed job still running under the listed token with a lease that expired before
    /// `now`: dead (finished `now`, the worker kept) when `p.dead`, else pending and due `now`
    /// (the worker cleared); the error recorded as a failure of the attempt whose lease
    /// expired, the lease ended. Rows changed.
    async fn job_rescue(&self, p: JobRescue<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobRescue).await?;
        self.pool(|w, now| {
            let mut done = 0;
            for (id, token) in p.jobs {
                let Some(mut row) = w.schema()?.jobs.get(*id).cloned().filter(|row| {
                    row.state == JobState::Running
                        && row.lease_token == Some(*token)
                        && row.lease_expires_at.is_some_and(|at| at < now)
                }) else {
                    continue;
                };
                record_failure(&mut row, p.error, now, p.errors_kept);
                if p.dead {
                    row.state = JobState::Dead;
                    row.finished_at = Some(now);
                } else {
                    row.state = JobState::Pending;
                    row.run_at = now;
                    row.finished_at = None;
                    row.worker = None;
                }
                end_lease(&mut row);
                touch(&mut row, now);
                w.update_job(row)?;
                done += 1;
            }
            Ok(done)
        })
        .await
    }

    /// Deletes up to `p.limit` finished jobs outside workflows in `p.states` (of `p.queue` when
    /// given) that finished before `now` less `p.older_than`, the earliest finished first; rows
    /// deleted.
    async fn job_prune(&self, p: JobPrune<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobPrune).await?;
        self.pool(|w, now| {
            let cutoff = before(now, p.older_than);
            let doomed: Vec<JobId> = w
                .schema()?
                .jobs
                .finished_before(cutoff)
                .filter(|row| {
                    row.state.is_finished()
                        && row.workflow.is_none()
                        && p.states.contains(&row.state)
                        && p.queue.is_none_or(|q| row.queue == q)
                })
                .take(p.limit)
                .map(|row| row.id)
                .collect();
            for id in &doomed {
                w.delete_job(*id)?;
            }
            Ok(doomed.len() as u64)
        })
        .await
    }

    /// Takes the lease row of `task` when its next run is due (`next_at <= now`), or renews it
    /// when `token` holds it already: it is held under `token` until `now` plus `lease`.
    /// Whether it was taken.
    async fn maintenance_claim(
        &self,
        round: MaintenanceRound<'_>,
        lease: Duration,
    ) -> Result<bool> {
        let MaintenanceRound { task, token } = round;
        let _call = self.enter(Statement::MaintenanceClaim).await?;
        self.pool(|w, now| {
            let due = w
                .schema()?
                .maintenance
                .get(task)
                .is_some_and(|row| row.next_at <= now || row.token == Some(token));
            if !due {
                return Ok(false);
            }
            let next_at = after(now, lease, "a maintenance lease")?;
            w.put_maintenance(
                task,
                MaintenanceRow {
                    next_at,
                    token: Some(token),
                },
            )?;
            Ok(true)
        })
        .await
    }

    /// The round of `task` under `token` is over: the next is due `next_in` after `now`. A
    /// round whose lease was taken over changes nothing.
    async fn maintenance_release(
        &self,
        round: MaintenanceRound<'_>,
        next_in: Duration,
    ) -> Result<()> {
        let MaintenanceRound { task, token } = round;
        let _call = self.enter(Statement::MaintenanceRelease).await?;
        self.pool(|w, now| {
            let held = w
                .schema()?
                .maintenance
                .get(task)
                .is_some_and(|row| row.token == Some(token));
            if held {
                let next_at = after(now, next_in, "a maintenance task's next run")?;
                w.put_maintenance(
                    task,
                    MaintenanceRow {
                        next_at,
                        token: None,
                    },
                )?;
            }
            Ok(())
        })
        .await
    }

    /// Deletes up to `limit` of `queue`'s key rate counts whose window is before `before`;
    /// how many.
    async fn queue_key_rate_prune(&self, p: KeyRatePrune<'_>) -> Result<u64> {
        let KeyRatePrune {
            queue,
            before,
            limit,
        } = p;
        let _call = self.enter(Statement::QueueKeyRatePrune).await?;
        self.pool(|w, _| {
            let ended: Vec<String> = w
                .schema()?
                .key_rates
                .range((queue.to_owned(), String::new())..)
                .take_while(|((q, _), _)| q == queue)
                .filter(|(_, c)| c.window < before)
                .take(limit)
                .map(|((_, key), _)| key.clone())
                .collect();
            for key in &ended {
                w.put_key_rate(queue, key, None)?;
            }
            Ok(ended.len() as u64)
        })
        .await
    }
}
