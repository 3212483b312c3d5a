//! SQL Server's [`Push`](queue_core::engine::Push) statements: inserting jobs, one or many, unique
//! or not.

use async_trait::async_trait;
use queue_core::engine::{
    JobInsert, JobInsertUnique, JobUniqueReplace, Push, Target, UniqueInsert,
};
use queue_core::JobId;

use crate::bind::{params, Params};
use crate::error::MsSqlError;
use crate::pool::{MsSqlConnection, MsSqlTransaction};
use crate::sql::{INSERT_ROWS, IN_LIST};

use super::rows::{
    chunks, decode, dedup_key, text, unique_insert_outcome, unique_insert_values,
    unique_replace_values, uuid_of,
};
use super::MsSqlDriver;

#[async_trait]
impl Push for MsSqlDriver {
    async fn job_insert(
        &self,
        target: Target<'_, MsSqlTransaction>,
        p: JobInsert<'_>,
    ) -> Result<(), MsSqlError> {
        let parts = chunks(p.jobs.len(), INSERT_ROWS);
        match target {
            // One statement is atomic by itself: no BEGIN/COMMIT round trips (the engine wraps
            // several in a transaction).
            Target::Pool => {
                let mut conn = self.conn().await?;
                self.insert_chunks(&mut conn, &p, &parts).await
            }
            Target::Tx(tx) => self.insert_chunks(tx.connection(), &p, &parts).await,
        }
    }

    /// One statement per 149 jobs, 14 values each (2,100 parameters at most).
    fn job_insert_statements(&self, p: JobInsert<'_>) -> usize {
        p.jobs.len().div_ceil(INSERT_ROWS)
    }

    /// One request (see `job_insert_unique.sql`): the insert, and after a duplicate the holder
    /// of the key, read with a locking read of the latest committed rows. On the caller's
    /// session when given: a duplicate never dooms its transaction (XACT_ABORT is off, and the
    /// statement's TRY/CATCH takes the error).
    async fn job_insert_unique(
        &self,
        target: Target<'_, MsSqlTransaction>,
        p: JobInsertUnique<'_>,
    ) -> Result<UniqueInsert, MsSqlError> {
        let params = unique_insert_values(&p);
        let rows = match target {
            Target::Pool => self.fetch(&self.sql.job_insert_unique, params).await?,
            Target::Tx(tx) => {
                tx.connection()
                    .fetch(&self.sql.job_insert_unique, params)
                    .await?
            }
        };
        unique_insert_outcome(&rows)
    }

    async fn job_unique_replace(
        &self,
        target: Target<'_, MsSqlTransaction>,
        p: JobUniqueReplace<'_>,
    ) -> Result<u64, MsSqlError> {
        let params = unique_replace_values(&p);
        match target {
            Target::Pool => {
                self.conn()
                    .await?
                    .execute(&self.sql.job_unique_replace, params)
                    .await
            }
            Target::Tx(tx) => {
                tx.connection()
                    .execute(&self.sql.job_unique_replace, params)
                    .await
            }
        }
    }

    async fn job_unique_holder(&self, id: JobId) -> Result<Option<JobId>, MsSqlError> {
        let rows = self.fetch(&self.sql.job_unique_holder, params![id]).await?;
        rows.first()
            .map(|r| uuid_of(r, "id").map(JobId))
            .transpose()
    }

    async fn job_dedup_live(
        &self,
        target: Target<'_, MsSqlTransaction>,
        queues: &[&str],
        keys: &[&str],
    ) -> Result<Vec<(String, String)>, MsSqlError> {
        let mut pooled;
        let conn: &mut MsSqlConnection = match target {
            Target::Pool => {
                pooled = self.conn().await?;
                &mut pooled
            }
            Target::Tx(tx) => tx.connection(),
        };
        let mut live = Vec::new();
        for q in queues.chunks(IN_LIST) {
            for k in keys.chunks(IN_LIST) {
                let sql = self.sql.job_dedup_live_for(q.len(), k.len());
                let mut params = Params::with_capacity(q.len() + k.len());
                params.extend(q.iter().copied());
                params.extend(k.iter().map(|s| s.as_bytes()));
                for row in conn.fetch(&sql, params).await? {
                    let key = dedup_key(&row)?.ok_or_else(|| decode("a live key is NULL"))?;
                    live.push((text(&row, "queue")?, key));
                }
            }
        }
        Ok(live)
    }
}
