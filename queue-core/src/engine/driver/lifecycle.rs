//! [`Lifecycle`]: what every driver has: its error and how the engine reads it, migrations, the
//! database clock, transactions and savepoints, and cross-process wake-ups.

use std::ops::DerefMut;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::wake::WakeHub;

use super::DriverFault;

/// One embedded schema change of a dialect. Append only: an applied migration never changes.
#[derive(Clone, Copy, Debug)]
pub struct Migration {
    /// Its version; applied in ascending order, recorded once applied.
    pub version: i64,
    /// A short name for the bookkeeping table.
    pub name: &'static str,
    /// Its SQL (the driver splices its namespace in and splits statements as its dialect needs).
    pub sql: &'static str,
}

/// What every driver has: its error and what it means to the engine, its migrations, the
/// database clock, its transactions and savepoints, and wake-ups across processes. Every other
/// capability builds on it.
#[async_trait]
pub trait Lifecycle: Send + Sync + 'static {
    /// The connection a caller's transaction runs on.
    type Conn: Send;
    /// The driver's error.
    type Error: std::error::Error + Send + Sync + 'static;
    /// A migration session: holds the dialect's lock (and transaction) until it ends.
    type Migrator: Send;

    /// What an error means to the engine.
    fn classify(&self, error: &Self::Error) -> DriverFault;

    /// The dialect's migrations, oldest first.
    fn migrations(&self) -> &'static [Migration];

    /// `migration_lock` (+ `migration_table`): takes the dialect's migration lock (waiting for
    /// another process's migration to finish) and makes sure the bookkeeping table exists.
    async fn migration_lock(&self) -> Result<Self::Migrator, Self::Error>;

    /// `migration_applied`: the versions recorded so far.
    async fn migration_applied(&self, m: &mut Self::Migrator) -> Result<Vec<i64>, Self::Error>;

    /// Applies `migration` and `migration_record`s it.
    async fn migration_apply(
        &self,
        m: &mut Self::Migrator,
        migration: &Migration,
    ) -> Result<(), Self::Error>;

    /// `migration_unlock`: ends the session, committing when `commit` (else rolling back where
    /// the dialect's DDL is transactional).
    async fn migration_unlock(&self, m: Self::Migrator, commit: bool) -> Result<(), Self::Error>;

    /// `now`: the database's clock.
    async fn now(&self) -> Result<DateTime<Utc>, Self::Error>;

    /// The clock of the host the engine runs on, against which instants the caller gives (a
    /// job's `run_at`, a unique job's period) are turned into delays that the database adds to
    /// its own clock. The system clock; a driver whose `now` is a clock the caller moves (the
    /// in-memory driver's manual clock) returns that clock here too.
    fn host_now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    /// `notify`: wakes workers of `queues` in other processes, where the dialect has database
    /// notifications ([`crate::Wakeups::ListenNotify`]); a no-op elsewhere.
    async fn notify(&self, queues: &[&str]) -> Result<(), Self::Error> {
        let _ = queues;
        Ok(())
    }

    /// Starts (once) whatever delivers other processes' notifications for `queue` into `hub`;
    /// a no-op where the dialect has none.
    fn watch(&self, queue: &str, hub: &Arc<WakeHub>) {
        let _ = (queue, hub);
    }

    /// A transaction of the driver's own, in which the engine runs several statements that
    /// must commit together (a schedule's compare-and-set and the push of its slot's jobs).
    type Tx: Send;

    /// Begins a transaction at the driver's usual isolation (READ COMMITTED where the server
    /// has levels; SQLite's `BEGIN IMMEDIATE`).
    async fn tx_begin(&self) -> Result<Self::Tx, Self::Error>;

    /// The connection `tx` runs on, for statements taking a [`Target::Tx`](super::Target::Tx).
    fn tx_conn(tx: &mut Self::Tx) -> &mut Self::Conn;

    /// Commits `tx`.
    async fn tx_commit(&self, tx: Self::Tx) -> Result<(), Self::Error>;

    /// Rolls `tx` back.
    async fn tx_rollback(&self, tx: Self::Tx) -> Result<(), Self::Error>;

    /// A savepoint in a transaction on [`Lifecycle::Conn`] (the caller's, or one of the driver's
    /// own). The engine sets one around a call of several statements inside such a transaction
    /// (see [`Push::job_insert_statements`](super::Push::job_insert_statements)) and runs them
    /// on the connection it derefs to, then ends it with [`Lifecycle::savepoint_release`] or
    /// [`Lifecycle::savepoint_rollback`]. What one dropped without either does (a call
    /// cancelled halfway) is the dialect's: sqlx's transactions roll back to it at the
    /// connection's next use.
    type Savepoint<'c>: DerefMut<Target = Self::Conn> + Send
    where
        Self: 'c;

    /// Sets a savepoint in the transaction on `conn`.
    async fn savepoint<'c>(
        &self,
        conn: &'c mut Self::Conn,
    ) -> Result<Self::Savepoint<'c>, Self::Error>;

    /// Keeps what ran since `savepoint` was set, as part of its transaction.
    async fn savepoint_release(&self, savepoint: Self::Savepoint<'_>) -> Result<(), Self::Error>;

    /// Undoes what ran since `savepoint` was set, keeping its transaction open with what ran
    /// in it before.
    async fn savepoint_rollback(&self, savepoint: Self::Savepoint<'_>) -> Result<(), Self::Error>;
}

/// `impl Lifecycle for <driver>` for a driver on sqlx, with what every sqlx dialect writes the
/// same way written here once: `Conn` is the dialect's connection and `Error` sqlx's; `Tx` and
/// `Savepoint` are sqlx's `Transaction` of the dialect's database (a savepoint is a transaction
/// begun on the connection of another, which sqlx makes a `SAVEPOINT`), committed or rolled back
/// by sqlx. The driver gives how it begins its own transactions (`begin = |d| d.pool.begin()`:
/// which pool is its choice) and writes the rest of the items (`classify`, the migrations, the
/// clock, notifications) after the `;`. `sqlx` is the path of the dialect's sqlx crate (the core
/// depends on no driver).
///
/// ```text
/// queue_core::sqlx_lifecycle! {
///     sqlx = sqlx, driver = PgDriver, db = Postgres, conn = PgConnection,
///     begin = |d| d.pool.begin();
///
///     type Migrator = Transaction<'static, Postgres>;
///     fn classify(&self, error: &sqlx::Error) -> DriverFault { ... }
///     ...
/// }
/// ```
#[macro_export]
macro_rules! sqlx_lifecycle {
    (
        sqlx = $sqlx:ident, driver = $driver:ty, db = $db:ty, conn = $conn:ty,
        begin = |$d:ident| $begin:expr;
        $($items:tt)*
    ) => {
        #[$crate::__async_trait]
        impl $crate::engine::Lifecycle for $driver {
            type Conn = $conn;
            type Error = $sqlx::Error;
            type Tx = $sqlx::Transaction<'static, $db>;
            type Savepoint<'c> = $sqlx::Transaction<'c, $db>;

            async fn tx_begin(&self) -> Result<Self::Tx, $sqlx::Error> {
                let $d = self;
                $begin.await
            }

            fn tx_conn(tx: &mut Self::Tx) -> &mut $conn {
                tx
            }

            async fn tx_commit(&self, tx: Self::Tx) -> Result<(), $sqlx::Error> {
                tx.commit().await
            }

            async fn tx_rollback(&self, tx: Self::Tx) -> Result<(), $sqlx::Error> {
                tx.rollback().await
            }

            async fn savepoint<'c>(
                &self,
                conn: &'c mut $conn,
            ) -> Result<$sqlx::Transaction<'c, $db>, $sqlx::Error> {
                $sqlx::Acquire::begin(conn).await
            }

            async fn savepoint_release(
                &self,
                savepoint: $sqlx::Transaction<'_, $db>,
            ) -> Result<(), $sqlx::Error> {
                savepoint.commit().await
            }

            async fn savepoint_rollback(
                &self,
                savepoint: $sqlx::Transaction<'_, $db>,
            ) -> Result<(), $sqlx::Error> {
                savepoint.rollback().await
            }

            $($items)*
        }
    };
}
