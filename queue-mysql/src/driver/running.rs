//! MySQL/MariaDB's [`Running`](queue_core::engine::Running) statements: completion, failure,
//! snoozes, metadata, lease extension.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{
    micros, JobClaim, JobComplete, JobCompleteMany, JobFailDead, JobFailRetry, JobMetaSet,
    JobSnooze, Running, StoredMeta, Target,
};
use queue_core::{JobId, JobState, Lease, Leased};
use sqlx::mysql::MySqlConnection;
use sqlx::Row;

use super::rows::{lease_expiry, opt_text, parse_state, text};
use super::MySqlDriver;

#[async_trait]
impl Running for MySqlDriver {
    /// Completes and claims in one transaction: one commit (one log flush) instead of two.
    async fn job_complete_and_claim(
        &self,
        c: JobCompleteMany<'_>,
        p: JobClaim<'_>,
    ) -> Result<Option<(u64, Vec<Leased>)>, sqlx::Error> {
        let JobCompleteMany { leases, completion } = c;
        let mut tx = self.pool.begin().await?;
        let completed = self.complete_on(&mut tx, leases, completion).await?;
        let claimed = self.claim_on(&mut tx, p).await?;
        tx.commit().await?;
        Ok(Some((completed, claimed)))
    }

    async fn job_complete(
        &self,
        target: Target<'_, MySqlConnection>,
        p: JobComplete<'_>,
    ) -> Result<u64, sqlx::Error> {
        let update = || {
            sqlx::query(self.sql.job_complete.clone())
                .bind(p.output)
                .bind(p.lease.job_id.0)
                .bind(p.lease.token)
        };
        if !p.completion.deletes() {
            let done = match target {
                Target::Pool => update().execute(&self.pool).await?,
                Target::Tx(conn) => update().execute(conn).await?,
            };
            return Ok(done.rows_affected());
        }
        let delete = sqlx::query(self.sql.job_complete_delete.clone())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token);
        match target {
            Target::Pool => {
                let mut tx = self.pool.begin().await?;
                let deleted = delete.execute(&mut *tx).await?.rows_affected();
                let done = update().execute(&mut *tx).await?.rows_affected();
                tx.commit().await?;
                Ok(deleted + done)
            }
            Target::Tx(conn) => {
                let deleted = delete.execute(&mut *conn).await?.rows_affected();
                Ok(deleted + update().execute(conn).await?.rows_affected())
            }
        }
    }

    async fn job_complete_many(&self, c: JobCompleteMany<'_>) -> Result<u64, sqlx::Error> {
        let JobCompleteMany { leases, completion } = c;
        if !completion.deletes() {
            let mut conn = self.pool.acquire().await?;
            return self.complete_on(&mut conn, leases, completion).await;
        }
        let mut tx = self.pool.begin().await?;
        let done = self.complete_on(&mut tx, leases, completion).await?;
        tx.commit().await?;
        Ok(done)
    }

    async fn job_fail_retry(&self, p: JobFailRetry<'_>) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.job_fail_retry.clone())
            .bind(micros(p.delay))
            .bind(p.error)
            .bind(p.errors_kept)
            .bind(p.error);
        self.fenced(q, p.lease).await
    }

    async fn job_fail_dead(&self, p: JobFailDead<'_>) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.job_fail_dead.clone())
            .bind(p.error)
            .bind(p.errors_kept)
            .bind(p.error);
        self.fenced(q, p.lease).await
    }

    async fn job_snooze(&self, p: JobSnooze<'_>) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.job_snooze.clone())
            .bind(micros(p.delay))
            .bind(p.max_snoozes);
        self.fenced(q, p.lease).await
    }

    async fn job_meta_get(&self, lease: &Lease) -> Result<Option<StoredMeta>, sqlx::Error> {
        let row = sqlx::query(self.sql.job_meta_get.clone())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| {
            Ok(StoredMeta {
                meta: opt_text(&r, "meta")?,
                version: r.try_get("version")?,
            })
        })
        .transpose()
    }

    async fn job_meta_set(&self, p: JobMetaSet<'_>) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.job_meta_set.clone())
            .bind(p.meta)
            .bind(p.version);
        self.fenced(q, p.lease).await
    }

    async fn job_release(&self, lease: &Lease) -> Result<u64, sqlx::Error> {
        self.fenced(sqlx::query(self.sql.job_release.clone()), lease)
            .await
    }

    async fn job_extend(
        &self,
        lease: &Lease,
        by: Duration,
    ) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let now: Option<DateTime<Utc>> = sqlx::query_scalar(self.sql.job_extend_lock.clone())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(now) = now else {
            tx.rollback().await?;
            return Ok(None);
        };
        let expires_at = lease_expiry(now, by)?;
        let done = sqlx::query(self.sql.job_extend.clone())
            .bind(expires_at)
            .bind(now)
            .bind(lease.job_id.0)
            .bind(lease.token)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((done.rows_affected() == 1).then_some(expires_at))
    }

    async fn job_state(
        &self,
        target: Target<'_, MySqlConnection>,
        id: JobId,
    ) -> Result<Option<JobState>, sqlx::Error> {
        let row = match target {
            Target::Pool => {
                sqlx::query(self.sql.job_state.clone())
                    .bind(id.0)
                    .fetch_optional(&self.pool)
                    .await?
            }
            Target::Tx(conn) => {
                sqlx::query(self.sql.job_state_locked.clone())
                    .bind(id.0)
                    .fetch_optional(conn)
                    .await?
            }
        };
        row.map(|r| parse_state(&text(&r, "state")?)).transpose()
    }
}
