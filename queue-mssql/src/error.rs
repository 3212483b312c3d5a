//! The driver's error, and the one place where it is classified for the engine.

use std::time::Duration;

use queue_core::engine::{DriverFault, UniqueIndex};
use tiberius::error::Error as TdsError;

/// What the SQL Server driver reports to the engine, which classifies it with this crate's
/// `classify`. None of these carries the connection string, so no password can leak through them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MsSqlError {
    /// tiberius or the server reported an error.
    #[error(transparent)]
    Tds(#[from] TdsError),
    /// A duplicate key (2601 or 2627) met by a statement that can meet only one unique index,
    /// so the driver knows which (`workflow_insert`: the workflows table's primary key). The
    /// server's error is the source; the message is its message.
    #[error("{source}")]
    Duplicate {
        /// The index the statement's row clashed in.
        index: UniqueIndex,
        /// The server's error.
        source: TdsError,
    },
    /// No pooled connection became free, or could be made, within the pool's connection
    /// timeout (the builder's connect timeout), which it carries.
    #[error("no connection to SQL Server within {0:?}")]
    PoolTimedOut(Duration),
    /// A row did not have the shape the statement promises.
    #[error("unexpected row from SQL Server: {0}")]
    Decode(String),
    /// `sp_getapplock` did not grant the migration lock (its result code).
    #[error("the migration lock was not granted (sp_getapplock returned {0})")]
    MigrationLock(i32),
}

impl MsSqlError {
    /// The SQL Server error number, when the server reported the error.
    pub fn number(&self) -> Option<u32> {
        match self {
            MsSqlError::Tds(e) | MsSqlError::Duplicate { source: e, .. } => e.code(),
            _ => None,
        }
    }

    /// This error, from a statement whose only unique index is `index`: a duplicate key
    /// (2601, 2627) becomes [`MsSqlError::Duplicate`] naming it; anything else is unchanged.
    pub(crate) fn in_unique_index(self, index: UniqueIndex) -> Self {
        match self {
            MsSqlError::Tds(e) if e.code().is_some_and(is_duplicate) => {
                MsSqlError::Duplicate { index, source: e }
            }
            other => other,
        }
    }
}

/// Whether `number` is a duplicate key, in a unique index (2601) or constraint (2627).
fn is_duplicate(number: u32) -> bool {
    matches!(number, DUPLICATE_IN_UNIQUE_INDEX | DUPLICATE_IN_CONSTRAINT)
}

impl MsSqlError {
    /// The error of a checkout from a pool whose connection timeout is `waited` (the builder's
    /// connect timeout): the connection manager's own error, or that no session became free,
    /// or could be made, within `waited`, which the message names.
    pub(crate) fn checkout(e: bb8::RunError<TdsError>, waited: Duration) -> Self {
        match e {
            bb8::RunError::User(e) => MsSqlError::Tds(e),
            bb8::RunError::TimedOut => MsSqlError::PoolTimedOut(waited),
        }
    }
}

/// A deadlock victim (the server rolled the victim's transaction back).
const DEADLOCK: u32 = 1205;
/// `SET LOCK_TIMEOUT` expired while waiting for a lock.
const LOCK_TIMEOUT: u32 = 1222;
/// Snapshot isolation: an update conflict (3960) or a table changed by DDL (3961). Only in a
/// caller's transaction that chose SNAPSHOT; the queue's own sessions are READ COMMITTED.
const SNAPSHOT_CONFLICT: [u32; 2] = [3960, 3961];
/// A duplicate key in a unique *index*: the jobs table has two, `jobs_dedup_idx` (live dedup
/// keys) and `jobs_unique_idx` (unique keys of jobs holding their place), and the error names
/// the index only in its message text, which is never parsed. Classified as "unknown index":
/// the engine looks for a clashing live dedup key before it calls it a dedup clash, and a
/// retry that meets it asks for the holder of the job's unique key first.
const DUPLICATE_IN_UNIQUE_INDEX: u32 = 2601;
/// A duplicate key in a unique or primary key *constraint*: the jobs table has one, `jobs_pkey`.
/// Classified as "unknown index", so the engine looks for a clashing live dedup key before it
/// calls it an id clash: correct also on T-SQL implementations that report 2627 for unique
/// indexes (Babelfish does). A statement that can meet only one unique index says which
/// ([`MsSqlError::in_unique_index`]: the workflows table's primary key, `workflows_pkey`, for
/// `workflow_insert`), and is classified as that index.
const DUPLICATE_IN_CONSTRAINT: u32 = 2627;
/// The server cannot take work now: SqlClient's and EF Core's transient list (connection
/// broken 20, 64, 233, 10053, 10054, 10060; database unavailable 4060; shutting down 6005;
/// Azure SQL throttling, failover and reconfiguration 10928, 10929, 40143, 40197, 40501, 40613,
/// 49918, 49919, 49920).
const UNAVAILABLE: [u32; 17] = [
    20, 64, 233, 4060, 6005, 10053, 10054, 10060, 10928, 10929, 40143, 40197, 40501, 40613, 49918,
    49919, 49920,
];

