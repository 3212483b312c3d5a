//! The operator of the workflows scenario. While the workers drain the workflows, it does what
//! a person at the dashboard might: cancels random steps (pending, waiting and running ones),
//! retries each a little later (one by one, now and then with a bulk retry of the queue's
//! cancelled jobs), and runs retention rounds with short ages. It records each action on the
//! database's clock, which the verifier needs, and reads every workflow whose jobs have all
//! completed before each round, since the round may delete it.
//!
//! It retries only what it cancelled itself: the steps a cancel cancelled in turn must come
//! back with the retry of the job that cancelled them, and a step still cancelled at the end
//! is a violation. A bulk retry of everything still cancelled at the end would hide exactly
//! that.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dbqueue::{
    BulkAction, Error, JobFilter, JobId, JobState, ListRequest, Queue, Retention, WorkflowId,
    WorkflowListRequest, WorkflowSummary,
};

use crate::db::now_us;
use crate::verify::{Action, OperatorLog, PushedFlow, Round};

/// Retention's age for completed jobs in the scenario.
pub(crate) const COMPLETED_AGE: Duration = Duration::from_secs(1);

/// The share of the drain (jobs completed, or deleted by retention) after which the operator
/// stops cancelling, and retries what it still has cancelled.
const STOP_CANCELLING_AT: f64 = 0.8;

/// How long after its cancel a job is retried: 0.3 to 1.2 s.
fn retry_delay() -> Duration {
    Duration::from_millis(fastrand::u64(300..=1200))
}

/// How often a retention round runs: 1 to 1.3 s (the rules' interval is 1 s, and the short
/// run's drain takes a few seconds).
fn round_delay() -> Duration {
    Duration::from_millis(fastrand::u64(1000..=1300))
}

/// The rules of the operator's retention rounds: completed jobs after [`COMPLETED_AGE`], every
/// second (the shortest interval). Cancelled jobs are kept for an hour and dead ones for ever,
/// so a workflow with a step the operator cancelled must stay until the step is retried and
/// completed (each job's own state's age decides, not the shortest of the rules).
pub(crate) fn rules() -> Retention {
    Retention::off()
        .delete_after(JobState::Completed, COMPLETED_AGE)
        .delete_after(JobState::Cancelled, Duration::from_secs(3600))
        .interval(Duration::from_secs(1))
}

/// What the scenario and its operator tell each other.
#[derive(Default)]
pub(crate) struct Signals {
    /// Set by the scenario when the drain is over (or its deadline passed): the operator
    /// returns its log.
    pub(crate) stop: AtomicBool,
    /// Set by the operator once it has stopped cancelling and retried every job it cancelled:
    /// the drain is not over before.
    pub(crate) settled: AtomicBool,
    /// Jobs retention deleted, for the scenario's progress.
    pub(crate) deleted_jobs: AtomicU64,
}

/// Stops the operator when dropped: a scenario that ends early on an error leaves no operator
/// running.
pub(crate) struct StopOnDrop(pub(crate) Arc<Signals>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::Relaxed);
    }
}

struct Operator {
    queue: Arc<dyn Queue>,
    name: String,
    /// Jobs of the scenario.
    total: u64,
    /// The most cancels it makes (a tenth of the jobs).
    max_cancels: u64,
    signals: Arc<Signals>,
    /// The jobs of each workflow.
    flows: HashMap<WorkflowId, Vec<JobId>>,
    /// The workflows not deleted yet.
    present: HashSet<WorkflowId>,
    /// The jobs it cancelled and has not retried yet, each with when its retry is due.
    outstanding: HashMap<JobId, Instant>,
    /// Jobs whose state could not be read after a bulk retry, with that bulk retry: if a later
    /// retry finds one no longer cancelled, the bulk retry brought it back.
    unsure: HashMap<JobId, Action>,
    /// The listing of a round whose deletions are still to be found (its reading failed).
    pending_diff: Option<i64>,
    /// Workflows the rounds since the last look at which vanished reported deleted (`None`
    /// after a round that failed: unknown).
    reported: Option<u64>,
    log: OperatorLog,
}

