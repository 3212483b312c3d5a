//! Pushing: validation, the insert, wake-ups, and naming the dedup key of a clash.

use std::collections::HashSet;
use std::time::Duration;

use super::{
    distinct, queue_counts, Driver, DriverFault, Engine, JobInsert, PushKind, Target, UniqueIndex,
};
use crate::error::{Error, Result};
use crate::job::{JobId, NewJob};
use crate::queue::validate_batch_at;
use crate::unique::PushOutcome;

impl<D: Driver> Engine<D> {
    /// Stores one job (or, for a unique job, meets the one that holds its key).
    ///
    /// # Errors
    /// As [`Queue::push`](crate::Queue::push).
    pub async fn push(&self, job: NewJob) -> Result<JobId> {
        Ok(self.push_outcome(job).await?.id())
    }

    /// Stores one job, or says which job it met.
    ///
    /// # Errors
    /// As [`Queue::push_outcome`](crate::Queue::push_outcome).
    #[tracing::instrument(name = "push", target = "queue::engine", level = "debug", skip_all, fields(queue = %job.queue(), kind = job.kind_value().unwrap_or(""), job = %job.id()))]
    pub async fn push_outcome(&self, job: NewJob) -> Result<PushOutcome> {
        job.validate_at(self.limits(), self.driver().host_now())?;
        let job = traced(job, self.limits().max_meta_bytes);
        if job.unique_value().is_some() {
            let mut outcomes = self
                .insert_outcomes(None, std::slice::from_ref(&job))
                .await?;
            self.count_pushed(std::slice::from_ref(&job), Some(&outcomes));
            return Ok(outcomes.remove(0));
        }
        self.insert(Target::Pool, std::slice::from_ref(&job), PushKind::Single)
            .await?;
        self.count_pushed(std::slice::from_ref(&job), None);
        Ok(PushOutcome::Inserted(job.id()))
    }

    /// Stores every job or none (unique jobs that meet a job holding their key are not stored,
    /// and report it).
    ///
    /// # Errors
    /// As [`Queue::push_batch`](crate::Queue::push_batch).
    pub async fn push_batch(&self, jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        let outcomes = self.push_batch_outcomes(jobs).await?;
        Ok(outcomes.iter().map(PushOutcome::id).collect())
    }

    /// Stores every job or none, saying what became of each.
    ///
    /// # Errors
    /// As [`Queue::push_batch_outcomes`](crate::Queue::push_batch_outcomes).
    #[tracing::instrument(name = "push_batch", target = "queue::engine", level = "debug", skip_all, fields(jobs = jobs.len()))]
    pub async fn push_batch_outcomes(&self, jobs: Vec<NewJob>) -> Result<Vec<PushOutcome>> {
        validate_batch_at(&jobs, self.limits(), self.driver().host_now())?;
        let jobs = traced_all(jobs, self.limits().max_meta_bytes);
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        check_batch_dedup(&jobs)?;
        if jobs.iter().any(|j| j.unique_value().is_some()) {
            let outcomes = self.insert_outcomes(None, &jobs).await?;
            self.count_pushed(&jobs, Some(&outcomes));
            return Ok(outcomes);
        }
        self.insert(Target::Pool, &jobs, PushKind::Other).await?;
        self.count_pushed(&jobs, None);
        Ok(jobs.iter().map(|j| PushOutcome::Inserted(j.id())).collect())
    }

    /// Stores one job inside the caller's transaction on `conn`: it exists iff that commits.
    ///
    /// # Errors
    /// As [`Queue::push`](crate::Queue::push).
    pub async fn push_in(&self, conn: &mut D::Conn, job: NewJob) -> Result<JobId> {
        Ok(self.push_outcome_in(conn, job).await?.id())
    }

    /// [`Engine::push_outcome`] inside the caller's transaction on `conn`.
    ///
    /// # Errors
    /// As [`Queue::push_outcome`](crate::Queue::push_outcome).
    #[tracing::instrument(name = "push", target = "queue::engine", level = "debug", skip_all, fields(queue = %job.queue(), kind = job.kind_value().unwrap_or(""), job = %job.id()))]
    pub async fn push_outcome_in(&self, conn: &mut D::Conn, job: NewJob) -> Result<PushOutcome> {
        job.validate_at(self.limits(), self.driver().host_now())?;
        let job = traced(job, self.limits().max_meta_bytes);
        if job.unique_value().is_some() {
            let mut outcomes = self
                .insert_outcomes(Some(conn), std::slice::from_ref(&job))
                .await?;
            self.count_pushed(std::slice::from_ref(&job), Some(&outcomes));
            return Ok(outcomes.remove(0));
        }
        self.insert(
            Target::Tx(conn),
            std::slice::from_ref(&job),
            PushKind::Other,
        )
        .await?;
        self.count_pushed(std::slice::from_ref(&job), None);
        Ok(PushOutcome::Inserted(job.id()))
    }

