//! PostgreSQL's [`Push`](queue_core::engine::Push) statements: inserting jobs, one or many, unique
//! or not.

use async_trait::async_trait;
use queue_core::engine::{
    micros, JobInsert, JobInsertUnique, JobUniqueReplace, Push, Target, UniqueInsert,
};
use queue_core::JobId;
use sqlx::postgres::PgConnection;
use uuid::Uuid;

use crate::pinned::on_pool;

use super::rows::signed;
use super::{PgDriver, INSERT_CHUNK};

#[async_trait]
impl Push for PgDriver {
    async fn job_insert(
        &self,
        target: Target<'_, PgConnection>,
        p: JobInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        match target {
            // One statement is atomic by itself (the engine wraps several in a transaction): no
            // BEGIN/COMMIT round trips, except behind a pooler in transaction mode, which needs
            // them to keep the statement on one server.
            Target::Pool if self.pinned => {
                let mut tx = self.pool.begin().await?;
                self.write_jobs(&mut tx, p).await?;
                tx.commit().await
            }
            Target::Pool => {
                let mut conn = self.pool.acquire().await?;
                self.write_jobs(&mut conn, p).await
            }
            Target::Tx(conn) => self.write_jobs(conn, p).await,
        }
    }

    /// One COPY, or one statement per 5,000 jobs.
    fn job_insert_statements(&self, p: JobInsert<'_>) -> usize {
        if self.copies(p) {
            1
        } else {
            p.jobs.len().div_ceil(INSERT_CHUNK)
        }
    }

    async fn job_insert_unique(
        &self,
        target: Target<'_, PgConnection>,
        p: JobInsertUnique<'_>,
    ) -> Result<UniqueInsert, sqlx::Error> {
        let job = p.job;
        let q = sqlx::query_as::<_, (Uuid, bool)>(self.sql.job_insert_unique.clone())
            .persistent(self.named())
            .bind(job.id().0)
            .bind(job.queue())
            .bind(job.payload_json())
            .bind(job.priority_value())
            .bind(signed(job.max_attempts_value()))
            .bind(micros(p.delay))
            .bind(job.dedup_key_value())
            .bind(job.kind_value())
            .bind(job.meta_json())
            .bind(job.timeout_value().map(micros))
            .bind(&p.key[..])
            .bind(p.states)
            .bind(job.concurrency_key_value());
        let row = match target {
            Target::Pool => on_pool!(self, |e| q.fetch_optional(e))?,
            Target::Tx(conn) => q.fetch_optional(conn).await?,
        };
        Ok(match row {
            Some((_, true)) => UniqueInsert::Inserted,
            Some((holder, false)) => UniqueInsert::Held(JobId(holder)),
            None => UniqueInsert::Released,
        })
    }

    async fn job_unique_replace(
        &self,
        target: Target<'_, PgConnection>,
        p: JobUniqueReplace<'_>,
    ) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.job_unique_replace.clone())
            .persistent(self.named())
            .bind(p.id.0)
            .bind(p.job.payload_json())
            .bind(p.job.priority_value())
            .bind(micros(p.delay));
        let done = match target {
            Target::Pool => on_pool!(self, |e| q.execute(e))?,
            Target::Tx(conn) => q.execute(conn).await?,
        };
        Ok(done.rows_affected())
    }

    async fn job_unique_holder(&self, id: JobId) -> Result<Option<JobId>, sqlx::Error> {
        let holder: Option<Uuid> = on_pool!(self, |e| sqlx::query_scalar(
            self.sql.job_unique_holder.clone()
        )
        .persistent(self.named())
        .bind(id.0)
        .fetch_optional(e))?;
        Ok(holder.map(JobId))
    }

    async fn job_dedup_live(
        &self,
        target: Target<'_, PgConnection>,
        queues: &[&str],
        keys: &[&str],
    ) -> Result<Vec<(String, String)>, sqlx::Error> {
        let q = sqlx::query_as(self.sql.job_dedup_live.clone())
            .persistent(self.named())
            .bind(queues)
            .bind(keys);
        match target {
            Target::Pool => on_pool!(self, |e| q.fetch_all(e)),
            Target::Tx(conn) => q.fetch_all(conn).await,
        }
    }
}
