//! The one place where driver errors are classified for the engine.

use queue_core::engine::{DriverFault, UniqueIndex};

/// The unique index that keeps dedup keys of live jobs apart (see `migrations/0001_jobs.sql`).
const DEDUP_INDEX: &str = "jobs_dedup_idx";
/// The jobs table's primary key.
const PRIMARY_KEY: &str = "jobs_pkey";
/// The workflows table's primary key (see `migrations/0013_workflows.sql`).
const WORKFLOW_KEY: &str = "workflows_pkey";

/// What a driver error means, from its kind and SQLSTATE:
///
/// - the server could not be reached or went away (I/O, TLS, pool timed out or closed, class
///   `08` connection exceptions, `57P01`..`57P03` shutdown / cannot connect now, `53300` too
///   many connections), or it is the wrong server for writes (`25006` read-only transaction: a
///   standby, or a primary demoted in place) -> [`DriverFault::Unavailable`]: a claim backs
///   off and tries again, and no job is failed because of it;
/// - `40001` serialization failure, `40P01` deadlock, `55P03` lock not available ->
///   [`DriverFault::LockConflict`];
/// - `23505` unique violation -> [`DriverFault::UniqueViolation`], naming the index from the
///   error's constraint field.
///
/// sqlx never puts the connection URL into these errors, so no password can leak through them.
pub(crate) fn classify(err: &sqlx::Error) -> DriverFault {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => DriverFault::Unavailable,
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default();
            match code.as_ref() {
                c if c.starts_with("08") => DriverFault::Unavailable,
                "57P01" | "57P02" | "57P03" | "53300" | "25006" => DriverFault::Unavailable,
                "40001" | "40P01" | "55P03" => DriverFault::LockConflict,
                "23505" => DriverFault::UniqueViolation(match db.constraint() {
                    Some(DEDUP_INDEX) => UniqueIndex::DedupKey,
                    Some(PRIMARY_KEY) => UniqueIndex::JobId,
                    Some(WORKFLOW_KEY) => UniqueIndex::WorkflowId,
                    _ => UniqueIndex::Unknown,
                }),
                _ => DriverFault::Other,
            }
        }
        _ => DriverFault::Other,
    }
}

/// Whether the server answered but is the wrong one to keep using: read-only (`25006`) or
/// shutting down (`57P01`..`57P03`). Every pooled connection to it is then retired, not only
/// the one that saw the error.
pub(crate) fn wrong_node(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => matches!(
            db.code().as_deref(),
            Some("25006" | "57P01" | "57P02" | "57P03")
        ),
        _ => false,
    }
}

/// Whether a prepared statement the connection counted on was missing (`26000`) or one it
/// was making was already there (`42P05`): the mark of a pooler in transaction mode that moved
/// the client to another server connection between statements.
pub(crate) fn lost_prepared_statement(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => matches!(db.code().as_deref(), Some("26000" | "42P05")),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_errors_are_unavailable() {
        let io = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(classify(&io), DriverFault::Unavailable);
        assert_eq!(
            classify(&sqlx::Error::PoolTimedOut),
            DriverFault::Unavailable
        );
        assert_eq!(classify(&sqlx::Error::RowNotFound), DriverFault::Other);
    }
}