/// Runs the operator until `signals.stop`; returns what it did.
pub(crate) async fn run(
    queue: Arc<dyn Queue>,
    name: String,
    total: u64,
    flows: Vec<PushedFlow>,
    signals: Arc<Signals>,
) -> OperatorLog {
    let mut op = Operator {
        queue,
        name,
        total: total.max(1),
        max_cancels: (total / 10).max(4),
        signals,
        present: flows.iter().map(|f| f.id).collect(),
        flows: flows
            .iter()
            .map(|f| (f.id, f.jobs.iter().map(|(_, id)| *id).collect()))
            .collect(),
        outstanding: HashMap::new(),
        unsure: HashMap::new(),
        pending_diff: None,
        reported: Some(0),
        log: OperatorLog {
            completed_age_us: COMPLETED_AGE.as_micros() as i64,
            ..OperatorLog::default()
        },
    };
    let mut cancelling = true;
    // The first round once the first workflows may have completed the age ago.
    let mut next_round = Instant::now() + COMPLETED_AGE;
    while !op.signals.stop.load(Ordering::Relaxed) {
        if cancelling
            && (op.log.stats.cancels >= op.max_cancels
                || op.progress().await.is_some_and(|p| p >= STOP_CANCELLING_AT))
        {
            cancelling = false;
        }
        if cancelling {
            op.cancel_one().await;
            let now = Instant::now();
            let due = op
                .outstanding
                .iter()
                .filter(|(_, at)| **at <= now)
                .map(|(id, _)| *id)
                .next();
            if let Some(id) = due {
                if fastrand::u32(0..5) == 0 {
                    op.bulk_retry().await;
                } else {
                    op.retry(id).await;
                }
            }
        } else {
            // Done cancelling: every job it still has cancelled is retried, again and again
            // while a dependency it needs is still cancelled (its retry comes in the same pass
            // or the next).
            let mut all: Vec<JobId> = op.outstanding.keys().copied().collect();
            all.sort_unstable();
            for id in all {
                op.retry(id).await;
            }
            if op.outstanding.is_empty() {
                op.signals.settled.store(true, Ordering::Relaxed);
            }
        }
        if Instant::now() >= next_round {
            op.retention_round().await;
            next_round = Instant::now() + round_delay();
        }
        tokio::time::sleep(Duration::from_millis(fastrand::u64(100..=200))).await;
    }
    if let Some(listed) = op.pending_diff.take() {
        op.find_deleted(listed, i64::MAX).await;
    }
    op.log
}

impl Operator {
    /// The database's clock, in microseconds.
    async fn db_now(&mut self) -> Option<i64> {
        match self.queue.now().await {
            Ok(t) => Some(t.timestamp_micros()),
            Err(_) => {
                self.log.stats.errors += 1;
                None
            }
        }
    }

    /// The share of the jobs completed (or deleted by retention, which deletes only
    /// completed workflows).
    async fn progress(&mut self) -> Option<f64> {
        let stats = self.queue.stats(Some(&self.name)).await.ok()?;
        let done: u64 = stats.iter().map(|s| s.completed + s.dead).sum::<u64>()
            + self.signals.deleted_jobs.load(Ordering::Relaxed);
        Some(done as f64 / self.total as f64)
    }

    /// Cancels one random job of the queue, listed pending (45 %), waiting (40 %) or running.
    async fn cancel_one(&mut self) {
        let state = match fastrand::u32(0..20) {
            0..=8 => JobState::Pending,
            9..=16 => JobState::Waiting,
            _ => JobState::Running,
        };
        // The update keeps any field the request gains at its default.
        #[allow(clippy::needless_update)]
        let req = ListRequest {
            queue: Some(self.name.clone()),
            state: Some(state),
            limit: 200,
            ..ListRequest::default()
        };
        let Ok(jobs) = self.queue.list(req).await else {
            self.log.stats.errors += 1;
            return;
        };
        if jobs.is_empty() {
            return;
        }
        let id = jobs[fastrand::usize(0..jobs.len())].id;
        let Some(before) = self.db_now().await else {
            return;
        };
        match self.queue.cancel(id).await {
            Ok(()) => {
                let after_host = now_us();
                let after = self.db_now().await.unwrap_or(i64::MAX);
                self.log.cancels.push(Action {
                    job: id,
                    before,
                    after,
                    after_host,
                });
                self.outstanding.insert(id, Instant::now() + retry_delay());
                let s = &mut self.log.stats;
                s.cancels += 1;
                match state {
                    JobState::Pending => s.cancelled_pending += 1,
                    JobState::Waiting => s.cancelled_waiting += 1,
                    _ => s.cancelled_running += 1,
                }
            }
            Err(Error::InvalidState { .. }) => self.log.stats.cancels_refused += 1,
            Err(Error::NotFound { .. }) => self.log.unexplained.push(format!(
                "job {id}, listed {state} a moment before, was gone at its cancel"
            )),
            Err(_) => self.log.stats.errors += 1,
        }
    }

