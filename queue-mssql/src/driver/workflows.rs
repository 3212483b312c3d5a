//! SQL Server's [`Workflows`](queue_core::engine::Workflows) statements: their rows, dependencies,
//! and settling of waiting steps.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{
    StoredWorkflow, Target, UniqueIndex, WorkflowEdge, WorkflowInsert, WorkflowPrune,
    WorkflowPruneLock, WorkflowPruned, Workflows,
};
use queue_core::{Dependency, Job, JobId, JobState, WorkflowId};

use crate::bind::params;
use crate::error::MsSqlError;
use crate::pool::{MsSqlConnection, MsSqlTransaction};
use crate::sql::{MAX_ROWS_PER_STATEMENT, WORKFLOW_ROWS};

use super::rows::{
    count, decode, dependency_from_row, edge_from_row, edges_values, job_ids, limit,
    prune_lock_values, steps_values, text, time, uuid_of, workflow_from_row,
    workflow_insert_values, workflow_job_from_row, workflow_list_from_rows, workflow_prune_values,
};
use super::{fetch_ids, MsSqlDriver};

#[async_trait]
impl Workflows for MsSqlDriver {
    /// A duplicate id fails on the workflows table's primary key, its only unique index: it is
    /// reported as [`UniqueIndex::WorkflowId`]. XACT_ABORT is off, so the error leaves the
    /// transaction open for the engine to roll back.
    async fn workflow_insert(
        &self,
        tx: &mut MsSqlTransaction,
        w: WorkflowInsert<'_>,
    ) -> Result<(), MsSqlError> {
        tx.connection()
            .execute(&self.sql.workflow_insert, workflow_insert_values(&w))
            .await
            .map_err(|e| e.in_unique_index(UniqueIndex::WorkflowId))?;
        Ok(())
    }

    /// One INSERT per 500 jobs (`WORKFLOW_ROWS`), in the caller's transaction.
    async fn workflow_steps_insert(
        &self,
        tx: &mut MsSqlTransaction,
        workflow: WorkflowId,
        steps: &[(JobId, &str)],
    ) -> Result<(), MsSqlError> {
        let conn = tx.connection();
        for chunk in steps.chunks(WORKFLOW_ROWS) {
            let sql = self.sql.workflow_steps_insert_for(chunk.len());
            conn.execute(&sql, steps_values(workflow, chunk)).await?;
        }
        Ok(())
    }

    /// One INSERT per 500 dependencies (`WORKFLOW_ROWS`), in the caller's transaction.
    async fn workflow_deps_insert(
        &self,
        tx: &mut MsSqlTransaction,
        edges: &[WorkflowEdge],
    ) -> Result<(), MsSqlError> {
        let conn = tx.connection();
        for chunk in edges.chunks(WORKFLOW_ROWS) {
            let sql = self.sql.workflow_deps_insert_for(chunk.len());
            conn.execute(&sql, edges_values(chunk)).await?;
        }
        Ok(())
    }

