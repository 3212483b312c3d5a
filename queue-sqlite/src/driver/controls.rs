//! SQLite's [`Controls`](queue_core::engine::Controls) statements: pauses, limits, rate limits,
//! concurrency keys and fair shares.

use async_trait::async_trait;
use queue_core::engine::{Controls, KeyPage, KeyRateRecord, RateRecord, RateState, Target};
use queue_core::QueueControl;
use sqlx::sqlite::SqliteConnection;
use sqlx::Row;

use super::rows::{control, now_micros};
use super::SqliteDriver;

#[async_trait]
impl Controls for SqliteDriver {
    /// `BEGIN IMMEDIATE` on the writer connection: the write lock is taken before anything is
    /// read, so concurrent schedulers (of this or another process) queue instead of failing.
    async fn queue_control_get(&self, queue: &str) -> Result<Option<QueueControl>, sqlx::Error> {
        let row = sqlx::query(self.sql.queue_control_get.clone())
            .bind(queue)
            .fetch_optional(&self.reader)
            .await?;
        row.as_ref().map(control).transpose()
    }

    async fn queue_control_lock(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
    ) -> Result<Option<QueueControl>, sqlx::Error> {
        let row = sqlx::query(self.sql.queue_control_lock.clone())
            .bind(queue)
            .fetch_optional(conn)
            .await?;
        row.as_ref().map(control).transpose()
    }

    async fn queue_control_list(&self) -> Result<Vec<QueueControl>, sqlx::Error> {
        let rows = sqlx::query(self.sql.queue_control_list.clone())
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(control).collect()
    }

    async fn queue_set_paused(&self, queue: &str, paused: bool) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_paused.clone())
            .bind(queue)
            .bind(paused)
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn queue_set_limit(&self, queue: &str, limit: Option<u32>) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_limit.clone())
            .bind(queue)
            .bind(limit.map(i64::from))
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn queue_set_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_rate.clone())
            .bind(queue)
            .bind(rate.map(|(n, _)| i64::from(n)))
            .bind(rate.map(|(_, period)| period))
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn queue_rate_state(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
    ) -> Result<RateState, sqlx::Error> {
        let row = sqlx::query(self.sql.queue_rate_state.clone())
            .bind(queue)
            .fetch_one(conn)
            .await?;
        let count: i64 = row.try_get("rate_count")?;
        Ok(RateState {
            window: row.try_get("rate_window")?,
            count: u32::try_from(count).unwrap_or(0),
            now_us: row.try_get("now_us")?,
        })
    }

    async fn queue_rate_record(
        &self,
        conn: &mut SqliteConnection,
        c: RateRecord<'_>,
    ) -> Result<(), sqlx::Error> {
        let RateRecord {
            queue,
            window,
            count,
        } = c;
        sqlx::query(self.sql.queue_rate_record.clone())
            .bind(queue)
            .bind(window)
            .bind(i64::from(count))
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn queue_set_key_limit(
        &self,
        queue: &str,
        limit: Option<u32>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_key_limit.clone())
            .bind(queue)
            .bind(limit.map(i64::from))
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn queue_set_key_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.begin().await?;
        sqlx::query(self.sql.queue_set_key_rate.clone())
            .bind(queue)
            .bind(rate.map(|(n, _)| i64::from(n)))
            .bind(rate.map(|(_, period)| period))
            .bind(now_micros())
            .execute(&mut *tx)
            .await?;
        sqlx::query(self.sql.queue_set_key_rate_forget.clone())
            .bind(queue)
            .execute(&mut *tx)
            .await?;
        tx.commit().await
    }

    async fn queue_key_rate_get(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
        key: &str,
    ) -> Result<Option<(i64, u32)>, sqlx::Error> {
        let row: Option<(i64, i64)> = sqlx::query_as(self.sql.queue_key_rate_get.clone())
            .bind(queue)
            .bind(key)
            .fetch_optional(conn)
            .await?;
        Ok(row.map(|(w, n)| (w, u32::try_from(n).unwrap_or(0))))
    }

    async fn queue_key_rate_put(
        &self,
        conn: &mut SqliteConnection,
        c: KeyRateRecord<'_>,
    ) -> Result<(), sqlx::Error> {
        let KeyRateRecord {
            queue,
            key,
            window,
            count,
        } = c;
        sqlx::query(self.sql.queue_key_rate_put.clone())
            .bind(queue)
            .bind(key)
            .bind(window)
            .bind(i64::from(count))
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn queue_set_fair(&self, queue: &str, on: bool) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_fair.clone())
            .bind(queue)
            .bind(on)
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn queue_key_cursor(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
        cursor: Option<&str>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_key_cursor.clone())
            .bind(queue)
            .bind(cursor)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn job_key_leases(
        &self,
        target: Target<'_, SqliteConnection>,
        queue: &str,
    ) -> Result<Vec<(String, u64)>, sqlx::Error> {
        let q = sqlx::query_as::<_, (String, i64)>(self.sql.job_key_leases.clone()).bind(queue);
        let rows = match target {
            Target::Pool => q.fetch_all(&self.reader).await?,
            Target::Tx(conn) => q.fetch_all(conn).await?,
        };
        Ok(rows
            .into_iter()
            .map(|(k, n)| (k, u64::try_from(n).unwrap_or(0)))
            .collect())
    }

    async fn job_key_next(
        &self,
        conn: &mut SqliteConnection,
        p: KeyPage<'_>,
    ) -> Result<Vec<String>, sqlx::Error> {
        let KeyPage {
            queue,
            after,
            limit: n,
        } = p;
        sqlx::query_scalar(self.sql.job_key_next.clone())
            .bind(queue)
            .bind(after)
            .bind(i64::try_from(n).unwrap_or(i64::MAX))
            .fetch_all(conn)
            .await
    }

    async fn job_key_waiting(&self, queue: &str, key: &str) -> Result<u64, sqlx::Error> {
        let n: i64 = sqlx::query_scalar(self.sql.job_key_waiting.clone())
            .bind(queue)
            .bind(key)
            .bind(now_micros())
            .fetch_one(&self.reader)
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn job_live_leases(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
    ) -> Result<u64, sqlx::Error> {
        let n: i64 = sqlx::query_scalar(self.sql.job_live_leases.clone())
            .bind(queue)
            .fetch_one(conn)
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
