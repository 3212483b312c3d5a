//! The store's tables, and how they change: every write goes through a [`Writer`], which
//! records how to undo it. A statement's writes are undone when the statement fails, so a
//! statement is atomic; a transaction keeps the undo log of all its statements, so that a
//! rollback returns the tables exactly to where they were when it began.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use queue_core::engine::{rate_limit_of, StoredSchedule, StoredWorkflow};
use queue_core::{DepPolicy, JobId, QueueControl, WorkflowId};
use uuid::Uuid;

use crate::error::MemoryError;
use crate::jobs::{JobRow, JobTable};

/// Everything a store holds: the versions of the applied migrations (which exist before any
/// migration, as each SQL dialect's migration table is made before the first one), and the
/// tables the first migration creates.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    pub(crate) migrations: BTreeSet<i64>,
    pub(crate) schema: Option<Box<Schema>>,
}

impl Tables {
    /// The tables the migrations created.
    ///
    /// # Errors
    /// [`MemoryError::NotMigrated`] before the first migration.
    pub(crate) fn schema(&self) -> Result<&Schema, MemoryError> {
        self.schema.as_deref().ok_or(MemoryError::NotMigrated)
    }

    /// Everything stored, as text (for tests comparing whole stores).
    #[cfg(test)]
    pub(crate) fn dump(&self) -> String {
        let schema = self.schema.as_deref().map(|s| {
            format!(
                "jobs {} queues {:?} key_rates {:?} schedules {:?} maintenance {:?} workflows {:?} {:?} {:?}",
                s.jobs.dump(),
                s.queues,
                s.key_rates,
                s.schedules,
                s.maintenance,
                s.workflows,
                s.workflow_jobs,
                s.deps
            )
        });
        format!("migrations {:?} schema {schema:?}", self.migrations)
    }

    /// Undoes `log`, newest write first.
    pub(crate) fn undo(&mut self, log: Vec<Undo>) {
        for entry in log.into_iter().rev() {
            match entry {
                Undo::Schema(old) => self.schema = old,
                Undo::Migration(version, recorded) => {
                    if !recorded {
                        self.migrations.remove(&version);
                    }
                }
                entry => {
                    // Rows are written only while the schema exists, and undone newest first:
                    // before the undo of the schema's creation, when that is in the same log.
                    if let Some(schema) = self.schema.as_deref_mut() {
                        schema.undo(entry);
                    }
                }
            }
        }
    }
}

/// The tables of the schema: jobs, queue controls, per-key rate counts, schedules and the
/// maintenance tasks' lease rows.
#[derive(Debug, Default)]
pub(crate) struct Schema {
    pub(crate) jobs: JobTable,
    pub(crate) queues: BTreeMap<String, QueueRow>,
    /// `(queue, concurrency key)` to the window of the key's count of starts and that count.
    pub(crate) key_rates: BTreeMap<(String, String), RateCount>,
    pub(crate) schedules: BTreeMap<String, StoredSchedule>,
    pub(crate) maintenance: BTreeMap<String, MaintenanceRow>,
    pub(crate) workflows: BTreeMap<WorkflowId, StoredWorkflow>,
    /// `(workflow, job)` to the job's step name.
    pub(crate) workflow_jobs: BTreeMap<(WorkflowId, JobId), String>,
    /// `(dependency, job)` to the policy: the dependencies, by the job depended on.
    pub(crate) deps: BTreeMap<(JobId, JobId), DepPolicy>,
    /// `(job, dependency)`: the same, by the job that waits.
    pub(crate) deps_of: BTreeSet<(JobId, JobId)>,
}

