//! The catalogue catches broken backends: each case below is run against SQLite behind a
//! wrapper that breaks one rule, and must fail; the same case must pass without the fault.
#![cfg(feature = "sqlite")]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use conformance_tests::cases;
use conformance_tests::{run_on, Discovery, Fixture, Harness, Server, TestConfig};
use queue_core::{
    Capabilities, CheckedPop, ClaimStrategy, FailOutcome, Failure, FailureKind, Job, JobId, Lease,
    Leased, ListRequest, NewJob, PruneRequest, Queue, QueueStats,
};
use queue_sqlite::SqliteQueue;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    None,
    AckIsNoop,
    ReleaseCountsAttempt,
    CancelIsNoop,
    BatchNotAtomic,
    PopDeliversTwice,
    RescueIsNoop,
    ExtendIsNoop,
    FailIgnoresBackoff,
    ReleaseKeepsWorker,
    KeysIgnoreTrailingSpaces,
}

struct Faulty {
    inner: SqliteQueue,
    fault: Fault,
}

#[async_trait]
impl Queue for Faulty {
    fn capabilities(&self) -> &Capabilities {
        self.inner.capabilities()
    }
    async fn migrate(&self) -> queue_core::Result<()> {
        self.inner.migrate().await
    }
    async fn push(&self, job: NewJob) -> queue_core::Result<JobId> {
        if self.fault == Fault::KeysIgnoreTrailingSpaces {
            if let Some(key) = job.dedup_key_value() {
                let trimmed = key.trim_end().to_owned();
                if trimmed != key {
                    let job = job.dedup_key(trimmed);
                    return self.inner.push(job).await;
                }
            }
        }
        self.inner.push(job).await
    }
    async fn push_batch(&self, jobs: Vec<NewJob>) -> queue_core::Result<Vec<JobId>> {
        if self.fault == Fault::BatchNotAtomic {
            let mut ids = Vec::new();
            for j in jobs {
                ids.push(self.inner.push(j).await?);
            }
            return Ok(ids);
        }
        self.inner.push_batch(jobs).await
    }
    async fn pop_checked(&self, req: &CheckedPop) -> queue_core::Result<Vec<Leased>> {
        let mut got = self.inner.pop_checked(req).await?;
        if self.fault == Fault::PopDeliversTwice {
            let again = got.clone();
            got.extend(again);
        }
        Ok(got)
    }
    async fn ack(&self, lease: &Lease) -> queue_core::Result<()> {
        if self.fault == Fault::AckIsNoop {
            return Ok(());
        }
        self.inner.ack(lease).await
    }
    async fn ack_batch(&self, leases: &[Lease]) -> queue_core::Result<u64> {
        self.inner.ack_batch(leases).await
    }
    async fn fail(&self, lease: &Lease, failure: Failure) -> queue_core::Result<FailOutcome> {
        if self.fault == Fault::FailIgnoresBackoff && failure.kind == FailureKind::Retryable {
            return self
                .inner
                .fail(lease, Failure::retry_after(failure.message, Duration::ZERO))
                .await;
        }
        self.inner.fail(lease, failure).await
    }
    async fn extend(&self, lease: &Lease, by: Duration) -> queue_core::Result<Lease> {
        if self.fault == Fault::ExtendIsNoop {
            let mut l = lease.clone();
            l.expires_at = self.inner.now().await? + chrono::Duration::from_std(by).unwrap();
            return Ok(l);
        }
        self.inner.extend(lease, by).await
    }
    async fn release(&self, lease: &Lease) -> queue_core::Result<()> {
        if self.fault == Fault::ReleaseCountsAttempt {
            return self
                .inner
                .fail(lease, Failure::retry_after("released", Duration::ZERO))
                .await
                .map(|_| ());
        }
        self.inner.release(lease).await?;
        if self.fault == Fault::ReleaseKeepsWorker {
            sqlx::query("UPDATE queue_jobs SET worker = 'the-old-holder' WHERE id = ?")
                .bind(lease.job_id.0)
                .execute(self.inner.writer_pool())
                .await
                .map_err(queue_core::Error::database)?;
        }
        Ok(())
    }
    async fn rescue_expired(&self) -> queue_core::Result<u64> {
        if self.fault == Fault::RescueIsNoop {
            return Ok(0);
        }
        self.inner.rescue_expired().await
    }
    async fn cancel(&self, id: JobId) -> queue_core::Result<()> {
        if self.fault == Fault::CancelIsNoop {
            return Ok(());
        }
        self.inner.cancel(id).await
    }
    async fn retry(&self, id: JobId) -> queue_core::Result<()> {
        self.inner.retry(id).await
    }
    async fn get(&self, id: JobId) -> queue_core::Result<Option<Job>> {
        self.inner.get(id).await
    }
    async fn list(&self, req: ListRequest) -> queue_core::Result<Vec<Job>> {
        self.inner.list(req).await
    }
    async fn stats(&self, queue: Option<&str>) -> queue_core::Result<Vec<QueueStats>> {
        self.inner.stats(queue).await
    }
    async fn prune(&self, req: PruneRequest) -> queue_core::Result<u64> {
        self.inner.prune(req).await
    }
    async fn wait_for_work(&self, queue: &str, timeout: Duration) {
        self.inner.wait_for_work(queue, timeout).await
    }
    async fn now(&self) -> queue_core::Result<DateTime<Utc>> {
        self.inner.now().await
    }
}

