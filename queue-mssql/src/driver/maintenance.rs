//! SQL Server's [`Maintenance`](queue_core::engine::Maintenance) statements: expired leases,
//! retention and the maintenance tasks' leases.

use std::time::Duration;

use async_trait::async_trait;
use queue_core::engine::{
    Expired, JobPrune, JobRescue, KeyRatePrune, Maintenance, MaintenanceRound,
};
use queue_core::JobId;
use uuid::Uuid;

use crate::bind::params;
use crate::error::MsSqlError;
use crate::sql::{dateadd_parts, MAX_ROWS_PER_STATEMENT, PAIR_ROWS};

use super::rows::{key_rate_prune_values, limit, prune_values, signed, text, unsigned, uuid_of};
use super::MsSqlDriver;

#[async_trait]
impl Maintenance for MsSqlDriver {
    async fn job_expired(&self, n: usize) -> Result<Vec<Expired>, MsSqlError> {
        let rows = self.fetch(&self.sql.job_expired, params![limit(n)]).await?;
        let mut expired = Vec::with_capacity(rows.len());
        for r in &rows {
            if let Some(token) = r.try_get::<Uuid, _>("lease_token")? {
                expired.push(Expired {
                    id: JobId(uuid_of(r, "id")?),
                    token,
                    queue: text(r, "queue")?,
                    attempts: unsigned(r, "attempts")?,
                    max_attempts: unsigned(r, "max_attempts")?,
                });
            }
        }
        Ok(expired)
    }

    async fn job_rescue(&self, p: JobRescue<'_>) -> Result<u64, MsSqlError> {
        let mut conn = self.conn().await?;
        let mut total = 0;
        for chunk in p.jobs.chunks(PAIR_ROWS) {
            let mut params = params![p.dead, p.error, signed(p.errors_kept)];
            for (job, token) in chunk {
                params.push(*job);
                params.push(*token);
            }
            let sql = self.sql.job_rescue_for(chunk.len());
            total += conn.execute(&sql, params).await?;
        }
        Ok(total)
    }

    /// Deletes in statements of at most 1,000 rows (`MAX_ROWS_PER_STATEMENT`, below lock
    /// escalation) until `p.limit` rows are gone or a statement finds fewer.
    async fn job_prune(&self, p: JobPrune<'_>) -> Result<u64, MsSqlError> {
        let mut conn = self.conn().await?;
        let sql = self.sql.job_prune_for(p.states.len());
        let mut total = 0u64;
        let want = u64::try_from(p.limit).unwrap_or(u64::MAX);
        while total < want {
            let step = usize::try_from(want - total)
                .unwrap_or(usize::MAX)
                .min(MAX_ROWS_PER_STATEMENT);
            let n = conn.execute(&sql, prune_values(&p, step)).await?;
            total += n;
            if n < step as u64 {
                break;
            }
        }
        Ok(total)
    }

    async fn maintenance_claim(
        &self,
        round: MaintenanceRound<'_>,
        lease: Duration,
    ) -> Result<bool, MsSqlError> {
        let MaintenanceRound { task, token } = round;
        let (secs, us) = dateadd_parts(lease);
        let changed = self
            .conn()
            .await?
            .execute(&self.sql.maintenance_claim, params![task, token, secs, us])
            .await?;
        Ok(changed == 1)
    }

    async fn maintenance_release(
        &self,
        round: MaintenanceRound<'_>,
        next_in: Duration,
    ) -> Result<(), MsSqlError> {
        let MaintenanceRound { task, token } = round;
        let (secs, us) = dateadd_parts(next_in);
        self.conn()
            .await?
            .execute(
                &self.sql.maintenance_release,
                params![task, token, secs, us],
            )
            .await?;
        Ok(())
    }

    /// In statements of at most 1,000 rows (`MAX_ROWS_PER_STATEMENT`), as `job_prune`.
    async fn queue_key_rate_prune(&self, p: KeyRatePrune<'_>) -> Result<u64, MsSqlError> {
        let KeyRatePrune {
            queue,
            before,
            limit: n,
        } = p;
        let mut conn = self.conn().await?;
        let mut total = 0u64;
        let want = u64::try_from(n).unwrap_or(u64::MAX);
        while total < want {
            let step = usize::try_from(want - total)
                .unwrap_or(usize::MAX)
                .min(MAX_ROWS_PER_STATEMENT);
            let done = conn
                .execute(
                    &self.sql.queue_key_rate_prune,
                    key_rate_prune_values(queue, before, step),
                )
                .await?;
            total += done;
            if done < step as u64 {
                break;
            }
        }
        Ok(total)
    }
}
