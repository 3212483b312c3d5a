#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod builder;
mod driver;
mod error;
mod migrate;
mod queue;
mod server;
mod sql;

pub use builder::MySqlQueueBuilder;
pub use driver::{Candidate, MySqlDriver};
pub use queue::MySqlQueue;
pub use queue_core::{ClaimStrategy, Queue};

/// The target of every log line this crate writes, for filtering.
pub const LOG_TARGET: &str = "queue::mysql";
