//! Single pushes that arrive together are written together.
//!
//! SQLite has one writer, and each autocommit `INSERT` is a write transaction of its own: a
//! commit, and a hop to the writer connection's thread and back. Single pushes from many tasks
//! queue up behind each other on that one connection. Here a push outside a transaction joins a
//! queue; whichever jobs are waiting when the writer is free go in one multi-row `INSERT` (one
//! statement, one commit), and each push returns once its row is committed. A push that finds
//! the writer free goes at once: nothing waits for company.
//!
//! Each push keeps its own outcome: when the shared statement fails (a live dedup key taken,
//! two pushes of one key in the same group), every job of the group is inserted again on its
//! own, so the failure lands on the push that caused it and the others are stored.
//!
//! The writes run in a task of their own, so a caller that gives up waiting (its future
//! dropped) leaves the others unharmed; its job may or may not be stored, as with any push
//! whose caller stops waiting.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use queue_core::NewJob;
use sqlx::{SqlStr, SqlitePool};
use tokio::sync::oneshot;

/// Most jobs written by one statement (SQLite's bound-parameter limit allows 3,640).
const GROUP: usize = 500;

type Reply = oneshot::Sender<Result<(), sqlx::Error>>;

struct Waiting {
    job: NewJob,
    delay: Duration,
    reply: Reply,
}

#[derive(Default)]
struct State {
    queue: Vec<Waiting>,
    /// A task is writing the queue out.
    writing: bool,
}

/// The queue of single pushes waiting for the writer.
pub(crate) struct Coalescer {
    writer: SqlitePool,
    /// The driver's `job_insert` statement.
    job_insert: SqlStr,
    state: Mutex<State>,
}

impl std::fmt::Debug for Coalescer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coalescer").finish_non_exhaustive()
    }
}

impl Coalescer {
    pub(crate) fn new(writer: SqlitePool, job_insert: SqlStr) -> Arc<Self> {
        Arc::new(Coalescer {
            writer,
            job_insert,
            state: Mutex::new(State::default()),
        })
    }

    /// Stores `job` (due `delay` after now); returns once it is committed.
    pub(crate) async fn push(
        self: &Arc<Self>,
        job: NewJob,
        delay: Duration,
    ) -> Result<(), sqlx::Error> {
        let (reply, done) = oneshot::channel();
        let start = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.queue.push(Waiting { job, delay, reply });
            !std::mem::replace(&mut state.writing, true)
        };
        if start {
            let this = self.clone();
            tokio::spawn(async move { this.write_out().await });
        }
        done.await
            .unwrap_or_else(|_| Err(sqlx::Error::WorkerCrashed))
    }

    /// Writes groups until the queue is empty.
    async fn write_out(&self) {
        loop {
            let group: Vec<Waiting> = {
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                if state.queue.is_empty() {
                    state.writing = false;
                    return;
                }
                let n = state.queue.len().min(GROUP);
                state.queue.drain(..n).collect()
            };
            self.write(group).await;
        }
    }

    async fn write(&self, group: Vec<Waiting>) {
        let mut jobs = Vec::with_capacity(group.len());
        let mut delays = Vec::with_capacity(group.len());
        let mut replies = Vec::with_capacity(group.len());
        for w in group {
            jobs.push(w.job);
            delays.push(w.delay);
            replies.push(w.reply);
        }
        match self.insert(&jobs, &delays).await {
            Ok(()) => {
                for reply in replies {
                    let _ = reply.send(Ok(()));
                }
            }
            Err(e) if replies.len() == 1 => {
                let _ = replies.pop().expect("one push").send(Err(e));
            }
            // Each on its own: the failure goes to the push that caused it.
            Err(_) => {
                for (i, reply) in replies.into_iter().enumerate() {
                    let alone = self.insert(&jobs[i..=i], &delays[i..=i]).await;
                    let _ = reply.send(alone);
                }
            }
        }
    }

    async fn insert(&self, jobs: &[NewJob], delays: &[Duration]) -> Result<(), sqlx::Error> {
        let mut conn = self.writer.acquire().await?;
        crate::driver::insert_rows(
            &self.job_insert,
            &mut conn,
            jobs,
            delays,
            crate::driver::rows::now_micros(),
        )
        .await
    }
}
