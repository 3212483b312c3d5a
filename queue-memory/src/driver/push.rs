//! The in-memory store's [`Push`](queue_core::engine::Push) implementation: inserting jobs, one or
//! many, unique or not.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{
    JobInsert, JobInsertUnique, JobUniqueReplace, Push, Target, UniqueInsert,
};
use queue_core::{JobId, JobState};

use crate::faults::Statement;
use crate::store::MemoryTx;
use crate::tables::Writer;

use super::{after, in_state, insert_wakeups, json, new_row, touch, MemoryDriver, Result};

#[async_trait]
impl Push for MemoryDriver {
    /// Stores every job of `p` (pending, attempt 0, version 0, due `now` plus its delay, created
    /// and updated `now`), or none: an id that exists, or a dedup key that a live job of the
    /// queue holds (in the store or earlier in the same call), refuses the whole call. Wakes the
    /// queue values waiting on `p.notify` once the jobs are visible (inside a transaction: when
    /// it commits).
    async fn job_insert(&self, target: Target<'_, MemoryTx>, p: JobInsert<'_>) -> Result<()> {
        let _call = self.enter(Statement::JobInsert).await?;
        let insert = |w: &mut Writer<'_>, now: DateTime<Utc>| {
            for (job, delay) in p.jobs.iter().zip(p.delays) {
                let run_at = after(now, *delay, "a job's run time")?;
                w.insert_job(new_row(job, run_at, now, None)?)?;
            }
            Ok(())
        };
        let wakeups = insert_wakeups(&p);
        match target {
            Target::Pool => {
                self.pool(insert).await?;
                self.wake_others(&wakeups);
            }
            Target::Tx(tx) => {
                let now = self.store.now();
                tx.statement(|w| insert(w, now))?;
                for (queue, n) in &wakeups {
                    tx.notify_on_commit(queue, *n);
                }
            }
        }
        Ok(())
    }

    /// Stores one job with a unique key, unless a job whose state is in its own unique states
    /// holds the key: then nothing is stored and that job is the answer. The look-up and the
    /// insert run under one lock, so the key is never found held and then released
    /// ([`UniqueInsert::Released`] does not happen here).
    async fn job_insert_unique(
        &self,
        target: Target<'_, MemoryTx>,
        p: JobInsertUnique<'_>,
    ) -> Result<UniqueInsert> {
        let _call = self.enter(Statement::JobInsertUnique).await?;
        self.on(target, |w, now| {
            if let Some(holder) = w.schema()?.jobs.unique_holder(p.key) {
                return Ok(UniqueInsert::Held(holder));
            }
            let run_at = after(now, p.delay, "a job's run time")?;
            w.insert_job(new_row(p.job, run_at, now, Some((*p.key, p.states)))?)?;
            Ok(UniqueInsert::Inserted)
        })
        .await
    }

    /// The pending job `p.id` takes the new job's payload and priority, and is due `now` plus
    /// `p.delay`; rows changed (0 when it is no longer pending).
    async fn job_unique_replace(
        &self,
        target: Target<'_, MemoryTx>,
        p: JobUniqueReplace<'_>,
    ) -> Result<u64> {
        let _call = self.enter(Statement::JobUniqueReplace).await?;
        self.on(target, |w, now| {
            let Some(mut row) = in_state(w, p.id, &[JobState::Pending])? else {
                return Ok(0);
            };
            row.payload = json(p.job.payload_json(), "payload")?;
            row.priority = p.job.priority_value();
            row.run_at = after(now, p.delay, "a job's run time")?;
            touch(&mut row, now);
            w.update_job(row)?;
            Ok(1)
        })
        .await
    }

    /// Another job with the unique key of job `id` that holds it (its state is in its own
    /// unique states).
    async fn job_unique_holder(&self, id: JobId) -> Result<Option<JobId>> {
        let _call = self.enter(Statement::JobUniqueHolder).await?;
        self.read(|t, _| {
            let jobs = &t.schema()?.jobs;
            Ok(jobs
                .get(id)
                .and_then(|row| row.unique.as_ref())
                .and_then(|(key, _)| jobs.unique_holder(key))
                .filter(|holder| *holder != id))
        })
        .await
    }

    /// The `(queue, dedup key)` pairs of live jobs among `queues` and `keys`: one look-up of
    /// the dedup index per pair.
    async fn job_dedup_live(
        &self,
        target: Target<'_, MemoryTx>,
        queues: &[&str],
        keys: &[&str],
    ) -> Result<Vec<(String, String)>> {
        let _call = self.enter(Statement::JobDedupLive).await?;
        self.read_on(target, |t, _| {
            let jobs = &t.schema()?.jobs;
            let mut live = Vec::new();
            for queue in queues {
                for key in keys {
                    if jobs.dedup_holder(queue, key).is_some() {
                        live.push(((*queue).to_owned(), (*key).to_owned()));
                    }
                }
            }
            Ok(live)
        })
        .await
    }
}
