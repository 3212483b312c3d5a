//! Lifecycle events of the jobs a worker runs: a bounded broadcast that never holds the worker
//! back. A subscriber that falls behind loses the oldest events and is told how many
//! ([`EventItem::Lagged`]); with no subscriber an event is not even built.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use tokio::sync::broadcast;

use crate::job::{JobId, Lease};

/// How many events a subscriber may fall behind by default before it loses the oldest.
pub const DEFAULT_EVENT_CAPACITY: usize = 1_024;
/// The largest [`super::WorkerBuilder::event_capacity`].
pub const MAX_EVENT_CAPACITY: usize = 1 << 20;

/// What happened to a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transition {
    /// Its handler started.
    Started,
    /// Its handler succeeded and the job was handed to the database as completed (as the
    /// `dbqueue_jobs_completed_total` metric counts it: completions are acknowledged in
    /// batches, and a lease found lost at that point is counted, not reported per job).
    Completed,
    /// The attempt failed and another is scheduled after `retry_in`.
    Failed {
        /// The delay before the next attempt.
        retry_in: Duration,
    },
    /// The attempt failed for good (a permanent error, or the attempts are used up).
    Dead,
    /// The handler snoozed the job: it runs again after `delay`, its attempt not spent.
    Snoozed {
        /// How long the job waits.
        delay: Duration,
    },
    /// The job was cancelled while this worker held it; its outcome was not recorded.
    Cancelled,
    /// The lease was lost (expired and taken back, or released by someone else); the job is
    /// someone else's now and this worker's outcome was not recorded.
    LeaseLost,
}

/// One event of a job's life in a worker.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobEvent {
    /// What happened.
    pub transition: Transition,
    /// The job.
    pub id: JobId,
    /// Its queue.
    pub queue: String,
    /// Its kind, if it has one.
    pub kind: Option<String>,
    /// The attempt (1 for the first claim).
    pub attempt: u32,
    /// How long the handler ran; `None` for [`Transition::Started`] and for a job whose lease
    /// was lost before its handler started.
    pub duration: Option<Duration>,
    /// The failure's message, or why the lease is gone; `None` otherwise.
    pub error: Option<String>,
}

impl JobEvent {
    pub(crate) fn new(
        transition: Transition,
        lease: &Lease,
        kind: Option<&str>,
        duration: Option<Duration>,
        error: Option<String>,
    ) -> Self {
        JobEvent {
            transition,
            id: lease.job_id,
            queue: lease.queue.clone(),
            kind: kind.map(str::to_owned),
            attempt: lease.attempt,
            duration,
            error,
        }
    }
}

/// What a subscription yields: an event, or how many it missed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventItem {
    /// The next event.
    Event(JobEvent),
    /// The subscriber fell this many events behind and lost them (the oldest first); the
    /// next item is the oldest event still kept.
    Lagged(u64),
}

/// The sending side, shared by a worker's tasks.
#[derive(Clone, Debug)]
pub(crate) struct EventHub {
    tx: broadcast::Sender<JobEvent>,
    /// Live subscriptions: with none, nothing is built or sent.
    subscribers: Arc<AtomicUsize>,
}

impl EventHub {
    pub(crate) fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(capacity.max(1));
        EventHub {
            tx,
            subscribers: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A new subscription, which sees the events sent from now on.
    pub(crate) fn subscribe(&self) -> Events {
        self.subscribers.fetch_add(1, Ordering::SeqCst);
        Events {
            rx: self.tx.subscribe(),
            subscribers: self.subscribers.clone(),
        }
    }

    /// Sends the event `make` builds, if anyone listens. Never waits.
    pub(crate) fn emit(&self, make: impl FnOnce() -> JobEvent) {
        if self.subscribers.load(Ordering::Relaxed) == 0 {
            return;
        }
        let _ = self.tx.send(make());
    }
}

/// A subscription to a worker's job events ([`super::Worker::events`],
/// [`super::WorkerHandle::events`]). It keeps at most the worker's `event_capacity` events
/// it has not read; beyond that it loses the oldest, and [`Events::recv`] says how many.
#[derive(Debug)]
pub struct Events {
    rx: broadcast::Receiver<JobEvent>,
    subscribers: Arc<AtomicUsize>,
}

impl Events {
    /// The next item; `None` once the worker has stopped and every event was read.
    pub async fn recv(&mut self) -> Option<EventItem> {
        match self.rx.recv().await {
            Ok(event) => Some(EventItem::Event(event)),
            Err(broadcast::error::RecvError::Lagged(n)) => Some(EventItem::Lagged(n)),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// The next item if one is there now.
    pub fn try_recv(&mut self) -> Option<EventItem> {
        match self.rx.try_recv() {
            Ok(event) => Some(EventItem::Event(event)),
            Err(broadcast::error::TryRecvError::Lagged(n)) => Some(EventItem::Lagged(n)),
            Err(_) => None,
        }
    }

    /// The subscription as a stream of items, ending when the worker has stopped.
    pub fn into_stream(self) -> impl Stream<Item = EventItem> + Send + 'static {
        futures::stream::unfold(self, |mut events| async move {
            let item = events.recv().await?;
            Some((item, events))
        })
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        self.subscribers.fetch_sub(1, Ordering::SeqCst);
    }
}
