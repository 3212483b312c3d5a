//! The worker against an in-memory queue that implements the trait's semantics, lease tokens
//! included.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::json;
use uuid::Uuid;

use super::*;
use crate::error::{Error, Result};
use crate::job::{
    FailOutcome, Failure, Job, JobId, JobState, Lease, Leased, NewJob, Snooze, SnoozeOutcome,
};
use crate::queue::{
    self, Capabilities, CheckedPop, ClaimStrategy, Dialect, ListRequest, PopRequest, PruneRequest,
    QueueStats, Wakeups,
};
use crate::retry::{FailDecision, RetryPolicy};
use crate::validate::{self, Limits};
use crate::wake::WakeHub;

struct Row {
    job: Job,
    token: Option<Uuid>,
}

#[derive(Default)]
struct Calls {
    pop: AtomicU64,
    pops_running: AtomicU64,
    pops_peak: AtomicU64,
    ack: AtomicU64,
    ack_batch: AtomicU64,
    fail: AtomicU64,
    extend: AtomicU64,
    release: AtomicU64,
    rescue: AtomicU64,
}

/// An in-memory queue. Its clock is Tokio's, so paused-time tests move it.
struct FakeQueue {
    caps: Capabilities,
    policy: RetryPolicy,
    rows: Mutex<HashMap<JobId, Row>>,
    hub: WakeHub,
    epoch: (DateTime<Utc>, tokio::time::Instant),
    calls: Calls,
    pop_limits: Mutex<Vec<usize>>,
    ack_batch_sizes: Mutex<Vec<usize>>,
    /// The next this-many pops fail with `Unavailable`.
    failing_pops: AtomicU32,
    /// The next this-many pops, rescues and batch acks panic (a bug in the queue, or a log
    /// writer that panics).
    panicking_pops: AtomicU32,
    panicking_rescues: AtomicU32,
    panicking_acks: AtomicU32,
    panicking_waits: AtomicU32,
    pop_latency: Mutex<Duration>,
    ack_latency: Mutex<Duration>,
    /// While set, every call that touches jobs fails with `Unavailable`.
    down: AtomicBool,
}

/// Takes one from `n` if it is not zero.
fn take_one(n: &AtomicU32) -> bool {
    n.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

fn unavailable() -> Error {
    Error::unavailable(std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        "connection refused",
    ))
}

impl FakeQueue {
    fn new() -> Arc<Self> {
        Self::with_limits(Limits::default())
    }

    fn with_limits(limits: Limits) -> Arc<Self> {
        Arc::new(FakeQueue {
            caps: Capabilities {
                dialect: Dialect::Sqlite,
                claim: ClaimStrategy::WriteLock,
                wakeups: Wakeups::InProcess,
                time_precision: Duration::from_micros(1),
                transactions: false,
                server_version: None,
                profile: crate::EngineProfile::of(crate::ServerKind::Sqlite),
                limits,
            },
            policy: RetryPolicy::default(),
            rows: Mutex::new(HashMap::new()),
            hub: WakeHub::new(),
            epoch: (Utc::now(), tokio::time::Instant::now()),
            calls: Calls::default(),
            pop_limits: Mutex::new(Vec::new()),
            ack_batch_sizes: Mutex::new(Vec::new()),
            failing_pops: AtomicU32::new(0),
            panicking_pops: AtomicU32::new(0),
            panicking_rescues: AtomicU32::new(0),
            panicking_acks: AtomicU32::new(0),
            panicking_waits: AtomicU32::new(0),
            pop_latency: Mutex::new(Duration::ZERO),
            ack_latency: Mutex::new(Duration::ZERO),
            down: AtomicBool::new(false),
        })
    }

    fn up(&self) -> Result<()> {
        if self.down.load(Ordering::SeqCst) {
            Err(unavailable())
        } else {
            Ok(())
        }
    }

    fn clock(&self) -> DateTime<Utc> {
        let elapsed = tokio::time::Instant::now() - self.epoch.1;
        self.epoch.0 + chrono::Duration::from_std(elapsed).unwrap()
    }

    fn rows(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, Row>> {
        self.rows.lock().unwrap()
    }

    fn job(&self, id: JobId) -> Job {
        self.rows()[&id].job.clone()
    }

    fn count(&self, state: JobState) -> usize {
        self.rows()
            .values()
            .filter(|r| r.job.state == state)
            .count()
    }

    /// Another holder takes the job over: the current token stops working.
    fn steal(&self, id: JobId) {
        self.rows().get_mut(&id).unwrap().token = Some(Uuid::new_v4());
    }

    fn insert(&self, job: NewJob, now: DateTime<Utc>) -> Result<JobId> {
        let mut rows = self.rows();
        if let Some(key) = &job.dedup_key {
            if rows.values().any(|r| {
                r.job.queue == job.queue
                    && r.job.dedup_key.as_ref() == Some(key)
                    && matches!(r.job.state, JobState::Pending | JobState::Running)
            }) {
                return Err(Error::Duplicate {
                    queue: job.queue.clone(),
                    dedup_key: key.clone(),
                });
            }
        }
        let run_at = now + chrono::Duration::from_std(job.delay_from(now)).unwrap();
        rows.insert(
            job.id,
            Row {
                job: Job {
                    id: job.id,
                    queue: job.queue,
                    payload: job.payload,
                    priority: job.priority,
                    state: JobState::Pending,
                    attempts: 0,
                    max_attempts: job.max_attempts,
                    run_at,
                    lease_expires_at: None,
                    worker: None,
                    last_error: None,
                    dedup_key: job.dedup_key,
                    kind: job.kind,
                    meta: job.meta,
                    timeout: job.timeout,
                    snoozes: 0,
                    errors: Vec::new(),
                    output: None,
                    created_at: now,
                    updated_at: now,
                    finished_at: None,
                },
                token: None,
            },
        );
        Ok(job.id)
    }

    /// The row held by `lease`, or the error a fenced transition reports.
    fn fenced<'a>(rows: &'a mut HashMap<JobId, Row>, lease: &Lease) -> Result<&'a mut Row> {
        let lost = Error::LeaseLost { job: lease.job_id };
        let row = rows.get_mut(&lease.job_id).ok_or(lost)?;
        if row.job.state == JobState::Cancelled {
            return Err(Error::Cancelled { job: lease.job_id });
        }
        if row.job.state != JobState::Running || row.token != Some(lease.token) {
            return Err(Error::LeaseLost { job: lease.job_id });
        }
        Ok(row)
    }

    fn clear_lease(row: &mut Row) {
        row.token = None;
        row.job.lease_expires_at = None;
        row.job.worker = None;
    }

    fn complete(row: &mut Row, now: DateTime<Utc>) {
        row.job.state = JobState::Completed;
        row.job.finished_at = Some(now);
        row.job.updated_at = now;
        Self::clear_lease(row);
    }
}

#[async_trait]
impl Queue for FakeQueue {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn migrate(&self) -> Result<()> {
        Ok(())
    }

    async fn push(&self, job: NewJob) -> Result<JobId> {
        job.validate(&self.caps.limits)?;
        let queue = job.queue.clone();
        let id = self.insert(job, self.clock())?;
        self.hub.notify(&queue, 1);
        Ok(id)
    }

    async fn push_batch(&self, jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        queue::validate_batch(&jobs, &self.caps.limits)?;
        let now = self.clock();
        let mut ids = Vec::new();
        let mut queues: HashMap<String, usize> = HashMap::new();
        for job in jobs {
            *queues.entry(job.queue.clone()).or_default() += 1;
            ids.push(self.insert(job, now)?);
        }
        for (q, n) in queues {
            self.hub.notify(&q, n);
        }
        Ok(ids)
    }

