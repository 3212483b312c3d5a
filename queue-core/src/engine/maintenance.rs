//! Work on many jobs at once: bulk operations by filter, and the retention task's rounds.
//! Both go in bounded statements, each its own short transaction, so that neither holds many
//! locks or a long transaction however many jobs it touches.

use std::time::{Duration, Instant};

use uuid::Uuid;

use super::{
    count_by, Driver, DriverFault, Engine, JobMatch, JobPrune, KeyRatePrune, MaintenanceRound,
    WorkflowPrune, WorkflowPruneLock, WorkflowPruned, LOG_TARGET, PRUNE_CHUNK,
};
use crate::error::{Error, Result};
use crate::job::{JobId, JobState};
use crate::queue::{BulkAction, BulkOutcome, JobFilter};
use crate::retention::{Retention, RetentionReport, RETENTION_ROUND, RETENTION_TASK};
use crate::workflow::WorkflowId;

/// The maintenance task of the queue gauge sampler (its lease row is made by a migration).
pub(crate) const GAUGES_TASK: &str = "gauges";

/// Jobs per batch of a bulk operation: each batch is one read of ids and one statement over
/// them.
pub(crate) const BULK_CHUNK: usize = 1_000;

/// A retention round stops deleting this long before its lease runs out, so that it never
/// deletes beside the next holder.
const ROUND_MARGIN: Duration = Duration::from_secs(30);

/// Workflows looked at (locked, and deleted where their jobs allow) per transaction of
/// retention. Each takes its jobs, steps and dependencies along (a few rows per job), so fewer
/// than the jobs of a `job_prune` statement.
const WORKFLOW_PRUNE_CHUNK: usize = 500;

/// The age after which a finished job of each state may go, as [`Engine::prune_workflows`]
/// applies them to whole workflows (`None`: jobs in that state are kept, with their workflow).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct WorkflowAges {
    completed: Option<Duration>,
    dead: Option<Duration>,
    cancelled: Option<Duration>,
}

impl WorkflowAges {
    /// The ages of retention's rules.
    pub(super) fn of(rules: &Retention) -> Self {
        WorkflowAges {
            completed: rules.after(JobState::Completed),
            dead: rules.after(JobState::Dead),
            cancelled: rules.after(JobState::Cancelled),
        }
    }

    /// `older_than` for each of `states` (finished ones), the others kept.
    pub(super) fn uniform(states: &[JobState], older_than: Duration) -> Self {
        let age = |s: JobState| states.contains(&s).then_some(older_than);
        WorkflowAges {
            completed: age(JobState::Completed),
            dead: age(JobState::Dead),
            cancelled: age(JobState::Cancelled),
        }
    }

    /// The shortest age (`None`: every state is kept, so no workflow goes).
    fn shortest(self) -> Option<Duration> {
        [self.completed, self.dead, self.cancelled]
            .into_iter()
            .flatten()
            .min()
    }

    fn prune(self, ids: &[WorkflowId]) -> WorkflowPrune<'_> {
        WorkflowPrune {
            ids,
            completed: self.completed,
            dead: self.dead,
            cancelled: self.cancelled,
        }
    }
}

impl<D: Driver> Engine<D> {
    /// How many jobs a bulk operation would touch now.
    ///
    /// # Errors
    /// As [`crate::Queue::count_matching`].
    pub async fn count_matching(&self, action: BulkAction, filter: &JobFilter) -> Result<u64> {
        let states = filter.states_for(action)?;
        let m = matching(filter, &states, None);
        self.driver().job_count(m).await.map_err(|e| self.error(e))
    }

    /// How many waiting steps of workflows a cancel or delete of what `filter` matches would
    /// cancel, for needing one of those jobs to complete (0 for a retry).
    ///
    /// # Errors
    /// As [`crate::Queue::count_dependents`].
    pub async fn count_dependents(&self, action: BulkAction, filter: &JobFilter) -> Result<u64> {
        let states = filter.states_for(action)?;
        if action == BulkAction::Retry {
            return Ok(0);
        }
        let m = matching(filter, &states, None);
        self.driver()
            .job_dependents_count(m)
            .await
            .map_err(|e| self.error(e))
    }

