//! The one place where driver errors become [`queue_core::Error`] kinds.

use queue_core::Error;
use sqlx::postgres::PgDatabaseError;

/// The unique index that keeps dedup keys of live jobs apart (see `migrations/0001_jobs.sql`).
pub(crate) const DEDUP_INDEX: &str = "jobs_dedup_idx";

/// Maps a driver error to the queue's error kinds:
///
/// - the server could not be reached or went away (I/O, TLS, pool timed out or closed, SQLSTATE
///   class 08, `57P01`..`57P03` shutdown / cannot connect now, `53300` too many connections)
///   -> [`Error::Unavailable`];
/// - a unique violation on the dedup index -> [`Error::Duplicate`];
/// - anything else -> [`Error::Database`].
///
/// sqlx never puts the connection URL into these errors, so no password can leak through them.
pub(crate) fn map(err: sqlx::Error) -> Error {
    match &err {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => Error::unavailable(err),
        sqlx::Error::Database(db) => {
            let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
            if code.starts_with("08")
                || matches!(code.as_str(), "57P01" | "57P02" | "57P03" | "53300")
            {
                return Error::unavailable(err);
            }
            if code == "23505" && db.constraint() == Some(DEDUP_INDEX) {
                let detail = db
                    .try_downcast_ref::<PgDatabaseError>()
                    .and_then(|e| e.detail())
                    .and_then(parse_dedup_detail);
                let (queue, dedup_key) = detail.unwrap_or_default();
                return Error::Duplicate { queue, dedup_key };
            }
            Error::database(err)
        }
        _ => Error::database(err),
    }
}

/// Reads queue and key from `Key (queue, dedup_key)=(emails, welcome-42) already exists.`
/// Queue names cannot contain `", "`, so the first one separates the two values.
fn parse_dedup_detail(detail: &str) -> Option<(String, String)> {
    let (_, values) = detail.split_once(")=(")?;
    let values = values
        .strip_suffix(") already exists.")
        .unwrap_or(values.trim_end_matches(')'));
    let (queue, key) = values.split_once(", ")?;
    Some((queue.to_owned(), key.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedup_detail() {
        assert_eq!(
            parse_dedup_detail("Key (queue, dedup_key)=(emails, a, b) already exists."),
            Some(("emails".into(), "a, b".into()))
        );
        assert_eq!(parse_dedup_detail("something else"), None);
    }

    #[test]
    fn io_errors_are_unavailable() {
        let e = map(sqlx::Error::Io(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert!(e.is_transient());
        assert!(map(sqlx::Error::PoolTimedOut).is_transient());
        assert!(!map(sqlx::Error::RowNotFound).is_transient());
    }
}