struct FaultyHarness(Fault);

async fn connect(path: &str, config: &TestConfig) -> queue_core::Result<SqliteQueue> {
    SqliteQueue::builder(path)
        .claim_strategy(config.claim)
        .retry_policy(config.retry.clone())
        .limits(config.limits.clone())
        .keep_completed_jobs(config.keep_completed)
        .connect()
        .await
}

#[async_trait]
impl Harness for FaultyHarness {
    fn backend(&self) -> &'static str {
        "sqlite"
    }
    fn claim(&self) -> ClaimStrategy {
        ClaimStrategy::WriteLock
    }
    async fn servers(&self) -> Discovery {
        Discovery::Servers(vec![Server::new("temporary file", "")])
    }
    async fn fixture(
        &self,
        _server: &Server,
        config: &TestConfig,
        migrate: bool,
    ) -> anyhow::Result<Box<dyn Fixture>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("queue.db").to_string_lossy().into_owned();
        let inner = connect(&path, config).await?;
        if migrate {
            inner.migrate().await?;
        }
        Ok(Box::new(FaultyFixture {
            inner,
            fault: self.0,
            path,
            config: config.clone(),
            _dir: dir,
        }))
    }
    async fn unreachable(&self, config: &TestConfig) -> queue_core::Result<Option<Arc<dyn Queue>>> {
        Ok(Some(Arc::new(
            connect("/nonexistent-dir/q.db", config).await?,
        )))
    }
}

struct FaultyFixture {
    inner: SqliteQueue,
    fault: Fault,
    path: String,
    config: TestConfig,
    _dir: tempfile::TempDir,
}

#[async_trait]
impl Fixture for FaultyFixture {
    fn queue(&self) -> Arc<dyn Queue> {
        Arc::new(Faulty {
            inner: self.inner.clone(),
            fault: self.fault,
        })
    }
    async fn another(&self) -> anyhow::Result<Arc<dyn Queue>> {
        Ok(Arc::new(Faulty {
            inner: connect(&self.path, &self.config).await?,
            fault: self.fault,
        }))
    }
    async fn teardown(&self) -> anyhow::Result<()> {
        self.inner.close().await;
        Ok(())
    }
}

macro_rules! catches {
    ($($test:ident: $fault:ident => $module:ident::$case:ident;)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                let server = Server::new("temporary file", "");
                let case = cases::$module::$case;
                run_on(Arc::new(FaultyHarness(Fault::None)), &server, stringify!($case), &case)
                    .await
                    .expect("the case passes on a correct backend");
                let caught = run_on(Arc::new(FaultyHarness(Fault::$fault)), &server, stringify!($case), &case).await;
                match caught {
                    Err(e) => println!("{} caught {:?}: {e:#}", stringify!($case), Fault::$fault),
                    Ok(()) => panic!("{} passed although the backend has the fault {:?}", stringify!($case), Fault::$fault),
                }
            }
        )*
    };
}

catches! {
    ack_that_stores_nothing: AckIsNoop => lifecycle::ack_completes_and_never_returns;
    release_that_counts_the_attempt: ReleaseCountsAttempt => lifecycle::release_does_not_consume_attempt;
    cancel_that_stores_nothing: CancelIsNoop => lifecycle::cancel_pending;
    batch_that_is_not_atomic: BatchNotAtomic => dedup::batch_with_dedup_clash_stores_nothing;
    invalid_batch_that_is_not_atomic: BatchNotAtomic => dedup::batch_with_invalid_job_stores_nothing;
    pop_that_delivers_twice: PopDeliversTwice => concurrency::concurrent_poppers_exactly_once;
    rescue_that_does_nothing: RescueIsNoop => leases::expired_lease_rescued_and_redelivered;
    extend_that_stores_nothing: ExtendIsNoop => leases::extend_prevents_rescue;
    fail_that_ignores_the_backoff: FailIgnoresBackoff => lifecycle::fail_reschedules_by_backoff;
    worker_on_a_release_that_counts: ReleaseCountsAttempt => worker::worker_graceful_shutdown_loses_nothing;
    release_that_keeps_the_worker: ReleaseKeepsWorker => lifecycle::worker_is_cleared_when_back_to_pending;
    keys_that_ignore_trailing_spaces: KeysIgnoreTrailingSpaces => dedup::dedup_keys_compare_byte_for_byte;
}
