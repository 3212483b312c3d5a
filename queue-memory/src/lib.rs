#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod builder;
mod driver;
mod error;
mod faults;
mod jobs;
mod migrate;
mod queue;
mod store;
mod tables;
#[cfg(test)]
mod tests;

pub use builder::MemoryQueueBuilder;
pub use driver::MemoryDriver;
pub use error::MemoryError;
pub use faults::{Faults, Statement, Statements, Tallied, Times};
pub use queue::MemoryQueue;
pub use store::{MemorySavepoint, MemoryTx};

/// The target of every log line this crate writes, for filtering.
pub const LOG_TARGET: &str = "queue::memory";
