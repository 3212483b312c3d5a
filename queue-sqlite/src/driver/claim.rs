//! SQLite's [`Claim`](queue_core::engine::Claim) statements: the one-statement claim, the
//! optimistic claim's two steps, and the claims of the controlled paths.

use async_trait::async_trait;
use queue_core::engine::{micros, Claim, JobClaim};
use queue_core::{Lease, Leased};
use sqlx::sqlite::SqliteConnection;
use uuid::Uuid;

use super::rows::{leased_from_row, now_micros};
use super::SqliteDriver;

#[async_trait]
impl Claim for SqliteDriver {
    type Candidate = (Uuid, i64);

    /// One `UPDATE ... RETURNING` statement. It runs in autocommit mode, which for a single
    /// writing statement is the same as wrapping it in `BEGIN IMMEDIATE`: SQLite opens the
    /// statement's transaction with write intent, taking the write lock (and waiting for it
    /// under the busy timeout) before it reads anything, and commits when the statement
    /// finishes. Skipping the explicit `BEGIN`/`COMMIT` saves two calls per pop.
    async fn job_claim(&self, p: JobClaim<'_>) -> Result<Vec<Leased>, sqlx::Error> {
        let rows = self.claim_query(p).fetch_all(&self.writer).await?;
        rows.iter().map(leased_from_row).collect()
    }

    async fn job_claim_in(
        &self,
        conn: &mut SqliteConnection,
        p: JobClaim<'_>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let rows = self.claim_query(p).fetch_all(conn).await?;
        rows.iter().map(leased_from_row).collect()
    }

    async fn job_candidates(&self, p: JobClaim<'_>) -> Result<Vec<(Uuid, i64)>, sqlx::Error> {
        sqlx::query_as(self.sql.job_candidates.clone())
            .bind(p.queue)
            .bind(now_micros())
            .bind(i64::try_from(p.limit).unwrap_or(i64::MAX))
            .fetch_all(&self.reader)
            .await
    }

    async fn job_claim_candidates(
        &self,
        p: JobClaim<'_>,
        candidates: Vec<(Uuid, i64)>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        let mut claimed = Vec::with_capacity(candidates.len());
        for (id, version) in candidates {
            let row = sqlx::query(self.sql.job_claim_candidates.clone())
                .bind(id)
                .bind(version)
                .bind(Lease::new_token())
                .bind(now)
                .bind(micros(p.lease))
                .bind(p.worker)
                .bind(p.queue)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some(row) = row {
                claimed.push(leased_from_row(&row)?);
            }
        }
        tx.commit().await?;
        Ok(claimed)
    }

    async fn job_claim_key(
        &self,
        conn: &mut SqliteConnection,
        p: JobClaim<'_>,
        key: Option<&str>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let statement = match key {
            Some(_) => self.sql.job_claim_key.clone(),
            None => self.sql.job_claim_unkeyed.clone(),
        };
        let mut q = sqlx::query(statement)
            .bind(p.queue)
            .bind(now_micros())
            .bind(micros(p.lease))
            .bind(p.worker)
            .bind(i64::try_from(p.limit).unwrap_or(i64::MAX));
        if let Some(key) = key {
            q = q.bind(key);
        }
        let rows = q.fetch_all(conn).await?;
        rows.iter().map(leased_from_row).collect()
    }
}
