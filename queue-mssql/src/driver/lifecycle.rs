//! SQL Server's [`Lifecycle`](queue_core::engine::Lifecycle) statements: migrations, transactions,
//! savepoints, the clock and notifications.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::statements::load;
use queue_core::engine::{DriverFault, Lifecycle, Migration};

use crate::bind::{params, Params};
use crate::error::MsSqlError;
use crate::migrate::{lock_name, LOCK_TIMEOUT_MS, MIGRATIONS};
use crate::pool::MsSqlTransaction;

use super::rows::{decode, int, time};
use super::{MsSqlDriver, SAVEPOINT};

#[async_trait]
impl Lifecycle for MsSqlDriver {
    type Conn = MsSqlTransaction;
    type Error = MsSqlError;
    type Migrator = bb8::PooledConnection<'static, crate::pool::ConnectionManager>;

    fn classify(&self, error: &MsSqlError) -> DriverFault {
        crate::error::classify(error)
    }

    fn migrations(&self) -> &'static [Migration] {
        MIGRATIONS
    }

    async fn migration_lock(&self) -> Result<Self::Migrator, MsSqlError> {
        let mut conn = crate::pool::checkout_owned(&self.pool).await?;
        conn.begin().await?;
        let locked = async {
            let rows = conn
                .fetch(
                    &self.sql.migration_lock,
                    params![lock_name(&self.schema), LOCK_TIMEOUT_MS],
                )
                .await?;
            let result = rows
                .first()
                .map(|r| int(r, "result"))
                .transpose()?
                .ok_or_else(|| decode("sp_getapplock returned no result"))?;
            if result < 0 {
                return Err(MsSqlError::MigrationLock(result));
            }
            conn.batch(&self.sql.migration_table).await
        }
        .await;
        match locked {
            Ok(()) => Ok(conn),
            Err(e) => {
                let _ = conn.rollback().await;
                Err(e)
            }
        }
    }

    async fn migration_applied(&self, m: &mut Self::Migrator) -> Result<Vec<i64>, MsSqlError> {
        let rows = m
            .fetch(&self.sql.migration_applied, Params::default())
            .await?;
        rows.iter()
            .map(|r| {
                r.try_get::<i64, _>("version")?
                    .ok_or_else(|| decode("a migration without a version"))
            })
            .collect()
    }

    async fn migration_apply(
        &self,
        m: &mut Self::Migrator,
        migration: &Migration,
    ) -> Result<(), MsSqlError> {
        // No bound values: one batch, the file's text with nothing spliced in but the validated
        // schema name.
        m.batch(&load(migration.sql, &[("{schema}", &self.schema)]))
            .await?;
        m.execute(
            &self.sql.migration_record,
            params![migration.version, migration.name],
        )
        .await?;
        Ok(())
    }

    async fn migration_unlock(
        &self,
        mut m: Self::Migrator,
        commit: bool,
    ) -> Result<(), MsSqlError> {
        // The application lock belongs to the transaction: ending it releases the lock.
        if commit {
            m.commit().await
        } else {
            m.rollback().await
        }
    }

    async fn now(&self) -> Result<DateTime<Utc>, MsSqlError> {
        let rows = self.fetch(&self.sql.now, Params::default()).await?;
        rows.first()
            .map(|r| time(r, "now"))
            .transpose()?
            .ok_or_else(|| decode("SYSUTCDATETIME() returned no row"))
    }

    type Tx = MsSqlTransaction;

    /// A transaction on a pooled session at READ COMMITTED (what the pool resets sessions to).
    async fn tx_begin(&self) -> Result<Self::Tx, MsSqlError> {
        MsSqlTransaction::begin(&self.pool).await
    }

    fn tx_conn(tx: &mut Self::Tx) -> &mut MsSqlTransaction {
        tx
    }

    async fn tx_commit(&self, tx: Self::Tx) -> Result<(), MsSqlError> {
        tx.commit().await
    }

    async fn tx_rollback(&self, tx: Self::Tx) -> Result<(), MsSqlError> {
        tx.rollback().await
    }

    type Savepoint<'c> = &'c mut MsSqlTransaction;

    async fn savepoint<'c>(
        &self,
        tx: &'c mut MsSqlTransaction,
    ) -> Result<&'c mut MsSqlTransaction, MsSqlError> {
        tx.connection().savepoint(SAVEPOINT).await?;
        Ok(tx)
    }

    /// Nothing to send: T-SQL has no release, and a savepoint left in the transaction ends
    /// with it.
    async fn savepoint_release(&self, _savepoint: &mut MsSqlTransaction) -> Result<(), MsSqlError> {
        Ok(())
    }

    async fn savepoint_rollback(&self, savepoint: &mut MsSqlTransaction) -> Result<(), MsSqlError> {
        savepoint.connection().rollback_to(SAVEPOINT).await
    }
}
