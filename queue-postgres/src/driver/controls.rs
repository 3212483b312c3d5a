//! PostgreSQL's [`Controls`](queue_core::engine::Controls) statements: pauses, limits, rate limits,
//! concurrency keys and fair shares.

use async_trait::async_trait;
use queue_core::engine::{Controls, KeyPage, KeyRateRecord, RateRecord, RateState, Target};
use queue_core::QueueControl;
use sqlx::postgres::PgConnection;
use sqlx::Row;

use crate::pinned::on_pool;

use super::rows::{control, count};
use super::PgDriver;

#[async_trait]
impl Controls for PgDriver {
    async fn queue_control_get(&self, queue: &str) -> Result<Option<QueueControl>, sqlx::Error> {
        let row = on_pool!(self, |e| sqlx::query(self.sql.queue_control_get.clone())
            .persistent(self.named())
            .bind(queue)
            .fetch_optional(e))?;
        row.as_ref().map(control).transpose()
    }

    async fn queue_control_lock(
        &self,
        conn: &mut PgConnection,
        queue: &str,
    ) -> Result<Option<QueueControl>, sqlx::Error> {
        let row = sqlx::query(self.sql.queue_control_lock.clone())
            .persistent(self.named())
            .bind(queue)
            .fetch_optional(conn)
            .await?;
        row.as_ref().map(control).transpose()
    }

    async fn queue_control_list(&self) -> Result<Vec<QueueControl>, sqlx::Error> {
        let rows = on_pool!(self, |e| sqlx::query(self.sql.queue_control_list.clone())
            .persistent(self.named())
            .fetch_all(e))?;
        rows.iter().map(control).collect()
    }

    async fn queue_set_paused(&self, queue: &str, paused: bool) -> Result<(), sqlx::Error> {
        on_pool!(self, |e| sqlx::query(self.sql.queue_set_paused.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(paused)
            .execute(e))?;
        Ok(())
    }

    async fn queue_set_limit(&self, queue: &str, limit: Option<u32>) -> Result<(), sqlx::Error> {
        on_pool!(self, |e| sqlx::query(self.sql.queue_set_limit.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(limit.map(|n| i32::try_from(n).unwrap_or(i32::MAX)))
            .execute(e))?;
        Ok(())
    }

    async fn queue_set_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), sqlx::Error> {
        on_pool!(self, |e| sqlx::query(self.sql.queue_set_rate.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(rate.map(|(n, _)| i32::try_from(n).unwrap_or(i32::MAX)))
            .bind(rate.map(|(_, period)| period))
            .execute(e))?;
        Ok(())
    }

    async fn queue_rate_state(
        &self,
        conn: &mut PgConnection,
        queue: &str,
    ) -> Result<RateState, sqlx::Error> {
        let row = sqlx::query(self.sql.queue_rate_state.clone())
            .persistent(self.named())
            .bind(queue)
            .fetch_one(conn)
            .await?;
        let count: i32 = row.try_get("rate_count")?;
        Ok(RateState {
            window: row.try_get("rate_window")?,
            count: u32::try_from(count).unwrap_or(0),
            now_us: row.try_get("now_us")?,
        })
    }

    async fn queue_rate_record(
        &self,
        conn: &mut PgConnection,
        c: RateRecord<'_>,
    ) -> Result<(), sqlx::Error> {
        let RateRecord {
            queue,
            window,
            count,
        } = c;
        sqlx::query(self.sql.queue_rate_record.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(window)
            .bind(i32::try_from(count).unwrap_or(i32::MAX))
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn queue_set_key_limit(
        &self,
        queue: &str,
        limit: Option<u32>,
    ) -> Result<(), sqlx::Error> {
        on_pool!(self, |e| sqlx::query(self.sql.queue_set_key_limit.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(limit.map(|n| i32::try_from(n).unwrap_or(i32::MAX)))
            .execute(e))?;
        Ok(())
    }

    async fn queue_set_key_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), sqlx::Error> {
        on_pool!(self, |e| sqlx::query(self.sql.queue_set_key_rate.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(rate.map(|(n, _)| i32::try_from(n).unwrap_or(i32::MAX)))
            .bind(rate.map(|(_, period)| period))
            .execute(e))?;
        Ok(())
    }

    async fn queue_key_rate_get(
        &self,
        conn: &mut PgConnection,
        queue: &str,
        key: &str,
    ) -> Result<Option<(i64, u32)>, sqlx::Error> {
        let row: Option<(i64, i32)> = sqlx::query_as(self.sql.queue_key_rate_get.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(key)
            .fetch_optional(conn)
            .await?;
        Ok(row.map(|(w, n)| (w, u32::try_from(n).unwrap_or(0))))
    }

    async fn queue_key_rate_put(
        &self,
        conn: &mut PgConnection,
        c: KeyRateRecord<'_>,
    ) -> Result<(), sqlx::Error> {
        let KeyRateRecord {
            queue,
            key,
            window,
            count,
        } = c;
        sqlx::query(self.sql.queue_key_rate_put.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(key)
            .bind(window)
            .bind(i32::try_from(count).unwrap_or(i32::MAX))
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn queue_set_fair(&self, queue: &str, on: bool) -> Result<(), sqlx::Error> {
        on_pool!(self, |e| sqlx::query(self.sql.queue_set_fair.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(on)
            .execute(e))?;
        Ok(())
    }

    async fn queue_key_cursor(
        &self,
        conn: &mut PgConnection,
        queue: &str,
        cursor: Option<&str>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_key_cursor.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(cursor)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn job_key_leases(
        &self,
        target: Target<'_, PgConnection>,
        queue: &str,
    ) -> Result<Vec<(String, u64)>, sqlx::Error> {
        let q = sqlx::query_as::<_, (String, i64)>(self.sql.job_key_leases.clone())
            .persistent(self.named())
            .bind(queue);
        let rows = match target {
            Target::Pool => on_pool!(self, |e| q.fetch_all(e))?,
            Target::Tx(conn) => q.fetch_all(conn).await?,
        };
        Ok(rows.into_iter().map(|(k, n)| (k, count(n))).collect())
    }

    async fn job_key_next(
        &self,
        conn: &mut PgConnection,
        p: KeyPage<'_>,
    ) -> Result<Vec<String>, sqlx::Error> {
        let KeyPage {
            queue,
            after,
            limit: n,
        } = p;
        sqlx::query_scalar(self.sql.job_key_next.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(after)
            .bind(i32::try_from(n).unwrap_or(i32::MAX))
            .fetch_all(conn)
            .await
    }

    async fn job_key_waiting(&self, queue: &str, key: &str) -> Result<u64, sqlx::Error> {
        let n: i64 = on_pool!(self, |e| sqlx::query_scalar(
            self.sql.job_key_waiting.clone()
        )
        .persistent(self.named())
        .bind(queue)
        .bind(key)
        .fetch_one(e))?;
        Ok(count(n))
    }

    async fn job_live_leases(
        &self,
        conn: &mut PgConnection,
        queue: &str,
    ) -> Result<u64, sqlx::Error> {
        let n: i64 = sqlx::query_scalar(self.sql.job_live_leases.clone())
            .persistent(self.named())
            .bind(queue)
            .fetch_one(conn)
            .await?;
        Ok(count(n))
    }
}
