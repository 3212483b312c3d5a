#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod builder;
mod error;
mod migrate;
mod queue;

pub use builder::SqliteQueueBuilder;
pub use queue::SqliteQueue;

/// The target of every log line this crate writes, for filtering.
pub const LOG_TARGET: &str = "queue::sqlite";
