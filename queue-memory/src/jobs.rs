//! The jobs table: one [`JobRow`] per job, by id, and the indexes the statements read, kept
//! with every write so that no statement on the claim path scans the table.
//!
//! | index | holds | the SQL dialects' counterpart |
//! |---|---|---|
//! | `rows` | every job, by id (ids are time-ordered: newest last) | the primary key |
//! | [`QueueJobs::pending`] | pending jobs of a queue in claim order | the claim index (partial: pending) |
//! | [`QueueJobs::keyed`], [`QueueJobs::unkeyed`] | the same, split by concurrency key | the index of keyed pending jobs |
//! | [`QueueJobs::running`], `leases` | running jobs by lease expiry, per queue and overall | the lease index |
//! | `finished` | finished jobs by finish time | the prune index |
//! | `dedup` | the live job of each `(queue, dedup key)` | the unique dedup index |
//! | `unique` | the job holding each unique key | the partial unique index of unique jobs |
//!
//! Only [`crate::tables::Writer`] changes the table, through [`JobTable::insert`],
//! [`JobTable::put`], [`JobTable::remove`] and [`JobTable::restore`]; the unique indexes
//! refuse a row before anything changes.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use chrono::{DateTime, Utc};
use queue_core::unique::state_bit;
use queue_core::{AttemptError, Job, JobId, JobState, Lease, Leased};
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::error::MemoryError;

/// One job, with every column the SQL dialects store.
#[derive(Clone, Debug)]
pub(crate) struct JobRow {
    pub(crate) id: JobId,
    pub(crate) queue: String,
    pub(crate) payload: Box<RawValue>,
    pub(crate) priority: i32,
    pub(crate) state: JobState,
    pub(crate) attempts: u32,
    pub(crate) max_attempts: u32,
    pub(crate) run_at: DateTime<Utc>,
    pub(crate) lease_token: Option<Uuid>,
    pub(crate) lease_expires_at: Option<DateTime<Utc>>,
    pub(crate) worker: Option<String>,
    pub(crate) last_error: Option<String>,
    pub(crate) dedup_key: Option<String>,
    /// Changes at every write of the row; the optimistic claim and the metadata merge compare it.
    pub(crate) version: i64,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) updated_at: DateTime<Utc>,
    pub(crate) finished_at: Option<DateTime<Utc>>,
    pub(crate) kind: Option<String>,
    pub(crate) meta: Option<Box<RawValue>>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) snoozes: u32,
    /// The newest failures, oldest first.
    pub(crate) errors: Vec<AttemptError>,
    pub(crate) output: Option<Box<RawValue>>,
    /// The unique key and the states (as bits) in which the job holds it.
    pub(crate) unique: Option<([u8; 32], i16)>,
    pub(crate) concurrency_key: Option<String>,
    /// The workflow the job is a step of.
    pub(crate) workflow: Option<queue_core::WorkflowId>,
    /// The failed dependency that cancelled it.
    pub(crate) blocked_by: Option<JobId>,
}

impl JobRow {
    /// Whether the row is in the dedup index: live, with a dedup key.
    fn dedup_entry(&self) -> Option<(&str, &str)> {
        match self.state {
            JobState::Pending | JobState::Running => {
                self.dedup_key.as_deref().map(|k| (self.queue.as_str(), k))
            }
            _ => None,
        }
    }

    /// Whether the row is in the unique index: its state is one of its own unique states.
    pub(crate) fn unique_entry(&self) -> Option<&[u8; 32]> {
        self.unique
            .as_ref()
            .filter(|(_, states)| states & state_bit(self.state) != 0)
            .map(|(key, _)| key)
    }

    /// The running job's entry in the lease indexes.
    fn lease_entry(&self) -> Option<(DateTime<Utc>, JobId)> {
        match (self.state, self.lease_expires_at) {
            (JobState::Running, Some(at)) => Some((at, self.id)),
            _ => None,
        }
    }