    /// Cancels, retries or deletes every job `filter` matches, batch by batch, newest first.
    ///
    /// # Errors
    /// As [`crate::Queue::bulk`].
    pub async fn bulk(&self, action: BulkAction, filter: &JobFilter) -> Result<BulkOutcome> {
        let states = filter.states_for(action)?;
        let d = self.driver();
        let mut outcome = BulkOutcome::default();
        let mut before: Option<JobId> = None;
        loop {
            let m = matching(filter, &states, before);
            let batch = self
                .retried("bulk read", || d.job_ids(m))
                .await
                .map_err(|e| self.error(e))?;
            let Some((last, _)) = batch.last() else { break };
            before = Some(*last);
            let ids: Vec<JobId> = batch.iter().map(|(id, _)| *id).collect();
            let changed = match action {
                BulkAction::Cancel => {
                    let changed = self
                        .retried("bulk cancel", || d.job_cancel_many(&ids))
                        .await
                        .map_err(|e| self.error(e))?;
                    let first = batch[0].1.as_str();
                    let queue = if batch.iter().all(|(_, q)| q == first) {
                        first
                    } else {
                        ""
                    };
                    self.inner.metrics.cancelled(queue).increment(changed);
                    if changed > 0 {
                        self.settle_after(&ids, true).await;
                        // Workers running any of them learn of it now.
                        self.wake(crate::wake::CANCEL_WAKE, 1).await;
                    }
                    changed
                }
                BulkAction::Delete => {
                    let changed = self
                        .retried("bulk delete", || d.job_delete_many(&ids, &states))
                        .await
                        .map_err(|e| self.error(e))?;
                    // A deleted dependency holds nothing back.
                    if changed > 0 {
                        self.settle_after(&ids, true).await;
                    }
                    changed
                }
                BulkAction::Retry => self.retry_batch(&batch).await?,
            };
            outcome.changed += changed;
            outcome.skipped += ids.len() as u64 - changed.min(ids.len() as u64);
            if batch.len() < BULK_CHUNK {
                break;
            }
        }
        tracing::info!(target: LOG_TARGET, %action, changed = outcome.changed, skipped = outcome.skipped, "bulk operation done");
        Ok(outcome)
    }

    /// Retries one batch in one transaction (see [`Engine::retry_ids`]); when a unique or
    /// dedup key refuses it as a whole, job by job, skipping those whose key a live job holds.
    /// Steps whose dependency failed are skipped.
    async fn retry_batch(&self, batch: &[(JobId, String)]) -> Result<u64> {
        let d = self.driver();
        let ids: Vec<JobId> = batch.iter().map(|(id, _)| *id).collect();
        let done = match self.retry_ids(&ids, false).await {
            Ok(done) => done,
            Err(e) if matches!(d.classify(&e), DriverFault::UniqueViolation(_)) => {
                let mut n = 0;
                for id in &ids {
                    match self.retry(*id).await {
                        Ok(()) => n += 1,
                        Err(
                            Error::UniqueTaken { .. }
                            | Error::Duplicate { .. }
                            | Error::InvalidState { .. }
                            | Error::DependencyFailed { .. }
                            | Error::NotFound { .. },
                        ) => {}
                        Err(e) => return Err(e),
                    }
                }
                return Ok(n);
            }
            Err(e) => return Err(self.error(e)),
        };
        if done.changed > 0 {
            for (queue, n) in count_by(batch.iter().map(|(_, q)| q.as_str())) {
                self.wake(queue, n).await;
            }
            self.wake_retried(&done).await;
        }
        Ok(done.changed)
    }

    /// Takes or renews the gauge sampler's lease for `holder`.
    ///
    /// # Errors
    /// As [`crate::Queue::gauge_lease`].
    pub async fn gauge_lease(&self, holder: Uuid, lease: Duration) -> Result<bool> {
        let d = self.driver();
        self.retried("gauge lease", || {
            d.maintenance_claim(
                MaintenanceRound {
                    task: GAUGES_TASK,
                    token: holder,
                },
                lease,
            )
        })
        .await
        .map_err(|e| self.error(e))
    }

