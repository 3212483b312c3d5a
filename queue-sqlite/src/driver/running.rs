//! SQLite's [`Running`](queue_core::engine::Running) statements: completion, failure, snoozes,
//! metadata, lease extension.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{
    micros, JobComplete, JobCompleteMany, JobFailDead, JobFailRetry, JobMetaSet, JobSnooze,
    Running, StoredMeta, Target,
};
use queue_core::{JobId, JobState, Lease};
use sqlx::sqlite::SqliteConnection;
use uuid::Uuid;

use super::rows::{now_micros, parse_state, rfc3339, rows_of, to_time};
use super::{SqliteDriver, PAIRS};

#[async_trait]
impl Running for SqliteDriver {
    async fn job_complete(
        &self,
        target: Target<'_, SqliteConnection>,
        p: JobComplete<'_>,
    ) -> Result<u64, sqlx::Error> {
        let update = || {
            sqlx::query(self.sql.job_complete.clone())
                .bind(p.lease.job_id.0)
                .bind(p.lease.token)
                .bind(now_micros())
                .bind(p.output)
        };
        if !p.completion.deletes() {
            let done = match target {
                Target::Pool => update().execute(&self.writer).await?,
                Target::Tx(conn) => update().execute(conn).await?,
            };
            return Ok(done.rows_affected());
        }
        let delete = sqlx::query(self.sql.job_complete_delete.clone())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token);
        match target {
            Target::Pool => {
                let mut tx = self.begin().await?;
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
        let pairs = leases.iter().map(|l| (l.job_id.0, l.token));
        if !completion.deletes() {
            return self
                .pairs(
                    &self.sql.job_complete_many,
                    &[now_micros()],
                    &[],
                    &[],
                    pairs,
                )
                .await;
        }
        // Deletes what nothing needs, then completes the rest, in one write transaction.
        let pairs: Vec<(Uuid, Uuid)> = pairs.collect();
        let now = now_micros();
        let mut tx = self.begin().await?;
        let mut done = 0;
        for chunk in pairs.chunks(PAIRS) {
            let mut delete = sqlx::query(rows_of(&self.sql.job_complete_many_delete, chunk.len()));
            let mut update =
                sqlx::query(rows_of(&self.sql.job_complete_many, chunk.len())).bind(now);
            for (id, token) in chunk {
                delete = delete.bind(*id).bind(*token);
                update = update.bind(*id).bind(*token);
            }
            done += delete.execute(&mut *tx).await?.rows_affected();
            done += update.execute(&mut *tx).await?.rows_affected();
        }
        tx.commit().await?;
        Ok(done)
    }

    async fn job_fail_retry(&self, p: JobFailRetry<'_>) -> Result<u64, sqlx::Error> {
        let now = now_micros();
        let done = sqlx::query(self.sql.job_fail_retry.clone())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(now)
            .bind(now.saturating_add(micros(p.delay)))
            .bind(p.error)
            .bind(rfc3339(now))
            .bind(i64::from(p.errors_kept))
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_fail_dead(&self, p: JobFailDead<'_>) -> Result<u64, sqlx::Error> {
        let now = now_micros();
        let done = sqlx::query(self.sql.job_fail_dead.clone())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(now)
            .bind(p.error)
            .bind(rfc3339(now))
            .bind(i64::from(p.errors_kept))
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_snooze(&self, p: JobSnooze<'_>) -> Result<u64, sqlx::Error> {
        let now = now_micros();
        let done = sqlx::query(self.sql.job_snooze.clone())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(now)
            .bind(now.saturating_add(micros(p.delay)))
            .bind(i64::from(p.max_snoozes))
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_meta_get(&self, lease: &Lease) -> Result<Option<StoredMeta>, sqlx::Error> {
        let row: Option<(Option<String>, i64)> = sqlx::query_as(self.sql.job_meta_get.clone())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .fetch_optional(&self.writer)
            .await?;
        Ok(row.map(|(meta, version)| StoredMeta { meta, version }))
    }

    async fn job_meta_set(&self, p: JobMetaSet<'_>) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.job_meta_set.clone())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(p.version)
            .bind(p.meta)
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_release(&self, lease: &Lease) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.job_release.clone())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_extend(
        &self,
        lease: &Lease,
        by: Duration,
    ) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
        let expires: Option<i64> = sqlx::query_scalar(self.sql.job_extend.clone())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .bind(now_micros())
            .bind(micros(by))
            .fetch_optional(&self.writer)
            .await?;
        expires.map(to_time).transpose()
    }

    async fn job_state(
        &self,
        target: Target<'_, SqliteConnection>,
        id: JobId,
    ) -> Result<Option<JobState>, sqlx::Error> {
        let q = sqlx::query_scalar::<_, String>(self.sql.job_state.clone()).bind(id.0);
        let state = match target {
            Target::Pool => q.fetch_optional(&self.reader).await?,
            Target::Tx(conn) => q.fetch_optional(conn).await?,
        };
        state.map(|s| parse_state(&s)).transpose()
    }
}