    /// Whether `lease` is the current lease of this running job (the fence of every
    /// transition a holder makes).
    pub(crate) fn leased_by(&self, lease: &Lease) -> bool {
        self.state == JobState::Running && self.lease_token == Some(lease.token)
    }

    /// The job as `job_list` and the claims return it: without its history and output, which
    /// only `job_get` reads.
    pub(crate) fn job(&self) -> Job {
        Job {
            id: self.id,
            queue: self.queue.clone(),
            payload: self.payload.clone(),
            priority: self.priority,
            state: self.state,
            attempts: self.attempts,
            max_attempts: self.max_attempts,
            run_at: self.run_at,
            lease_expires_at: self.lease_expires_at,
            worker: self.worker.clone(),
            last_error: self.last_error.clone(),
            dedup_key: self.dedup_key.clone(),
            kind: self.kind.clone(),
            meta: self.meta.clone(),
            timeout: self.timeout,
            snoozes: self.snoozes,
            errors: Vec::new(),
            output: None,
            workflow: self.workflow,
            step: None,
            blocked_by: self.blocked_by,
            depends_on: Vec::new(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            finished_at: self.finished_at,
        }
    }

    /// The job as `job_get` returns it: with its history and output.
    pub(crate) fn job_detail(&self) -> Job {
        Job {
            errors: self.errors.clone(),
            output: self.output.clone(),
            ..self.job()
        }
    }

    /// A claimed row as the claim returns it: the job and its lease. `None` for a row that is
    /// not running under a lease.
    pub(crate) fn leased(&self) -> Option<Leased> {
        let (token, expires_at) = (self.lease_token?, self.lease_expires_at?);
        (self.state == JobState::Running).then(|| Leased {
            job: self.job(),
            lease: Lease {
                job_id: self.id,
                queue: self.queue.clone(),
                token,
                expires_at,
                attempt: self.attempts,
                max_attempts: self.max_attempts,
                workflow: self.workflow,
            },
        })
    }
}

/// Pending jobs in claim order: priority descending, then `run_at`, then id. One ordered set
/// per priority, so that the due jobs of each priority are a prefix of its set, and a claim
/// reads what it takes plus one look per priority whose head is not due yet.
#[derive(Debug, Default)]
pub(crate) struct ClaimOrder {
    levels: BTreeMap<Reverse<i32>, BTreeSet<(DateTime<Utc>, JobId)>>,
}

impl ClaimOrder {
    fn insert(&mut self, row: &JobRow) {
        self.levels
            .entry(Reverse(row.priority))
            .or_default()
            .insert((row.run_at, row.id));
    }