    async fn workflow_lock(
        &self,
        tx: &mut MsSqlTransaction,
        id: WorkflowId,
    ) -> Result<Option<StoredWorkflow>, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.workflow_lock, params![id])
            .await?;
        rows.first().map(workflow_from_row).transpose()
    }

    async fn workflow_seal(&self, id: WorkflowId) -> Result<u64, MsSqlError> {
        self.conn()
            .await?
            .execute(&self.sql.workflow_seal, params![id])
            .await
    }

    /// One statement per 1,000 finished jobs (`BULK_IDS`); a job waiting for several of them
    /// is listed once.
    async fn workflow_dependents(
        &self,
        target: Target<'_, MsSqlTransaction>,
        finished: &[JobId],
    ) -> Result<Vec<JobId>, MsSqlError> {
        if finished.is_empty() {
            return Ok(Vec::new());
        }
        let mut pooled;
        let conn: &mut MsSqlConnection = match target {
            Target::Pool => {
                pooled = self.conn().await?;
                &mut pooled
            }
            Target::Tx(tx) => tx.connection(),
        };
        let rows = fetch_ids(conn, finished, |n| self.sql.workflow_dependents_for(n)).await?;
        let mut ids = job_ids(&rows, "job_id")?;
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    /// One statement per 1,000 jobs (`BULK_IDS`), each atomic by itself (on the pool, a job
    /// is cancelled or not whatever becomes of the others).
    async fn workflow_block(
        &self,
        target: Target<'_, MsSqlTransaction>,
        waiting: &[JobId],
    ) -> Result<Vec<JobId>, MsSqlError> {
        if waiting.is_empty() {
            return Ok(Vec::new());
        }
        let mut pooled;
        let conn: &mut MsSqlConnection = match target {
            Target::Pool => {
                pooled = self.conn().await?;
                &mut pooled
            }
            Target::Tx(tx) => tx.connection(),
        };
        let rows = fetch_ids(conn, waiting, |n| self.sql.workflow_block_for(n)).await?;
        job_ids(&rows, "id")
    }

    /// One statement per 1,000 jobs (`BULK_IDS`), as `workflow_block`.
    async fn workflow_promote(
        &self,
        target: Target<'_, MsSqlTransaction>,
        waiting: &[JobId],
    ) -> Result<Vec<(JobId, String)>, MsSqlError> {
        if waiting.is_empty() {
            return Ok(Vec::new());
        }
        let mut pooled;
        let conn: &mut MsSqlConnection = match target {
            Target::Pool => {
                pooled = self.conn().await?;
                &mut pooled
            }
            Target::Tx(tx) => tx.connection(),
        };
        let rows = fetch_ids(conn, waiting, |n| self.sql.workflow_promote_for(n)).await?;
        rows.iter()
            .map(|r| Ok((JobId(uuid_of(r, "id")?), text(r, "queue")?)))
            .collect()
    }

    /// In the retry's transaction: one statement per 1,000 retried jobs (`BULK_IDS`).
    async fn workflow_reopen(
        &self,
        tx: &mut MsSqlTransaction,
        retried: &[JobId],
    ) -> Result<Vec<JobId>, MsSqlError> {
        if retried.is_empty() {
            return Ok(Vec::new());
        }
        let rows = fetch_ids(tx.connection(), retried, |n| {
            self.sql.workflow_reopen_for(n)
        })
        .await?;
        job_ids(&rows, "id")
    }

    /// In the retry's transaction: one statement per 1,000 jobs (`BULK_IDS`).
    async fn workflow_blocked(
        &self,
        tx: &mut MsSqlTransaction,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobId)>, MsSqlError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = fetch_ids(tx.connection(), ids, |n| self.sql.workflow_blocked_for(n)).await?;
        rows.iter()
            .map(|r| Ok((JobId(uuid_of(r, "id")?), JobId(uuid_of(r, "blocked_by")?))))
            .collect()
    }

    async fn workflow_waiting(
        &self,
        after: Option<JobId>,
        n: usize,
    ) -> Result<Vec<JobId>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.workflow_waiting, params![after, limit(n)])
            .await?;
        job_ids(&rows, "id")
    }

    async fn workflow_prune_lock(
        &self,
        tx: &mut MsSqlTransaction,
        p: WorkflowPruneLock,
    ) -> Result<Vec<(WorkflowId, DateTime<Utc>)>, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.workflow_prune_lock, prune_lock_values(p))
            .await?;
        rows.iter()
            .map(|r| Ok((WorkflowId(uuid_of(r, "id")?), time(r, "created_at")?)))
            .collect()
    }

    /// One request per 1,000 workflows (`MAX_ROWS_PER_STATEMENT`; retention locks 500 at a
    /// time), in the caller's transaction (see `workflow_prune.sql`).
    async fn workflow_prune(
        &self,
        tx: &mut MsSqlTransaction,
        p: WorkflowPrune<'_>,
    ) -> Result<WorkflowPruned, MsSqlError> {
        let conn = tx.connection();
        let mut done = WorkflowPruned::default();
        for chunk in p.ids.chunks(MAX_ROWS_PER_STATEMENT) {
            let sql = self.sql.workflow_prune_for(chunk.len());
            let rows = conn.fetch(&sql, workflow_prune_values(&p, chunk)).await?;
            let row = rows
                .first()
                .ok_or_else(|| decode("workflow_prune returned no row"))?;
            done.workflows += count(row, "workflows")?;
            done.jobs += count(row, "jobs")?;
        }
        Ok(done)
    }

    async fn workflow_get(&self, id: WorkflowId) -> Result<Option<StoredWorkflow>, MsSqlError> {
        let rows = self.fetch(&self.sql.workflow_get, params![id]).await?;
        rows.first().map(workflow_from_row).transpose()
    }

    async fn workflow_jobs(&self, id: WorkflowId) -> Result<Vec<Job>, MsSqlError> {
        let rows = self.fetch(&self.sql.workflow_jobs, params![id]).await?;
        rows.iter().map(workflow_job_from_row).collect()
    }

    async fn workflow_edges(&self, id: WorkflowId) -> Result<Vec<WorkflowEdge>, MsSqlError> {
        let rows = self.fetch(&self.sql.workflow_edges, params![id]).await?;
        rows.iter().map(edge_from_row).collect()
    }

    async fn workflow_list(
        &self,
        before: Option<WorkflowId>,
        n: usize,
    ) -> Result<Vec<(StoredWorkflow, Vec<(JobState, u64)>)>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.workflow_list, params![before, limit(n)])
            .await?;
        workflow_list_from_rows(&rows)
    }

    async fn job_deps(&self, id: JobId) -> Result<Vec<Dependency>, MsSqlError> {
        let rows = self.fetch(&self.sql.job_deps, params![id]).await?;
        rows.iter().map(dependency_from_row).collect()
    }
}
