//! SQLite's [`Maintenance`](queue_core::engine::Maintenance) statements: expired leases, retention
//! and the maintenance tasks' leases.

use std::time::Duration;

use async_trait::async_trait;
use queue_core::engine::{
    micros, Expired, JobPrune, JobRescue, KeyRatePrune, Maintenance, MaintenanceRound,
};
use queue_core::JobId;
use uuid::Uuid;

use super::rows::{json_array, now_micros, rfc3339, to_u32};
use super::SqliteDriver;

#[async_trait]
impl Maintenance for SqliteDriver {
    async fn job_expired(&self, limit: usize) -> Result<Vec<Expired>, sqlx::Error> {
        let rows: Vec<(Uuid, Option<Uuid>, String, i64, i64)> =
            sqlx::query_as(self.sql.job_expired.clone())
                .bind(now_micros())
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .fetch_all(&self.reader)
                .await?;
        let mut expired = Vec::with_capacity(rows.len());
        for (id, token, queue, attempts, max_attempts) in rows {
            if let Some(token) = token {
                expired.push(Expired {
                    id: JobId(id),
                    token,
                    queue,
                    attempts: to_u32(attempts, "attempts")?,
                    max_attempts: to_u32(max_attempts, "max_attempts")?,
                });
            }
        }
        Ok(expired)
    }

    async fn job_rescue(&self, p: JobRescue<'_>) -> Result<u64, sqlx::Error> {
        let now = now_micros();
        let at = rfc3339(now);
        self.pairs(
            &self.sql.job_rescue,
            &[now, i64::from(p.dead)],
            &[p.error, &at],
            &[i64::from(p.errors_kept)],
            p.jobs.iter().map(|(id, token)| (id.0, *token)),
        )
        .await
    }

    async fn job_prune(&self, p: JobPrune<'_>) -> Result<u64, sqlx::Error> {
        let states: Vec<&str> = p.states.iter().map(|s| s.as_str()).collect();
        let done = sqlx::query(self.sql.job_prune.clone())
            .bind(now_micros().saturating_sub(micros(p.older_than)))
            .bind(p.queue)
            .bind(json_array(&states))
            .bind(i64::try_from(p.limit).unwrap_or(i64::MAX))
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn maintenance_claim(
        &self,
        round: MaintenanceRound<'_>,
        lease: Duration,
    ) -> Result<bool, sqlx::Error> {
        let MaintenanceRound { task, token } = round;
        let now = now_micros();
        let done = sqlx::query(self.sql.maintenance_claim.clone())
            .bind(task)
            .bind(token)
            .bind(now.saturating_add(micros(lease)))
            .bind(now)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn maintenance_release(
        &self,
        round: MaintenanceRound<'_>,
        next_in: Duration,
    ) -> Result<(), sqlx::Error> {
        let MaintenanceRound { task, token } = round;
        sqlx::query(self.sql.maintenance_release.clone())
            .bind(task)
            .bind(token)
            .bind(now_micros().saturating_add(micros(next_in)))
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn queue_key_rate_prune(&self, p: KeyRatePrune<'_>) -> Result<u64, sqlx::Error> {
        let KeyRatePrune {
            queue,
            before,
            limit,
        } = p;
        let done = sqlx::query(self.sql.queue_key_rate_prune.clone())
            .bind(queue)
            .bind(before)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }
}
