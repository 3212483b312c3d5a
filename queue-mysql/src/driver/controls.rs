//! MySQL/MariaDB's [`Controls`](queue_core::engine::Controls) statements: pauses, limits, rate
//! limits, concurrency keys and fair shares.

use async_trait::async_trait;
use queue_core::engine::{Controls, KeyPage, KeyRateRecord, RateRecord, RateState, Target};
use queue_core::QueueControl;
use sqlx::mysql::MySqlConnection;
use sqlx::Row;

use super::rows::{control, key_text};
use super::MySqlDriver;

#[async_trait]
impl Controls for MySqlDriver {
    /// A READ COMMITTED transaction (the pool's sessions are set to it).
    async fn queue_control_get(&self, queue: &str) -> Result<Option<QueueControl>, sqlx::Error> {
        let row = sqlx::query(self.sql.queue_control_get.clone())
            .bind(queue)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(control).transpose()
    }

    async fn queue_control_lock(
        &self,
        conn: &mut MySqlConnection,
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
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(control).collect()
    }

    async fn queue_set_paused(&self, queue: &str, paused: bool) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_paused.clone())
            .bind(queue)
            .bind(paused)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn queue_set_limit(&self, queue: &str, limit: Option<u32>) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_limit.clone())
            .bind(queue)
            .bind(limit)
            .execute(&self.pool)
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
            .bind(rate.map(|(n, _)| n))
            .bind(rate.map(|(_, period)| period))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn queue_rate_state(
        &self,
        conn: &mut MySqlConnection,
        queue: &str,
    ) -> Result<RateState, sqlx::Error> {
        let row = sqlx::query(self.sql.queue_rate_state.clone())
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
        conn: &mut MySqlConnection,
        c: RateRecord<'_>,
    ) -> Result<(), sqlx::Error> {
        let RateRecord {
            queue,
            window,
            count,
        } = c;
        sqlx::query(self.sql.queue_rate_record.clone())
            .bind(window)
            .bind(count)
            .bind(queue)
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
            .bind(limit)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn queue_set_key_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(self.sql.queue_set_key_rate.clone())
            .bind(queue)
            .bind(rate.map(|(n, _)| n))
            .bind(rate.map(|(_, period)| period))
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
        conn: &mut MySqlConnection,
        queue: &str,
        key: &str,
    ) -> Result<Option<(i64, u32)>, sqlx::Error> {
        let row: Option<(i64, i32)> = sqlx::query_as(self.sql.queue_key_rate_get.clone())
            .bind(queue)
            .bind(key.as_bytes())
            .fetch_optional(conn)
            .await?;
        Ok(row.map(|(w, n)| (w, u32::try_from(n).unwrap_or(0))))
    }

    async fn queue_key_rate_put(
        &self,
        conn: &mut MySqlConnection,
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
            .bind(key.as_bytes())
            .bind(window)
            .bind(count)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn queue_set_fair(&self, queue: &str, on: bool) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_fair.clone())
            .bind(queue)
            .bind(on)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn queue_key_cursor(
        &self,
        conn: &mut MySqlConnection,
        queue: &str,
        cursor: Option<&str>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_key_cursor.clone())
            .bind(cursor.map(str::as_bytes))
            .bind(queue)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn job_key_leases(
        &self,
        target: Target<'_, MySqlConnection>,
        queue: &str,
    ) -> Result<Vec<(String, u64)>, sqlx::Error> {
        let q = sqlx::query_as::<_, (Vec<u8>, i64)>(self.sql.job_key_leases.clone()).bind(queue);
        let rows = match target {
            Target::Pool => q.fetch_all(&self.pool).await?,
            Target::Tx(conn) => q.fetch_all(conn).await?,
        };
        rows.into_iter()
            .map(|(key, n)| Ok((key_text(key)?, u64::try_from(n).unwrap_or(0))))
            .collect()
    }

    async fn job_key_next(
        &self,
        conn: &mut MySqlConnection,
        p: KeyPage<'_>,
    ) -> Result<Vec<String>, sqlx::Error> {
        let KeyPage {
            queue,
            after,
            limit: n,
        } = p;
        let mut keys = Vec::with_capacity(n);
        let mut after = after.as_bytes().to_vec();
        while keys.len() < n {
            let next: Option<Vec<u8>> = sqlx::query_scalar(self.sql.job_key_next.clone())
                .bind(queue)
                .bind(&after)
                .fetch_one(&mut *conn)
                .await?;
            let Some(next) = next else { break };
            keys.push(key_text(next.clone())?);
            after = next;
        }
        Ok(keys)
    }

    async fn job_key_waiting(&self, queue: &str, key: &str) -> Result<u64, sqlx::Error> {
        let n: i64 = sqlx::query_scalar(self.sql.job_key_waiting.clone())
            .bind(queue)
            .bind(key.as_bytes())
            .fetch_one(&self.pool)
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn job_live_leases(
        &self,
        conn: &mut MySqlConnection,
        queue: &str,
    ) -> Result<u64, sqlx::Error> {
        let n: i64 = sqlx::query_scalar(self.sql.job_live_leases.clone())
            .bind(queue)
            .fetch_one(conn)
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