impl Schema {
    /// The jobs waiting on `dep` (whatever their state), with the policy.
    pub(crate) fn dependents(&self, dep: JobId) -> impl Iterator<Item = (JobId, DepPolicy)> + '_ {
        self.deps
            .range((dep, JobId(uuid::Uuid::nil()))..=(dep, JobId(uuid::Uuid::max())))
            .map(|((_, job), policy)| (*job, *policy))
    }

    /// What `job` depends on (the job depended on of each of its dependency rows, whatever
    /// its policy), in id order.
    pub(crate) fn deps_of_ids(&self, job: JobId) -> impl Iterator<Item = JobId> + '_ {
        self.deps_of
            .range((job, JobId(uuid::Uuid::nil()))..=(job, JobId(uuid::Uuid::max())))
            .map(|(_, dep)| *dep)
    }

    /// What `job` depends on, with the policy, in the dependencies' id order.
    pub(crate) fn deps_of(&self, job: JobId) -> impl Iterator<Item = (JobId, DepPolicy)> + '_ {
        self.deps_of
            .range((job, JobId(uuid::Uuid::nil()))..=(job, JobId(uuid::Uuid::max())))
            .filter_map(move |(_, dep)| self.deps.get(&(*dep, job)).map(|p| (*dep, *p)))
    }

    fn undo(&mut self, entry: Undo) {
        match entry {
            Undo::Workflow(id, old) => {
                put(&mut self.workflows, id, old);
            }
            Undo::WorkflowJob(key, old) => {
                put(&mut self.workflow_jobs, key, old);
            }
            Undo::Dep((dep, job), old) => {
                if old.is_some() {
                    self.deps_of.insert((job, dep));
                } else {
                    self.deps_of.remove(&(job, dep));
                }
                put(&mut self.deps, (dep, job), old);
            }
            Undo::Job(id, old) => self.jobs.restore(id, old),
            Undo::Queue(name, old) => {
                put(&mut self.queues, name, old);
            }
            Undo::KeyRate(key, old) => {
                put(&mut self.key_rates, key, old);
            }
            Undo::Schedule(name, old) => {
                put(&mut self.schedules, name, old);
            }
            Undo::Maintenance(task, old) => {
                put(&mut self.maintenance, task, old);
            }
            Undo::Schema(_) | Undo::Migration(..) => {}
        }
    }
}

/// A queue's row of controls (no row: running and unlimited).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct QueueRow {
    pub(crate) paused: bool,
    pub(crate) concurrency_limit: Option<u32>,
    /// Starts per window, and the window in microseconds.
    pub(crate) rate: Option<(u32, i64)>,
    /// The window of the latest claim under the rate limit, and how many jobs started in it.
    pub(crate) rate_window: Option<i64>,
    pub(crate) rate_count: u32,
    pub(crate) key_limit: Option<u32>,
    pub(crate) fair_shares: bool,
    pub(crate) key_cursor: Option<String>,
    /// Starts per window of one key, and the window in microseconds.
    pub(crate) key_rate: Option<(u32, i64)>,
    pub(crate) updated_at: Option<DateTime<Utc>>,
}

impl QueueRow {
    /// Whether an ordinary claim gives out nothing of the queue: it is paused or limited in
    /// any way, so its jobs are claimed only through the engine's controlled claim.
    pub(crate) fn restricts(&self) -> bool {
        self.paused
            || self.concurrency_limit.is_some()
            || self.rate.is_some()
            || self.key_limit.is_some()
            || self.key_rate.is_some()
            || self.fair_shares
    }

    /// The row as the engine reads it.
    pub(crate) fn control(&self, queue: &str) -> QueueControl {
        let rate = |r: Option<(u32, i64)>| {
            rate_limit_of(r.map(|(n, _)| i64::from(n)), r.map(|(_, period)| period))
        };
        QueueControl {
            queue: queue.to_owned(),
            paused: self.paused,
            concurrency_limit: self.concurrency_limit,
            rate_limit: rate(self.rate),
            key_limit: self.key_limit,
            fair_shares: self.fair_shares,
            key_cursor: self.key_cursor.clone(),
            key_rate_limit: rate(self.key_rate),
        }
    }
}

/// A count of starts in one rate window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RateCount {
    pub(crate) window: i64,
    pub(crate) count: u32,
}

/// The lease row of a maintenance task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MaintenanceRow {
    /// When the next round is due (while a round runs: when its lease ends).
    pub(crate) next_at: DateTime<Utc>,
    /// The token of the round that holds the lease.
    pub(crate) token: Option<Uuid>,
}

