//! PostgreSQL's [`Claim`](queue_core::engine::Claim) statements: the one-statement claim, the
//! optimistic claim's two steps, and the claims of the controlled paths.

use async_trait::async_trait;
use queue_core::engine::{micros, Claim, JobClaim};
use queue_core::{Lease, Leased};
use sqlx::postgres::PgConnection;
use sqlx::Row;
use uuid::Uuid;

use crate::pinned::on_pool;

use super::rows::{decode, leased, limit};
use super::PgDriver;

#[async_trait]
impl Claim for PgDriver {
    type Candidate = (Uuid, i64);

    fn claims_after(&self) -> bool {
        // The statements from a position lock with SKIP LOCKED and make their tokens with
        // gen_random_uuid(), as job_claim does.
        self.profile.skip_locked && self.profile.volatile_in_update
    }

    async fn job_claim(&self, p: JobClaim<'_>) -> Result<Vec<Leased>, sqlx::Error> {
        // The claim from the head runs as an unnamed statement, planned at each execution (at
        // the price of a round trip for its Parse): a connection's first claim usually meets a
        // queue that is empty or nearly so, and a plan prepared then looks the claimed ids up
        // with a sequential scan (cheapest on a few pages), which it keeps until the table is
        // next analyzed. Without autovacuum's ANALYZE, a claim from the head on such a
        // connection read the whole table: 6.3 s at 2.3 million rows. On this path the claims
        // from the head are a queue's first claims, its rescans (`RESCAN`) and the claims after
        // a wake. The controlled claim (`job_claim_in`), which always reads from the head,
        // keeps its prepared statement: it runs at every claim of a controlled queue.
        let named = p.after.is_some() && self.named();
        let rows = on_pool!(self, |e| self.claim_query(p, named).fetch_all(e))?;
        leased(&rows)
    }

    async fn job_claim_in(
        &self,
        conn: &mut PgConnection,
        p: JobClaim<'_>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let rows = if self.profile.skip_locked && self.profile.volatile_in_update {
            self.claim_query(p, self.named()).fetch_all(conn).await?
        } else {
            sqlx::query(self.sql.job_claim_versioned.clone())
                .persistent(self.named())
                .bind(p.queue)
                .bind(limit(p.limit))
                .bind(micros(p.lease))
                .bind(p.worker)
                .bind(p.controls_checked)
                .bind(Lease::new_tokens(p.limit))
                .fetch_all(conn)
                .await?
        };
        leased(&rows)
    }

    async fn job_candidates(&self, p: JobClaim<'_>) -> Result<Vec<(Uuid, i64)>, sqlx::Error> {
        on_pool!(self, |e| sqlx::query_as(self.sql.job_candidates.clone())
            .persistent(self.named())
            .bind(p.queue)
            .bind(limit(p.limit))
            .fetch_all(e))
    }

    async fn job_claim_candidates(
        &self,
        p: JobClaim<'_>,
        mut candidates: Vec<(Uuid, i64)>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        // Rows are updated (and locked) in the array's order: in id order, two claimers with
        // overlapping candidates take their locks in the same order and cannot deadlock.
        candidates.sort_unstable_by_key(|c| c.0);
        let (ids, versions): (Vec<Uuid>, Vec<i64>) = candidates.into_iter().unzip();
        let rows = on_pool!(self, |e| sqlx::query(self.sql.job_claim_candidates.clone())
            .persistent(self.named())
            .bind(&ids)
            .bind(&versions)
            .bind(micros(p.lease))
            .bind(p.worker)
            .bind(p.queue)
            .bind(Lease::new_tokens(ids.len()))
            .fetch_all(e))?;
        leased(&rows)
    }

    async fn job_claim_key(
        &self,
        conn: &mut PgConnection,
        p: JobClaim<'_>,
        key: Option<&str>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let statement = match key {
            Some(_) => self.sql.job_claim_key.clone(),
            None => self.sql.job_claim_unkeyed.clone(),
        };
        let mut q = sqlx::query(statement)
            .persistent(self.named())
            .bind(p.queue)
            .bind(limit(p.limit))
            .bind(micros(p.lease))
            .bind(p.worker);
        if let Some(key) = key {
            q = q.bind(key);
        }
        leased(&q.fetch_all(conn).await?)
    }

    async fn job_claim_keys(
        &self,
        conn: &mut PgConnection,
        p: JobClaim<'_>,
        keys: &[(String, usize)],
    ) -> Result<Vec<Vec<Leased>>, sqlx::Error> {
        let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
        let limits: Vec<i64> = keys.iter().map(|(_, n)| limit(*n)).collect();
        let rows = sqlx::query(self.sql.job_claim_keys.clone())
            .persistent(self.named())
            .bind(p.queue)
            .bind(micros(p.lease))
            .bind(p.worker)
            .bind(&names)
            .bind(&limits)
            .fetch_all(conn)
            .await?;
        let mut out: Vec<Vec<Leased>> = keys.iter().map(|_| Vec::new()).collect();
        for row in &rows {
            let key: String = row.try_get("concurrency_key")?;
            let at = names
                .iter()
                .position(|k| *k == key)
                .ok_or_else(|| decode(format!("claimed a job of key {key:?}, not asked for")))?;
            out[at].extend(leased([row])?);
        }
        Ok(out)
    }
}
