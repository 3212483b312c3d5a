//! The driver's error, and `classify`: the one place where it is explained to the engine.

use queue_core::engine::{DriverFault, UniqueIndex};
use queue_core::JobId;

/// What a statement on the in-memory store refused. The store is never unavailable by itself
/// and never has a lock conflict (every statement runs under its one lock), so these are
/// constraint violations, rows that cannot be written, and the faults a test injected
/// ([`Faults`](crate::Faults)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// A statement ran before `migrate` created the store's tables (as a table that does not
    /// exist yet on a database).
    #[error("the in-memory store has no tables yet: call migrate() first")]
    NotMigrated,
    /// A job with this id is stored already (the primary key).
    #[error("job {0} exists already")]
    DuplicateId(JobId),
    /// A live (pending or running) job of the queue holds the dedup key.
    #[error("job {holder} of queue {queue:?} holds the dedup key {dedup_key:?} while it is live")]
    DedupKeyHeld {
        /// The queue.
        queue: String,
        /// The dedup key.
        dedup_key: String,
        /// The live job that holds it.
        holder: JobId,
    },
    /// A job whose state is in its own unique states holds the unique key.
    #[error("job {holder} holds the unique key")]
    UniqueKeyHeld {
        /// The job that holds it.
        holder: JobId,
    },
    /// A workflow with this id exists already (the workflows' primary key).
    #[error("a workflow {0} exists already")]
    WorkflowExists(queue_core::WorkflowId),
    /// A schedule with this name exists already (the schedules' primary key).
    #[error("a schedule named {0:?} exists already")]
    ScheduleExists(String),
    /// A time computed from the store's clock (now plus a delay, a lease, a window) falls
    /// outside the range of times a job can carry.
    #[error("{0} is out of the range of times")]
    TimeOutOfRange(&'static str),
    /// A value written as JSON text (payload, metadata, output) is not JSON.
    #[error("{column} is not JSON: {source}")]
    NotJson {
        /// Which value.
        column: &'static str,
        /// What the parser said.
        #[source]
        source: serde_json::Error,
    },
    /// A migration that this driver does not know how to apply.
    #[error("migration {0} is not one of the in-memory store's")]
    UnknownMigration(i64),
    /// The database could not be reached: a fault injected through [`Faults`](crate::Faults)
    /// (an outage, or an unavailable statement). Classified as unavailable.
    #[error("{statement}: the database is unavailable (an injected fault)")]
    Unavailable {
        /// The statement it struck.
        statement: &'static str,
    },
    /// A permanent database error injected through [`Faults`](crate::Faults).
    #[error("{statement}: a database error (an injected fault)")]
    Injected {
        /// The statement it struck.
        statement: &'static str,
    },
}

/// What an error means to the engine: the three constraint violations name their index (a
/// schedule's name, which no [`UniqueIndex`] stands for, is reported as
/// [`UniqueIndex::Unknown`]); an injected outage is [`DriverFault::Unavailable`]; everything
/// else is [`DriverFault::Other`].
pub(crate) fn classify(error: &MemoryError) -> DriverFault {
    match error {
        MemoryError::Unavailable { .. } => DriverFault::Unavailable,
        MemoryError::DuplicateId(_) => DriverFault::UniqueViolation(UniqueIndex::JobId),
        MemoryError::DedupKeyHeld { .. } => DriverFault::UniqueViolation(UniqueIndex::DedupKey),
        MemoryError::UniqueKeyHeld { .. } => DriverFault::UniqueViolation(UniqueIndex::UniqueKey),
        MemoryError::ScheduleExists(_) => DriverFault::UniqueViolation(UniqueIndex::Unknown),
        MemoryError::WorkflowExists(_) => DriverFault::UniqueViolation(UniqueIndex::WorkflowId),
        MemoryError::NotMigrated
        | MemoryError::TimeOutOfRange(_)
        | MemoryError::NotJson { .. }
        | MemoryError::UnknownMigration(_)
        | MemoryError::Injected { .. } => DriverFault::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraint_violations_name_their_index() {
        let id = JobId::new();
        assert_eq!(
            classify(&MemoryError::DuplicateId(id)),
            DriverFault::UniqueViolation(UniqueIndex::JobId)
        );
        let held = MemoryError::DedupKeyHeld {
            queue: "q".into(),
            dedup_key: "k".into(),
            holder: id,
        };
        assert_eq!(
            classify(&held),
            DriverFault::UniqueViolation(UniqueIndex::DedupKey)
        );
        assert_eq!(
            classify(&MemoryError::UniqueKeyHeld { holder: id }),
            DriverFault::UniqueViolation(UniqueIndex::UniqueKey)
        );
        assert_eq!(classify(&MemoryError::NotMigrated), DriverFault::Other);
        assert_eq!(
            classify(&MemoryError::Unavailable {
                statement: "job_claim"
            }),
            DriverFault::Unavailable
        );
        assert_eq!(
            classify(&MemoryError::Injected {
                statement: "job_claim"
            }),
            DriverFault::Other
        );
    }
}
