//! SQLite's [`Push`](queue_core::engine::Push) statements: inserting jobs, one or many, unique or
//! not.

use async_trait::async_trait;
use queue_core::engine::{
    micros, JobInsert, JobInsertUnique, JobUniqueReplace, Push, Target, UniqueInsert,
};
use queue_core::JobId;
use sqlx::sqlite::SqliteConnection;
use uuid::Uuid;

use super::rows::{json_array, now_micros};
use super::{insert_chunks, SqliteDriver, INSERT_ROWS};

#[async_trait]
impl Push for SqliteDriver {
    async fn job_insert(
        &self,
        target: Target<'_, SqliteConnection>,
        p: JobInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        match target {
            Target::Pool if p.jobs.len() == 1 => {
                self.pushes.push(p.jobs[0].clone(), p.delays[0]).await
            }
            // One statement is atomic by itself; the engine wraps several in a transaction.
            Target::Pool => {
                let mut conn = self.writer.acquire().await?;
                insert_chunks(&self.sql, &mut conn, p).await
            }
            Target::Tx(conn) => insert_chunks(&self.sql, conn, p).await,
        }
    }

    /// One statement per 2,184 jobs (15 values each, under 32,766 parameters).
    fn job_insert_statements(&self, p: JobInsert<'_>) -> usize {
        p.jobs.len().div_ceil(INSERT_ROWS)
    }

    /// The insert and, when it stored nothing, the read of the holder, on one connection (the
    /// writer, or the caller's transaction): no other write runs between them.
    async fn job_insert_unique(
        &self,
        target: Target<'_, SqliteConnection>,
        p: JobInsertUnique<'_>,
    ) -> Result<UniqueInsert, sqlx::Error> {
        let mut pooled;
        let conn: &mut SqliteConnection = match target {
            Target::Pool => {
                pooled = self.writer.acquire().await?;
                &mut pooled
            }
            Target::Tx(conn) => conn,
        };
        let now = now_micros();
        let job = p.job;
        let inserted: Option<Uuid> = sqlx::query_scalar(self.sql.job_insert_unique.clone())
            .bind(job.id().0)
            .bind(job.queue())
            .bind(job.payload_json())
            .bind(job.priority_value())
            .bind(i64::from(job.max_attempts_value()))
            .bind(now.saturating_add(micros(p.delay)))
            .bind(job.dedup_key_value())
            .bind(job.kind_value())
            .bind(job.meta_json())
            .bind(job.timeout_value().map(micros))
            .bind(now)
            .bind(&p.key[..])
            .bind(p.states)
            .bind(job.concurrency_key_value())
            .fetch_optional(&mut *conn)
            .await?;
        if inserted.is_some() {
            return Ok(UniqueInsert::Inserted);
        }
        let holder: Option<Uuid> = sqlx::query_scalar(self.sql.job_insert_unique_holder.clone())
            .bind(&p.key[..])
            .fetch_optional(&mut *conn)
            .await?;
        Ok(holder.map_or(UniqueInsert::Released, |id| UniqueInsert::Held(JobId(id))))
    }

    async fn job_unique_replace(
        &self,
        target: Target<'_, SqliteConnection>,
        p: JobUniqueReplace<'_>,
    ) -> Result<u64, sqlx::Error> {
        let now = now_micros();
        let q = sqlx::query(self.sql.job_unique_replace.clone())
            .bind(p.id.0)
            .bind(p.job.payload_json())
            .bind(p.job.priority_value())
            .bind(now.saturating_add(micros(p.delay)))
            .bind(now);
        let done = match target {
            Target::Pool => q.execute(&self.writer).await?,
            Target::Tx(conn) => q.execute(conn).await?,
        };
        Ok(done.rows_affected())
    }

    async fn job_unique_holder(&self, id: JobId) -> Result<Option<JobId>, sqlx::Error> {
        let holder: Option<Uuid> = sqlx::query_scalar(self.sql.job_unique_holder.clone())
            .bind(id.0)
            .fetch_optional(&self.reader)
            .await?;
        Ok(holder.map(JobId))
    }

    async fn job_dedup_live(
        &self,
        target: Target<'_, SqliteConnection>,
        queues: &[&str],
        keys: &[&str],
    ) -> Result<Vec<(String, String)>, sqlx::Error> {
        let q = sqlx::query_as(self.sql.job_dedup_live.clone())
            .bind(json_array(queues))
            .bind(json_array(keys));
        match target {
            Target::Pool => q.fetch_all(&self.reader).await,
            Target::Tx(conn) => q.fetch_all(conn).await,
        }
    }
}
