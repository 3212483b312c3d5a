//! SQL Server's [`Operators`](queue_core::engine::Operators) statements: reading, listing,
//! cancelling, retrying and deleting jobs, by id and in bulk.

use async_trait::async_trait;
use queue_core::engine::{JobMatch, JobReschedule, Operators};
use queue_core::{Job, JobId, JobState, ListRequest, QueueStats, WorkflowId};

use crate::bind::params;
use crate::error::MsSqlError;
use crate::pool::MsSqlTransaction;
use crate::sql::BULK_IDS;

use super::rows::{
    count, count_values, decode, id_values, ids_values, job_detail_from_row, job_from_row,
    list_values, reschedule_values, stats_cap, stats_from_row, text, uuid_of,
};
use super::{fetch_ids, MsSqlDriver};

#[async_trait]
impl Operators for MsSqlDriver {
    async fn job_cancel(&self, job: JobId) -> Result<u64, MsSqlError> {
        self.conn()
            .await?
            .execute(&self.sql.job_cancel, params![job])
            .await
    }

    async fn job_retry(
        &self,
        tx: &mut MsSqlTransaction,
        job: JobId,
    ) -> Result<Option<String>, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.job_retry, params![job])
            .await?;
        rows.first().map(|r| text(r, "queue")).transpose()
    }

    async fn job_reschedule(&self, p: JobReschedule) -> Result<Option<String>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.job_reschedule, reschedule_values(p))
            .await?;
        rows.first().map(|r| text(r, "queue")).transpose()
    }

    async fn job_get(&self, job: JobId) -> Result<Option<Job>, MsSqlError> {
        let rows = self.fetch(&self.sql.job_get, params![job]).await?;
        rows.first().map(job_detail_from_row).transpose()
    }

    async fn job_list(&self, req: &ListRequest) -> Result<Vec<Job>, MsSqlError> {
        let rows = self.fetch(&self.sql.job_list, list_values(req)).await?;
        rows.iter()
            .map(|r| job_from_row(r).map(|(job, _)| job))
            .collect()
    }

    /// One request (see `job_stats.sql`): the queues are found and counted inside it.
    async fn job_stats(
        &self,
        queue: Option<&str>,
        cap: Option<u64>,
    ) -> Result<Vec<QueueStats>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.job_stats, params![queue, stats_cap(cap)])
            .await?;
        rows.iter().map(stats_from_row).collect()
    }

    async fn job_ids(&self, m: JobMatch<'_>) -> Result<Vec<(JobId, String)>, MsSqlError> {
        // No state matches nothing (and `IN ()` would not parse); neither do zero rows.
        if m.states.is_empty() || m.limit == 0 {
            return Ok(Vec::new());
        }
        let sql = self.sql.job_ids_for(m.states.len());
        let rows = self.fetch(&sql, ids_values(&m)).await?;
        rows.iter()
            .map(|r| Ok((JobId(uuid_of(r, "id")?), text(r, "queue")?)))
            .collect()
    }

    async fn job_count(&self, m: JobMatch<'_>) -> Result<u64, MsSqlError> {
        // No state matches nothing (and `IN ()` would not parse).
        if m.states.is_empty() {
            return Ok(0);
        }
        let sql = self.sql.job_count_for(m.states.len());
        let rows = self.fetch(&sql, count_values(&m)).await?;
        rows.first()
            .map(|r| count(r, "n"))
            .transpose()?
            .ok_or_else(|| decode("COUNT_BIG(*) returned no row"))
    }

    /// One statement per 1,000 ids (`BULK_IDS`; the engine's batch is one).
    async fn job_cancel_many(&self, ids: &[JobId]) -> Result<u64, MsSqlError> {
        let mut conn = self.conn().await?;
        let mut total = 0;
        for chunk in ids.chunks(BULK_IDS) {
            let sql = self.sql.job_cancel_many_for(chunk.len());
            total += conn.execute(&sql, id_values(chunk, &[])).await?;
        }
        Ok(total)
    }

    /// In the engine's transaction: one statement per 1,000 ids (`BULK_IDS`; the engine's
    /// batch is one), all of them failing together with it.
    async fn job_retry_many(
        &self,
        tx: &mut MsSqlTransaction,
        ids: &[JobId],
    ) -> Result<u64, MsSqlError> {
        let conn = tx.connection();
        let mut total = 0;
        for chunk in ids.chunks(BULK_IDS) {
            let sql = self.sql.job_retry_many_for(chunk.len());
            total += conn.execute(&sql, id_values(chunk, &[])).await?;
        }
        Ok(total)
    }

    /// One statement per 1,000 jobs (`BULK_IDS`).
    async fn job_workflows(&self, ids: &[JobId]) -> Result<Vec<WorkflowId>, MsSqlError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn().await?;
        let rows = fetch_ids(&mut conn, ids, |n| self.sql.job_workflows_for(n)).await?;
        let mut out = rows
            .iter()
            .map(|r| Ok(WorkflowId(uuid_of(r, "workflow_id")?)))
            .collect::<Result<Vec<_>, MsSqlError>>()?;
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    async fn job_dependents_count(&self, m: JobMatch<'_>) -> Result<u64, MsSqlError> {
        if m.states.is_empty() {
            return Ok(0);
        }
        let sql = self.sql.job_dependents_count_for(m.states.len());
        let rows = self.fetch(&sql, count_values(&m)).await?;
        rows.first()
            .map(|r| count(r, "n"))
            .transpose()?
            .ok_or_else(|| decode("COUNT_BIG(*) returned no row"))
    }

    /// One statement per 1,000 ids (`BULK_IDS`; the engine's batch is one).
    async fn job_delete_many(&self, ids: &[JobId], states: &[JobState]) -> Result<u64, MsSqlError> {
        // No state matches nothing (and `IN ()` would not parse); no id is no statement.
        if states.is_empty() {
            return Ok(0);
        }
        let mut conn = self.conn().await?;
        let mut total = 0;
        for chunk in ids.chunks(BULK_IDS) {
            let sql = self.sql.job_delete_many_for(chunk.len(), states.len());
            total += conn.execute(&sql, id_values(chunk, states)).await?;
        }
        Ok(total)
    }
}
