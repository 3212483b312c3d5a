//! MySQL/MariaDB's [`Push`](queue_core::engine::Push) statements: inserting jobs, one or many,
//! unique or not.

use async_trait::async_trait;
use queue_core::engine::{
    micros, JobInsert, JobInsertUnique, JobUniqueReplace, Push, Target, UniqueInsert,
};
use queue_core::JobId;
use sqlx::mysql::MySqlConnection;
use uuid::Uuid;

use super::rows::text;
use super::MySqlDriver;

#[async_trait]
impl Push for MySqlDriver {
    async fn job_insert(
        &self,
        target: Target<'_, MySqlConnection>,
        p: JobInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        let chunks = self.insert_chunks_of(p.jobs);
        match target {
            // One statement is atomic by itself: no BEGIN/COMMIT round trips (the engine wraps
            // several in a transaction).
            Target::Pool => {
                let mut conn = self.pool.acquire().await?;
                self.insert_chunks(&mut conn, &chunks, p).await
            }
            Target::Tx(conn) => self.insert_chunks(conn, &chunks, p).await,
        }
    }

    /// One statement per 500 jobs, or fewer when they would fill half of `max_allowed_packet`.
    fn job_insert_statements(&self, p: JobInsert<'_>) -> usize {
        self.insert_chunks_of(p.jobs).len()
    }

    /// The INSERT; after a duplicate entry, the holder of the key (step 2), and when there is
    /// none, whether the id or a live dedup key clashed instead (step 3), all on one connection.
    async fn job_insert_unique(
        &self,
        target: Target<'_, MySqlConnection>,
        p: JobInsertUnique<'_>,
    ) -> Result<UniqueInsert, sqlx::Error> {
        let mut pooled;
        let conn: &mut MySqlConnection = match target {
            Target::Pool => {
                pooled = self.pool.acquire().await?;
                &mut pooled
            }
            Target::Tx(conn) => conn,
        };
        let job = p.job;
        let inserted = sqlx::query(self.sql.job_insert_unique.clone())
            .bind(job.id().0)
            .bind(job.queue())
            .bind(job.payload_json())
            .bind(job.priority_value())
            .bind(job.max_attempts_value())
            .bind(micros(p.delay))
            .bind(job.dedup_key_value())
            .bind(job.kind_value())
            .bind(job.meta_json())
            .bind(job.timeout_value().map(micros))
            .bind(&p.key[..])
            .bind(p.states)
            .bind(job.concurrency_key_value().map(str::as_bytes))
            .execute(&mut *conn)
            .await;
        let err = match inserted {
            Ok(_) => return Ok(UniqueInsert::Inserted),
            Err(e) if crate::error::is_duplicate_entry(&e) => e,
            Err(e) => return Err(e),
        };
        // A failed statement is undone alone: a caller's transaction goes on.
        let holder: Option<Uuid> = sqlx::query_scalar(self.sql.job_insert_unique_holder.clone())
            .bind(&p.key[..])
            .fetch_optional(&mut *conn)
            .await?;
        if let Some(id) = holder {
            return Ok(UniqueInsert::Held(JobId(id)));
        }
        let clashes: i64 = sqlx::query_scalar(self.sql.job_insert_unique_clash.clone())
            .bind(job.id().0)
            .bind(job.queue())
            .bind(job.dedup_key_value())
            .fetch_one(&mut *conn)
            .await?;
        if clashes > 0 {
            return Err(err);
        }
        Ok(UniqueInsert::Released)
    }

    async fn job_unique_replace(
        &self,
        target: Target<'_, MySqlConnection>,
        p: JobUniqueReplace<'_>,
    ) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.job_unique_replace.clone())
            .bind(p.job.payload_json())
            .bind(p.job.priority_value())
            .bind(micros(p.delay))
            .bind(p.id.0);
        let done = match target {
            Target::Pool => q.execute(&self.pool).await?,
            Target::Tx(conn) => q.execute(conn).await?,
        };
        Ok(done.rows_affected())
    }

    async fn job_unique_holder(&self, id: JobId) -> Result<Option<JobId>, sqlx::Error> {
        let holder: Option<Uuid> = sqlx::query_scalar(self.sql.job_unique_holder.clone())
            .bind(id.0)
            .fetch_optional(&self.pool)
            .await?;
        Ok(holder.map(JobId))
    }

    async fn job_dedup_live(
        &self,
        target: Target<'_, MySqlConnection>,
        queues: &[&str],
        keys: &[&str],
    ) -> Result<Vec<(String, String)>, sqlx::Error> {
        let sql = self.sql.job_dedup_live(queues.len(), keys.len());
        let mut q = sqlx::query(sql);
        for v in queues.iter().chain(keys) {
            q = q.bind(*v);
        }
        let rows = match target {
            Target::Pool => q.fetch_all(&self.pool).await?,
            Target::Tx(conn) => q.fetch_all(conn).await?,
        };
        rows.iter()
            .map(|r| Ok((text(r, "queue")?, text(r, "dedup_live")?)))
            .collect()
    }
}