/// How to undo one write: the key of the row and its value before the write (`None`: absent).
#[derive(Debug)]
pub(crate) enum Undo {
    Schema(Option<Box<Schema>>),
    /// A migration's version, and whether it was recorded before.
    Migration(i64, bool),
    Job(JobId, Option<JobRow>),
    Queue(String, Option<QueueRow>),
    KeyRate((String, String), Option<RateCount>),
    Schedule(String, Option<StoredSchedule>),
    Maintenance(String, Option<MaintenanceRow>),
    Workflow(WorkflowId, Option<StoredWorkflow>),
    WorkflowJob((WorkflowId, JobId), Option<String>),
    /// `(dependency, job)`.
    Dep((JobId, JobId), Option<DepPolicy>),
}

/// Sets `key` to `value` (`None`: removes it); returns what was there.
fn put<K: Ord, V>(map: &mut BTreeMap<K, V>, key: K, value: Option<V>) -> Option<V> {
    match value {
        Some(v) => map.insert(key, v),
        None => map.remove(&key),
    }
}

/// The writes of one statement: each applied at once and recorded in `undo`.
#[derive(Debug)]
pub(crate) struct Writer<'a> {
    tables: &'a mut Tables,
    undo: Vec<Undo>,
}

impl<'a> Writer<'a> {
    /// A writer on `tables` with an empty undo log.
    pub(crate) fn new(tables: &'a mut Tables) -> Self {
        Writer {
            tables,
            undo: Vec::new(),
        }
    }

    /// The tables as they are now, this statement's writes included.
    pub(crate) fn tables(&self) -> &Tables {
        self.tables
    }

    /// The schema as it is now.
    ///
    /// # Errors
    /// [`MemoryError::NotMigrated`] before the first migration.
    pub(crate) fn schema(&self) -> Result<&Schema, MemoryError> {
        self.tables.schema()
    }

    fn schema_mut(&mut self) -> Result<&mut Schema, MemoryError> {
        self.tables
            .schema
            .as_deref_mut()
            .ok_or(MemoryError::NotMigrated)
    }

    /// Ends the statement: its undo log, for the transaction it ran in.
    pub(crate) fn finish(self) -> Vec<Undo> {
        self.undo
    }

    /// Ends the statement after it failed: every write it made is undone.
    pub(crate) fn abort(self) {
        self.tables.undo(self.undo);
    }

    /// Creates the schema's tables (the first migration).
    pub(crate) fn create_schema(&mut self) {
        let old = self.tables.schema.replace(Box::default());
        self.undo.push(Undo::Schema(old));
    }

    /// Records that the migration `version` was applied.
    pub(crate) fn record_migration(&mut self, version: i64) {
        let recorded = !self.tables.migrations.insert(version);
        self.undo.push(Undo::Migration(version, recorded));
    }

    /// Stores a new job.
    ///
    /// # Errors
    /// [`MemoryError::DuplicateId`], [`MemoryError::DedupKeyHeld`] or
    /// [`MemoryError::UniqueKeyHeld`], with nothing stored.
    pub(crate) fn insert_job(&mut self, row: JobRow) -> Result<(), MemoryError> {
        let id = row.id;
        self.schema_mut()?.jobs.insert(row)?;
        self.undo.push(Undo::Job(id, None));
        Ok(())
    }

    /// Writes a new version of a job (read in this statement); returns it as stored.
    ///
    /// # Errors
    /// [`MemoryError::DedupKeyHeld`] or [`MemoryError::UniqueKeyHeld`], with nothing changed.
    pub(crate) fn update_job(&mut self, row: JobRow) -> Result<&JobRow, MemoryError> {
        let id = row.id;
        let schema = self
            .tables
            .schema
            .as_deref_mut()
            .ok_or(MemoryError::NotMigrated)?;
        let (old, stored) = schema.jobs.put(row)?;
        self.undo.push(Undo::Job(id, old));
        Ok(stored)
    }

    /// Deletes a job; whether it existed.
    pub(crate) fn delete_job(&mut self, id: JobId) -> Result<bool, MemoryError> {
        let old = self.schema_mut()?.jobs.remove(id);
        let existed = old.is_some();
        if existed {
            self.undo.push(Undo::Job(id, old));
        }
        Ok(existed)
    }

