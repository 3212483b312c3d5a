//! PostgreSQL's [`Maintenance`](queue_core::engine::Maintenance) statements: expired leases,
//! retention and the maintenance tasks' leases.

use std::time::Duration;

use async_trait::async_trait;
use queue_core::engine::{
    micros, Expired, JobPrune, JobRescue, KeyRatePrune, Maintenance, MaintenanceRound,
};
use queue_core::JobId;
use uuid::Uuid;

use crate::pinned::on_pool;

use super::rows::{count, limit, signed, unsigned};
use super::PgDriver;

#[async_trait]
impl Maintenance for PgDriver {
    async fn job_expired(&self, n: usize) -> Result<Vec<Expired>, sqlx::Error> {
        let rows: Vec<(Uuid, Option<Uuid>, String, i32, i32)> =
            on_pool!(self, |e| sqlx::query_as(self.sql.job_expired.clone())
                .persistent(self.named())
                .bind(limit(n))
                .fetch_all(e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, token, queue, attempts, max_attempts)| {
                Some(Expired {
                    id: JobId(id),
                    token: token?,
                    queue,
                    attempts: unsigned(attempts),
                    max_attempts: unsigned(max_attempts),
                })
            })
            .collect())
    }

    async fn job_rescue(&self, p: JobRescue<'_>) -> Result<u64, sqlx::Error> {
        let ids: Vec<Uuid> = p.jobs.iter().map(|(id, _)| id.0).collect();
        let tokens: Vec<Uuid> = p.jobs.iter().map(|(_, t)| *t).collect();
        if self.moves().await {
            let n: i64 = on_pool!(self, |e| sqlx::query_scalar(
                self.sql.job_rescue_move.clone()
            )
            .persistent(self.named())
            .bind(&ids)
            .bind(&tokens)
            .bind(p.dead)
            .bind(p.error)
            .bind(signed(p.errors_kept))
            .fetch_one(e))?;
            return Ok(count(n));
        }
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_rescue.clone())
            .persistent(self.named())
            .bind(&ids)
            .bind(&tokens)
            .bind(p.dead)
            .bind(p.error)
            .bind(signed(p.errors_kept))
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_prune(&self, p: JobPrune<'_>) -> Result<u64, sqlx::Error> {
        // Finished jobs kept apart first: whole partitions for retention, rows otherwise.
        let mut apart = 0;
        if self.moves().await {
            for state in p.states {
                let n: i64 = on_pool!(self, |e| sqlx::query_scalar(
                    self.sql.job_prune_partitions.clone()
                )
                .persistent(self.named())
                .bind(state.as_str())
                .bind(micros(p.older_than))
                .bind(p.queue)
                .bind(limit(p.limit))
                .bind(p.retention)
                .fetch_one(e))?;
                apart += count(n);
            }
        }
        let states: Vec<&str> = p.states.iter().map(|s| s.as_str()).collect();
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_prune.clone())
            .persistent(self.named())
            .bind(&states)
            .bind(micros(p.older_than))
            .bind(p.queue)
            .bind(limit(p.limit))
            .execute(e))?;
        Ok(apart + done.rows_affected())
    }

    async fn maintenance_claim(
        &self,
        round: MaintenanceRound<'_>,
        lease: Duration,
    ) -> Result<bool, sqlx::Error> {
        let MaintenanceRound { task, token } = round;
        let done = on_pool!(self, |e| sqlx::query(self.sql.maintenance_claim.clone())
            .persistent(self.named())
            .bind(task)
            .bind(token)
            .bind(micros(lease))
            .execute(e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn maintenance_release(
        &self,
        round: MaintenanceRound<'_>,
        next_in: Duration,
    ) -> Result<(), sqlx::Error> {
        let MaintenanceRound { task, token } = round;
        on_pool!(self, |e| sqlx::query(self.sql.maintenance_release.clone())
            .persistent(self.named())
            .bind(task)
            .bind(token)
            .bind(micros(next_in))
            .execute(e))?;
        Ok(())
    }

    async fn queue_key_rate_prune(&self, p: KeyRatePrune<'_>) -> Result<u64, sqlx::Error> {
        let KeyRatePrune {
            queue,
            before,
            limit: n,
        } = p;
        let done = on_pool!(self, |e| sqlx::query(self.sql.queue_key_rate_prune.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(before)
            .bind(limit(n))
            .execute(e))?;
        Ok(done.rows_affected())
    }
}