    /// Stores every job or none inside the caller's transaction on `conn`.
    ///
    /// # Errors
    /// As [`Queue::push_batch`](crate::Queue::push_batch).
    #[tracing::instrument(name = "push_batch", target = "queue::engine", level = "debug", skip_all, fields(jobs = jobs.len()))]
    pub async fn push_batch_in(&self, conn: &mut D::Conn, jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        validate_batch_at(&jobs, self.limits(), self.driver().host_now())?;
        let jobs = traced_all(jobs, self.limits().max_meta_bytes);
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        check_batch_dedup(&jobs)?;
        if jobs.iter().any(|j| j.unique_value().is_some()) {
            let outcomes = self.insert_outcomes(Some(conn), &jobs).await?;
            self.count_pushed(&jobs, Some(&outcomes));
            return Ok(outcomes.iter().map(PushOutcome::id).collect());
        }
        self.insert(Target::Tx(conn), &jobs, PushKind::Other)
            .await?;
        self.count_pushed(&jobs, None);
        Ok(jobs.iter().map(NewJob::id).collect())
    }

    pub(super) async fn insert(
        &self,
        target: Target<'_, D::Conn>,
        jobs: &[NewJob],
        kind: PushKind,
    ) -> Result<()> {
        let now = self.driver().host_now();
        let delays: Vec<Duration> = jobs.iter().map(|j| j.delay_from(now)).collect();
        let counts = queue_counts(jobs);
        // Notifications to other processes: in the insert itself, except for a single push
        // inside a coalescing window, which gets a trailing one once it has committed.
        let mut trail = None;
        let notify: Vec<&str> = match (&self.inner.remote, kind, &target) {
            (None, _, _) => Vec::new(),
            (Some(c), PushKind::Single, Target::Pool) => {
                let queue = counts[0].0;
                if c.lead(queue) {
                    vec![queue]
                } else {
                    trail = Some(queue);
                    Vec::new()
                }
            }
            (Some(_), _, _) => counts.iter().map(|(q, _)| *q).collect(),
        };
        let p = JobInsert {
            jobs,
            delays: &delays,
            notify: &notify,
        };
        match target {
            Target::Pool => {
                let inserted = self.retried("push", || self.insert_all_or_none(Target::Pool, p));
                if let Err(e) = inserted.await {
                    return Err(self.insert_error(Target::Pool, jobs, e).await);
                }
                for (queue, n) in &counts {
                    self.inner.hub.notify(queue, *n);
                }
                if let (Some(queue), Some(c)) = (trail, &self.inner.remote) {
                    self.trail(c, queue);
                }
            }
            Target::Tx(conn) => {
                if let Err(e) = self.insert_all_or_none(Target::Tx(&mut *conn), p).await {
                    return Err(self.insert_error(Target::Tx(conn), jobs, e).await);
                }
            }
        }
        Ok(())
    }

    /// [`Push::job_insert`] of `p`, all of it or none: a batch the driver writes with more
    /// than one statement ([`Push::job_insert_statements`]) runs inside a transaction of the
    /// driver's on the pool, and inside a savepoint of the transaction `target` names, so that
    /// a failure leaves none of its jobs there and undoes nothing else of that transaction.
    pub(super) async fn insert_all_or_none(
        &self,
        target: Target<'_, D::Conn>,
        p: JobInsert<'_>,
    ) -> std::result::Result<(), D::Error> {
        let d = self.driver();
        if d.job_insert_statements(p) <= 1 {
            return d.job_insert(target, p).await;
        }
        match target {
            Target::Pool => {
                let mut tx = d.tx_begin().await?;
                match d.job_insert(Target::Tx(D::tx_conn(&mut tx)), p).await {
                    Ok(()) => d.tx_commit(tx).await,
                    Err(e) => {
                        let _ = d.tx_rollback(tx).await;
                        Err(e)
                    }
                }
            }
            Target::Tx(conn) => {
                let mut savepoint = d.savepoint(conn).await?;
                match d.job_insert(Target::Tx(&mut *savepoint), p).await {
                    Ok(()) => d.savepoint_release(savepoint).await,
                    Err(e) => {
                        let _ = d.savepoint_rollback(savepoint).await;
                        Err(e)
                    }
                }
            }
        }
    }

