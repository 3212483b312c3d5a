//! MySQL/MariaDB's [`Operators`](queue_core::engine::Operators) statements: reading, listing,
//! cancelling, retrying and deleting jobs, by id and in bulk.

use async_trait::async_trait;
use queue_core::engine::{micros, JobMatch, JobReschedule, Operators};
use queue_core::workflow::WorkflowId;
use queue_core::{Job, JobId, JobState, ListRequest, QueueStats};
use sqlx::mysql::{MySqlConnection, MySqlRow};
use sqlx::Row;
use uuid::Uuid;

use super::rows::{bind_match, job_from_row, sorted_ids, text};
use super::{MySqlDriver, ID_CHUNK, STATS_QUEUES};

#[async_trait]
impl Operators for MySqlDriver {
    async fn job_cancel(&self, id: JobId) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.job_cancel.clone())
            .bind(id.0)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_retry(
        &self,
        conn: &mut MySqlConnection,
        id: JobId,
    ) -> Result<Option<String>, sqlx::Error> {
        let done = sqlx::query(self.sql.job_retry.clone())
            .bind(id.0)
            .execute(&mut *conn)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        let row = sqlx::query(self.sql.job_retry_queue.clone())
            .bind(id.0)
            .fetch_optional(&mut *conn)
            .await?;
        row.map(|r| text(&r, "queue")).transpose()
    }

    async fn job_reschedule(&self, p: JobReschedule) -> Result<Option<String>, sqlx::Error> {
        let delay = p.delay.map(micros);
        let done = sqlx::query(self.sql.job_reschedule.clone())
            .bind(delay)
            .bind(delay)
            .bind(p.priority)
            .bind(p.id.0)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        let row = sqlx::query(self.sql.job_reschedule_queue.clone())
            .bind(p.id.0)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| text(&r, "queue")).transpose()
    }

    async fn job_get(&self, id: JobId) -> Result<Option<Job>, sqlx::Error> {
        sqlx::query(self.sql.job_get.clone())
            .bind(id.0)
            .fetch_optional(&self.pool)
            .await?
            .map(|r| job_from_row(&r))
            .transpose()
    }

    async fn job_list(&self, req: &ListRequest) -> Result<Vec<Job>, sqlx::Error> {
        let state = req.state.map(|s| s.as_str());
        let before = req.before.map(|id| id.0);
        sqlx::query(self.sql.job_list.clone())
            .bind(req.queue.as_deref())
            .bind(req.queue.as_deref())
            .bind(state)
            .bind(state)
            .bind(req.kind.as_deref())
            .bind(req.kind.as_deref())
            .bind(before)
            .bind(before)
            .bind(req.limit as u64)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(job_from_row)
            .collect()
    }

    /// The queues (a loose index scan), then their counts in chunks of one UNION ALL each.
    async fn job_stats(
        &self,
        queue: Option<&str>,
        cap: Option<u64>,
    ) -> Result<Vec<QueueStats>, sqlx::Error> {
        let queues: Vec<String> = sqlx::query_scalar(self.sql.job_stats_queues.clone())
            .bind(queue)
            .bind(queue)
            .fetch_all(&self.pool)
            .await?;
        let cap = cap.map_or(i64::MAX, |c| i64::try_from(c).unwrap_or(i64::MAX));
        let count = |r: &MySqlRow, c: &str| -> Result<u64, sqlx::Error> {
            r.try_get::<i64, _>(c).map(|v| v.max(0) as u64)
        };
        let mut stats = Vec::with_capacity(queues.len());
        for chunk in queues.chunks(STATS_QUEUES) {
            let mut q = sqlx::query(self.sql.job_stats(chunk.len()));
            for name in chunk {
                q = q
                    .bind(name)
                    .bind(name)
                    .bind(name)
                    .bind(name)
                    .bind(name)
                    .bind(name);
                for _ in 0..3 {
                    q = q.bind(name).bind(cap);
                }
            }
            for r in q.fetch_all(&self.pool).await? {
                stats.push(QueueStats {
                    queue: text(&r, "queue")?,
                    waiting: count(&r, "waiting")?,
                    available: count(&r, "available")?,
                    scheduled: count(&r, "scheduled")?,
                    running: count(&r, "running")?,
                    oldest_due: r.try_get("oldest_due")?,
                    completed: count(&r, "completed")?,
                    dead: count(&r, "dead")?,
                    cancelled: count(&r, "cancelled")?,
                    ..QueueStats::default()
                });
            }
        }
        Ok(stats)
    }

    async fn job_ids(&self, m: JobMatch<'_>) -> Result<Vec<(JobId, String)>, sqlx::Error> {
        let q = bind_match(sqlx::query(self.sql.job_ids(m.states.len())), &m)
            .bind(m.before.map(|id| id.0))
            .bind(m.before.map(|id| id.0))
            .bind(m.limit as u64);
        let rows = q.fetch_all(&self.pool).await?;
        rows.iter()
            .map(|r| Ok((JobId(r.try_get("id")?), text(r, "queue")?)))
            .collect()
    }

    async fn job_count(&self, m: JobMatch<'_>) -> Result<u64, sqlx::Error> {
        let row = bind_match(sqlx::query(self.sql.job_count(m.states.len())), &m)
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get::<i64, _>(0)?.max(0) as u64)
    }

    async fn job_cancel_many(&self, ids: &[JobId]) -> Result<u64, sqlx::Error> {
        let mut q = sqlx::query(self.sql.job_cancel_many(ids.len()));
        for id in ids {
            q = q.bind(id.0);
        }
        Ok(q.execute(&self.pool).await?.rows_affected())
    }

    async fn job_retry_many(
        &self,
        conn: &mut MySqlConnection,
        ids: &[JobId],
    ) -> Result<u64, sqlx::Error> {
        let mut q = sqlx::query(self.sql.job_retry_many(ids.len()));
        for id in ids {
            q = q.bind(id.0);
        }
        Ok(q.execute(conn).await?.rows_affected())
    }

    async fn job_workflows(&self, ids: &[JobId]) -> Result<Vec<WorkflowId>, sqlx::Error> {
        let mut out = Vec::new();
        for chunk in sorted_ids(ids).chunks(ID_CHUNK) {
            let mut q = sqlx::query_scalar::<_, Uuid>(self.sql.job_workflows(chunk.len()));
            for id in chunk {
                q = q.bind(*id);
            }
            out.extend(q.fetch_all(&self.pool).await?);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out.into_iter().map(WorkflowId).collect())
    }

    async fn job_dependents_count(&self, m: JobMatch<'_>) -> Result<u64, sqlx::Error> {
        let mut q = sqlx::query(self.sql.job_dependents_count(m.states.len()));
        for s in m.states {
            q = q.bind(s.as_str());
        }
        let age = m.older_than.map(micros);
        let row = q
            .bind(m.queue)
            .bind(m.queue)
            .bind(m.kind)
            .bind(m.kind)
            .bind(age)
            .bind(age)
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get::<i64, _>(0)?.max(0) as u64)
    }

    async fn job_delete_many(
        &self,
        ids: &[JobId],
        states: &[JobState],
    ) -> Result<u64, sqlx::Error> {
        let mut q = sqlx::query(self.sql.job_delete_many(ids.len(), states.len()));
        for id in ids {
            q = q.bind(id.0);
        }
        for s in states {
            q = q.bind(s.as_str());
        }
        Ok(q.execute(&self.pool).await?.rows_affected())
    }
}
