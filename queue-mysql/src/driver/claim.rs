//! MySQL/MariaDB's [`Claim`](queue_core::engine::Claim) statements: the one-statement claim, the
//! optimistic claim's two steps, and the claims of the controlled paths.

use std::collections::HashMap;

use async_trait::async_trait;
use queue_core::engine::{Claim, JobClaim};
use queue_core::{Lease, Leased};
use sqlx::mysql::MySqlConnection;
use sqlx::Row;
use uuid::Uuid;

use super::rows::lease_expiry;
use super::{Candidate, MySqlDriver};

#[async_trait]
impl Claim for MySqlDriver {
    type Candidate = Candidate;

    fn claims_after(&self) -> bool {
        // InnoDB keeps the delete-marked entries of claimed rows in the claim index until
        // purge removes them, and an open consistent read view anywhere in the server holds
        // purge back. The optimistic claim (distributed engines) reads from the head.
        true
    }

    /// One READ COMMITTED transaction: a locking SELECT that skips rows other claimers hold,
    /// then one UPDATE of exactly those rows.
    async fn job_claim(&self, p: JobClaim<'_>) -> Result<Vec<Leased>, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let claimed = self.claim_on(&mut tx, p).await?;
        tx.commit().await?;
        Ok(claimed)
    }

    async fn job_claim_in(
        &self,
        conn: &mut MySqlConnection,
        p: JobClaim<'_>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        self.claim_on(conn, p).await
    }

    async fn job_candidates(&self, p: JobClaim<'_>) -> Result<Vec<Candidate>, sqlx::Error> {
        let rows = sqlx::query(self.sql.job_candidates.clone())
            .bind(p.queue)
            .bind(p.limit as u64)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(Candidate::from_row).collect()
    }

    /// One candidate: one row changed means claimed. Several: one autocommit statement, and the
    /// rows that carry our tokens are ours.
    async fn job_claim_candidates(
        &self,
        p: JobClaim<'_>,
        candidates: Vec<Candidate>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let Some(first) = candidates.first() else {
            return Ok(Vec::new());
        };
        let now = first.db_now;
        let expires_at = lease_expiry(now, p.lease)?;
        let tokens = Lease::new_tokens(candidates.len());
        let changed = if candidates.len() == 1 {
            sqlx::query(self.sql.job_claim_candidates.clone())
                .bind(tokens[0])
                .bind(expires_at)
                .bind(p.worker)
                .bind(now)
                .bind(first.job.id.0)
                .bind(first.version)
                .bind(p.queue)
                .execute(&self.pool)
                .await?
                .rows_affected()
        } else {
            let mut q = sqlx::query(self.sql.job_claim_candidates_batch(candidates.len()));
            for (c, token) in candidates.iter().zip(&tokens) {
                q = q.bind(c.job.id.0).bind(*token);
            }
            q = q.bind(expires_at).bind(p.worker).bind(now);
            for c in &candidates {
                q = q.bind(c.job.id.0);
            }
            for c in &candidates {
                q = q.bind(c.job.id.0).bind(c.version);
            }
            q.bind(p.queue).execute(&self.pool).await?.rows_affected()
        };
        let won: Vec<bool> = if changed == candidates.len() as u64 {
            vec![true; candidates.len()]
        } else if changed == 0 {
            vec![false; candidates.len()]
        } else {
            let mut q = sqlx::query(self.sql.job_claim_candidates_tokens(candidates.len()));
            for c in &candidates {
                q = q.bind(c.job.id.0);
            }
            let current: HashMap<Uuid, Option<Uuid>> = q
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|r| Ok((r.try_get("id")?, r.try_get("lease_token")?)))
                .collect::<Result<_, sqlx::Error>>()?;
            candidates
                .iter()
                .zip(&tokens)
                .map(|(c, t)| current.get(&c.job.id.0) == Some(&Some(*t)))
                .collect()
        };
        candidates
            .into_iter()
            .zip(tokens)
            .zip(won)
            .filter(|(_, won)| *won)
            .map(|((c, token), _)| c.into_leased(token, now, expires_at, p.worker))
            .collect()
    }

    /// `job_claim_key` (or `job_claim_unkeyed`) locks the key's due jobs, then
    /// `job_claim_update` leases them, as `job_claim_in` does, in the controlled claim's
    /// transaction.
    async fn job_claim_key(
        &self,
        conn: &mut MySqlConnection,
        p: JobClaim<'_>,
        key: Option<&str>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let q = match key {
            Some(key) => sqlx::query(self.sql.job_claim_key.clone())
                .bind(p.queue)
                .bind(key.as_bytes()),
            None => sqlx::query(self.sql.job_claim_unkeyed.clone()).bind(p.queue),
        };
        let rows = q.bind(p.limit as u64).fetch_all(&mut *conn).await?;
        self.lease_locked(conn, &rows, p).await
    }

    /// Each key's jobs locked by `job_claim_key` in turn, then all of them leased by one
    /// `job_claim_update` (a claim at a key limit of 1 takes one job of each of many keys).
    async fn job_claim_keys(
        &self,
        conn: &mut MySqlConnection,
        p: JobClaim<'_>,
        keys: &[(String, usize)],
    ) -> Result<Vec<Vec<Leased>>, sqlx::Error> {
        let mut rows = Vec::new();
        let mut counts = Vec::with_capacity(keys.len());
        for (key, n) in keys {
            let locked = sqlx::query(self.sql.job_claim_key.clone())
                .bind(p.queue)
                .bind(key.as_bytes())
                .bind(*n as u64)
                .fetch_all(&mut *conn)
                .await?;
            counts.push(locked.len());
            rows.extend(locked);
        }
        let mut leased = self.lease_locked(conn, &rows, p).await?.into_iter();
        Ok(counts
            .into_iter()
            .map(|n| leased.by_ref().take(n).collect())
            .collect())
    }
}