    /// Retries one job it cancelled.
    async fn retry(&mut self, id: JobId) {
        let Some(before) = self.db_now().await else {
            return;
        };
        match self.queue.retry(id).await {
            Ok(()) => {
                let after_host = now_us();
                let after = self.db_now().await.unwrap_or(i64::MAX);
                self.log.retries.push(Action {
                    job: id,
                    before,
                    after,
                    after_host,
                });
                self.log.stats.retries += 1;
                self.outstanding.remove(&id);
                self.unsure.remove(&id);
            }
            Err(Error::DependencyFailed {
                dependency, state, ..
            }) => {
                self.log.stats.retries_refused += 1;
                if !matches!(state, Some(JobState::Cancelled | JobState::Dead)) {
                    self.log.unexplained.push(format!(
                        "the retry of job {id} was refused for its dependency {dependency}, which is {}",
                        state.map_or("gone".to_owned(), |s| s.to_string())
                    ));
                }
                self.outstanding
                    .insert(id, Instant::now() + Duration::from_millis(200));
            }
            Err(Error::InvalidState { state, .. }) => {
                self.outstanding.remove(&id);
                match self.unsure.remove(&id) {
                    // The bulk retry had brought it back.
                    Some(bulk) => self.log.retries.push(Action { job: id, ..bulk }),
                    None => self.log.unexplained.push(format!(
                        "job {id}, cancelled by the operator, was {state} before its retry"
                    )),
                }
            }
            Err(Error::NotFound { .. }) => {
                self.outstanding.remove(&id);
                self.log.gone.push(format!(
                    "job {id}, cancelled by the operator, was deleted before its retry"
                ));
            }
            Err(_) => {
                self.log.stats.errors += 1;
                self.outstanding
                    .insert(id, Instant::now() + Duration::from_millis(200));
            }
        }
    }

    /// Retries every cancelled job of the queue at once (those that need a cancelled job to
    /// complete are skipped), and finds which of the jobs it cancelled came back.
    async fn bulk_retry(&mut self) {
        let Some(before) = self.db_now().await else {
            return;
        };
        let filter = JobFilter {
            queue: Some(self.name.clone()),
            state: Some(JobState::Cancelled),
            ..JobFilter::default()
        };
        let outcome = match self.queue.bulk(BulkAction::Retry, &filter).await {
            Ok(o) => o,
            Err(_) => {
                // Some of its batches may have committed: the states below tell.
                self.log.stats.errors += 1;
                dbqueue::BulkOutcome::default()
            }
        };
        let after_host = now_us();
        let after = self.db_now().await.unwrap_or(i64::MAX);
        let s = &mut self.log.stats;
        s.bulk_retries += 1;
        s.bulk_retried += outcome.changed;
        s.bulk_skipped += outcome.skipped;
        let bulk = Action {
            job: JobId(uuid::Uuid::nil()),
            before,
            after,
            after_host,
        };
        let mut cancelled: Vec<JobId> = self.outstanding.keys().copied().collect();
        cancelled.sort_unstable();
        for id in cancelled {
            match self.queue.get(id).await {
                Ok(Some(j)) if j.state == JobState::Cancelled => {}
                Ok(Some(_)) => {
                    self.log.retries.push(Action { job: id, ..bulk });
                    self.outstanding.remove(&id);
                }
                Ok(None) => {
                    self.outstanding.remove(&id);
                    self.log.gone.push(format!(
                        "job {id}, cancelled by the operator, was deleted before its retry"
                    ));
                }
                Err(_) => {
                    self.log.stats.errors += 1;
                    self.unsure.insert(id, Action { job: id, ..bulk });
                }
            }
        }
    }

    /// Every workflow, newest first.
    async fn workflows(&self) -> dbqueue::Result<Vec<WorkflowSummary>> {
        let mut all = Vec::new();
        let mut before = None;
        loop {
            let page = self
                .queue
                .workflows(WorkflowListRequest {
                    before,
                    limit: 1000,
                })
                .await?;
            let n = page.len();
            before = page.last().map(|w| w.id);
            all.extend(page);
            if n < 1000 {
                return Ok(all);
            }
        }
    }