    /// Gives up the gauge sampler's lease if `holder` holds it (the next turn is due at once).
    ///
    /// # Errors
    /// As [`crate::Queue::gauge_release`].
    pub async fn gauge_release(&self, holder: Uuid) -> Result<()> {
        self.driver()
            .maintenance_release(
                MaintenanceRound {
                    task: GAUGES_TASK,
                    token: holder,
                },
                Duration::ZERO,
            )
            .await
            .map_err(|e| self.error(e))
    }

    /// One retention round, unless another process holds the round's lease or the last round
    /// ended less than the rules' interval ago.
    ///
    /// # Errors
    /// As [`crate::Queue::run_retention`].
    pub async fn run_retention(&self, rules: &Retention) -> Result<Option<RetentionReport>> {
        rules.validate()?;
        let d = self.driver();
        let token = Uuid::new_v4();
        let taken = self
            .retried("retention lease", || {
                d.maintenance_claim(
                    MaintenanceRound {
                        task: RETENTION_TASK,
                        token,
                    },
                    RETENTION_ROUND,
                )
            })
            .await
            .map_err(|e| self.error(e))?;
        if !taken {
            return Ok(None);
        }
        let deadline = Instant::now() + RETENTION_ROUND.saturating_sub(ROUND_MARGIN);
        let mut report = RetentionReport::default();
        let deleted = self.retention_round(rules, deadline, &mut report).await;
        // The next round is due an interval after this one ended, even after an error (the
        // lease would otherwise keep others out for the whole round's length).
        let released = d
            .maintenance_release(
                MaintenanceRound {
                    task: RETENTION_TASK,
                    token,
                },
                rules.every(),
            )
            .await
            .map_err(|e| self.error(e));
        if report.total() > 0
            || report.key_rate_counts > 0
            || report.workflows > 0
            || report.unfinished
        {
            tracing::info!(
                target: LOG_TARGET,
                completed = report.completed,
                cancelled = report.cancelled,
                dead = report.dead,
                key_rate_counts = report.key_rate_counts,
                workflows = report.workflows,
                workflow_jobs = report.workflow_jobs,
                unfinished = report.unfinished,
                "retention deleted finished jobs"
            );
        }
        deleted?;
        released?;
        Ok(Some(report))
    }

