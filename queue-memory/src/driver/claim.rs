//! The in-memory store's [`Claim`](queue_core::engine::Claim) implementation: the one-statement
//! claim, the optimistic claim's two steps, and the claims of the controlled paths.

use async_trait::async_trait;
use queue_core::engine::{Claim, JobClaim, Target};
use queue_core::{JobId, JobState, Leased};

use crate::faults::Statement;
use crate::store::MemoryTx;

use super::{claim, claim_rows, due, restricted, Among, MemoryDriver, Result};

#[async_trait]
impl Claim for MemoryDriver {
    type Candidate = (JobId, i64);

    /// Claims up to `p.limit` due pending jobs of `p.queue` in claim order (priority
    /// descending, then `run_at`, then id), each under a new lease token and a lease of
    /// `p.lease` from `now`, its attempt counted and `p.worker` stored; none while the queue's
    /// row says paused or limited, unless `p.controls_checked`.
    async fn job_claim(&self, p: JobClaim<'_>) -> Result<Vec<Leased>> {
        let _call = self.enter(Statement::JobClaim).await?;
        self.pool(|w, now| claim(w, p, now)).await
    }

    /// `job_claim` inside the engine's controlled claim's transaction.
    async fn job_claim_in(&self, conn: &mut MemoryTx, p: JobClaim<'_>) -> Result<Vec<Leased>> {
        let _call = self.enter(Statement::JobClaimIn).await?;
        self.on(Target::Tx(conn), |w, now| claim(w, p, now)).await
    }

    /// The optimistic claim's read: the id and version of up to `p.limit` due pending jobs of
    /// `p.queue`, in claim order.
    async fn job_candidates(&self, p: JobClaim<'_>) -> Result<Vec<(JobId, i64)>> {
        let _call = self.enter(Statement::JobCandidates).await?;
        self.read(|t, now| {
            let jobs = &t.schema()?.jobs;
            let ids = due(t, p.queue, Among::All, now, p.limit)?;
            Ok(ids
                .into_iter()
                .filter_map(|id| jobs.get(id).map(|row| (id, row.version)))
                .collect())
        })
        .await
    }

    /// The optimistic claim's write: claims each candidate that is still pending with the
    /// version that was read (as `job_claim` would); nothing while the queue's row says paused
    /// or limited. Returns the ones won.
    async fn job_claim_candidates(
        &self,
        p: JobClaim<'_>,
        candidates: Vec<(JobId, i64)>,
    ) -> Result<Vec<Leased>> {
        let _call = self.enter(Statement::JobClaimCandidates).await?;
        self.pool(|w, now| {
            if restricted(w, p.queue)? {
                return Ok(Vec::new());
            }
            let jobs = &w.schema()?.jobs;
            let unchanged: Vec<JobId> = candidates
                .into_iter()
                .filter(|(id, version)| {
                    jobs.get(*id).is_some_and(|row| {
                        row.state == JobState::Pending && row.version == *version
                    })
                })
                .map(|(id, _)| id)
                .collect();
            claim_rows(w, unchanged, p, now)
        })
        .await
    }

    /// Claims up to `p.limit` due pending jobs of `p.queue` with the concurrency key `key`
    /// (`None`: without a key), in claim order, as `job_claim` with the controls checked.
    async fn job_claim_key(
        &self,
        conn: &mut MemoryTx,
        p: JobClaim<'_>,
        key: Option<&str>,
    ) -> Result<Vec<Leased>> {
        let _call = self.enter(Statement::JobClaimKey).await?;
        let among = key.map_or(Among::Unkeyed, Among::Key);
        self.on(Target::Tx(conn), |w, now| {
            let ids = due(w.tables(), p.queue, among, now, p.limit)?;
            claim_rows(w, ids, p, now)
        })
        .await
    }
}
