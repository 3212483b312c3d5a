//! [`Driver`]: what a SQL dialect provides to the engine, one trait per capability, each in
//! its own file and mirroring the engine's module of the same concern: [`Lifecycle`] (errors,
//! migrations, clock, transactions, wake-ups; the others build on it), [`Push`], [`Claim`],
//! [`Running`], [`Operators`], [`Controls`], [`Schedules`], [`Workflows`] and [`Maintenance`].
//! A backend implements each in the file of the same name under its `src/driver/`.
//!
//! One method per statement (or per short, fixed sequence of statements where the dialect needs
//! one), each taking its values and returning rows or a count. A driver decides nothing a user
//! could observe: the engine validates, decides, diagnoses, retries and wakes.

use std::time::Duration;

use crate::error::{BoxError, ConnectError, Error};

mod claim;
mod controls;
mod lifecycle;
mod maintenance;
mod operators;
mod push;
mod running;
mod schedules;
mod workflows;

pub use claim::{Claim, ClaimAfter, JobClaim};
pub use controls::{rate_limit_of, Controls, KeyPage, KeyRateRecord, RateRecord, RateState};
pub use lifecycle::{Lifecycle, Migration};
pub use maintenance::{Expired, JobPrune, JobRescue, KeyRatePrune, Maintenance, MaintenanceRound};
pub use operators::{JobMatch, JobReschedule, Operators};
pub use push::{JobInsert, JobInsertUnique, JobUniqueReplace, Push, UniqueInsert};
pub use running::{
    Completion, JobComplete, JobCompleteMany, JobFailDead, JobFailRetry, JobMetaSet, JobSnooze,
    Running, StoredMeta,
};
pub use schedules::{ScheduleAdvance, Schedules, StoredSchedule};
pub use workflows::{
    StoredWorkflow, WorkflowEdge, WorkflowInsert, WorkflowPrune, WorkflowPruneLock, WorkflowPruned,
    Workflows,
};

/// `d` in whole microseconds, the unit every dialect binds durations in; saturating (every
/// duration reaching SQL is validated far below the limit).
pub fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// Where a statement runs: on the driver's own connections (autocommit, or a transaction of
/// the driver's making), or inside a transaction the caller opened on `C`.
#[derive(Debug)]
pub enum Target<'a, C: ?Sized> {
    /// The driver's pool.
    Pool,
    /// The caller's transaction, on its connection.
    Tx(&'a mut C),
}

impl<C: ?Sized> Target<'_, C> {
    /// Whether this is the caller's transaction.
    pub fn is_tx(&self) -> bool {
        matches!(self, Target::Tx(_))
    }

    /// The same target for one more statement.
    pub fn reborrow(&mut self) -> Target<'_, C> {
        match self {
            Target::Pool => Target::Pool,
            Target::Tx(conn) => Target::Tx(&mut **conn),
        }
    }
}

/// What a driver error means to the engine: the one classification a driver makes, from its
/// error codes and kinds (never from message text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriverFault {
    /// The database could not be reached, went away, or refuses work for now (connection
    /// errors, pool timeouts, server shutting down, too many connections, busy file).
    Unavailable,
    /// A deadlock, lock wait timeout or serialization failure: the statement (or the driver's
    /// own transaction) was rolled back and the whole operation may be tried again.
    LockConflict,
    /// A unique index rejected a row.
    UniqueViolation(UniqueIndex),
    /// Anything else.
    Other,
}

impl DriverFault {
    /// The queue's error for a driver error `e` of this kind: [`Error::Unavailable`] for an
    /// unavailable database, [`Error::Conflict`] for a lock conflict, [`Error::Database`]
    /// otherwise (callers that can say more, such as naming a duplicate dedup key, do so
    /// before falling back to this).
    pub fn error(self, e: impl Into<BoxError>) -> Error {
        match self {
            DriverFault::Unavailable => Error::unavailable(e),
            DriverFault::LockConflict => Error::conflict(e),
            _ => Error::database(e),
        }
    }
}

/// A server's first connection, made directly rather than through a pool: a server that cannot
/// be reached is reported as [`Error::Unavailable`] naming its address and the driver's reason
/// (refused, unknown host, ...), not as a pool that timed out. `what` names the server
/// (`PostgreSQL`), `attempt` connects and reads what the builder needs to know.
///
/// # Errors
/// [`Error::Unavailable`] with a [`ConnectError`] when the server cannot be reached within
/// `timeout`; otherwise as `classify` says.
pub async fn first_contact<T, E, F>(
    what: &'static str,
    address: String,
    timeout: Duration,
    attempt: F,
    classify: impl Fn(&E) -> DriverFault,
) -> crate::Result<T>
where
    F: std::future::Future<Output = Result<T, E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    match tokio::time::timeout(timeout, attempt).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => match classify(&e) {
            DriverFault::Unavailable => {
                Err(Error::unavailable(ConnectError::new(what, address, e)))
            }
            fault => Err(fault.error(e)),
        },
        Err(_) => Err(Error::unavailable(ConnectError::new(
            what,
            address,
            format!("no answer within {timeout:?}"),
        ))),
    }
}

/// Which unique index a [`DriverFault::UniqueViolation`] names, as far as the driver can tell
/// from structured error fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UniqueIndex {
    /// The index that keeps dedup keys of live jobs apart.
    DedupKey,
    /// The index that keeps unique keys of jobs holding their place apart.
    UniqueKey,
    /// The primary key (a job id pushed twice).
    JobId,
    /// The workflows table's primary key (a workflow id pushed twice).
    WorkflowId,
    /// The server does not say which (MySQL and MariaDB report only a number): the engine
    /// finds out by looking for the clashing live dedup key.
    Unknown,
}

/// Everything a SQL dialect provides to the engine: the capability traits together, so that
/// [`crate::engine::Engine`] keeps one type parameter. Implemented for every type that
/// implements them all; a driver implements each capability in its own file.
pub trait Driver:
    Lifecycle + Push + Claim + Running + Operators + Controls + Schedules + Workflows + Maintenance
{
}

impl<T> Driver for T where
    T: Lifecycle
        + Push
        + Claim
        + Running
        + Operators
        + Controls
        + Schedules
        + Workflows
        + Maintenance
{
}