    async fn pop_checked(&self, req: &CheckedPop) -> Result<Vec<Leased>> {
        let req = req.request();
        self.calls.pop.fetch_add(1, Ordering::SeqCst);
        self.pop_limits.lock().unwrap().push(req.limit);
        let latency = *self.pop_latency.lock().unwrap();
        if !latency.is_zero() {
            let running = self.calls.pops_running.fetch_add(1, Ordering::SeqCst) + 1;
            self.calls.pops_peak.fetch_max(running, Ordering::SeqCst);
            tokio::time::sleep(latency).await;
            self.calls.pops_running.fetch_sub(1, Ordering::SeqCst);
        }
        self.up()?;
        take_one(&self.panicking_pops).then(|| panic!("the pop's code panicked"));
        if self
            .failing_pops
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(unavailable());
        }
        let now = self.clock();
        let mut rows = self.rows();
        let mut due: Vec<&mut Row> = rows
            .values_mut()
            .filter(|r| {
                r.job.queue == req.queue && r.job.state == JobState::Pending && r.job.run_at <= now
            })
            .collect();
        due.sort_by(|a, b| {
            b.job
                .priority
                .cmp(&a.job.priority)
                .then(a.job.run_at.cmp(&b.job.run_at))
                .then(a.job.id.cmp(&b.job.id))
        });
        let expires_at = now + chrono::Duration::from_std(req.lease).unwrap();
        Ok(due
            .into_iter()
            .take(req.limit)
            .map(|row| {
                let token = Uuid::new_v4();
                row.token = Some(token);
                row.job.state = JobState::Running;
                row.job.attempts += 1;
                row.job.lease_expires_at = Some(expires_at);
                row.job.worker = Some(req.worker.clone());
                row.job.updated_at = now;
                Leased {
                    lease: Lease {
                        job_id: row.job.id,
                        queue: row.job.queue.clone(),
                        token,
                        expires_at,
                        attempt: row.job.attempts,
                        max_attempts: row.job.max_attempts,
                    },
                    job: row.job.clone(),
                }
            })
            .collect())
    }

    async fn ack(&self, lease: &Lease) -> Result<()> {
        self.calls.ack.fetch_add(1, Ordering::SeqCst);
        self.up()?;
        let now = self.clock();
        let mut rows = self.rows();
        Self::complete(Self::fenced(&mut rows, lease)?, now);
        Ok(())
    }

    async fn ack_batch(&self, leases: &[Lease]) -> Result<u64> {
        queue::validate_ack_batch(leases, &self.caps.limits)?;
        self.calls.ack_batch.fetch_add(1, Ordering::SeqCst);
        self.up()?;
        take_one(&self.panicking_acks).then(|| panic!("the ack's code panicked"));
        self.ack_batch_sizes.lock().unwrap().push(leases.len());
        let latency = *self.ack_latency.lock().unwrap();
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let now = self.clock();
        let mut rows = self.rows();
        let mut n = 0;
        for lease in leases {
            if let Ok(row) = Self::fenced(&mut rows, lease) {
                Self::complete(row, now);
                n += 1;
            }
        }
        Ok(n)
    }

    async fn fail(&self, lease: &Lease, failure: Failure) -> Result<FailOutcome> {
        self.calls.fail.fetch_add(1, Ordering::SeqCst);
        self.up()?;
        let now = self.clock();
        let mut rows = self.rows();
        let row = Self::fenced(&mut rows, lease)?;
        row.job.last_error = Some(validate::truncate_error(&failure.message).to_owned());
        row.job.updated_at = now;
        Self::clear_lease(row);
        Ok(match self.policy.decide(lease, &failure) {
            FailDecision::Retry(after) => {
                row.job.state = JobState::Pending;
                row.job.run_at = now + chrono::Duration::from_std(after).unwrap();
                FailOutcome::Retrying { after }
            }
            FailDecision::Dead => {
                row.job.state = JobState::Dead;
                row.job.finished_at = Some(now);
                FailOutcome::Dead
            }
        })
    }

    async fn ack_with_output(
        &self,
        lease: &Lease,
        output: &serde_json::value::RawValue,
    ) -> Result<()> {
        validate::output(output.get(), &self.caps.limits)?;
        self.ack(lease).await?;
        self.rows().get_mut(&lease.job_id).unwrap().job.output = Some(output.to_owned());
        Ok(())
    }

    async fn snooze(&self, lease: &Lease, snooze: Snooze) -> Result<SnoozeOutcome> {
        self.up()?;
        let now = self.clock();
        let over = {
            let mut rows = self.rows();
            let row = Self::fenced(&mut rows, lease)?;
            if row.job.snoozes < snooze.max_snoozes {
                row.job.state = JobState::Pending;
                row.job.run_at = now + chrono::Duration::from_std(snooze.delay).unwrap();
                row.job.attempts -= 1;
                row.job.snoozes += 1;
                Self::clear_lease(row);
                false
            } else {
                true
            }
        };
        if over {
            let failure = Failure::retryable("snoozed too often");
            return Ok(SnoozeOutcome::Failed(self.fail(lease, failure).await?));
        }
        Ok(SnoozeOutcome::Snoozed)
    }

    async fn merge_meta(
        &self,
        lease: &Lease,
        patch: &serde_json::Value,
    ) -> Result<serde_json::Value> {
        self.up()?;
        let mut rows = self.rows();
        let row = Self::fenced(&mut rows, lease)?;
        let mut meta = serde_json::from_str(row.job.meta.as_deref().map_or("{}", |m| m.get()))?;
        crate::job::merge_patch(&mut meta, patch);
        row.job.meta = Some(serde_json::value::to_raw_value(&meta)?);
        Ok(meta)
    }

    async fn extend(&self, lease: &Lease, by: Duration) -> Result<Lease> {
        validate::lease("by", by)?;
        self.calls.extend.fetch_add(1, Ordering::SeqCst);
        self.up()?;
        let now = self.clock();
        let mut rows = self.rows();
        let row = Self::fenced(&mut rows, lease)?;
        let expires_at = now + chrono::Duration::from_std(by).unwrap();
        row.job.lease_expires_at = Some(expires_at);
        Ok(Lease {
            expires_at,
            ..lease.clone()
        })
    }

    async fn release(&self, lease: &Lease) -> Result<()> {
        self.calls.release.fetch_add(1, Ordering::SeqCst);
        self.up()?;
        let now = self.clock();
        let mut rows = self.rows();
        let row = Self::fenced(&mut rows, lease)?;
        row.job.state = JobState::Pending;
        row.job.run_at = now;
        row.job.attempts -= 1;
        row.job.updated_at = now;
        Self::clear_lease(row);
        Ok(())
    }

    async fn rescue_expired(&self) -> Result<u64> {
        self.calls.rescue.fetch_add(1, Ordering::SeqCst);
        self.up()?;
        take_one(&self.panicking_rescues).then(|| panic!("the rescue's code panicked"));
        let now = self.clock();
        let mut n = 0;
        for row in self.rows().values_mut() {
            if row.job.state == JobState::Running
                && row.job.lease_expires_at.is_some_and(|at| at < now)
            {
                Self::clear_lease(row);
                row.job.updated_at = now;
                if row.job.attempts < row.job.max_attempts {
                    row.job.state = JobState::Pending;
                    row.job.run_at = now;
                    row.job.last_error = Some("lease expired".into());
                } else {
                    row.job.state = JobState::Dead;
                    row.job.finished_at = Some(now);
                }
                n += 1;
            }
        }
        Ok(n)
    }

    async fn cancel(&self, id: JobId) -> Result<()> {
        let now = self.clock();
        let mut rows = self.rows();
        let row = rows.get_mut(&id).ok_or(Error::NotFound { job: id })?;
        if row.job.state.is_finished() {
            return Err(Error::InvalidState {
                job: id,
                state: row.job.state,
                operation: "cancel",
            });
        }
        row.job.state = JobState::Cancelled;
        row.job.finished_at = Some(now);
        Ok(())
    }

    async fn retry(&self, id: JobId) -> Result<()> {
        let now = self.clock();
        let mut rows = self.rows();
        let row = rows.get_mut(&id).ok_or(Error::NotFound { job: id })?;
        if !matches!(row.job.state, JobState::Dead | JobState::Cancelled) {
            return Err(Error::InvalidState {
                job: id,
                state: row.job.state,
                operation: "retry",
            });
        }
        row.job.state = JobState::Pending;
        row.job.attempts = 0;
        row.job.run_at = now;
        row.job.finished_at = None;
        Self::clear_lease(row);
        Ok(())
    }

    async fn get(&self, id: JobId) -> Result<Option<Job>> {
        Ok(self.rows().get(&id).map(|r| r.job.clone()))
    }

    async fn list(&self, req: ListRequest) -> Result<Vec<Job>> {
        req.validate()?;
        let mut jobs: Vec<Job> = self
            .rows()
            .values()
            .map(|r| r.job.clone())
            .filter(|j| req.queue.as_ref().is_none_or(|q| &j.queue == q))
            .filter(|j| req.state.is_none_or(|s| j.state == s))
            .collect();
        jobs.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        jobs.truncate(req.limit);
        Ok(jobs)
    }

    async fn stats(&self, queue: Option<&str>) -> Result<Vec<QueueStats>> {
        let now = self.clock();
        let mut by_queue: HashMap<String, QueueStats> = HashMap::new();
        for row in self.rows().values() {
            if queue.is_some_and(|q| q != row.job.queue) {
                continue;
            }
            let s = by_queue
                .entry(row.job.queue.clone())
                .or_insert_with(|| QueueStats {
                    queue: row.job.queue.clone(),
                    ..QueueStats::default()
                });
            match row.job.state {
                JobState::Pending if row.job.run_at <= now => s.available += 1,
                JobState::Pending => s.scheduled += 1,
                JobState::Running => s.running += 1,
                JobState::Completed => s.completed += 1,
                JobState::Dead => s.dead += 1,
                JobState::Cancelled => s.cancelled += 1,
            }
        }
        Ok(by_queue.into_values().collect())
    }

    async fn prune(&self, req: PruneRequest) -> Result<u64> {
        req.validate()?;
        let cutoff = self.clock() - chrono::Duration::from_std(req.older_than).unwrap();
        let mut rows = self.rows();
        let before = rows.len();
        rows.retain(|_, r| {
            !(req.states.contains(&r.job.state)
                && r.job.finished_at.is_some_and(|f| f < cutoff)
                && req.queue.as_ref().is_none_or(|q| &r.job.queue == q))
        });
        Ok((before - rows.len()) as u64)
    }

    async fn wait_for_work(&self, queue: &str, timeout: Duration) {
        take_one(&self.panicking_waits).then(|| panic!("the wait's code panicked"));
        self.hub.wait(queue, timeout).await;
    }
}