    /// Writes a queue's row of controls.
    pub(crate) fn put_queue(&mut self, name: &str, row: QueueRow) -> Result<(), MemoryError> {
        let old = self.schema_mut()?.queues.insert(name.to_owned(), row);
        self.undo.push(Undo::Queue(name.to_owned(), old));
        Ok(())
    }

    /// Writes (`Some`) or deletes (`None`) a key's rate count.
    pub(crate) fn put_key_rate(
        &mut self,
        queue: &str,
        key: &str,
        count: Option<RateCount>,
    ) -> Result<(), MemoryError> {
        let entry = (queue.to_owned(), key.to_owned());
        let old = put(&mut self.schema_mut()?.key_rates, entry.clone(), count);
        self.undo.push(Undo::KeyRate(entry, old));
        Ok(())
    }

    /// Writes (`Some`) or deletes (`None`) a schedule.
    pub(crate) fn put_schedule(
        &mut self,
        name: &str,
        schedule: Option<StoredSchedule>,
    ) -> Result<(), MemoryError> {
        let old = put(&mut self.schema_mut()?.schedules, name.to_owned(), schedule);
        self.undo.push(Undo::Schedule(name.to_owned(), old));
        Ok(())
    }

    /// Writes a maintenance task's lease row.
    pub(crate) fn put_maintenance(
        &mut self,
        task: &str,
        row: MaintenanceRow,
    ) -> Result<(), MemoryError> {
        let old = self.schema_mut()?.maintenance.insert(task.to_owned(), row);
        self.undo.push(Undo::Maintenance(task.to_owned(), old));
        Ok(())
    }

    /// Writes (`Some`) or deletes (`None`) a workflow's row.
    pub(crate) fn put_workflow(
        &mut self,
        id: WorkflowId,
        row: Option<StoredWorkflow>,
    ) -> Result<(), MemoryError> {
        let old = put(&mut self.schema_mut()?.workflows, id, row);
        self.undo.push(Undo::Workflow(id, old));
        Ok(())
    }

    /// Stores the step row of `job` in `workflow`.
    pub(crate) fn put_workflow_job(
        &mut self,
        workflow: WorkflowId,
        job: JobId,
        step: &str,
    ) -> Result<(), MemoryError> {
        let key = (workflow, job);
        let old = self
            .schema_mut()?
            .workflow_jobs
            .insert(key, step.to_owned());
        if old.is_some() {
            // The primary key: a step row is written once.
            self.schema_mut()?
                .workflow_jobs
                .insert(key, old.unwrap_or_default());
            return Err(MemoryError::DuplicateId(job));
        }
        self.undo.push(Undo::WorkflowJob(key, None));
        Ok(())
    }

    /// Deletes the step row of `job` in `workflow`; whether it existed.
    pub(crate) fn delete_workflow_job(
        &mut self,
        workflow: WorkflowId,
        job: JobId,
    ) -> Result<bool, MemoryError> {
        let key = (workflow, job);
        let old = self.schema_mut()?.workflow_jobs.remove(&key);
        let existed = old.is_some();
        if existed {
            self.undo.push(Undo::WorkflowJob(key, old));
        }
        Ok(existed)
    }

    /// Deletes the dependency of `job` on `dep` (both of its entries); whether it existed.
    pub(crate) fn delete_dep(&mut self, dep: JobId, job: JobId) -> Result<bool, MemoryError> {
        let schema = self.schema_mut()?;
        let old = schema.deps.remove(&(dep, job));
        schema.deps_of.remove(&(job, dep));
        let existed = old.is_some();
        if existed {
            self.undo.push(Undo::Dep((dep, job), old));
        }
        Ok(existed)
    }

    /// Stores a dependency of `job` on `dep`.
    pub(crate) fn put_dep(
        &mut self,
        dep: JobId,
        job: JobId,
        policy: DepPolicy,
    ) -> Result<(), MemoryError> {
        let schema = self.schema_mut()?;
        if schema.deps.contains_key(&(dep, job)) {
            return Err(MemoryError::DuplicateId(job));
        }
        schema.deps.insert((dep, job), policy);
        schema.deps_of.insert((job, dep));
        self.undo.push(Undo::Dep((dep, job), None));
        Ok(())
    }
}
