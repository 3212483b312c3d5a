#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod builder;
mod error;
mod migrate;
mod queue;

pub use builder::MySqlQueueBuilder;
pub use queue::MySqlQueue;
pub use queue_core::{ClaimStrategy, Queue};
