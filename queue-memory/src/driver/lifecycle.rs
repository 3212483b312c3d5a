//! The in-memory store's [`Lifecycle`](queue_core::engine::Lifecycle) implementation: migrations,
//! transactions, savepoints, the clock and notifications.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{DriverFault, Lifecycle, Migration};
use queue_core::WakeHub;

use crate::error::MemoryError;
use crate::faults::Statement;
use crate::migrate::MIGRATIONS;
use crate::store::{MemorySavepoint, MemoryTx};
use crate::tables::MaintenanceRow;

use super::{MemoryDriver, Result, MAINTENANCE_TASKS};

#[async_trait]
impl Lifecycle for MemoryDriver {
    type Conn = MemoryTx;
    type Error = MemoryError;
    type Migrator = MemoryTx;

    fn classify(&self, error: &MemoryError) -> DriverFault {
        crate::error::classify(error)
    }

    fn migrations(&self) -> &'static [Migration] {
        MIGRATIONS
    }

    /// Takes the store's lock for the whole migration (a second migration waits, then finds
    /// the versions the first recorded). The bookkeeping of applied migrations always exists.
    async fn migration_lock(&self) -> Result<MemoryTx> {
        let _call = self.enter(Statement::MigrationLock).await?;
        Ok(self.store.begin().await)
    }

    /// The versions recorded so far, ascending.
    async fn migration_applied(&self, m: &mut MemoryTx) -> Result<Vec<i64>> {
        let _call = self.enter(Statement::MigrationApplied).await?;
        Ok(m.tables().migrations.iter().copied().collect())
    }

    /// Applies the migration its version names, and records it. Version 1 creates the tables
    /// (empty) and the maintenance tasks' lease rows, due at once. (A store never outlives its
    /// process, so it never meets a newer release's schema: one migration is all it needs.)
    async fn migration_apply(&self, m: &mut MemoryTx, migration: &Migration) -> Result<()> {
        let _call = self.enter(Statement::MigrationApply).await?;
        m.statement(|w| {
            match migration.version {
                1 => {
                    w.create_schema();
                    for task in MAINTENANCE_TASKS {
                        w.put_maintenance(
                            task,
                            MaintenanceRow {
                                next_at: DateTime::<Utc>::UNIX_EPOCH,
                                token: None,
                            },
                        )?;
                    }
                }
                other => return Err(MemoryError::UnknownMigration(other)),
            }
            w.record_migration(migration.version);
            Ok(())
        })
    }

    /// Ends the migration: keeps its changes when `commit`, else undoes every one.
    async fn migration_unlock(&self, m: MemoryTx, commit: bool) -> Result<()> {
        let _call = self.enter(Statement::MigrationUnlock).await?;
        if commit {
            m.commit();
        } else {
            m.rollback();
        }
        Ok(())
    }

    /// The store's clock (the system's, or the builder's manual clock), in whole microseconds.
    async fn now(&self) -> Result<DateTime<Utc>> {
        let _call = self.enter(Statement::Now).await?;
        Ok(self.store.now())
    }

    /// The store's clock too: the instants a caller gives (a job's `run_at`, a unique job's
    /// period) are measured against the clock its delays are added to, so that on a manual
    /// clock a job pushed to run at an instant runs at that instant of that clock.
    fn host_now(&self) -> DateTime<Utc> {
        self.store.now()
    }

    /// Wakes the queue values on the store (other than this one) that wait on `queues`.
    async fn notify(&self, queues: &[&str]) -> Result<()> {
        let _call = self.enter(Statement::Notify).await?;
        for queue in queues {
            self.store.notify(self.id, queue, 1);
        }
        Ok(())
    }

    /// Registers `hub` for the wake-ups other queue values on the store send for `queue`.
    fn watch(&self, queue: &str, hub: &Arc<WakeHub>) {
        if let Some(faults) = self.faults.get() {
            faults.enter_sync(Statement::Watch);
        }
        self.store.watch(self.id, queue, hub);
    }

    type Tx = MemoryTx;

    /// Takes the store's lock until the transaction ends (serializable: nothing else runs
    /// meanwhile).
    async fn tx_begin(&self) -> Result<MemoryTx> {
        let _call = self.enter(Statement::TxBegin).await?;
        Ok(self.store.begin().await)
    }

    fn tx_conn(tx: &mut MemoryTx) -> &mut MemoryTx {
        tx
    }

    /// Keeps the transaction's writes, and sends the wake-ups of the jobs it pushed.
    async fn tx_commit(&self, tx: MemoryTx) -> Result<()> {
        let _call = self.enter(Statement::TxCommit).await?;
        let wakeups = tx.commit();
        self.wake_others(&wakeups);
        Ok(())
    }

    /// Undoes every write of the transaction.
    async fn tx_rollback(&self, tx: MemoryTx) -> Result<()> {
        let _call = self.enter(Statement::TxRollback).await?;
        tx.rollback();
        Ok(())
    }

    type Savepoint<'c> = MemorySavepoint<'c>;

    /// Marks where the transaction's undo log ends now.
    async fn savepoint<'c>(&self, tx: &'c mut MemoryTx) -> Result<MemorySavepoint<'c>> {
        let _call = self.enter(Statement::Savepoint).await?;
        Ok(MemorySavepoint::set(tx))
    }

    /// Keeps the writes made since the savepoint, as the transaction's.
    async fn savepoint_release(&self, savepoint: MemorySavepoint<'_>) -> Result<()> {
        let _call = self.enter(Statement::SavepointRelease).await?;
        savepoint.release();
        Ok(())
    }

    /// Undoes the writes made since the savepoint, newest first, and drops the wake-ups queued
    /// since.
    async fn savepoint_rollback(&self, savepoint: MemorySavepoint<'_>) -> Result<()> {
        let _call = self.enter(Statement::SavepointRollback).await?;
        savepoint.rollback();
        Ok(())
    }
}
