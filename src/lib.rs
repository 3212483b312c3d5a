#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
// docs.rs (nightly, `--cfg docsrs`) marks each item that a feature gates with that feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs, unreachable_pub)]

mod connect;

/// The guides, one per capability: what the README links to, with every example compiled (and
/// those that end by themselves run) as this crate's doctests.
pub mod guide {
    #[doc = include_str!("../docs/guide/kinds.md")]
    pub mod kinds {}
    #[doc = include_str!("../docs/guide/unique.md")]
    pub mod unique {}
    #[doc = include_str!("../docs/guide/flow-control.md")]
    pub mod flow_control {}
    #[doc = include_str!("../docs/guide/workflows.md")]
    pub mod workflows {}
    #[doc = include_str!("../docs/guide/schedules.md")]
    pub mod schedules {}
    #[doc = include_str!("../docs/guide/retention.md")]
    pub mod retention {}
    #[doc = include_str!("../docs/guide/cli.md")]
    pub mod cli {}
    #[doc = include_str!("../docs/guide/dashboard.md")]
    pub mod dashboard {}
    #[doc = include_str!("../docs/guide/observability.md")]
    pub mod observability {}
    #[doc = include_str!("../docs/guide/testing.md")]
    pub mod testing {}
    #[doc = include_str!("../docs/guide/backends.md")]
    pub mod backends {}
    #[doc = include_str!("../docs/guide/upgrading.md")]
    pub mod upgrading {}
    #[doc = include_str!("../docs/guide/worker.md")]
    pub mod worker {}
    #[cfg(feature = "postgres")]
    #[doc = include_str!("../docs/guide/postgres-partitions.md")]
    pub mod postgres_partitions {}
}

pub use connect::{connect, connect_and_migrate, connect_with, Backend, Options};
pub use queue_core::*;

/// The SQLite backend (feature `sqlite`, on by default).
#[cfg(feature = "sqlite")]
pub use queue_sqlite as sqlite;
#[cfg(feature = "sqlite")]
pub use queue_sqlite::SqliteQueue;

/// The PostgreSQL backend (feature `postgres`).
#[cfg(feature = "postgres")]
pub use queue_postgres as postgres;
#[cfg(feature = "postgres")]
pub use queue_postgres::PostgresQueue;

/// The MySQL and MariaDB backend (feature `mysql`).
#[cfg(feature = "mysql")]
pub use queue_mysql as mysql;
#[cfg(feature = "mysql")]
pub use queue_mysql::MySqlQueue;

/// The SQL Server backend (feature `mssql`).
#[cfg(feature = "mssql")]
pub use queue_mssql as mssql;
#[cfg(feature = "mssql")]
pub use queue_mssql::MsSqlQueue;

/// The in-memory backend (feature `memory`): jobs in this process's memory, for tests.
#[cfg(feature = "memory")]
pub use queue_memory as memory;
#[cfg(feature = "memory")]
pub use queue_memory::MemoryQueue;
