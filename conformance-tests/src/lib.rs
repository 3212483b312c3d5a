#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod backend;
pub mod cases;
pub mod harness;
pub mod runner;
pub mod servers;
pub mod statements;
pub mod suite;

pub use backend::{Namespace, SqlBackend, SqlHarness};
pub use harness::{
    expect_refused_connection, required, run_on, Ctx, Discovery, Fixture, Harness, HeldLock,
    HeldPush, Server, Skipped, TestConfig, Transactions,
};
pub use runner::{
    main, main_with, run_suite, run_suite_with, test_profile, DialectTest, LocalTest, TestFuture,
};
