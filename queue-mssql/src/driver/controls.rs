//! SQL Server's [`Controls`](queue_core::engine::Controls) statements: pauses, limits, rate limits,
//! concurrency keys and fair shares.

use async_trait::async_trait;
use queue_core::engine::{Controls, KeyPage, KeyRateRecord, RateRecord, RateState, Target};
use queue_core::QueueControl;

use crate::bind::{params, Params};
use crate::error::MsSqlError;
use crate::pool::MsSqlTransaction;

use super::rows::{
    control, count, decode, key_column, key_cursor_values, key_leases, key_next_values, key_rate,
    key_rate_put_values, key_values, rate_record_values, rate_state, set_limit_values,
    set_rate_values,
};
use super::MsSqlDriver;

#[async_trait]
impl Controls for MsSqlDriver {
    async fn queue_control_get(&self, queue: &str) -> Result<Option<QueueControl>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.queue_control_get, params![queue])
            .await?;
        rows.first().map(control).transpose()
    }

    async fn queue_control_lock(
        &self,
        tx: &mut MsSqlTransaction,
        queue: &str,
    ) -> Result<Option<QueueControl>, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.queue_control_lock, params![queue])
            .await?;
        rows.first().map(control).transpose()
    }

    async fn queue_control_list(&self) -> Result<Vec<QueueControl>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.queue_control_list, Params::default())
            .await?;
        rows.iter().map(control).collect()
    }

    /// An UPDATE, then an INSERT when it changed no row, in one request inside a transaction
    /// of the driver's, as every write of a queue's controls (see `queue_set_paused.sql`).
    async fn queue_set_paused(&self, queue: &str, paused: bool) -> Result<(), MsSqlError> {
        self.upsert(&self.sql.queue_set_paused, params![queue, paused])
            .await
    }

    async fn queue_set_limit(&self, queue: &str, limit: Option<u32>) -> Result<(), MsSqlError> {
        self.upsert(&self.sql.queue_set_limit, set_limit_values(queue, limit))
            .await
    }

    async fn queue_set_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), MsSqlError> {
        self.upsert(&self.sql.queue_set_rate, set_rate_values(queue, rate))
            .await
    }

    async fn queue_rate_state(
        &self,
        tx: &mut MsSqlTransaction,
        queue: &str,
    ) -> Result<RateState, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.queue_rate_state, params![queue])
            .await?;
        rows.first()
            .map(rate_state)
            .transpose()?
            .ok_or_else(|| decode(format!("queue {queue} has no row to count its rate in")))
    }

    async fn queue_rate_record(
        &self,
        tx: &mut MsSqlTransaction,
        c: RateRecord<'_>,
    ) -> Result<(), MsSqlError> {
        let RateRecord {
            queue,
            window,
            count,
        } = c;
        tx.connection()
            .execute(
                &self.sql.queue_rate_record,
                rate_record_values(queue, window, count),
            )
            .await?;
        Ok(())
    }

    async fn queue_set_key_limit(&self, queue: &str, limit: Option<u32>) -> Result<(), MsSqlError> {
        self.upsert(
            &self.sql.queue_set_key_limit,
            set_limit_values(queue, limit),
        )
        .await
    }

    async fn queue_set_fair(&self, queue: &str, on: bool) -> Result<(), MsSqlError> {
        self.upsert(&self.sql.queue_set_fair, params![queue, on])
            .await
    }

    /// One request (the queue's row, then its keys' counts) in a transaction of the driver's:
    /// the row's exclusive lock keeps keyed claims out until all is done, and a failure of any
    /// statement (which does not stop the request: XACT_ABORT is off) undoes them all.
    async fn queue_set_key_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), MsSqlError> {
        self.upsert(&self.sql.queue_set_key_rate, set_rate_values(queue, rate))
            .await
    }

    async fn queue_key_rate_get(
        &self,
        tx: &mut MsSqlTransaction,
        queue: &str,
        key: &str,
    ) -> Result<Option<(i64, u32)>, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.queue_key_rate_get, key_values(queue, key))
            .await?;
        rows.first().map(key_rate).transpose()
    }

    async fn queue_key_rate_put(
        &self,
        tx: &mut MsSqlTransaction,
        c: KeyRateRecord<'_>,
    ) -> Result<(), MsSqlError> {
        let KeyRateRecord {
            queue,
            key,
            window,
            count,
        } = c;
        tx.connection()
            .execute(
                &self.sql.queue_key_rate_put,
                key_rate_put_values(queue, key, window, count),
            )
            .await?;
        Ok(())
    }

    async fn queue_key_cursor(
        &self,
        tx: &mut MsSqlTransaction,
        queue: &str,
        cursor: Option<&str>,
    ) -> Result<(), MsSqlError> {
        tx.connection()
            .execute(&self.sql.queue_key_cursor, key_cursor_values(queue, cursor))
            .await?;
        Ok(())
    }

    async fn job_key_leases(
        &self,
        target: Target<'_, MsSqlTransaction>,
        queue: &str,
    ) -> Result<Vec<(String, u64)>, MsSqlError> {
        let rows = match target {
            Target::Pool => self.fetch(&self.sql.job_key_leases, params![queue]).await?,
            Target::Tx(tx) => {
                tx.connection()
                    .fetch(&self.sql.job_key_leases, params![queue])
                    .await?
            }
        };
        key_leases(&rows)
    }

    async fn job_key_next(
        &self,
        tx: &mut MsSqlTransaction,
        p: KeyPage<'_>,
    ) -> Result<Vec<String>, MsSqlError> {
        let KeyPage {
            queue,
            after,
            limit: n,
        } = p;
        let rows = tx
            .connection()
            .fetch(&self.sql.job_key_next, key_next_values(queue, after, n))
            .await?;
        rows.iter()
            .map(|r| key_column(r, "next_key")?.ok_or_else(|| decode("a next key is NULL")))
            .collect()
    }

    async fn job_key_waiting(&self, queue: &str, key: &str) -> Result<u64, MsSqlError> {
        let rows = self
            .fetch(&self.sql.job_key_waiting, key_values(queue, key))
            .await?;
        rows.first()
            .map(|r| count(r, "waiting"))
            .transpose()?
            .ok_or_else(|| decode("COUNT_BIG(*) returned no row"))
    }

    async fn job_live_leases(
        &self,
        tx: &mut MsSqlTransaction,
        queue: &str,
    ) -> Result<u64, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.job_live_leases, params![queue])
            .await?;
        rows.first()
            .map(|r| count(r, "live"))
            .transpose()?
            .ok_or_else(|| decode("COUNT_BIG(*) returned no row"))
    }
}
