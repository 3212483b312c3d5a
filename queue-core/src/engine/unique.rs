//! Pushes with unique jobs: each job's key made once, here; its insert is the database's
//! decision (a unique index over the rows holding their place), and a job that met another
//! reports it, or replaces it while it is pending.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{
    count_by, Driver, Engine, JobInsert, JobInsertUnique, JobUniqueReplace, Target, UniqueInsert,
    LOG_TARGET,
};
use crate::error::{Error, Result};
use crate::job::{JobId, NewJob};
use crate::unique::PushOutcome;

/// Most inserts of one unique job that find its key held and then released before it is read.
const RELEASED_TRIES: usize = 8;

/// The key and state bits of each job that has a rule (`None` for the others).
pub(super) type Keys = Vec<Option<([u8; 32], i16)>>;

/// The unique key of each job of `jobs` that has a rule, from the client's `now` (a job's window
/// is that of its due time); errors name `jobs[i]` when there are several.
pub(super) fn unique_keys(jobs: &[NewJob], now: DateTime<Utc>) -> Result<Keys> {
    jobs.iter()
        .enumerate()
        .map(|(i, job)| {
            let Some(rule) = job.unique_value() else {
                return Ok(None);
            };
            // The window of the time the job is due: as asked (a past instant included), or
            // after its delay from now.
            let due = match job.schedule() {
                crate::job::Schedule::At(at) => at,
                _ => now + chrono::Duration::from_std(job.delay_from(now)).unwrap_or_default(),
            };
            rule.key(
                job.kind_value(),
                job.queue(),
                job.payload_json(),
                due,
                job.dedup_key_value(),
            )
            .map(|key| Some((key, rule.state_bits())))
            .map_err(|e| {
                if jobs.len() > 1 {
                    e.in_field(&format!("jobs[{i}]"))
                } else {
                    e
                }
            })
        })
        .collect()
}

/// The statements of one push run on the caller's (or the engine's) transaction, or on the pool.
fn on<'a, C>(conn: &'a mut Option<&mut C>) -> Target<'a, C> {
    match conn {
        Some(c) => Target::Tx(&mut **c),
        None => Target::Pool,
    }
}

impl<D: Driver> Engine<D> {
    /// Stores `jobs` (validated, some unique) and says what became of each: all on `tx` (the
    /// caller's transaction) when given, else in a transaction of the engine's (or, for one job,
    /// as one statement), tried again after a lock conflict. Other processes' workers are woken
    /// for the jobs stored (inside a caller's transaction: for its jobs without a rule, as by
    /// any push in it, when it commits; unique ones are found at the next poll).
    pub(super) async fn insert_outcomes(
        &self,
        tx: Option<&mut D::Conn>,
        jobs: &[NewJob],
    ) -> Result<Vec<PushOutcome>> {
        let now = self.driver().host_now();
        let keys = unique_keys(jobs, now)?;
        let delays: Vec<Duration> = jobs.iter().map(|j| j.delay_from(now)).collect();
        let outcomes = match tx {
            Some(conn) => {
                let notify: Vec<&str> = if self.inner.remote.is_some() {
                    count_by(
                        jobs.iter()
                            .zip(&keys)
                            .filter(|(_, k)| k.is_none())
                            .map(|(j, _)| j.queue()),
                    )
                    .into_iter()
                    .map(|(q, _)| q)
                    .collect()
                } else {
                    Vec::new()
                };
                return self
                    .insert_outcomes_on(Some(conn), jobs, &keys, &delays, &notify)
                    .await;
            }
            None if jobs.len() == 1 => {
                self.with_retries(|| self.insert_outcomes_on(None, jobs, &keys, &delays, &[]))
                    .await?
            }
            None => {
                self.with_retries(|| async {
                    let d = self.driver();
                    let mut tx = d.tx_begin().await.map_err(|e| self.error(e))?;
                    let done = self
                        .insert_outcomes_on(Some(D::tx_conn(&mut tx)), jobs, &keys, &delays, &[])
                        .await;
                    match done {
                        Ok(outcomes) => {
                            d.tx_commit(tx).await.map_err(|e| self.error(e))?;
                            Ok(outcomes)
                        }
                        Err(e) => {
                            let _ = d.tx_rollback(tx).await;
                            Err(e)
                        }
                    }
                })
                .await?
            }
        };
        // Wake the workers of the jobs stored or replaced (a replaced job may be due earlier).
        let woken = jobs
            .iter()
            .zip(&outcomes)
            .filter(|(_, o)| !matches!(o, PushOutcome::Existing(_)))
            .map(|(j, _)| j.queue());
        for (queue, n) in count_by(woken) {
            self.wake(queue, n).await;
        }
        Ok(outcomes)
    }