    /// Counts the jobs of `jobs` that were stored (`outcomes`: what became of each, when some
    /// may have met a job holding their unique key) in `dbqueue_jobs_pushed_total`, one
    /// increment per run of jobs of one queue and kind.
    pub(super) fn count_pushed(&self, jobs: &[NewJob], outcomes: Option<&[PushOutcome]>) {
        let stored = jobs.iter().enumerate().filter(|(i, _)| {
            outcomes.is_none_or(|o| matches!(o.get(*i), Some(PushOutcome::Inserted(_))))
        });
        let mut run: Option<(&str, Option<&str>, u64)> = None;
        for (_, j) in stored {
            match &mut run {
                Some((q, k, n)) if *q == j.queue() && *k == j.kind_value() => *n += 1,
                _ => {
                    if let Some((q, k, n)) = run {
                        self.inner.metrics.job(q, k).pushed.increment(n);
                    }
                    run = Some((j.queue(), j.kind_value(), 1));
                }
            }
        }
        if let Some((q, k, n)) = run {
            self.inner.metrics.job(q, k).pushed.increment(n);
        }
    }

    /// The error for a failed insert of `jobs`: a unique violation on the live dedup keys
    /// becomes [`Error::Duplicate`] naming the key that a live job holds.
    pub(super) async fn insert_error(
        &self,
        target: Target<'_, D::Conn>,
        jobs: &[NewJob],
        e: D::Error,
    ) -> Error {
        let which = match self.inner.driver.classify(&e) {
            DriverFault::UniqueViolation(
                which @ (UniqueIndex::DedupKey | UniqueIndex::Unknown),
            ) => which,
            _ => return self.error(e),
        };
        let keyed: Vec<(&str, &str)> = jobs
            .iter()
            .filter_map(|j| j.dedup_key_value().map(|k| (j.queue(), k)))
            .collect();
        let duplicate = |(queue, key): (&str, &str)| Error::Duplicate {
            queue: queue.to_owned(),
            dedup_key: key.to_owned(),
        };
        match (keyed.as_slice(), which) {
            ([], _) => return self.error(e),
            ([only], UniqueIndex::DedupKey) => return duplicate(*only),
            _ => {}
        }
        if let Some(pair) = self.live_dedup_key(target, &keyed).await {
            return duplicate(pair);
        }
        match which {
            // The server named the dedup index, but the live key is not visible from here (it
            // was pushed earlier in the caller's own transaction, or has just finished).
            UniqueIndex::DedupKey => duplicate(keyed[0]),
            // No live job holds any of the keys: the clash was on something else (the id).
            _ => self.error(e),
        }
    }

    /// The first of `keyed` (in batch order) that a live job holds, looked up in the caller's
    /// transaction when there is one (falling back to the pool when that transaction can no
    /// longer run statements).
    async fn live_dedup_key<'a>(
        &self,
        target: Target<'_, D::Conn>,
        keyed: &[(&'a str, &'a str)],
    ) -> Option<(&'a str, &'a str)> {
        let queues: Vec<&str> = distinct(keyed.iter().map(|(q, _)| *q));
        let keys: Vec<&str> = distinct(keyed.iter().map(|(_, k)| *k));
        let d = self.driver();
        let live = match target {
            Target::Tx(conn) => match d.job_dedup_live(Target::Tx(conn), &queues, &keys).await {
                Ok(live) => live,
                Err(_) => d.job_dedup_live(Target::Pool, &queues, &keys).await.ok()?,
            },
            Target::Pool => d.job_dedup_live(Target::Pool, &queues, &keys).await.ok()?,
        };
        let live: HashSet<(&str, &str)> =
            live.iter().map(|(q, k)| (q.as_str(), k.as_str())).collect();
        keyed.iter().copied().find(|pair| live.contains(pair))
    }
}

/// `job` as it is stored: with its producer's trace context in its meta when the
/// `opentelemetry` feature is on (see [`crate::otel`]) and the meta stays within `max_meta`
/// bytes with it.
fn traced(job: NewJob, max_meta: usize) -> NewJob {
    #[cfg(feature = "opentelemetry")]
    let job = crate::otel::carry(job, max_meta);
    #[cfg(not(feature = "opentelemetry"))]
    let _ = max_meta;
    job
}

/// [`traced`] for each of `jobs`, the context read once.
pub(super) fn traced_all(jobs: Vec<NewJob>, max_meta: usize) -> Vec<NewJob> {
    #[cfg(feature = "opentelemetry")]
    let jobs = crate::otel::carry_all(jobs, max_meta);
    #[cfg(not(feature = "opentelemetry"))]
    let _ = max_meta;
    jobs
}

/// Two jobs of one batch with the same queue and dedup key: the batch would clash with itself.
/// (Unique jobs are left out: the second of two with one key meets the first.)
fn check_batch_dedup(jobs: &[NewJob]) -> Result<()> {
    let mut seen = HashSet::new();
    for j in jobs.iter().filter(|j| j.unique_value().is_none()) {
        if let Some(k) = j.dedup_key_value() {
            if !seen.insert((j.queue(), k)) {
                return Err(Error::Duplicate {
                    queue: j.queue().to_owned(),
                    dedup_key: k.to_owned(),
                });
            }
        }
    }
    Ok(())
}
