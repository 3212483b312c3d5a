//! The one place where driver errors are classified for the engine.

use queue_core::engine::{DriverFault, UniqueIndex};

/// `SQLITE_BUSY`: another connection held the lock for longer than the busy timeout.
const SQLITE_BUSY: i32 = 5;
/// `SQLITE_LOCKED`: a conflict inside one shared-cache (in-memory) database.
const SQLITE_LOCKED: i32 = 6;
/// `SQLITE_CANTOPEN`: the file or its directory cannot be opened.
const SQLITE_CANTOPEN: i32 = 14;
/// `SQLITE_CONSTRAINT_UNIQUE`: a UNIQUE index rejected a row. The jobs table has one unique
/// index besides its primary key: the live dedup keys.
const SQLITE_CONSTRAINT_UNIQUE: i32 = 2067;
/// `SQLITE_CONSTRAINT_PRIMARYKEY`: a job id that exists already.
const SQLITE_CONSTRAINT_PRIMARYKEY: i32 = 1555;

/// The extended SQLite result code of a database error.
fn sqlite_code(err: &sqlx::Error) -> Option<i32> {
    err.as_database_error()?.code()?.parse().ok()
}

/// What a driver error means, from its kind and extended result code:
///
/// * I/O errors, a pool that timed out or was closed, a crashed connection worker, and
///   `SQLITE_CANTOPEN` (the file or its directory cannot be opened) are unavailable.
/// * `SQLITE_BUSY` is unavailable too: it is only returned after the busy timeout has passed
///   with another process holding the write lock, which is the embedded equivalent of a server
///   not answering in time; retrying later may succeed. `SQLITE_LOCKED` likewise.
/// * `SQLITE_CONSTRAINT_UNIQUE` is the dedup index, `SQLITE_CONSTRAINT_PRIMARYKEY` the id.
pub(crate) fn classify(err: &sqlx::Error) -> DriverFault {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => DriverFault::Unavailable,
        sqlx::Error::Database(_) => match sqlite_code(err) {
            Some(SQLITE_CONSTRAINT_UNIQUE) => DriverFault::UniqueViolation(UniqueIndex::DedupKey),
            Some(SQLITE_CONSTRAINT_PRIMARYKEY) => DriverFault::UniqueViolation(UniqueIndex::JobId),
            Some(code) if matches!(code & 0xff, SQLITE_CANTOPEN | SQLITE_BUSY | SQLITE_LOCKED) => {
                DriverFault::Unavailable
            }
            _ => DriverFault::Other,
        },
        _ => DriverFault::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_and_io_errors_are_unavailable() {
        assert_eq!(
            classify(&sqlx::Error::PoolTimedOut),
            DriverFault::Unavailable
        );
        assert_eq!(classify(&sqlx::Error::PoolClosed), DriverFault::Unavailable);
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(classify(&sqlx::Error::Io(io)), DriverFault::Unavailable);
        assert_eq!(classify(&sqlx::Error::RowNotFound), DriverFault::Other);
    }
}
