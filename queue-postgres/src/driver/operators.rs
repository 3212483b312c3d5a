//! PostgreSQL's [`Operators`](queue_core::engine::Operators) statements: reading, listing,
//! cancelling, retrying and deleting jobs, by id and in bulk.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{micros, JobMatch, JobReschedule, Operators};
use queue_core::workflow::WorkflowId;
use queue_core::{Job, JobId, JobState, ListRequest, QueueStats};
use sqlx::postgres::PgConnection;
use uuid::Uuid;

use crate::pinned::on_pool;

use super::rows::{count, job_detail_from_row, job_from_row, limit};
use super::PgDriver;

#[async_trait]
impl Operators for PgDriver {
    async fn job_cancel(&self, id: JobId) -> Result<u64, sqlx::Error> {
        if self.moves().await {
            let n: i64 = on_pool!(self, |e| sqlx::query_scalar(
                self.sql.job_cancel_move.clone()
            )
            .persistent(self.named())
            .bind(id.0)
            .fetch_one(e))?;
            return Ok(count(n));
        }
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_cancel.clone())
            .persistent(self.named())
            .bind(id.0)
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_retry(
        &self,
        conn: &mut PgConnection,
        id: JobId,
    ) -> Result<Option<String>, sqlx::Error> {
        sqlx::query_scalar(self.sql.job_retry.clone())
            .persistent(self.named())
            .bind(id.0)
            .fetch_optional(conn)
            .await
    }

    async fn job_reschedule(&self, p: JobReschedule) -> Result<Option<String>, sqlx::Error> {
        on_pool!(self, |e| sqlx::query_scalar(
            self.sql.job_reschedule.clone()
        )
        .persistent(self.named())
        .bind(p.id.0)
        .bind(p.delay.map(micros))
        .bind(p.priority)
        .fetch_optional(e))
    }

    async fn job_get(&self, id: JobId) -> Result<Option<Job>, sqlx::Error> {
        let row = on_pool!(self, |e| sqlx::query(self.sql.job_get.clone())
            .persistent(self.named())
            .bind(id.0)
            .fetch_optional(e))?;
        row.as_ref().map(job_detail_from_row).transpose()
    }

    async fn job_list(&self, req: &ListRequest) -> Result<Vec<Job>, sqlx::Error> {
        let rows = on_pool!(self, |e| sqlx::query(self.sql.job_list.clone())
            .persistent(self.named())
            .bind(req.queue.as_deref())
            .bind(req.state.map(|s| s.as_str()))
            .bind(req.before.map(|id| id.0))
            .bind(limit(req.limit))
            .bind(req.kind.as_deref())
            .fetch_all(e))?;
        rows.iter()
            .map(|r| job_from_row(r).map(|(job, _)| job))
            .collect()
    }

    async fn job_stats(
        &self,
        queue: Option<&str>,
        cap: Option<u64>,
    ) -> Result<Vec<QueueStats>, sqlx::Error> {
        let cap = cap.map(|c| i64::try_from(c).unwrap_or(i64::MAX));
        type Row = (
            String,
            i64,
            i64,
            i64,
            i64,
            Option<DateTime<Utc>>,
            i64,
            i64,
            i64,
        );
        let rows: Vec<Row> = on_pool!(self, |e| sqlx::query_as(self.sql.job_stats.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(cap)
            .fetch_all(e))?;
        Ok(rows
            .into_iter()
            .map(
                |(
                    queue,
                    waiting,
                    available,
                    scheduled,
                    running,
                    oldest_due,
                    completed,
                    dead,
                    cancelled,
                )| {
                    QueueStats {
                        queue,
                        waiting: count(waiting),
                        available: count(available),
                        scheduled: count(scheduled),
                        running: count(running),
                        oldest_due,
                        completed: count(completed),
                        dead: count(dead),
                        cancelled: count(cancelled),
                        ..QueueStats::default()
                    }
                },
            )
            .collect())
    }

    async fn job_ids(&self, m: JobMatch<'_>) -> Result<Vec<(JobId, String)>, sqlx::Error> {
        let states: Vec<&str> = m.states.iter().map(|s| s.as_str()).collect();
        let rows: Vec<(Uuid, String)> =
            on_pool!(self, |e| sqlx::query_as(self.sql.job_ids.clone())
                .persistent(self.named())
                .bind(m.queue)
                .bind(&states)
                .bind(m.kind)
                .bind(m.older_than.map(micros))
                .bind(m.before.map(|id| id.0))
                .bind(limit(m.limit))
                .fetch_all(e))?;
        Ok(rows.into_iter().map(|(id, q)| (JobId(id), q)).collect())
    }

    async fn job_count(&self, m: JobMatch<'_>) -> Result<u64, sqlx::Error> {
        let states: Vec<&str> = m.states.iter().map(|s| s.as_str()).collect();
        let n: i64 = on_pool!(self, |e| sqlx::query_scalar(self.sql.job_count.clone())
            .persistent(self.named())
            .bind(m.queue)
            .bind(&states)
            .bind(m.kind)
            .bind(m.older_than.map(micros))
            .fetch_one(e))?;
        Ok(count(n))
    }

    async fn job_cancel_many(&self, ids: &[JobId]) -> Result<u64, sqlx::Error> {
        let ids: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
        if self.moves().await {
            let n: i64 = on_pool!(self, |e| sqlx::query_scalar(
                self.sql.job_cancel_many_move.clone()
            )
            .persistent(self.named())
            .bind(&ids)
            .fetch_one(e))?;
            return Ok(count(n));
        }
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_cancel_many.clone())
            .persistent(self.named())
            .bind(&ids)
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_retry_many(
        &self,
        conn: &mut PgConnection,
        ids: &[JobId],
    ) -> Result<u64, sqlx::Error> {
        let ids: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
        let n: i64 = sqlx::query_scalar(self.sql.job_retry_many.clone())
            .persistent(self.named())
            .bind(&ids)
            .fetch_one(conn)
            .await?;
        Ok(count(n))
    }

    async fn job_workflows(&self, ids: &[JobId]) -> Result<Vec<WorkflowId>, sqlx::Error> {
        let ids: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
        let rows: Vec<Uuid> =
            on_pool!(self, |e| sqlx::query_scalar(self.sql.job_workflows.clone())
                .persistent(self.named())
                .bind(&ids)
                .fetch_all(e))?;
        Ok(rows.into_iter().map(WorkflowId).collect())
    }

    async fn job_dependents_count(&self, m: JobMatch<'_>) -> Result<u64, sqlx::Error> {
        let states: Vec<&str> = m.states.iter().map(|s| s.as_str()).collect();
        let n: i64 = on_pool!(self, |e| sqlx::query_scalar(
            self.sql.job_dependents_count.clone()
        )
        .persistent(self.named())
        .bind(m.queue)
        .bind(&states)
        .bind(m.kind)
        .bind(m.older_than.map(micros))
        .fetch_one(e))?;
        Ok(count(n))
    }

    async fn job_delete_many(
        &self,
        ids: &[JobId],
        states: &[JobState],
    ) -> Result<u64, sqlx::Error> {
        let ids: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
        let states: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
        let n: i64 = on_pool!(self, |e| sqlx::query_scalar(
            self.sql.job_delete_many.clone()
        )
        .persistent(self.named())
        .bind(&ids)
        .bind(&states)
        .fetch_one(e))?;
        Ok(count(n))
    }
}
