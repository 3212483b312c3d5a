//! The one place where driver errors are classified for the engine.

use queue_core::engine::{DriverFault, UniqueIndex};
use sqlx::mysql::MySqlDatabaseError;

/// `ER_DUP_ENTRY`: a unique index rejected a row. The server does not say which index in a
/// structured field, so the engine finds out (by looking for the clashing live dedup key).
const DUP_ENTRY: u16 = 1062;
/// `ER_DUP_FIELDNAME`: a column that exists is added again.
const DUP_FIELDNAME: u16 = 1060;
/// `ER_DUP_KEYNAME`: an index that exists is added again.
const DUP_KEYNAME: u16 = 1061;
/// `ER_CANT_DROP_FIELD_OR_KEY`: a column or index that does not exist is dropped.
const CANT_DROP_FIELD_OR_KEY: u16 = 1091;
/// `ER_LOCK_DEADLOCK`: InnoDB chose this transaction as a deadlock victim (and rolled it back).
const LOCK_DEADLOCK: u16 = 1213;
/// `ER_LOCK_WAIT_TIMEOUT`: a row lock was not granted within `innodb_lock_wait_timeout`.
const LOCK_WAIT_TIMEOUT: u16 = 1205;
/// Server-side codes that mean "the server cannot take work now": too many connections (1040),
/// shutdown in progress (1053), connection killed (1927, MariaDB), server gone away (2006),
/// lost connection during query (2013), the connection closed for being idle past
/// `wait_timeout` (4031, `ER_CLIENT_INTERACTION_TIMEOUT`, MySQL 8.0.24+), and the read-only
/// codes below.
const UNAVAILABLE: [u16; 6] = [1040, 1053, 1927, 2006, 2013, 4031];
/// The server takes no writes: `ER_OPTION_PREVENTS_STATEMENT` (1290: `--read-only` or
/// `super_read_only`, a replica, a primary switched to read-only in place) and
/// `ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION` (1792). An outage of the primary, not a job error.
const READ_ONLY: [u16; 2] = [1290, 1792];

/// The MySQL error number of a database error, if it is one.
fn number(err: &sqlx::Error) -> Option<u16> {
    match err {
        sqlx::Error::Database(db) => db
            .try_downcast_ref::<MySqlDatabaseError>()
            .map(MySqlDatabaseError::number),
        _ => None,
    }
}

/// What a driver error means, from its kind and MySQL error number: lost or refused
/// connections, an exhausted or closed pool and a server going away are unavailable; deadlocks
/// and lock wait timeouts are lock conflicts; a duplicate entry is a unique violation. Driver
/// errors carry no connection URL, so no password can leak through them.
pub(crate) fn classify(err: &sqlx::Error) -> DriverFault {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => DriverFault::Unavailable,
        _ => match number(err) {
            Some(LOCK_DEADLOCK | LOCK_WAIT_TIMEOUT) => DriverFault::LockConflict,
            Some(DUP_ENTRY) => DriverFault::UniqueViolation(UniqueIndex::Unknown),
            Some(n) if UNAVAILABLE.contains(&n) || READ_ONLY.contains(&n) => {
                DriverFault::Unavailable
            }
            _ => DriverFault::Other,
        },
    }
}

/// Whether `err` says a column or index that is being added exists already (a migration run
/// again after its DDL committed and before its record).
pub(crate) fn is_already_added(err: &sqlx::Error) -> bool {
    matches!(number(err), Some(DUP_FIELDNAME | DUP_KEYNAME))
}

/// Whether `err` says a column or index that is being dropped does not exist (taken as applied
/// only for a statement that drops one index and does nothing else:
/// [`crate::migrate::is_lone_drop`]).
pub(crate) fn is_already_dropped(err: &sqlx::Error) -> bool {
    number(err) == Some(CANT_DROP_FIELD_OR_KEY)
}

/// Whether `err` is a duplicate entry in a unique index.
pub(crate) fn is_duplicate_entry(err: &sqlx::Error) -> bool {
    number(err) == Some(DUP_ENTRY)
}

/// Whether the server refused a write because it is read-only (see [`READ_ONLY`]).
pub(crate) fn read_only(err: &sqlx::Error) -> bool {
    number(err).is_some_and(|n| READ_ONLY.contains(&n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_errors_are_unavailable() {
        let io = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(classify(&io), DriverFault::Unavailable);
        assert_eq!(classify(&sqlx::Error::PoolClosed), DriverFault::Unavailable);
        assert_eq!(classify(&sqlx::Error::RowNotFound), DriverFault::Other);
    }
}
