//! SQLite's [`Operators`](queue_core::engine::Operators) statements: reading, listing, cancelling,
//! retrying and deleting jobs, by id and in bulk.

use async_trait::async_trait;
use queue_core::engine::{micros, JobMatch, JobReschedule, Operators};
use queue_core::{Job, JobId, JobState, ListRequest, QueueStats, WorkflowId};
use sqlx::sqlite::{SqliteConnection, SqliteRow};
use sqlx::Row;
use uuid::Uuid;

use super::rows::{
    created_before, job_detail_from_row, job_from_row, json_array, now_micros, rows_of, to_time_opt,
};
use super::{SqliteDriver, MAX_PARAMS};

#[async_trait]
impl Operators for SqliteDriver {
    async fn job_cancel(&self, id: JobId) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.job_cancel.clone())
            .bind(id.0)
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_retry(
        &self,
        conn: &mut SqliteConnection,
        id: JobId,
    ) -> Result<Option<String>, sqlx::Error> {
        sqlx::query_scalar(self.sql.job_retry.clone())
            .bind(id.0)
            .bind(now_micros())
            .fetch_optional(conn)
            .await
    }

    async fn job_reschedule(&self, p: JobReschedule) -> Result<Option<String>, sqlx::Error> {
        let now = now_micros();
        sqlx::query_scalar(self.sql.job_reschedule.clone())
            .bind(p.id.0)
            .bind(p.delay.map(|d| now.saturating_add(micros(d))))
            .bind(p.priority)
            .bind(now)
            .fetch_optional(&self.writer)
            .await
    }

    async fn job_get(&self, id: JobId) -> Result<Option<Job>, sqlx::Error> {
        let row = sqlx::query(self.sql.job_get.clone())
            .bind(id.0)
            .fetch_optional(&self.reader)
            .await?;
        row.as_ref().map(job_detail_from_row).transpose()
    }

    async fn job_list(&self, req: &ListRequest) -> Result<Vec<Job>, sqlx::Error> {
        let rows = sqlx::query(self.sql.job_list.clone())
            .bind(req.queue.as_deref())
            .bind(req.state.map(|s| s.as_str()))
            .bind(req.before.map(|id| id.0))
            .bind(i64::try_from(req.limit).unwrap_or(i64::MAX))
            .bind(req.kind.as_deref())
            .fetch_all(&self.reader)
            .await?;
        rows.iter()
            .map(|r| job_from_row(r).map(|(j, _)| j))
            .collect()
    }

    async fn job_stats(
        &self,
        queue: Option<&str>,
        cap: Option<u64>,
    ) -> Result<Vec<QueueStats>, sqlx::Error> {
        let rows = sqlx::query(self.sql.job_stats.clone())
            .bind(now_micros())
            .bind(queue)
            .bind(cap.map_or(-1, |c| i64::try_from(c).unwrap_or(i64::MAX)))
            .fetch_all(&self.reader)
            .await?;
        let count = |row: &SqliteRow, col: &str| -> Result<u64, sqlx::Error> {
            let v: i64 = row.try_get(col)?;
            Ok(u64::try_from(v).unwrap_or(0))
        };
        rows.iter()
            .map(|row| {
                Ok(QueueStats {
                    queue: row.try_get("queue")?,
                    waiting: count(row, "waiting")?,
                    available: count(row, "available")?,
                    scheduled: count(row, "scheduled")?,
                    running: count(row, "running")?,
                    oldest_due: to_time_opt(row.try_get("oldest_due")?)?,
                    completed: count(row, "completed")?,
                    dead: count(row, "dead")?,
                    cancelled: count(row, "cancelled")?,
                    ..QueueStats::default()
                })
            })
            .collect()
    }

    async fn job_ids(&self, m: JobMatch<'_>) -> Result<Vec<(JobId, String)>, sqlx::Error> {
        let states: Vec<&str> = m.states.iter().map(|s| s.as_str()).collect();
        let rows = sqlx::query(self.sql.job_ids.clone())
            .bind(m.queue)
            .bind(json_array(&states))
            .bind(m.kind)
            .bind(created_before(m.older_than))
            .bind(m.before.map(|id| id.0))
            .bind(i64::try_from(m.limit).unwrap_or(i64::MAX))
            .fetch_all(&self.reader)
            .await?;
        rows.iter()
            .map(|r| Ok((JobId(r.try_get("id")?), r.try_get("queue")?)))
            .collect()
    }

    async fn job_count(&self, m: JobMatch<'_>) -> Result<u64, sqlx::Error> {
        let states: Vec<&str> = m.states.iter().map(|s| s.as_str()).collect();
        let n: i64 = sqlx::query_scalar(self.sql.job_count.clone())
            .bind(m.queue)
            .bind(json_array(&states))
            .bind(m.kind)
            .bind(created_before(m.older_than))
            .fetch_one(&self.reader)
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn job_cancel_many(&self, ids: &[JobId]) -> Result<u64, sqlx::Error> {
        self.by_ids(&self.sql.job_cancel_many, Some(now_micros()), None, ids)
            .await
    }

    async fn job_retry_many(
        &self,
        conn: &mut SqliteConnection,
        ids: &[JobId],
    ) -> Result<u64, sqlx::Error> {
        let mut done = 0;
        for chunk in ids.chunks(MAX_PARAMS - 2) {
            let mut q =
                sqlx::query(rows_of(&self.sql.job_retry_many, chunk.len())).bind(now_micros());
            for id in chunk {
                q = q.bind(id.0);
            }
            done += q.execute(&mut *conn).await?.rows_affected();
        }
        Ok(done)
    }

    async fn job_workflows(&self, ids: &[JobId]) -> Result<Vec<WorkflowId>, sqlx::Error> {
        let mut out = Vec::new();
        for chunk in ids.chunks(MAX_PARAMS) {
            let mut q = sqlx::query_scalar(rows_of(&self.sql.job_workflows, chunk.len()));
            for id in chunk {
                q = q.bind(id.0);
            }
            let found: Vec<Uuid> = q.fetch_all(&self.reader).await?;
            out.extend(found.into_iter().map(WorkflowId));
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    async fn job_dependents_count(&self, m: JobMatch<'_>) -> Result<u64, sqlx::Error> {
        let states: Vec<&str> = m.states.iter().map(|s| s.as_str()).collect();
        let n: i64 = sqlx::query_scalar(self.sql.job_dependents_count.clone())
            .bind(m.queue)
            .bind(json_array(&states))
            .bind(m.kind)
            .bind(created_before(m.older_than))
            .fetch_one(&self.reader)
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn job_delete_many(
        &self,
        ids: &[JobId],
        states: &[JobState],
    ) -> Result<u64, sqlx::Error> {
        let states: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
        self.by_ids(
            &self.sql.job_delete_many,
            None,
            Some(&json_array(&states)),
            ids,
        )
        .await
    }
}
