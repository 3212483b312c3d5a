#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod builder;
mod coalesce;
mod driver;
mod error;
mod migrate;
mod queue;
mod sql;

pub use builder::SqliteQueueBuilder;
pub use driver::SqliteDriver;
pub use queue::SqliteQueue;

/// The target of every log line this crate writes, for filtering.
pub const LOG_TARGET: &str = "queue::sqlite";