/// What a SQL Server error number means to the engine (numbers only, never message text).
pub fn classify_number(number: u32) -> DriverFault {
    match number {
        DEADLOCK | LOCK_TIMEOUT => DriverFault::LockConflict,
        n if SNAPSHOT_CONFLICT.contains(&n) => DriverFault::LockConflict,
        n if is_duplicate(n) => DriverFault::UniqueViolation(UniqueIndex::Unknown),
        n if UNAVAILABLE.contains(&n) => DriverFault::Unavailable,
        _ => DriverFault::Other,
    }
}

/// What a driver error means to the engine: I/O (refused, reset, timed out), TLS, an Azure
/// redirect that could not be followed and an exhausted pool are unavailable; server errors
/// are classified by number ([`classify_number`]); anything else (a protocol or conversion
/// error, a malformed row) is other.
pub(crate) fn classify(err: &MsSqlError) -> DriverFault {
    match err {
        MsSqlError::Tds(e) => classify_tds(e),
        MsSqlError::Duplicate { index, .. } => DriverFault::UniqueViolation(*index),
        MsSqlError::PoolTimedOut(_) => DriverFault::Unavailable,
        MsSqlError::Decode(_) | MsSqlError::MigrationLock(_) => DriverFault::Other,
    }
}

/// [`classify`] for tiberius's own error (also what the pool's connection manager returns).
pub(crate) fn classify_tds(err: &TdsError) -> DriverFault {
    match err {
        TdsError::Io { .. } | TdsError::Tls(_) | TdsError::Routing { .. } => {
            DriverFault::Unavailable
        }
        TdsError::Server(e) => classify_number(e.code()),
        _ => DriverFault::Other,
    }
}