    fn remove(&mut self, row: &JobRow) {
        let level = Reverse(row.priority);
        if let Some(set) = self.levels.get_mut(&level) {
            set.remove(&(row.run_at, row.id));
            if set.is_empty() {
                self.levels.remove(&level);
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    /// The jobs due at `now` (`run_at <= now`), in claim order.
    pub(crate) fn due(&self, now: DateTime<Utc>) -> impl Iterator<Item = JobId> + '_ {
        self.levels.values().flat_map(move |set| {
            set.iter()
                .take_while(move |(run_at, _)| *run_at <= now)
                .map(|(_, id)| *id)
        })
    }

    /// The earliest `run_at` of the jobs due at `now` (the longest-waiting): the head of each
    /// priority's set is its earliest.
    fn oldest_due(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.levels
            .values()
            .filter_map(|set| set.first().map(|(run_at, _)| *run_at))
            .filter(|run_at| *run_at <= now)
            .min()
    }

    /// How many jobs are due at `now`, and how many later.
    fn count(&self, now: DateTime<Utc>) -> (u64, u64) {
        let (mut due, mut all) = (0, 0);
        for set in self.levels.values() {
            due += set.iter().take_while(|(run_at, _)| *run_at <= now).count() as u64;
            all += set.len() as u64;
        }
        (due, all - due)
    }
}

/// The indexes of one queue's jobs.
#[derive(Debug, Default)]
pub(crate) struct QueueJobs {
    /// Every pending job, in claim order.
    pub(crate) pending: ClaimOrder,
    /// Pending jobs without a concurrency key, in claim order.
    pub(crate) unkeyed: ClaimOrder,
    /// Pending jobs with a concurrency key, by key (byte order), each key's in claim order.
    pub(crate) keyed: BTreeMap<String, ClaimOrder>,
    /// Running jobs by lease expiry.
    pub(crate) running: BTreeSet<(DateTime<Utc>, JobId)>,
    /// Jobs per state, in the order of [`JobState::ALL`].
    counts: [u64; 6],
}

impl QueueJobs {
    /// Jobs in `state`.
    pub(crate) fn count(&self, state: JobState) -> u64 {
        self.counts[state_index(state)]
    }

    /// Pending jobs due at `now`, and pending jobs due later.
    pub(crate) fn pending_counts(&self, now: DateTime<Utc>) -> (u64, u64) {
        self.pending.count(now)
    }

    /// The `run_at` of the pending job that has been due the longest at `now`.
    pub(crate) fn oldest_due(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.pending.oldest_due(now)
    }

    /// Running jobs whose lease has not expired at `now` (`lease_expires_at > now`).
    pub(crate) fn live_leases(&self, now: DateTime<Utc>) -> impl Iterator<Item = JobId> + '_ {
        self.running
            .iter()
            .rev()
            .take_while(move |(expires, _)| *expires > now)
            .map(|(_, id)| *id)
    }

    fn is_empty(&self) -> bool {
        self.counts.iter().all(|n| *n == 0)
    }
}

fn state_index(state: JobState) -> usize {
    match state {
        JobState::Waiting => 0,
        JobState::Pending => 1,
        JobState::Running => 2,
        JobState::Completed => 3,
        JobState::Dead => 4,
        JobState::Cancelled => 5,
    }
}

/// The jobs and their indexes.
#[derive(Debug, Default)]
pub(crate) struct JobTable {
    rows: BTreeMap<JobId, JobRow>,
    queues: BTreeMap<String, QueueJobs>,
    /// Running jobs of every queue by lease expiry.
    leases: BTreeSet<(DateTime<Utc>, JobId)>,
    /// Finished jobs by finish time.
    finished: BTreeSet<(DateTime<Utc>, JobId)>,
    dedup: HashMap<(String, String), JobId>,
    unique: HashMap<[u8; 32], JobId>,
    /// Waiting jobs, by id (the index of waiting jobs the sweep reads).
    waiting: BTreeSet<JobId>,
}

impl JobTable {
    /// Waiting jobs in id order, after `after` when given.
    pub(crate) fn waiting_after(&self, after: Option<JobId>) -> impl Iterator<Item = JobId> + '_ {
        let range = match after {
            Some(id) => self
                .waiting
                .range((std::ops::Bound::Excluded(id), std::ops::Bound::Unbounded)),
            None => self.waiting.range(..),
        };
        range.copied()
    }

    /// One job.
    pub(crate) fn get(&self, id: JobId) -> Option<&JobRow> {
        self.rows.get(&id)
    }

    /// Every job, newest first (by id), below `before` when given.
    pub(crate) fn newest_first(&self, before: Option<JobId>) -> impl Iterator<Item = &JobRow> + '_ {
        let range = match before {
            Some(id) => self.rows.range(..id),
            None => self.rows.range(..),
        };
        range.rev().map(|(_, row)| row)
    }

    /// The indexes of `queue`'s jobs, `None` when it has none.
    pub(crate) fn queue(&self, queue: &str) -> Option<&QueueJobs> {
        self.queues.get(queue)
    }