const Q: &str = "work";

async fn push_n(q: &FakeQueue, n: usize, payload: serde_json::Value) -> Vec<JobId> {
    let jobs = (0..n)
        .map(|_| NewJob::new(Q, &payload).unwrap())
        .collect::<Vec<_>>();
    q.push_batch(jobs).await.unwrap()
}

/// Waits (in Tokio time) until `cond` holds; panics after `limit`.
async fn until(limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn noop() -> impl Fn(JobContext) -> futures::future::Ready<Result<(), JobError>> {
    |_ctx| futures::future::ready(Ok(()))
}

fn builder(q: &Arc<FakeQueue>) -> WorkerBuilder {
    let dyn_q: Arc<dyn Queue> = q.clone();
    Worker::builder(dyn_q, Q)
}

fn field_of(err: Error) -> String {
    match err {
        Error::InvalidInput { field, .. } => field,
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

#[tokio::test]
async fn builder_rejects_bad_input_naming_the_field() {
    let limits = Limits {
        max_pop: 100,
        max_batch: 200,
        ..Limits::default()
    };
    let q = FakeQueue::with_limits(limits);
    let b = || builder(&q).handler_fn(noop());
    let cases: Vec<(&str, WorkerBuilder)> = vec![
        ("queue", {
            let dyn_q: Arc<dyn Queue> = q.clone();
            Worker::builder(dyn_q, "bad name;").handler_fn(noop())
        }),
        ("queue", {
            let dyn_q: Arc<dyn Queue> = q.clone();
            Worker::builder(dyn_q, "").handler_fn(noop())
        }),
        ("concurrency", b().concurrency(0)),
        ("concurrency", b().concurrency(MAX_CONCURRENCY + 1)),
        ("prefetch", b().prefetch(0)),
        ("prefetch", b().prefetch(101)),
        ("pop_concurrency", b().pop_concurrency(0)),
        (
            "pop_concurrency",
            b().pop_concurrency(MAX_POP_CONCURRENCY + 1),
        ),
        ("lease", b().lease(Duration::from_millis(1))),
        ("lease", b().lease(Duration::from_secs(2 * 24 * 3600))),
        (
            "heartbeat",
            b().lease(Duration::from_secs(10))
                .heartbeat(Duration::from_secs(10)),
        ),
        ("heartbeat", b().heartbeat(Duration::ZERO)),
        (
            "poll_interval",
            b().poll_interval(Duration::ZERO, Duration::from_secs(1)),
        ),
        (
            "poll_interval",
            b().poll_interval(Duration::from_secs(2), Duration::from_secs(1)),
        ),
        (
            "poll_interval",
            b().poll_interval(Duration::from_secs(1), Duration::from_secs(7200)),
        ),
        ("rescue_interval", b().rescue_interval(Some(Duration::ZERO))),
        ("worker", b().worker_id("")),
        ("worker", b().worker_id("w".repeat(200))),
        ("ack_batch_size", b().ack_batch_size(0)),
        ("ack_batch_size", b().ack_batch_size(201)),
        (
            "shutdown_timeout",
            b().shutdown_timeout(Duration::from_secs(3 * 24 * 3600)),
        ),
        ("job_timeout", b().job_timeout(Some(Duration::ZERO))),
        ("handler", builder(&q)),
    ];
    for (field, b) in cases {
        assert_eq!(field_of(b.build().unwrap_err()), field);
    }
    // The defaults follow the queue's limits: prefetch is capped at max_pop.
    let w = b().concurrency(500).build().unwrap();
    assert_eq!(w.config.queues[0].prefetch, 100);
    assert_eq!(w.config.ack_batch, 200);
    assert_eq!(w.config.heartbeat, Duration::from_secs(10));
    assert!(b().prefetch(100).rescue_interval(None).build().is_ok());
}

#[tokio::test(start_paused = true)]
async fn completes_every_job_with_batched_acks() {
    let q = FakeQueue::new();
    *q.ack_latency.lock().unwrap() = Duration::from_millis(2);
    let ids = push_n(&q, 2000, json!({"n": 1})).await;
    let handle = builder(&q)
        .concurrency(64)
        .prefetch(64)
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(60), || counters.completed() == 2000).await;
    let report = handle.shutdown(Duration::from_secs(5)).await;
    assert_eq!(report.counters.completed, 2000);
    assert_eq!(report.counters.claimed, 2000);
    assert!(report.all_settled());
    for id in ids {
        let job = q.job(id);
        assert_eq!(job.state, JobState::Completed);
        assert_eq!(job.attempts, 1);
        assert!(job.lease_expires_at.is_none());
    }
    let sizes = q.ack_batch_sizes.lock().unwrap().clone();
    assert_eq!(sizes.iter().sum::<usize>(), 2000);
    assert!(
        sizes.len() <= 2000 / 10,
        "acks were not batched: {} ack_batch calls",
        sizes.len()
    );
    assert_eq!(q.calls.ack.load(Ordering::SeqCst), 0);
    assert_eq!(q.calls.fail.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completes_every_job_on_a_multi_threaded_runtime() {
    let q = FakeQueue::new();
    push_n(&q, 5000, json!(null)).await;
    let handle = builder(&q)
        .concurrency(32)
        .prefetch(50)
        .pop_concurrency(2)
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(30), || counters.completed() == 5000).await;
    let report = handle.shutdown(Duration::from_secs(5)).await;
    assert!(report.all_settled());
    assert_eq!(q.count(JobState::Completed), 5000);
    assert!(q.calls.ack_batch.load(Ordering::SeqCst) < 5000);
}

#[tokio::test(start_paused = true)]
async fn concurrency_limit_is_never_exceeded_and_pops_fit_free_capacity() {
    let q = FakeQueue::new();
    *q.pop_latency.lock().unwrap() = Duration::from_millis(3);
    push_n(&q, 300, json!({})).await;
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (r, p) = (running.clone(), peak.clone());
    let handle = builder(&q)
        .concurrency(7)
        .prefetch(5)
        .pop_concurrency(3)
        .handler_fn(move |_ctx| {
            let (r, p) = (r.clone(), p.clone());
            async move {
                let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(1 + fastrand::u64(0..20))).await;
                r.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(60), || counters.completed() == 300).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let peak = peak.load(Ordering::SeqCst);
    assert!(peak <= 7, "{peak} handlers ran at once");
    assert!(peak >= 5, "handlers did not run concurrently (peak {peak})");
    let pops_peak = q.calls.pops_peak.load(Ordering::SeqCst);
    assert!((2..=3).contains(&pops_peak), "{pops_peak} pops at once");
    let limits = q.pop_limits.lock().unwrap().clone();
    assert!(limits.iter().all(|&l| (1..=5).contains(&l)), "{limits:?}");
    assert_eq!(q.count(JobState::Completed), 300);
}

#[tokio::test(start_paused = true)]
async fn shutdown_finishes_quick_handlers_and_releases_overdue_ones() {
    let q = FakeQueue::new();
    let quick = push_n(&q, 3, json!({"ms": 500})).await;
    let slow = push_n(&q, 3, json!({"ms": 3_600_000})).await;
    let waiting = push_n(&q, 4, json!({"ms": 1})).await;
    let dropped = Arc::new(AtomicUsize::new(0));
    let d = dropped.clone();
    struct DropCount(Arc<AtomicUsize>);
    impl Drop for DropCount {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let handle = builder(&q)
        .concurrency(6)
        .handler_fn(move |ctx| {
            let guard = DropCount(d.clone());
            async move {
                let ms = ctx.job.payload_value()["ms"].as_u64().unwrap();
                tokio::time::sleep(Duration::from_millis(ms)).await;
                drop(guard);
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    // Six run (the first six pushed: equal priorities go by id); the other four wait in the
    // buffer (prefetch 6).
    until(Duration::from_secs(1), || counters.claimed() == 10).await;
    let report = handle.shutdown(Duration::from_secs(2)).await;
    assert_eq!(report.aborted, 3);
    assert_eq!(report.counters.completed, 3);
    assert_eq!(report.counters.released, 7, "3 stopped and 4 buffered");
    assert!(report.all_settled(), "{report:?}");
    // The aborted handlers' futures were dropped.
    assert_eq!(dropped.load(Ordering::SeqCst), 6);
    for id in quick {
        assert_eq!(q.job(id).state, JobState::Completed);
    }
    for id in slow.iter().chain(&waiting) {
        let job = q.job(*id);
        assert_eq!(job.state, JobState::Pending, "{id}");
        assert_eq!(job.attempts, 0, "a released attempt is not counted");
    }
    assert_eq!(q.count(JobState::Running), 0);
}

#[tokio::test(start_paused = true)]
async fn jobs_claimed_while_shutting_down_are_released_unstarted() {
    let q = FakeQueue::new();
    *q.pop_latency.lock().unwrap() = Duration::from_secs(1);
    let ids = push_n(&q, 8, json!({})).await;
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let handle = builder(&q)
        .concurrency(8)
        .handler_fn(move |_ctx| {
            r.fetch_add(1, Ordering::SeqCst);
            async { Ok(()) }
        })
        .build()
        .unwrap()
        .start();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        q.calls.pop.load(Ordering::SeqCst),
        1,
        "the pop is in flight"
    );
    let report = handle.shutdown(Duration::from_secs(10)).await;
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(report.counters.claimed, 8);
    assert_eq!(report.counters.released, 8);
    assert!(report.all_settled());
    for id in ids {
        let job = q.job(id);
        assert_eq!(job.state, JobState::Pending);
        assert_eq!(job.attempts, 0);
    }
    assert_eq!(
        q.calls.pop.load(Ordering::SeqCst),
        1,
        "no pop after shutdown"
    );
}

#[tokio::test(start_paused = true)]
async fn a_panicking_handler_becomes_a_failure_with_the_panic_message() {
    let q = FakeQueue::new();
    let a = q
        .push(NewJob::new(Q, &json!("async")).unwrap().max_attempts(1))
        .await
        .unwrap();
    let s = q
        .push(NewJob::new(Q, &json!("sync")).unwrap().max_attempts(1))
        .await
        .unwrap();
    let r = q
        .push(NewJob::new(Q, &json!("async")).unwrap().max_attempts(3))
        .await
        .unwrap();
    let handle = builder(&q)
        .handler_fn(|ctx| {
            if ctx.job.payload.get() == "\"sync\"" {
                panic!("sync boom {}", 7);
            }
            async move {
                tokio::task::yield_now().await;
                panic!("async boom {}", 42);
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.panicked() == 3).await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.dead, 2);
    assert_eq!(report.counters.retried, 1);
    let dead_async = q.job(a);
    assert_eq!(dead_async.state, JobState::Dead);
    assert!(dead_async
        .last_error
        .unwrap()
        .contains("panicked: async boom 42"));
    let dead_sync = q.job(s);
    assert_eq!(dead_sync.state, JobState::Dead);
    assert!(dead_sync.last_error.unwrap().contains("sync boom 7"));
    let retried = q.job(r);
    assert_eq!(retried.state, JobState::Pending);
    assert_eq!(retried.attempts, 1);
    assert!(retried.last_error.unwrap().contains("async boom 42"));
}

#[tokio::test(start_paused = true)]
async fn heartbeat_extends_the_lease_of_a_long_job() {
    let q = FakeQueue::new();
    let id = push_n(&q, 1, json!({})).await[0];
    let leases = Arc::new(Mutex::new(Vec::new()));
    let l = leases.clone();
    let handle = builder(&q)
        .lease(Duration::from_secs(1))
        .heartbeat(Duration::from_millis(300))
        // A rescuer that would take the job back if its lease ran out.
        .rescue_interval(Some(Duration::from_millis(100)))
        .handler_fn(move |ctx| {
            let l = l.clone();
            async move {
                l.lock().unwrap().push(ctx.lease());
                tokio::time::sleep(Duration::from_secs(5)).await;
                l.lock().unwrap().push(ctx.lease());
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.completed() == 1).await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.lease_lost, 0);
    assert_eq!(report.counters.rescued, 0);
    assert_eq!(q.job(id).state, JobState::Completed);
    assert_eq!(q.job(id).attempts, 1);
    let extends = q.calls.extend.load(Ordering::SeqCst);
    assert!(
        (10..=20).contains(&extends),
        "{extends} extensions in 5 s at 300 ms"
    );
    let leases = leases.lock().unwrap();
    assert_eq!(leases[0].token, leases[1].token);
    assert!(leases[1].expires_at > leases[0].expires_at + chrono::Duration::seconds(4));
}

#[tokio::test(start_paused = true)]
async fn a_job_that_finishes_quickly_is_never_extended() {
    let q = FakeQueue::new();
    push_n(&q, 20, json!({})).await;
    let handle = builder(&q)
        .lease(Duration::from_secs(1))
        .heartbeat(Duration::from_millis(300))
        .handler_fn(|_ctx| async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(())
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.completed() == 20).await;
    handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(q.calls.extend.load(Ordering::SeqCst), 0);
}

/// A handler whose drop is observable.
fn forever(
    dropped: Arc<AtomicBool>,
) -> impl Fn(JobContext) -> futures::future::BoxFuture<'static, Result<(), JobError>> {
    use futures::FutureExt;
    move |_ctx| {
        struct Flag(Arc<AtomicBool>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let flag = Flag(dropped.clone());
        async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop(flag);
            Ok(())
        }
        .boxed()
    }
}

#[tokio::test(start_paused = true)]
async fn a_lost_lease_stops_the_handler() {
    let q = FakeQueue::new();
    let id = push_n(&q, 1, json!({})).await[0];
    let dropped = Arc::new(AtomicBool::new(false));
    let handle = builder(&q)
        .lease(Duration::from_secs(1))
        .heartbeat(Duration::from_millis(300))
        .rescue_interval(None)
        .handler_fn(forever(dropped.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.claimed() == 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!dropped.load(Ordering::SeqCst));
    q.steal(id);
    until(Duration::from_secs(2), || counters.lease_lost() == 1).await;
    assert!(dropped.load(Ordering::SeqCst), "the handler was stopped");
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert!(report.all_settled());
    assert_eq!(report.counters.completed, 0);
    assert_eq!(report.counters.released, 0);
    // Nothing was written with the lost lease: the new holder still has the job.
    let job = q.job(id);
    assert_eq!(job.state, JobState::Running);
    assert_eq!(q.calls.fail.load(Ordering::SeqCst), 0);
    assert_eq!(q.calls.release.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_job_stops_its_handler() {
    let q = FakeQueue::new();
    let id = push_n(&q, 1, json!({})).await[0];
    let dropped = Arc::new(AtomicBool::new(false));
    let handle = builder(&q)
        .lease(Duration::from_secs(1))
        .heartbeat(Duration::from_millis(300))
        .handler_fn(forever(dropped.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.claimed() == 1).await;
    q.cancel(id).await.unwrap();
    until(Duration::from_secs(2), || counters.lease_lost() == 1).await;
    assert!(dropped.load(Ordering::SeqCst));
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert!(report.all_settled());
    assert_eq!(q.job(id).state, JobState::Cancelled);
}

#[derive(serde::Deserialize)]
struct Email {
    to: String,
}

#[tokio::test(start_paused = true)]
async fn typed_handlers_get_their_payload_and_a_mismatch_is_permanent() {
    let q = FakeQueue::new();
    let good = q
        .push(NewJob::new(Q, &json!({"to": "a@example.com"})).unwrap())
        .await
        .unwrap();
    let bad = q
        .push(
            NewJob::new(Q, &json!({"nope": 1}))
                .unwrap()
                .max_attempts(10),
        )
        .await
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let handle = builder(&q)
        .typed(move |email: Email, _ctx| {
            let s = s.clone();
            async move {
                s.lock().unwrap().push(email.to);
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || {
        counters.completed() == 1 && counters.dead() == 1
    })
    .await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.retried, 0);
    assert_eq!(*seen.lock().unwrap(), vec!["a@example.com".to_owned()]);
    assert_eq!(q.job(good).state, JobState::Completed);
    let bad = q.job(bad);
    assert_eq!(bad.state, JobState::Dead);
    assert_eq!(bad.attempts, 1);
    let msg = bad.last_error.unwrap();
    assert!(msg.contains("Email"), "{msg}");
    assert!(msg.contains("missing field `to`"), "{msg}");
}

#[tokio::test(start_paused = true)]
async fn handler_errors_map_to_failures() {
    let q = FakeQueue::new();
    let retry = q
        .push(NewJob::new(Q, &json!("retry")).unwrap().max_attempts(3))
        .await
        .unwrap();
    let later = q
        .push(NewJob::new(Q, &json!("later")).unwrap().max_attempts(3))
        .await
        .unwrap();
    let perm = q
        .push(NewJob::new(Q, &json!("perm")).unwrap().max_attempts(3))
        .await
        .unwrap();
    let io = q
        .push(NewJob::new(Q, &json!("io")).unwrap().max_attempts(3))
        .await
        .unwrap();
    let handle = builder(&q)
        .handler_fn(|ctx| async move {
            match ctx.payload::<String>()?.as_str() {
                "retry" => Err(JobError::retryable("flaky upstream")),
                "later" => Err(JobError::retry_after(
                    "rate limited",
                    Duration::from_secs(3600),
                )),
                "perm" => Err(JobError::permanent("no such account")),
                _ => {
                    std::fs::read("/nonexistent/definitely/not/here")?;
                    Ok(())
                }
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_millis(500), || {
        counters.retried() == 3 && counters.dead() == 1
    })
    .await;
    let before = q.clock();
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert!(report.all_settled());
    let job = q.job(retry);
    assert_eq!(job.state, JobState::Pending);
    assert_eq!(job.last_error.as_deref(), Some("flaky upstream"));
    let job = q.job(later);
    assert_eq!(job.state, JobState::Pending);
    assert!(job.run_at > before + chrono::Duration::minutes(59));
    let job = q.job(perm);
    assert_eq!(job.state, JobState::Dead);
    assert_eq!(job.attempts, 1);
    assert_eq!(job.last_error.as_deref(), Some("no such account"));
    let job = q.job(io);
    assert_eq!(job.state, JobState::Pending);
    assert!(job.last_error.unwrap().contains("No such file"));
}

#[tokio::test(start_paused = true)]
async fn pop_errors_back_off_and_recover() {
    let q = FakeQueue::new();
    q.failing_pops.store(4, Ordering::SeqCst);
    push_n(&q, 10, json!({})).await;
    let handle = builder(&q).handler_fn(noop()).build().unwrap().start();
    let counters = handle.counters();
    until(Duration::from_secs(30), || counters.completed() == 10).await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.pop_errors, 4);
    assert_eq!(q.count(JobState::Completed), 10);
}

/// A panic in code the worker's own tasks call (here the queue's pop, rescue and batch ack)
/// restarts the task; the worker goes on claiming, acknowledging and rescuing.
#[tokio::test(start_paused = true)]
async fn a_panicking_worker_task_is_started_again() {
    let q = FakeQueue::new();
    // A holder that died: its job must still be rescued after the rescuer panicked twice.
    push_n(&q, 1, json!({})).await;
    let dead = q
        .pop(PopRequest::new(Q).lease(Duration::from_millis(200)))
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    push_n(&q, 20, json!({})).await;
    q.panicking_pops.store(2, Ordering::SeqCst);
    q.panicking_rescues.store(2, Ordering::SeqCst);
    q.panicking_acks.store(1, Ordering::SeqCst);
    let handle = builder(&q)
        .rescue_interval(Some(Duration::from_millis(500)))
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(60), || {
        q.count(JobState::Completed) == 21 && counters.rescued() >= 1
    })
    .await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    let c = report.counters;
    // The rescuer panicked twice and was started again; a panicking claim is a failed claim;
    // a panicking ack leaves its jobs to be rescued and run again.
    assert_eq!(c.restarted, 2, "{c:?}");
    assert_eq!(c.pop_errors, 2, "{c:?}");
    assert!(c.abandoned >= 1, "{c:?}");
    assert!(c.rescued > c.abandoned, "{c:?}");
    assert_eq!(q.panicking_pops.load(Ordering::SeqCst), 0);
    assert_eq!(q.panicking_rescues.load(Ordering::SeqCst), 0);
    assert_eq!(q.panicking_acks.load(Ordering::SeqCst), 0);
}

/// The claim loop itself panicking (here in the queue's wait for work) is started again, and
/// the worker goes on claiming.
#[tokio::test(start_paused = true)]
async fn a_panicking_dispatcher_is_started_again() {
    let q = FakeQueue::new();
    q.panicking_waits.store(3, Ordering::SeqCst);
    let handle = builder(&q).handler_fn(noop()).build().unwrap().start();
    until(Duration::from_secs(30), || {
        q.panicking_waits.load(Ordering::SeqCst) == 0
    })
    .await;
    push_n(&q, 5, json!({})).await;
    let counters = handle.counters();
    until(Duration::from_secs(30), || counters.completed() == 5).await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.restarted, 3, "{:?}", report.counters);
    assert_eq!(q.count(JobState::Completed), 5);
}

#[tokio::test(start_paused = true)]
async fn an_idle_worker_does_not_spin_and_wakes_on_push() {
    let q = FakeQueue::new();
    let handle = builder(&q)
        .poll_interval(Duration::from_millis(50), Duration::from_secs(2))
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    tokio::time::sleep(Duration::from_secs(60)).await;
    let pops = q.calls.pop.load(Ordering::SeqCst);
    // 50 ms doubling to 2 s is about 35 pops in a minute; a hot loop would make thousands.
    assert!(pops <= 60, "{pops} pops in an idle minute");
    // Backed off to 2 s, yet a push wakes the worker at once.
    let start = tokio::time::Instant::now();
    push_n(&q, 1, json!({})).await;
    let counters = handle.counters();
    until(Duration::from_secs(5), || counters.completed() == 1).await;
    assert!(start.elapsed() < Duration::from_millis(500));
    handle.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test(start_paused = true)]
async fn the_rescuer_returns_expired_leases() {
    let q = FakeQueue::new();
    let id = push_n(&q, 1, json!({})).await[0];
    // A holder that died: it claimed the job and never finished it.
    let claimed = q
        .pop(PopRequest::new(Q).lease(Duration::from_millis(200)))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let handle = builder(&q)
        .rescue_interval(Some(Duration::from_millis(500)))
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(5), || counters.completed() == 1).await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.rescued, 1);
    let job = q.job(id);
    assert_eq!(job.state, JobState::Completed);
    assert_eq!(job.attempts, 2);
    // The dead holder's ack now reports the lost lease.
    assert!(matches!(
        q.ack(&claimed[0].lease).await,
        Err(Error::LeaseLost { .. })
    ));
}

#[tokio::test(start_paused = true)]
async fn acks_of_lost_leases_are_counted_not_fatal() {
    let q = FakeQueue::new();
    let ids = push_n(&q, 4, json!({})).await;
    let qq = q.clone();
    let handle = builder(&q)
        .rescue_interval(None)
        .handler_fn(move |ctx| {
            // Another holder takes over every job while its handler runs.
            qq.steal(ctx.id());
            async { Ok(()) }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.lease_lost() == 4).await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.completed, 0);
    assert!(report.all_settled());
    for id in ids {
        assert_eq!(q.job(id).state, JobState::Running);
    }
}

#[tokio::test(start_paused = true)]
async fn dropping_the_handle_shuts_down_in_the_background() {
    let q = FakeQueue::new();
    let id = push_n(&q, 1, json!({})).await[0];
    let dropped = Arc::new(AtomicBool::new(false));
    let handle = builder(&q)
        .shutdown_timeout(Duration::from_secs(1))
        .handler_fn(forever(dropped.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.claimed() == 1).await;
    drop(handle);
    until(Duration::from_secs(3), || counters.released() == 1).await;
    assert!(dropped.load(Ordering::SeqCst));
    assert_eq!(q.job(id).state, JobState::Pending);
}

#[tokio::test(start_paused = true)]
async fn run_until_stops_on_the_signal() {
    let q = FakeQueue::new();
    push_n(&q, 50, json!({})).await;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let qq = q.clone();
    let worker = builder(&q).handler_fn(noop()).build().unwrap();
    let run = tokio::spawn(worker.run_until(async move {
        let _ = rx.await;
    }));
    until(Duration::from_secs(5), || {
        qq.count(JobState::Completed) == 50
    })
    .await;
    tx.send(()).unwrap();
    let report = run.await.unwrap();
    assert_eq!(report.counters.completed, 50);
    assert!(report.all_settled());
}

#[tokio::test(start_paused = true)]
async fn the_context_carries_the_job_and_its_lease() {
    let q = FakeQueue::new();
    let id = q
        .push(NewJob::new(Q, &json!({"k": "v"})).unwrap().max_attempts(2))
        .await
        .unwrap();
    let seen = Arc::new(Mutex::new(None));
    let s = seen.clone();
    let handle = builder(&q)
        .handler_fn(move |ctx| {
            *s.lock().unwrap() = Some((
                ctx.id(),
                ctx.attempt(),
                ctx.is_last_attempt(),
                ctx.lease(),
                ctx.job.payload_value(),
            ));
            async { Ok(()) }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.completed() == 1).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let (jid, attempt, last, lease, payload) = seen.lock().unwrap().take().unwrap();
    assert_eq!(jid, id);
    assert_eq!(attempt, 1);
    assert!(!last);
    assert_eq!(lease.job_id, id);
    assert_eq!(lease.queue, Q);
    assert_eq!(payload, json!({"k": "v"}));
}

#[tokio::test(start_paused = true)]
async fn a_database_outage_loses_no_job() {
    let q = FakeQueue::new();
    let ids = push_n(&q, 30, json!({})).await;
    let gate = Arc::new(tokio::sync::Notify::new());
    let g = gate.clone();
    let handle = builder(&q)
        .concurrency(10)
        .prefetch(1)
        .lease(Duration::from_secs(2))
        .heartbeat(Duration::from_millis(500))
        .rescue_interval(Some(Duration::from_millis(500)))
        .handler_fn(move |_ctx| {
            let g = g.clone();
            async move {
                g.notified().await;
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    // Ten run and one waits in the buffer (prefetch 1).
    until(Duration::from_secs(1), || counters.claimed() == 11).await;
    // The database goes away while ten handlers run; they finish, but nothing can be recorded.
    q.down.store(true, Ordering::SeqCst);
    gate.notify_waiters();
    until(Duration::from_secs(10), || counters.abandoned() == 10).await;
    assert_eq!(q.count(JobState::Running), 11);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(counters.pop_errors() > 0);
    // Back up: the rescuer returns the abandoned jobs and every job completes.
    q.down.store(false, Ordering::SeqCst);
    let g = gate.clone();
    let opener = tokio::spawn(async move {
        loop {
            g.notify_waiters();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    until(Duration::from_secs(60), || {
        q.count(JobState::Completed) == 30
    })
    .await;
    opener.abort();
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert!(report.all_settled(), "{report:?}");
    assert!(report.counters.rescued >= 10);
    for id in ids {
        assert_eq!(q.job(id).state, JobState::Completed);
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_extension_is_retried_without_stopping_the_handler() {
    let q = FakeQueue::new();
    let id = push_n(&q, 1, json!({})).await[0];
    let qq = q.clone();
    let handle = builder(&q)
        .lease(Duration::from_secs(3))
        .heartbeat(Duration::from_secs(1))
        .rescue_interval(None)
        .handler_fn(move |_ctx| {
            let qq = qq.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(1100)).await;
                // The first extension (at 1 s) worked; the database drops out for a while.
                qq.down.store(true, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(1200)).await;
                qq.down.store(false, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(3)).await;
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.completed() == 1).await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.lease_lost, 0);
    assert_eq!(q.job(id).state, JobState::Completed);
    // At 1 s (ok), 2 s (down), 2.5 s (ok after the outage ended at 2.3 s), then every second.
    assert!(q.calls.extend.load(Ordering::SeqCst) >= 5);
}

#[tokio::test(start_paused = true)]
async fn shutdown_does_not_wait_past_the_deadline_for_a_hanging_pop() {
    let q = FakeQueue::new();
    *q.pop_latency.lock().unwrap() = Duration::from_secs(3600);
    push_n(&q, 5, json!({})).await;
    let handle = builder(&q).handler_fn(noop()).build().unwrap().start();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let report = handle.shutdown(Duration::from_secs(2)).await;
    assert!(report.elapsed < Duration::from_secs(3), "{report:?}");
    assert_eq!(report.counters.claimed, 0);
    assert_eq!(q.count(JobState::Pending), 5);
}

#[tokio::test(start_paused = true)]
async fn a_handler_past_its_timeout_is_stopped_and_retried() {
    let q = FakeQueue::new();
    let id = push_n(&q, 1, json!({})).await[0];
    let dropped = Arc::new(AtomicBool::new(false));
    let handle = builder(&q)
        .job_timeout(Some(Duration::from_secs(2)))
        .handler_fn(forever(dropped.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(3), || counters.retried() == 1).await;
    assert!(dropped.load(Ordering::SeqCst));
    handle.shutdown(Duration::from_secs(1)).await;
    let job = q.job(id);
    assert_eq!(job.state, JobState::Pending);
    assert!(job.last_error.unwrap().contains("timed out after 2s"));
}

#[tokio::test(start_paused = true)]
async fn a_buffered_job_is_released_when_the_worker_stops() {
    let q = FakeQueue::new();
    let ids = push_n(&q, 5, json!({})).await;
    let gate = Arc::new(tokio::sync::Notify::new());
    let g = gate.clone();
    let handle = builder(&q)
        .concurrency(2)
        .prefetch(3)
        .handler_fn(move |_ctx| {
            let g = g.clone();
            async move {
                g.notified().await;
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    // Two run, three wait in the buffer.
    until(Duration::from_secs(1), || counters.claimed() == 5).await;
    assert_eq!(q.count(JobState::Running), 5);
    let closer = tokio::spawn(async move {
        loop {
            gate.notify_waiters();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let report = handle.shutdown(Duration::from_secs(5)).await;
    closer.abort();
    assert!(report.all_settled(), "{report:?}");
    assert_eq!(
        report.counters.completed + report.counters.released,
        5,
        "{report:?}"
    );
    assert!(report.counters.released >= 1, "{report:?}");
    for id in ids {
        let job = q.job(id);
        assert!(
            job.state == JobState::Completed
                || (job.state == JobState::Pending && job.attempts == 0),
            "{job:?}"
        );
    }
    assert_eq!(q.count(JobState::Running), 0);
}

#[tokio::test(start_paused = true)]
async fn a_buffered_job_whose_lease_was_lost_is_never_run() {
    let q = FakeQueue::new();
    let first = push_n(&q, 1, json!({"hold": true})).await[0];
    let second = push_n(&q, 1, json!({"hold": false})).await[0];
    let gate = Arc::new(tokio::sync::Notify::new());
    let g = gate.clone();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let r = ran.clone();
    let handle = builder(&q)
        .concurrency(1)
        .prefetch(1)
        .lease(Duration::from_secs(2))
        .heartbeat(Duration::from_millis(500))
        .rescue_interval(None)
        .handler_fn(move |ctx| {
            let (g, r) = (g.clone(), r.clone());
            async move {
                r.lock().unwrap().push(ctx.job.id);
                if ctx.job.payload_value()["hold"] == json!(true) {
                    g.notified().await;
                }
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    // The first runs; the second waits in the buffer while its lease runs out.
    until(Duration::from_secs(1), || counters.claimed() == 2).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Someone rescues it and another worker takes it: the buffered lease is gone.
    assert_eq!(
        q.rescue_expired().await.unwrap(),
        1,
        "only the buffered job expired"
    );
    let other = q.pop(PopRequest::new(Q).worker("other")).await.unwrap();
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].job.id, second);
    gate.notify_waiters();
    until(Duration::from_secs(5), || counters.lease_lost() == 1).await;
    assert_eq!(
        *ran.lock().unwrap(),
        vec![first],
        "the job with a lost lease ran"
    );
    assert_eq!(q.job(second).state, JobState::Running);
    assert_eq!(q.job(second).worker.as_deref(), Some("other"));
    handle.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test(start_paused = true)]
async fn a_buffered_job_that_waited_long_is_extended_before_it_starts() {
    let q = FakeQueue::new();
    push_n(&q, 2, json!({})).await;
    let gate = Arc::new(tokio::sync::Notify::new());
    let g = gate.clone();
    let handle = builder(&q)
        .concurrency(1)
        .prefetch(1)
        .lease(Duration::from_secs(3))
        .heartbeat(Duration::from_secs(1))
        .rescue_interval(None)
        .handler_fn(move |_ctx| {
            let g = g.clone();
            async move {
                g.notified().await;
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.claimed() == 2).await;
    // The running job is kept alive by its heartbeat; the buffered one waits 1.9 s of its 3.
    tokio::time::sleep(Duration::from_millis(1900)).await;
    let extends_before = q.calls.extend.load(Ordering::SeqCst);
    gate.notify_one();
    until(Duration::from_secs(1), || {
        q.calls.extend.load(Ordering::SeqCst) > extends_before
    })
    .await;
    gate.notify_one();
    until(Duration::from_secs(5), || counters.completed() == 2).await;
    assert_eq!(counters.lease_lost(), 0);
    handle.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test(start_paused = true)]
async fn an_idle_worker_makes_at_most_one_claim_per_poll_interval() {
    let q = FakeQueue::new();
    let handle = builder(&q)
        .concurrency(16)
        .prefetch(1)
        .poll_interval(Duration::from_millis(100), Duration::from_millis(100))
        .rescue_interval(None)
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let pops = q.calls.pop.load(Ordering::SeqCst);
    // 10 s at one claim per jittered 80..120 ms interval: at most 126, never 16 at a time.
    assert!((80..=130).contains(&pops), "{pops} claims in 10 s");
    assert!(q.calls.pops_peak.load(Ordering::SeqCst) <= 1);
    handle.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test(start_paused = true)]
async fn prefetch_one_keeps_a_claim_in_flight_per_free_slot() {
    let q = FakeQueue::new();
    *q.pop_latency.lock().unwrap() = Duration::from_millis(5);
    push_n(&q, 400, json!({})).await;
    let handle = builder(&q)
        .concurrency(16)
        .prefetch(1)
        .rescue_interval(None)
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(60), || counters.completed() == 400).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let peak = q.calls.pops_peak.load(Ordering::SeqCst);
    assert!((8..=16).contains(&peak), "{peak} one-job claims at once");
    assert!(q.pop_limits.lock().unwrap().iter().all(|&l| l == 1));
    assert_eq!(q.count(JobState::Completed), 400);
}

/// An outage shorter than the leases' remaining time costs no re-run: the batch of
/// acknowledgements is tried again through it and lands once the database is back, so every
/// job completes on its first attempt and nothing is abandoned or rescued.
#[tokio::test(start_paused = true)]
async fn acknowledgements_wait_out_a_short_outage() {
    let q = FakeQueue::new();
    push_n(&q, 10, json!({})).await;
    let gate = Arc::new(tokio::sync::Notify::new());
    let g = gate.clone();
    let handle = builder(&q)
        .concurrency(10)
        .prefetch(1)
        .lease(Duration::from_secs(30))
        .rescue_interval(Some(Duration::from_millis(500)))
        .handler_fn(move |_ctx| {
            let g = g.clone();
            async move {
                g.notified().await;
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.claimed() == 10).await;
    q.down.store(true, Ordering::SeqCst);
    gate.notify_waiters();
    // Three seconds down: longer than the usual tries (0.7 s), well within the leases.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(counters.abandoned(), 0);
    q.down.store(false, Ordering::SeqCst);
    until(Duration::from_secs(10), || {
        q.count(JobState::Completed) == 10
    })
    .await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    let c = report.counters;
    assert_eq!((c.completed, c.abandoned, c.rescued), (10, 0, 0), "{c:?}");
    assert!(q.rows.lock().unwrap().values().all(|r| r.job.attempts == 1));
}

// -------------------------------------------------------------------------------------------
// Kinds, several queues, per-kind options, snooze, metadata, output.

#[derive(serde::Serialize, serde::Deserialize)]
struct Ping {
    n: u32,
}

impl crate::JobArgs for Ping {
    const KIND: &'static str = "ping";
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Slow;

impl crate::JobArgs for Slow {
    const KIND: &'static str = "slow";

    fn options() -> crate::KindOptions {
        crate::KindOptions::new()
            .queue("slow")
            .timeout(Duration::from_secs(2))
            .retry_policy(RetryPolicy {
                base: Duration::from_secs(100),
                factor: 1.0,
                max: Duration::from_secs(100),
                jitter: 0.0,
            })
    }
}

#[tokio::test]
async fn the_builder_checks_kinds_and_queues() {
    let q = FakeQueue::new();
    let b = || builder(&q).job(|_: Ping, _ctx| async { Ok(()) });
    let cases: Vec<(&str, WorkerBuilder)> = vec![
        ("queue", b().queue("bad name", 1)),
        ("queue", b().queue(Q, 3)),
        ("concurrency", b().queue("other", 0)),
        (
            "kind",
            b().kind_fn("bad kind", crate::KindOptions::new(), noop()),
        ),
        ("kind", b().job(|_: Ping, _ctx| async { Ok(()) })),
        (
            "kinds[x].timeout",
            b().kind_fn(
                "x",
                crate::KindOptions::new().timeout(Duration::ZERO),
                noop(),
            ),
        ),
        (
            "kinds[x].max_snoozes",
            b().kind_fn("x", crate::KindOptions::new().max_snoozes(0), noop()),
        ),
        ("max_snoozes", b().max_snoozes(0)),
    ];
    for (field, b) in cases {
        assert_eq!(field_of(b.build().unwrap_err()), field);
    }
    let w = b().queue("slow", 3).handler_fn(noop()).build().unwrap();
    assert_eq!(w.queues(), vec![(Q, 10), ("slow", 3)]);
    assert_eq!(w.kinds(), vec!["ping"]);
}

#[tokio::test(start_paused = true)]
async fn jobs_go_to_the_handler_of_their_kind_and_the_rest_to_the_default() {
    let q = FakeQueue::new();
    let typed = q
        .push(NewJob::of(&Ping { n: 7 }).unwrap().with_queue(Q))
        .await
        .unwrap();
    let plain = push_n(&q, 1, json!({"plain": true})).await[0];
    let other = q
        .push(NewJob::new(Q, &json!({})).unwrap().kind("other"))
        .await
        .unwrap();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (s1, s2) = (seen.clone(), seen.clone());
    let handle = builder(&q)
        .job(move |p: Ping, ctx: JobContext| {
            let s = s1.clone();
            async move {
                assert_eq!(ctx.kind(), Some("ping"));
                s.lock().unwrap().push(format!("ping {}", p.n));
                Ok(())
            }
        })
        .handler_fn(move |ctx: JobContext| {
            let s = s2.clone();
            async move {
                s.lock().unwrap().push(format!("default {:?}", ctx.kind()));
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.completed() == 3).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(
        seen,
        vec!["default None", "default Some(\"other\")", "ping 7"]
    );
    for id in [typed, plain, other] {
        assert_eq!(q.job(id).state, JobState::Completed);
    }
}

#[tokio::test(start_paused = true)]
async fn a_kind_without_a_handler_fails_by_the_retry_policy_naming_it() {
    let q = FakeQueue::new();
    let id = q
        .push(NewJob::new(Q, &json!({})).unwrap().kind("unknown.kind"))
        .await
        .unwrap();
    let bare = push_n(&q, 1, json!({})).await[0];
    let handle = builder(&q)
        .job(|_: Ping, _ctx| async { Ok(()) })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.retried() == 2).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let job = q.job(id);
    assert_eq!(job.state, JobState::Pending);
    assert_eq!(job.attempts, 1);
    let error = job.last_error.unwrap();
    assert!(
        error.contains("\"unknown.kind\"") && error.contains("ping"),
        "{error}"
    );
    assert!(job.run_at > q.clock(), "retried later, not at once");
    assert!(q.job(bare).last_error.unwrap().contains("no kind"));
}

#[tokio::test(start_paused = true)]
async fn each_queue_keeps_its_own_concurrency() {
    let q = FakeQueue::new();
    let mut jobs = Vec::new();
    for i in 0..40u32 {
        let queue = if i % 2 == 0 { Q } else { "other" };
        jobs.push(NewJob::of(&Ping { n: i }).unwrap().with_queue(queue));
    }
    q.push_batch(jobs).await.unwrap();
    let running: Arc<Mutex<HashMap<String, (usize, usize)>>> = Arc::default();
    let r = running.clone();
    let handle = builder(&q)
        .concurrency(2)
        .queue("other", 5)
        .job(move |_: Ping, ctx: JobContext| {
            let r = r.clone();
            async move {
                let queue = ctx.job.queue.clone();
                {
                    let mut m = r.lock().unwrap();
                    let e = m.entry(queue.clone()).or_default();
                    e.0 += 1;
                    e.1 = e.1.max(e.0);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                r.lock().unwrap().get_mut(&queue).unwrap().0 -= 1;
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(30), || counters.completed() == 40).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let m = running.lock().unwrap();
    assert_eq!(m[Q].1, 2, "peak of {Q}");
    assert_eq!(m["other"].1, 5, "peak of other");
}

#[tokio::test(start_paused = true)]
async fn timeouts_come_from_the_job_then_its_kind_then_the_worker() {
    let q = FakeQueue::new();
    // The kind's timeout (2 s), applied by the worker (not stored with the job), and its own
    // backoff (100 s).
    let by_kind = q.push(NewJob::of(&Slow).unwrap()).await.unwrap();
    assert_eq!(q.job(by_kind).timeout, None);
    // The job's own timeout (4 s) overrides the kind's, though it is longer.
    let by_job = q
        .push(NewJob::of(&Slow).unwrap().timeout(Duration::from_secs(4)))
        .await
        .unwrap();
    // No kind: the worker's timeout (3 s).
    let plain = q
        .push(NewJob::new("slow", &json!({})).unwrap())
        .await
        .unwrap();
    let dropped = Arc::new(AtomicBool::new(false));
    let started = tokio::time::Instant::now();
    let handle = builder(&q)
        .queue("slow", 5)
        .job_timeout(Some(Duration::from_secs(3)))
        .job(|_: Slow, _ctx| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        })
        .handler_fn(forever(dropped.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.retried() == 3).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let error = |id| q.job(id).last_error.unwrap();
    assert!(
        error(by_kind).contains("timed out after 2s"),
        "{}",
        error(by_kind)
    );
    assert!(
        error(by_job).contains("timed out after 4s"),
        "{}",
        error(by_job)
    );
    assert!(
        error(plain).contains("timed out after 3s"),
        "{}",
        error(plain)
    );
    // The kind's retry policy set the kind's jobs' backoff; the plain job took the queue's.
    let after = |id| (q.job(id).run_at - q.epoch.0).to_std().unwrap();
    assert!(
        after(by_kind) >= Duration::from_secs(100),
        "{:?}",
        after(by_kind)
    );
    assert!(
        after(plain) < Duration::from_secs(100),
        "{:?}",
        after(plain)
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn a_snooze_gives_the_attempt_back_until_its_bound() {
    let q = FakeQueue::new();
    let id = q
        .push(
            NewJob::of(&Ping { n: 0 })
                .unwrap()
                .with_queue(Q)
                .max_attempts(1),
        )
        .await
        .unwrap();
    let handle = builder(&q)
        .max_snoozes(3)
        .job(|_: Ping, _ctx| async { Err(JobError::snooze(Duration::from_millis(100))) })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.dead() == 1).await;
    handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(counters.snoozed(), 3);
    let job = q.job(id);
    assert_eq!(job.snoozes, 3);
    assert_eq!(
        job.attempts, 1,
        "snoozes spend no attempt; the fourth one is a failure"
    );
    assert_eq!(job.state, JobState::Dead);
    assert!(job.last_error.unwrap().contains("snoozed"));
}

#[tokio::test(start_paused = true)]
async fn output_and_metadata_reach_the_queue() {
    let limits = Limits {
        max_output_bytes: 64,
        ..Limits::default()
    };
    let q = FakeQueue::with_limits(limits);
    let id = q
        .push(
            NewJob::of(&Ping { n: 1 })
                .unwrap()
                .with_queue(Q)
                .meta(&json!({"a": 1, "b": {"c": 2}}))
                .unwrap(),
        )
        .await
        .unwrap();
    let handle = builder(&q)
        .job(|_: Ping, ctx: JobContext| async move {
            assert_eq!(ctx.job.meta_value(), json!({"a": 1, "b": {"c": 2}}));
            let merged = ctx.merge_meta(json!({"b": {"c": null, "d": 3}})).await?;
            assert_eq!(merged, json!({"a": 1, "b": {"d": 3}}));
            let too_big = ctx.record_output(&"x".repeat(100)).unwrap_err();
            assert!(
                too_big.is_permanent() && too_big.message().contains("output"),
                "{too_big}"
            );
            ctx.record_output(&json!({"sent": true}))?;
            Ok(())
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.completed() == 1).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let job = q.job(id);
    assert_eq!(job.state, JobState::Completed);
    assert_eq!(
        job.output::<serde_json::Value>().unwrap(),
        Some(json!({"sent": true}))
    );
    assert_eq!(job.meta_value(), json!({"a": 1, "b": {"d": 3}}));
    assert_eq!(
        q.calls.ack_batch.load(Ordering::SeqCst),
        0,
        "a job with output is not batched"
    );
}
