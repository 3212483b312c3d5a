#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod bind;
mod builder;
mod driver;
mod error;
mod migrate;
mod options;
mod pool;
mod queue;
mod sql;
#[cfg(test)]
mod subset;
#[cfg(test)]
mod wire;

pub use builder::MsSqlQueueBuilder;
pub use driver::{Candidate, MsSqlDriver};
pub use error::{classify_number, MsSqlError};
pub use options::{is_connection_string, redact, Encrypt, UrlParts, DEFAULT_PORT};
pub use pool::{
    open as open_session, Client, ConnectionManager, MsSqlConnection, MsSqlTransaction, Pool,
};
pub use queue::MsSqlQueue;
/// The TDS driver this crate is built on, for the caller's own statements in a transaction.
pub use tiberius;

/// The target of every log line this crate writes, for filtering.
pub const LOG_TARGET: &str = "queue::mssql";
