#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod cases;
pub mod harness;
pub mod servers;
mod suite;

pub use harness::{
    run, run_on, Ctx, Discovery, Fixture, Harness, Server, TestConfig, Transactions,
};
