//! SQL Server's [`Claim`](queue_core::engine::Claim) statements: the one-statement claim, the
//! optimistic claim's two steps, and the claims of the controlled paths.

use async_trait::async_trait;
use queue_core::engine::{Claim, JobClaim};
use queue_core::Leased;

use crate::bind::params;
use crate::error::MsSqlError;
use crate::pool::MsSqlTransaction;
use crate::sql::{dateadd_parts, PAIR_ROWS};

use super::rows::{bytes, claim_key_values, claim_values, decode, leased, limit};
use super::{Candidate, MsSqlDriver};

#[async_trait]
impl Claim for MsSqlDriver {
    type Candidate = Candidate;

    async fn job_claim(&self, p: JobClaim<'_>) -> Result<Vec<Leased>, MsSqlError> {
        let rows = self.fetch(&self.sql.job_claim, claim_values(p)).await?;
        leased(&rows)
    }

    /// `job_claim` on the session of the controlled claim's transaction: its U locks on the
    /// claimed rows, like the one on the queue's row, last until that transaction ends.
    async fn job_claim_in(
        &self,
        tx: &mut MsSqlTransaction,
        p: JobClaim<'_>,
    ) -> Result<Vec<Leased>, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.job_claim, claim_values(p))
            .await?;
        leased(&rows)
    }

    async fn job_candidates(&self, p: JobClaim<'_>) -> Result<Vec<Candidate>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.job_candidates, params![p.queue, limit(p.limit)])
            .await?;
        rows.iter()
            .map(|r| {
                let id = bytes(r, "id")?.ok_or_else(|| decode("id is NULL"))?;
                let version = bytes(r, "version")?.ok_or_else(|| decode("version is NULL"))?;
                Ok(Candidate {
                    id: id.to_vec(),
                    version: version.to_vec(),
                })
            })
            .collect()
    }

    /// One statement per chunk of candidates; each is claimed only if its row version is still
    /// the one read, and the rows returned are the ones won.
    async fn job_claim_candidates(
        &self,
        p: JobClaim<'_>,
        candidates: Vec<Candidate>,
    ) -> Result<Vec<Leased>, MsSqlError> {
        let mut won = Vec::with_capacity(candidates.len());
        for chunk in candidates.chunks(PAIR_ROWS) {
            let (secs, us) = dateadd_parts(p.lease);
            let mut params = params![secs, us, p.worker, p.queue];
            for c in chunk {
                params.push(c.id.as_slice());
                params.push(c.version.as_slice());
            }
            let sql = self.sql.job_claim_candidates_for(chunk.len());
            won.extend(leased(&self.fetch(&sql, params).await?)?);
        }
        Ok(won)
    }

    /// `job_claim_key` (or `job_claim_unkeyed`) on the session of the keyed claim's
    /// transaction: its locks on the claimed rows, like the one on the queue's row, last until
    /// that transaction ends.
    async fn job_claim_key(
        &self,
        tx: &mut MsSqlTransaction,
        p: JobClaim<'_>,
        key: Option<&str>,
    ) -> Result<Vec<Leased>, MsSqlError> {
        let sql = match key {
            Some(_) => &self.sql.job_claim_key,
            None => &self.sql.job_claim_unkeyed,
        };
        let rows = tx.connection().fetch(sql, claim_key_values(p, key)).await?;
        leased(&rows)
    }
}
