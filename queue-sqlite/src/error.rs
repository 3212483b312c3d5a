//! The one place where sqlx errors become [`queue_core::Error`] kinds.

use queue_core::Error;

/// `SQLITE_BUSY`: another connection held the lock for longer than the busy timeout.
const SQLITE_BUSY: i32 = 5;
/// `SQLITE_LOCKED`: a conflict inside one shared-cache (in-memory) database.
const SQLITE_LOCKED: i32 = 6;
/// `SQLITE_CANTOPEN`: the file or its directory cannot be opened.
const SQLITE_CANTOPEN: i32 = 14;
/// `SQLITE_CONSTRAINT_UNIQUE`: a UNIQUE index rejected a row.
const SQLITE_CONSTRAINT_UNIQUE: i32 = 2067;

/// The extended SQLite result code of a database error.
fn sqlite_code(err: &sqlx::Error) -> Option<i32> {
    err.as_database_error()?.code()?.parse().ok()
}

/// Whether `err` is the dedup index rejecting a second live job with the same key (as opposed
/// to, say, a clash of job ids, which is a plain database error).
pub(crate) fn is_dedup_violation(err: &sqlx::Error) -> bool {
    sqlite_code(err) == Some(SQLITE_CONSTRAINT_UNIQUE)
        && err
            .as_database_error()
            .is_some_and(|db| db.message().contains("dedup_key"))
}

/// Maps a driver error to the queue's error kinds.
///
/// * I/O errors, a pool that timed out or was closed, a crashed connection worker, and
///   `SQLITE_CANTOPEN` (the file or its directory cannot be opened) are
///   [`Error::Unavailable`].
/// * `SQLITE_BUSY` is also [`Error::Unavailable`]: it is only returned after the busy timeout
///   has passed with another process holding the write lock, which is the embedded equivalent
///   of a server not answering in time; retrying later may succeed. `SQLITE_LOCKED` likewise.
/// * A unique violation on the dedup index is [`Error::Duplicate`] when the caller knows which
///   `(queue, dedup_key)` it was writing (`dedup`); callers that must first find out which key
///   clashed check [`is_dedup_violation`] before mapping.
/// * Everything else is [`Error::Database`].
pub(crate) fn map(err: sqlx::Error, dedup: Option<(&str, &str)>) -> Error {
    if let Some((queue, key)) = dedup {
        if is_dedup_violation(&err) {
            return Error::Duplicate {
                queue: queue.to_owned(),
                dedup_key: key.to_owned(),
            };
        }
    }
    match &err {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => Error::unavailable(err),
        sqlx::Error::Database(db) => {
            let primary = sqlite_code(&err).map(|c| c & 0xff);
            let unable_to_open = db.message().contains("unable to open");
            if unable_to_open
                || matches!(primary, Some(SQLITE_CANTOPEN | SQLITE_BUSY | SQLITE_LOCKED))
            {
                Error::unavailable(err)
            } else {
                Error::database(err)
            }
        }
        _ => Error::database(err),
    }
}

/// Shorthand for `map(err, None)`, for `map_err`.
pub(crate) fn db(err: sqlx::Error) -> Error {
    map(err, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_and_io_errors_are_unavailable() {
        assert!(db(sqlx::Error::PoolTimedOut).is_transient());
        assert!(db(sqlx::Error::PoolClosed).is_transient());
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert!(db(sqlx::Error::Io(io)).is_transient());
        assert!(matches!(
            db(sqlx::Error::RowNotFound),
            Error::Database { .. }
        ));
    }
}
