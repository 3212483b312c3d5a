#![doc = include_str!("../README.md")]
// One `unsafe` block, in `nodelay` (borrowing a socket descriptor sqlx gives no handle on).
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod builder;
mod copy;
mod driver;
mod error;
mod listen;
mod migrate;
mod nodelay;
mod nodes;
mod pinned;
mod queue;
mod sql;

pub use builder::PostgresQueueBuilder;
pub use driver::PgDriver;
pub use queue::PostgresQueue;

/// The target of every log line this crate writes, for filtering.
pub const LOG_TARGET: &str = "queue::postgres";
