//! PostgreSQL's [`Running`](queue_core::engine::Running) statements: completion, failure, snoozes,
//! metadata, lease extension.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{
    micros, JobClaim, JobComplete, JobCompleteMany, JobFailDead, JobFailRetry, JobMetaSet,
    JobSnooze, Running, StoredMeta, Target,
};
use queue_core::{JobId, JobState, Lease, Leased};
use sqlx::postgres::PgConnection;
use sqlx::Row;
use uuid::Uuid;

use crate::pinned::on_pool;

use super::rows::{count, leased, limit, parse_state, signed};
use super::PgDriver;

#[async_trait]
impl Running for PgDriver {
    async fn job_complete(
        &self,
        target: Target<'_, PgConnection>,
        p: JobComplete<'_>,
    ) -> Result<u64, sqlx::Error> {
        let moves = self.moves().await;
        match target {
            Target::Pool if self.pinned => {
                let mut tx = self.pool.begin().await?;
                let done = self.complete_on(&mut tx, p, moves).await?;
                tx.commit().await?;
                Ok(done)
            }
            Target::Pool => {
                let mut conn = self.pool.acquire().await?;
                self.complete_on(&mut conn, p, moves).await
            }
            Target::Tx(conn) => self.complete_on(conn, p, moves).await,
        }
    }

    async fn job_complete_many(&self, c: JobCompleteMany<'_>) -> Result<u64, sqlx::Error> {
        let JobCompleteMany { leases, completion } = c;
        let ids: Vec<Uuid> = leases.iter().map(|l| l.job_id.0).collect();
        let tokens: Vec<Uuid> = leases.iter().map(|l| l.token).collect();
        let sql = if self.moves().await {
            &self.sql.job_complete_many_move
        } else {
            &self.sql.job_complete_many
        };
        let done = on_pool!(self, |e| sqlx::query(sql.clone())
            .persistent(self.named())
            .bind(&ids)
            .bind(&tokens)
            .bind(!completion.deletes())
            .fetch_one(e))?;
        Ok(count(done.try_get("completed")?))
    }

    async fn job_complete_and_claim(
        &self,
        c: JobCompleteMany<'_>,
        p: JobClaim<'_>,
    ) -> Result<Option<(u64, Vec<Leased>)>, sqlx::Error> {
        let JobCompleteMany { leases, completion } = c;
        let ids: Vec<Uuid> = leases.iter().map(|l| l.job_id.0).collect();
        let tokens: Vec<Uuid> = leases.iter().map(|l| l.token).collect();
        let sql = match (p.after, self.moves().await) {
            (None, false) => self.sql.job_complete_and_claim.clone(),
            (Some(_), false) => self.sql.job_complete_and_claim_after.clone(),
            (None, true) => self.sql.job_complete_and_claim_move.clone(),
            (Some(_), true) => self.sql.job_complete_and_claim_after_move.clone(),
        };
        let rows = on_pool!(self, |e| {
            let q = sqlx::query(sql.clone())
                .persistent(self.named())
                .bind(p.queue)
                .bind(limit(p.limit))
                .bind(micros(p.lease))
                .bind(p.worker)
                .bind(&ids)
                .bind(&tokens)
                .bind(!completion.deletes());
            let q = match p.after {
                None => q,
                Some(a) => q.bind(a.priority).bind(a.run_at).bind(a.id.0),
            };
            q.fetch_all(e)
        })?;
        let completed = match rows.first() {
            Some(row) => count(row.try_get("completed")?),
            None => 0,
        };
        let mut claimed = Vec::with_capacity(rows.len());
        for row in &rows {
            if row.try_get::<Option<Uuid>, _>("id")?.is_some() {
                claimed.push(row);
            }
        }
        Ok(Some((completed, leased(claimed)?)))
    }

    async fn job_fail_retry(&self, p: JobFailRetry<'_>) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_fail_retry.clone())
            .persistent(self.named())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(micros(p.delay))
            .bind(p.error)
            .bind(signed(p.errors_kept))
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_fail_dead(&self, p: JobFailDead<'_>) -> Result<u64, sqlx::Error> {
        if self.moves().await {
            let n: i64 = on_pool!(self, |e| sqlx::query_scalar(
                self.sql.job_fail_dead_move.clone()
            )
            .persistent(self.named())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(p.error)
            .bind(signed(p.errors_kept))
            .fetch_one(e))?;
            return Ok(count(n));
        }
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_fail_dead.clone())
            .persistent(self.named())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(p.error)
            .bind(signed(p.errors_kept))
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_snooze(&self, p: JobSnooze<'_>) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_snooze.clone())
            .persistent(self.named())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(micros(p.delay))
            .bind(signed(p.max_snoozes))
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_meta_get(&self, lease: &Lease) -> Result<Option<StoredMeta>, sqlx::Error> {
        let row: Option<(Option<String>, i64)> =
            on_pool!(self, |e| sqlx::query_as(self.sql.job_meta_get.clone())
                .persistent(self.named())
                .bind(lease.job_id.0)
                .bind(lease.token)
                .fetch_optional(e))?;
        Ok(row.map(|(meta, version)| StoredMeta { meta, version }))
    }

    async fn job_meta_set(&self, p: JobMetaSet<'_>) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_meta_set.clone())
            .persistent(self.named())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(p.version)
            .bind(p.meta)
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_release(&self, lease: &Lease) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_release.clone())
            .persistent(self.named())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_extend(
        &self,
        lease: &Lease,
        by: Duration,
    ) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
        if self.profile.volatile_in_update {
            return on_pool!(self, |e| sqlx::query_scalar(self.sql.job_extend.clone())
                .persistent(self.named())
                .bind(lease.job_id.0)
                .bind(lease.token)
                .bind(micros(by))
                .fetch_optional(e));
        }
        // Without clock_timestamp() in an UPDATE: lock the row first, then compute the expiry
        // in a statement that starts after the lock was granted.
        let mut tx = self.pool.begin().await?;
        let locked: Option<Uuid> = sqlx::query_scalar(self.sql.job_extend_lock.clone())
            .persistent(self.named())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .fetch_optional(&mut *tx)
            .await?;
        if locked.is_none() {
            tx.rollback().await?;
            return Ok(None);
        }
        let expires = sqlx::query_scalar(self.sql.job_extend_locked.clone())
            .persistent(self.named())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .bind(micros(by))
            .fetch_optional(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(expires)
    }

    async fn job_state(
        &self,
        target: Target<'_, PgConnection>,
        id: JobId,
    ) -> Result<Option<JobState>, sqlx::Error> {
        let q = sqlx::query_scalar::<_, String>(self.sql.job_state.clone())
            .persistent(self.named())
            .bind(id.0);
        let state = match target {
            Target::Pool => on_pool!(self, |e| q.fetch_optional(e))?,
            Target::Tx(conn) => q.fetch_optional(conn).await?,
        };
        state.map(|s| parse_state(&s)).transpose()
    }
}