    /// Runs `op` again after a lock conflict, as [`Engine::retried`] does for one statement.
    async fn with_retries<T, F, Fut>(&self, mut op: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let mut attempt = 0;
        loop {
            match op().await {
                Err(Error::Conflict { source }) if attempt < self.inner.lock_retries => {
                    attempt += 1;
                    let wait =
                        Duration::from_millis(1 << attempt.min(10)).mul_f64(0.5 + fastrand::f64());
                    tracing::debug!(target: LOG_TARGET, attempt, error = %source, ?wait, "lock conflict in a unique push, trying again");
                    tokio::time::sleep(wait).await;
                }
                other => return other,
            }
        }
    }

    /// The statements of one attempt: the jobs without a rule in one insert, then each unique
    /// job in order (a later job of the batch meets an earlier one with its key).
    async fn insert_outcomes_on(
        &self,
        mut conn: Option<&mut D::Conn>,
        jobs: &[NewJob],
        keys: &Keys,
        delays: &[Duration],
        notify: &[&str],
    ) -> Result<Vec<PushOutcome>> {
        let d = self.driver();
        let plain: Vec<NewJob> = jobs
            .iter()
            .zip(keys)
            .filter(|(_, k)| k.is_none())
            .map(|(j, _)| j.clone())
            .collect();
        if !plain.is_empty() {
            let plain_delays: Vec<Duration> = delays
                .iter()
                .zip(keys)
                .filter(|(_, k)| k.is_none())
                .map(|(d, _)| *d)
                .collect();
            let p = JobInsert {
                jobs: &plain,
                delays: &plain_delays,
                notify,
            };
            if let Err(e) = self.insert_all_or_none(on(&mut conn), p).await {
                return Err(self.insert_error(on(&mut conn), &plain, e).await);
            }
        }
        let mut outcomes = Vec::with_capacity(jobs.len());
        for ((job, key), delay) in jobs.iter().zip(keys).zip(delays) {
            let Some((key, states)) = key else {
                outcomes.push(PushOutcome::Inserted(job.id()));
                continue;
            };
            let p = JobInsertUnique {
                job,
                delay: *delay,
                key,
                states: *states,
            };
            let mut tries = 0;
            let held = loop {
                match d.job_insert_unique(on(&mut conn), p).await {
                    Ok(UniqueInsert::Inserted) => break None,
                    Ok(UniqueInsert::Held(holder)) => break Some(holder),
                    Ok(UniqueInsert::Released) if tries < RELEASED_TRIES => tries += 1,
                    Ok(UniqueInsert::Released) => {
                        return Err(Error::conflict(format!(
                            "the unique key of job {} was held and released {RELEASED_TRIES} \
                             times while it was pushed",
                            job.id()
                        )))
                    }
                    Err(e) => {
                        return Err(self
                            .insert_error(on(&mut conn), std::slice::from_ref(job), e)
                            .await)
                    }
                }
            };
            let outcome = match held {
                None => PushOutcome::Inserted(job.id()),
                Some(holder) if job.unique_value().is_some_and(|r| r.replaces()) => {
                    let p = JobUniqueReplace {
                        id: holder,
                        job,
                        delay: *delay,
                    };
                    let changed = d
                        .job_unique_replace(on(&mut conn), p)
                        .await
                        .map_err(|e| self.error(e))?;
                    if changed > 0 {
                        PushOutcome::Replaced(holder)
                    } else {
                        PushOutcome::Existing(holder)
                    }
                }
                Some(holder) => PushOutcome::Existing(holder),
            };
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }

    /// The error of a retry that a unique job's key refused: which job holds it.
    pub(super) async fn unique_taken(&self, id: JobId) -> Option<Error> {
        match self.driver().job_unique_holder(id).await {
            Ok(Some(holder)) => Some(Error::UniqueTaken { job: id, holder }),
            _ => None,
        }
    }
}