/// Whether the connection that produced `err` may be used again: a server error ends the
/// request but leaves the session usable (the rest of the response is read before the next
/// request); anything else (I/O, TLS, a protocol desync, a command timeout) may leave the
/// connection mid-message.
pub(crate) fn keeps_connection(err: &TdsError) -> bool {
    match err {
        TdsError::Server(e) => e.class() < 20,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use tiberius::error::IoErrorKind;

    use super::*;

    #[test]
    fn lock_conflicts_are_retried() {
        for n in [1205, 1222, 3960, 3961] {
            assert_eq!(classify_number(n), DriverFault::LockConflict, "{n}");
        }
    }

    #[test]
    fn duplicates_leave_their_index_to_the_engine() {
        // 2601: jobs_dedup_idx or jobs_unique_idx; 2627: the primary key (or, on other T-SQL
        // servers, a unique index). The number alone never tells which, so neither is called
        // a dedup clash before the engine has found the live key.
        for n in [2601, 2627] {
            assert_eq!(
                classify_number(n),
                DriverFault::UniqueViolation(UniqueIndex::Unknown),
                "{n}"
            );
        }
    }

    #[test]
    fn a_duplicate_whose_index_the_statement_knows_names_it() {
        // workflow_insert's only unique index is the workflows table's primary key.
        let dup = MsSqlError::Duplicate {
            index: UniqueIndex::WorkflowId,
            source: TdsError::Protocol("duplicate".into()),
        };
        assert_eq!(
            classify(&dup),
            DriverFault::UniqueViolation(UniqueIndex::WorkflowId)
        );
        assert_eq!(
            dup.to_string(),
            TdsError::Protocol("duplicate".into()).to_string()
        );
        // Only duplicates are renamed (a server error's number is read from the server's
        // token, which has no public constructor: the numbers are checked here).
        assert!(is_duplicate(2601) && is_duplicate(2627));
        for n in [1205, 1222, 2628, 547, 8003] {
            assert!(!is_duplicate(n), "{n}");
        }
        let other = MsSqlError::Tds(TdsError::Protocol("bad token".into()))
            .in_unique_index(UniqueIndex::WorkflowId);
        assert!(matches!(other, MsSqlError::Tds(_)), "{other:?}");
        assert_eq!(classify(&other), DriverFault::Other);
        let decode = MsSqlError::Decode("x".into()).in_unique_index(UniqueIndex::WorkflowId);
        assert!(matches!(decode, MsSqlError::Decode(_)));
    }

    #[test]
    fn transient_server_states_are_unavailable() {
        for n in [
            4060, 6005, 10928, 10929, 40197, 40501, 40613, 49918, 49919, 49920, 233,
        ] {
            assert_eq!(classify_number(n), DriverFault::Unavailable, "{n}");
        }
    }

    #[test]
    fn everything_else_is_other() {
        // 208 invalid object name, 245 conversion failed, 266 transaction count mismatch, 650
        // READPAST at the wrong isolation level, 1934 wrong SET options, 8003 too many
        // parameters, 18456 login failed (a setting to fix, not an outage).
        for n in [208, 245, 266, 650, 1934, 8003, 18456, 50000] {
            assert_eq!(classify_number(n), DriverFault::Other, "{n}");
        }
    }

    #[test]
    fn driver_errors_by_kind() {
        let refused = MsSqlError::from(TdsError::from(std::io::Error::from(
            IoErrorKind::ConnectionRefused,
        )));
        assert_eq!(classify(&refused), DriverFault::Unavailable);
        let timed_out = MsSqlError::Tds(TdsError::Io {
            kind: IoErrorKind::TimedOut,
            message: "command timed out".into(),
        });
        assert_eq!(classify(&timed_out), DriverFault::Unavailable);
        let tls = MsSqlError::Tds(TdsError::Tls("bad certificate".into()));
        assert_eq!(classify(&tls), DriverFault::Unavailable);
        let routed = MsSqlError::Tds(TdsError::Routing {
            host: "replica".into(),
            port: 11000,
        });
        assert_eq!(classify(&routed), DriverFault::Unavailable);
        let pool =
            MsSqlError::checkout(bb8::RunError::<TdsError>::TimedOut, Duration::from_secs(10));
        assert_eq!(classify(&pool), DriverFault::Unavailable);
        // The message names the wait the pool was configured with.
        assert_eq!(pool.to_string(), "no connection to SQL Server within 10s");
        let refused_in_pool = MsSqlError::checkout(
            bb8::RunError::User(TdsError::from(std::io::Error::from(
                IoErrorKind::ConnectionRefused,
            ))),
            Duration::from_secs(10),
        );
        assert!(matches!(refused_in_pool, MsSqlError::Tds(_)));
        assert_eq!(classify(&refused_in_pool), DriverFault::Unavailable);
        let protocol = MsSqlError::Tds(TdsError::Protocol("bad token".into()));
        assert_eq!(classify(&protocol), DriverFault::Other);
        assert_eq!(
            classify(&MsSqlError::Decode("x".into())),
            DriverFault::Other
        );
        assert_eq!(refused.number(), None);
    }

    #[test]
    fn only_server_errors_keep_the_connection() {
        let io = TdsError::Io {
            kind: IoErrorKind::TimedOut,
            message: "stalled".into(),
        };
        assert!(!keeps_connection(&io));
        assert!(!keeps_connection(&TdsError::Protocol("desync".into())));
    }
}