    /// One retention round: first the workflows are listed, and each listed with every job
    /// completed is read (once: a completed job never changes), so that the verifier knows
    /// its jobs' finishes if the round deletes it; then the round; then which workflows it
    /// deleted.
    async fn retention_round(&mut self) {
        // The round's clock starts at the last listing, which should find nothing new to read
        // (reading many workflows takes time, and a round that ends later than the age after
        // its listing leaves the workflows it deletes unread unchecked): up to three listings.
        let mut listed = None;
        for _ in 0..3 {
            let Some(at) = self.db_now().await else {
                return;
            };
            match self.read_completed().await {
                Some(read) => {
                    listed = Some(at);
                    if read == 0 {
                        break;
                    }
                }
                None => return,
            }
        }
        let Some(listed) = listed else {
            return;
        };
        let report = self.queue.run_retention(&rules()).await;
        let ended = self.db_now().await;
        let s = &mut self.log.stats;
        match report {
            Ok(Some(r)) => {
                s.retention_rounds += 1;
                s.workflows_deleted += r.workflows;
                s.workflow_jobs_deleted += r.workflow_jobs;
                self.reported = self.reported.map(|n| n + r.workflows);
            }
            Ok(None) => s.retention_refused += 1,
            // A round that failed may have deleted some pages first.
            Err(_) => {
                s.errors += 1;
                self.reported = None;
            }
        }
        let listed = self.pending_diff.take().unwrap_or(listed);
        let Some(ended) = ended else {
            // Its deletions are found with the next round's, the two taken as one.
            self.pending_diff = Some(listed);
            return;
        };
        s.longest_round_ms = s.longest_round_ms.max(((ended - listed) / 1000) as u64);
        if self.reported != Some(0) {
            self.find_deleted(listed, ended).await;
        }
    }

    /// Lists the workflows and reads each listed with every job completed that it has not read
    /// yet; how many it read (`None` when the listing failed).
    async fn read_completed(&mut self) -> Option<u64> {
        let Ok(summaries) = self.workflows().await else {
            self.log.stats.errors += 1;
            return None;
        };
        let mut read = 0;
        for s in summaries {
            let done = s.total() > 0
                && s.counts
                    .iter()
                    .all(|(state, n)| *state == JobState::Completed || *n == 0);
            if !done || self.log.captured.contains_key(&s.id) {
                continue;
            }
            read += 1;
            match self.queue.workflow(s.id).await {
                Ok(Some(info)) if info.jobs.iter().all(|j| j.job.state == JobState::Completed) => {
                    self.log.complete_unread.remove(&s.id);
                    self.log.captured.insert(s.id, info);
                }
                Ok(Some(info)) => self.log.unexplained.push(format!(
                    "workflow {} was listed with every job completed, then read with {:?}",
                    s.id,
                    info.counts()
                )),
                Ok(None) => self.log.unexplained.push(format!(
                    "workflow {} was listed, then gone before a retention round",
                    s.id
                )),
                Err(_) => {
                    self.log.stats.errors += 1;
                    self.log.complete_unread.insert(s.id);
                }
            }
        }
        Some(read)
    }

    /// Finds the workflows that vanished since the last look, deleted by the round(s) between
    /// `listed` and `ended`.
    async fn find_deleted(&mut self, listed: i64, ended: i64) {
        let Ok(now) = self.workflows().await else {
            self.log.stats.errors += 1;
            self.pending_diff = Some(listed);
            return;
        };
        let now: HashSet<WorkflowId> = now.into_iter().map(|w| w.id).collect();
        let gone: Vec<WorkflowId> = self.present.difference(&now).copied().collect();
        let round = Round { listed, ended };
        for id in &gone {
            self.present.remove(id);
            self.log.deleted.insert(*id, round);
            let jobs = self.flows.get(id).map_or(&[][..], Vec::as_slice);
            self.log.deleted_jobs.extend(jobs.iter().copied());
            self.signals
                .deleted_jobs
                .fetch_add(jobs.len() as u64, Ordering::Relaxed);
        }
        if let Some(n) = self.reported.filter(|n| *n != gone.len() as u64) {
            self.log.unexplained.push(format!(
                "retention rounds reported {n} workflows deleted; {} vanished",
                gone.len()
            ));
        }
        self.reported = Some(0);
    }
}
