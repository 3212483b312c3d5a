//! MySQL/MariaDB's [`Maintenance`](queue_core::engine::Maintenance) statements: expired leases,
//! retention and the maintenance tasks' leases.

use std::time::Duration;

use async_trait::async_trait;
use queue_core::engine::{
    micros, Expired, JobPrune, JobRescue, KeyRatePrune, Maintenance, MaintenanceRound,
};
use queue_core::JobId;
use sqlx::Row;
use uuid::Uuid;

use super::rows::text;
use super::{MySqlDriver, PAIR_CHUNK};

#[async_trait]
impl Maintenance for MySqlDriver {
    async fn job_expired(&self, limit: usize) -> Result<Vec<Expired>, sqlx::Error> {
        let rows = sqlx::query(self.sql.job_expired.clone())
            .bind(limit as u64)
            .fetch_all(&self.pool)
            .await?;
        let mut expired = Vec::with_capacity(rows.len());
        for r in &rows {
            if let Some(token) = r.try_get::<Option<Uuid>, _>("lease_token")? {
                expired.push(Expired {
                    id: JobId(r.try_get("id")?),
                    token,
                    queue: text(r, "queue")?,
                    attempts: r.try_get("attempts")?,
                    max_attempts: r.try_get("max_attempts")?,
                });
            }
        }
        Ok(expired)
    }

    async fn job_rescue(&self, p: JobRescue<'_>) -> Result<u64, sqlx::Error> {
        let mut total = 0;
        for chunk in p.jobs.chunks(PAIR_CHUNK) {
            let mut q = sqlx::query(self.sql.job_rescue(chunk.len()))
                .bind(p.dead)
                .bind(p.dead)
                .bind(p.error)
                .bind(p.errors_kept)
                .bind(p.error)
                .bind(p.dead)
                .bind(p.dead);
            for (id, _) in chunk {
                q = q.bind(id.0);
            }
            for (id, token) in chunk {
                q = q.bind(id.0).bind(*token);
            }
            total += q.execute(&self.pool).await?.rows_affected();
        }
        Ok(total)
    }

    async fn job_prune(&self, p: JobPrune<'_>) -> Result<u64, sqlx::Error> {
        let mut q = sqlx::query(self.sql.job_prune(p.states.len()));
        for s in p.states {
            q = q.bind(s.as_str());
        }
        let done = q
            .bind(micros(p.older_than))
            .bind(p.queue)
            .bind(p.queue)
            .bind(p.limit as u64)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn maintenance_claim(
        &self,
        round: MaintenanceRound<'_>,
        lease: Duration,
    ) -> Result<bool, sqlx::Error> {
        let MaintenanceRound { task, token } = round;
        let done = sqlx::query(self.sql.maintenance_claim.clone())
            .bind(token)
            .bind(micros(lease))
            .bind(task)
            .bind(token)
            .execute(&self.pool)
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
            .bind(micros(next_in))
            .bind(task)
            .bind(token)
            .execute(&self.pool)
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
            .bind(limit as u64)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }
}
