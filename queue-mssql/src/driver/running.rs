//! SQL Server's [`Running`](queue_core::engine::Running) statements: completion, failure, snoozes,
//! metadata, lease extension.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{
    JobComplete, JobCompleteMany, JobFailDead, JobFailRetry, JobMetaSet, JobSnooze, Running,
    StoredMeta, Target,
};
use queue_core::{JobId, JobState, Lease};

use crate::bind::{params, Params};
use crate::error::MsSqlError;
use crate::pool::MsSqlTransaction;
use crate::sql::{dateadd_parts, PAIR_ROWS};

use super::rows::{decode, opt_text, parse_state, signed, text, time};
use super::{finish, MsSqlDriver};

#[async_trait]
impl Running for MsSqlDriver {
    async fn job_complete(
        &self,
        target: Target<'_, MsSqlTransaction>,
        p: JobComplete<'_>,
    ) -> Result<u64, MsSqlError> {
        let delete = p.completion.deletes();
        match target {
            Target::Pool if !delete => {
                self.fenced(&self.sql.job_complete, p.lease, params![p.output])
                    .await
            }
            Target::Pool => {
                let mut conn = self.conn().await?;
                conn.begin().await?;
                let done = async {
                    let lease = params![p.lease.job_id, p.lease.token];
                    let deleted = conn.execute(&self.sql.job_complete_delete, lease).await?;
                    let update = params![p.lease.job_id, p.lease.token, p.output];
                    Ok(deleted + conn.execute(&self.sql.job_complete, update).await?)
                }
                .await;
                finish(&mut conn, done).await
            }
            Target::Tx(tx) => {
                let conn = tx.connection();
                let mut deleted = 0;
                if delete {
                    let lease = params![p.lease.job_id, p.lease.token];
                    deleted = conn.execute(&self.sql.job_complete_delete, lease).await?;
                }
                let update = params![p.lease.job_id, p.lease.token, p.output];
                Ok(deleted + conn.execute(&self.sql.job_complete, update).await?)
            }
        }
    }

    async fn job_complete_many(&self, c: JobCompleteMany<'_>) -> Result<u64, MsSqlError> {
        let JobCompleteMany { leases, completion } = c;
        let keep = !completion.deletes();
        let mut conn = self.conn().await?;
        if !keep {
            conn.begin().await?;
        }
        let done = async {
            let mut total = 0;
            for chunk in leases.chunks(PAIR_ROWS) {
                for delete in [true, false] {
                    if delete && keep {
                        continue;
                    }
                    let mut params = Params::with_capacity(2 * chunk.len());
                    for l in chunk {
                        params.push(l.job_id);
                        params.push(l.token);
                    }
                    let sql = self.sql.job_complete_many_for(chunk.len(), delete);
                    total += conn.execute(&sql, params).await?;
                }
            }
            Ok(total)
        }
        .await;
        if keep {
            return done;
        }
        finish(&mut conn, done).await
    }

    async fn job_fail_retry(&self, p: JobFailRetry<'_>) -> Result<u64, MsSqlError> {
        let (secs, us) = dateadd_parts(p.delay);
        self.fenced(
            &self.sql.job_fail_retry,
            p.lease,
            params![secs, us, p.error, signed(p.errors_kept)],
        )
        .await
    }

    async fn job_fail_dead(&self, p: JobFailDead<'_>) -> Result<u64, MsSqlError> {
        self.fenced(
            &self.sql.job_fail_dead,
            p.lease,
            params![p.error, signed(p.errors_kept)],
        )
        .await
    }

    async fn job_snooze(&self, p: JobSnooze<'_>) -> Result<u64, MsSqlError> {
        let (secs, us) = dateadd_parts(p.delay);
        self.fenced(
            &self.sql.job_snooze,
            p.lease,
            params![secs, us, signed(p.max_snoozes)],
        )
        .await
    }

    async fn job_meta_get(&self, lease: &Lease) -> Result<Option<StoredMeta>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.job_meta_get, params![lease.job_id, lease.token])
            .await?;
        rows.first()
            .map(|r| {
                Ok(StoredMeta {
                    meta: opt_text(r, "meta")?,
                    version: r
                        .try_get::<i64, _>("version")?
                        .ok_or_else(|| decode("version is NULL"))?,
                })
            })
            .transpose()
    }

    async fn job_meta_set(&self, p: JobMetaSet<'_>) -> Result<u64, MsSqlError> {
        self.fenced(&self.sql.job_meta_set, p.lease, params![p.version, p.meta])
            .await
    }

    async fn job_release(&self, lease: &Lease) -> Result<u64, MsSqlError> {
        self.fenced(&self.sql.job_release, lease, Params::default())
            .await
    }

    async fn job_extend(
        &self,
        lease: &Lease,
        by: Duration,
    ) -> Result<Option<DateTime<Utc>>, MsSqlError> {
        let (secs, us) = dateadd_parts(by);
        let rows = self
            .fetch(
                &self.sql.job_extend,
                params![lease.job_id, lease.token, secs, us],
            )
            .await?;
        rows.first()
            .map(|r| time(r, "lease_expires_at"))
            .transpose()
    }

    async fn job_state(
        &self,
        target: Target<'_, MsSqlTransaction>,
        job: JobId,
    ) -> Result<Option<JobState>, MsSqlError> {
        let params = params![job];
        let rows = match target {
            Target::Pool => self.fetch(&self.sql.job_state, params).await?,
            Target::Tx(tx) => tx.connection().fetch(&self.sql.job_state, params).await?,
        };
        rows.first()
            .map(|r| parse_state(&text(r, "state")?))
            .transpose()
    }
}