    async fn retention_round(
        &self,
        rules: &Retention,
        deadline: Instant,
        report: &mut RetentionReport,
    ) -> Result<()> {
        // The key rate counts first: a few rows, and a backlog of jobs that outlasts every
        // round would otherwise keep them forever.
        self.prune_key_rate_counts(deadline, report).await?;
        // Then whole workflows, whose jobs go together (job_prune leaves them alone).
        let ages = WorkflowAges::of(rules);
        let (workflows, jobs) = self.prune_workflows(ages, Some(deadline)).await?;
        report.workflows += workflows;
        report.workflow_jobs += jobs;
        if Instant::now() >= deadline {
            report.unfinished = true;
            return Ok(());
        }
        for (state, after) in rules.rules() {
            let states = [state];
            let p = JobPrune {
                states: &states,
                older_than: after,
                queue: None,
                limit: PRUNE_CHUNK,
                retention: true,
            };
            loop {
                if Instant::now() >= deadline {
                    report.unfinished = true;
                    return Ok(());
                }
                let n = self
                    .retried("retention", || self.driver().job_prune(p))
                    .await
                    .map_err(|e| self.error(e))?;
                report.add(state, n);
                if n < PRUNE_CHUNK as u64 {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Deletes whole workflows whose every job has been finished longer than its state's age
    /// in `ages` (a state without one keeps its workflow), with their jobs and bookkeeping
    /// rows (`workflows`, `workflow_jobs`, `job_deps`): a workflow is kept as long as any of
    /// its jobs can still run or be brought back by a retry, so that a retry never revives a
    /// step whose dependents were deleted, and a waiting step never finds the output it needs
    /// gone. The workflows are looked at in order of creation (by the database's clock,
    /// whatever their ids), those created longer than the shortest age ago only, a page at a
    /// time, each page locked (skipping workflows a retry or `batch_add` holds, which retries
    /// also lock) and checked by a statement of its own, all in one short transaction. Stops
    /// at `deadline` (a later call goes on from the start). The workflows and the jobs
    /// deleted.
    pub(super) async fn prune_workflows(
        &self,
        ages: WorkflowAges,
        deadline: Option<Instant>,
    ) -> Result<(u64, u64)> {
        let Some(shortest) = ages.shortest() else {
            return Ok((0, 0));
        };
        let d = self.driver();
        let mut after = None;
        let (mut workflows, mut jobs) = (0, 0);
        loop {
            if deadline.is_some_and(|at| Instant::now() >= at) {
                return Ok((workflows, jobs));
            }
            let page = WorkflowPruneLock {
                older_than: shortest,
                after,
                limit: WORKFLOW_PRUNE_CHUNK,
            };
            let (last, seen, done) = self
                .retried("retention", || async {
                    let mut tx = d.tx_begin().await?;
                    let conn = D::tx_conn(&mut tx);
                    let run = async {
                        let locked = d.workflow_prune_lock(conn, page).await?;
                        let ids: Vec<WorkflowId> = locked.iter().map(|(id, _)| *id).collect();
                        let done = if ids.is_empty() {
                            WorkflowPruned::default()
                        } else {
                            d.workflow_prune(conn, ages.prune(&ids)).await?
                        };
                        Ok::<_, D::Error>((
                            locked.last().map(|(id, at)| (*at, *id)),
                            locked.len(),
                            done,
                        ))
                    };
                    match run.await {
                        Ok(r) => {
                            d.tx_commit(tx).await?;
                            Ok(r)
                        }
                        Err(e) => {
                            let _ = d.tx_rollback(tx).await;
                            Err(e)
                        }
                    }
                })
                .await
                .map_err(|e| self.error(e))?;
            workflows += done.workflows;
            jobs += done.jobs;
            if seen < WORKFLOW_PRUNE_CHUNK {
                return Ok((workflows, jobs));
            }
            after = last;
        }
    }

    /// Deletes the key rate counts of windows that ended a whole window ago or more (one row
    /// per key that started a job of a queue with a key rate limit; without this the table
    /// keeps a row for every key ever seen). The window is the database's clock's, as the
    /// claims count it; the one just ended is kept, so a claim that read the clock just
    /// before a window turned never finds its count gone.
    async fn prune_key_rate_counts(
        &self,
        deadline: Instant,
        report: &mut RetentionReport,
    ) -> Result<()> {
        let d = self.driver();
        let controls = self
            .retried("retention", || d.queue_control_list())
            .await
            .map_err(|e| self.error(e))?;
        let limited: Vec<_> = controls
            .into_iter()
            .filter_map(|c| c.key_rate_limit.map(|r| (c.queue, r)))
            .collect();
        if limited.is_empty() {
            return Ok(());
        }
        let now_us = self.now().await?.timestamp_micros();
        for (queue, rate) in limited {
            let before = now_us.div_euclid(rate.period_us()) - 1;
            loop {
                if Instant::now() >= deadline {
                    report.unfinished = true;
                    return Ok(());
                }
                let n = self
                    .retried("retention", || {
                        d.queue_key_rate_prune(KeyRatePrune {
                            queue: &queue,
                            before,
                            limit: PRUNE_CHUNK,
                        })
                    })
                    .await
                    .map_err(|e| self.error(e))?;
                report.key_rate_counts += n;
                if n < PRUNE_CHUNK as u64 {
                    break;
                }
            }
        }
        Ok(())
    }
}

fn matching<'a>(
    filter: &'a JobFilter,
    states: &'a [JobState],
    before: Option<JobId>,
) -> JobMatch<'a> {
    JobMatch {
        queue: filter.queue.as_deref(),
        states,
        kind: filter.kind.as_deref(),
        older_than: filter.older_than,
        before,
        limit: BULK_CHUNK,
    }
}