    /// Every queue that has jobs, by name.
    pub(crate) fn queues(&self) -> impl Iterator<Item = (&str, &QueueJobs)> + '_ {
        self.queues.iter().map(|(name, jobs)| (name.as_str(), jobs))
    }

    /// Running jobs whose lease expired before `now` (`lease_expires_at < now`), the longest
    /// expired first.
    pub(crate) fn expired(&self, now: DateTime<Utc>) -> impl Iterator<Item = &JobRow> + '_ {
        self.leases
            .iter()
            .take_while(move |(expires, _)| *expires < now)
            .filter_map(|(_, id)| self.rows.get(id))
    }

    /// Finished jobs that finished before `cutoff`, the earliest first.
    pub(crate) fn finished_before(
        &self,
        cutoff: DateTime<Utc>,
    ) -> impl Iterator<Item = &JobRow> + '_ {
        self.finished
            .iter()
            .take_while(move |(at, _)| *at < cutoff)
            .filter_map(|(_, id)| self.rows.get(id))
    }

    /// The live job of `queue` that holds `dedup_key`.
    pub(crate) fn dedup_holder(&self, queue: &str, dedup_key: &str) -> Option<JobId> {
        self.dedup
            .get(&(queue.to_owned(), dedup_key.to_owned()))
            .copied()
    }

    /// The job that holds the unique key `key`.
    pub(crate) fn unique_holder(&self, key: &[u8; 32]) -> Option<JobId> {
        self.unique.get(key).copied()
    }

    /// The unique index that `row` would clash with, if another job holds its place there.
    fn clash(&self, row: &JobRow) -> Result<(), MemoryError> {
        if let Some((queue, key)) = row.dedup_entry() {
            if let Some(holder) = self.dedup_holder(queue, key).filter(|h| *h != row.id) {
                return Err(MemoryError::DedupKeyHeld {
                    queue: queue.to_owned(),
                    dedup_key: key.to_owned(),
                    holder,
                });
            }
        }
        if let Some(key) = row.unique_entry() {
            if let Some(holder) = self.unique_holder(key).filter(|h| *h != row.id) {
                return Err(MemoryError::UniqueKeyHeld { holder });
            }
        }
        Ok(())
    }

    /// Stores a new row; refused, with nothing changed, when its id exists or it clashes with
    /// a unique index.
    pub(crate) fn insert(&mut self, row: JobRow) -> Result<(), MemoryError> {
        if self.rows.contains_key(&row.id) {
            return Err(MemoryError::DuplicateId(row.id));
        }
        self.clash(&row)?;
        self.index(&row);
        self.rows.insert(row.id, row);
        Ok(())
    }

    /// Writes a version of the row with `row.id`, new or replacing the stored one; returns the
    /// version it replaced (`None`: there was none) and the row as stored. Refused, with nothing changed, when it
    /// clashes with a unique index.
    pub(crate) fn put(&mut self, row: JobRow) -> Result<(Option<JobRow>, &JobRow), MemoryError> {
        self.clash(&row)?;
        let old = self.rows.remove(&row.id);
        if let Some(old) = &old {
            self.unindex(old);
        }
        self.index(&row);
        let id = row.id;
        Ok((old, self.rows.entry(id).or_insert(row)))
    }

    /// Deletes a row; returns it.
    pub(crate) fn remove(&mut self, id: JobId) -> Option<JobRow> {
        let old = self.rows.remove(&id)?;
        self.unindex(&old);
        Some(old)
    }

    /// Puts back the row `id` as it was (`None`: absent), without checks: an undo of writes
    /// that were checked, in reverse order, returns to a state that held every rule.
    pub(crate) fn restore(&mut self, id: JobId, row: Option<JobRow>) {
        if let Some(current) = self.rows.remove(&id) {
            self.unindex(&current);
        }
        if let Some(row) = row {
            self.index(&row);
            self.rows.insert(id, row);
        }
    }

    fn index(&mut self, row: &JobRow) {
        if !self.queues.contains_key(row.queue.as_str()) {
            self.queues.insert(row.queue.clone(), QueueJobs::default());
        }
        if let Some(q) = self.queues.get_mut(row.queue.as_str()) {
            q.counts[state_index(row.state)] += 1;
            if row.state == JobState::Pending {
                q.pending.insert(row);
                match &row.concurrency_key {
                    Some(key) => {
                        if !q.keyed.contains_key(key.as_str()) {
                            q.keyed.insert(key.clone(), ClaimOrder::default());
                        }
                        if let Some(order) = q.keyed.get_mut(key.as_str()) {
                            order.insert(row);
                        }
                    }
                    None => q.unkeyed.insert(row),
                }
            }
            if let Some(entry) = row.lease_entry() {
                q.running.insert(entry);
            }
        }
        if let Some(entry) = row.lease_entry() {
            self.leases.insert(entry);
        }
        if row.state == JobState::Waiting {
            self.waiting.insert(row.id);
        }
        if let Some(at) = row.finished_at {
            self.finished.insert((at, row.id));
        }
        if let Some((queue, key)) = row.dedup_entry() {
            self.dedup
                .insert((queue.to_owned(), key.to_owned()), row.id);
        }
        if let Some(key) = row.unique_entry() {
            self.unique.insert(*key, row.id);
        }
    }

    fn unindex(&mut self, row: &JobRow) {
        if let Some(q) = self.queues.get_mut(row.queue.as_str()) {
            let n = &mut q.counts[state_index(row.state)];
            *n = n.saturating_sub(1);
            if row.state == JobState::Pending {
                q.pending.remove(row);
                match &row.concurrency_key {
                    Some(key) => {
                        if let Some(order) = q.keyed.get_mut(key.as_str()) {
                            order.remove(row);
                            if order.is_empty() {
                                q.keyed.remove(key.as_str());
                            }
                        }
                    }
                    None => q.unkeyed.remove(row),
                }
            }
            if let Some(entry) = row.lease_entry() {
                q.running.remove(&entry);
            }
            if q.is_empty() {
                self.queues.remove(row.queue.as_str());
            }
        }
        if let Some(entry) = row.lease_entry() {
            self.leases.remove(&entry);
        }
        if row.state == JobState::Waiting {
            self.waiting.remove(&row.id);
        }
        if let Some(at) = row.finished_at {
            self.finished.remove(&(at, row.id));
        }
        if let Some((queue, key)) = row.dedup_entry() {
            let entry = (queue.to_owned(), key.to_owned());
            if self.dedup.get(&entry) == Some(&row.id) {
                self.dedup.remove(&entry);
            }
        }
        if let Some(key) = row.unique_entry() {
            if self.unique.get(key) == Some(&row.id) {
                self.unique.remove(key);
            }
        }
    }

    /// Every row, by id (for tests comparing whole tables).
    #[cfg(test)]
    pub(crate) fn dump(&self) -> String {
        format!("{:?}", self.rows)
    }

    /// Checks that every index holds exactly what the rows say (for tests).
    #[cfg(test)]
    pub(crate) fn check(&self) -> Result<(), String> {
        let mut rebuilt = JobTable::default();
        for row in self.rows.values() {
            rebuilt.index(row);
            rebuilt.rows.insert(row.id, row.clone());
        }
        let summary = |t: &JobTable| {
            let queues: Vec<String> = t
                .queues
                .iter()
                .map(|(name, q)| {
                    let pending: Vec<JobId> = q.pending.due(DateTime::<Utc>::MAX_UTC).collect();
                    let unkeyed: Vec<JobId> = q.unkeyed.due(DateTime::<Utc>::MAX_UTC).collect();
                    let keyed: Vec<(String, Vec<JobId>)> = q
                        .keyed
                        .iter()
                        .map(|(k, o)| (k.clone(), o.due(DateTime::<Utc>::MAX_UTC).collect()))
                        .collect();
                    format!(
                        "{name}: {:?} {pending:?} {unkeyed:?} {keyed:?} {:?}",
                        q.counts, q.running
                    )
                })
                .collect();
            let mut dedup: Vec<_> = t.dedup.iter().collect();
            dedup.sort();
            let mut unique: Vec<_> = t.unique.iter().collect();
            unique.sort();
            format!(
                "{queues:?} {:?} {:?} {dedup:?} {unique:?} {:?}",
                t.leases, t.finished, t.waiting
            )
        };
        let (have, want) = (summary(self), summary(&rebuilt));
        if have == want {
            Ok(())
        } else {
            Err(format!("indexes {have}\nrebuilt {want}"))
        }
    }
}
