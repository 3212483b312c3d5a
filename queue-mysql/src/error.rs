//! The one mapping from driver errors to the queue's error kinds.

use queue_core::Error;
use sqlx::mysql::MySqlDatabaseError;

/// `ER_DUP_ENTRY`: a unique index rejected a row.
const DUP_ENTRY: u16 = 1062;
/// `ER_LOCK_DEADLOCK`: InnoDB chose this transaction as a deadlock victim (and rolled it back).
const LOCK_DEADLOCK: u16 = 1213;
/// `ER_LOCK_WAIT_TIMEOUT`: a row lock was not granted within `innodb_lock_wait_timeout`.
const LOCK_WAIT_TIMEOUT: u16 = 1205;
/// Server-side codes that mean "the server cannot take work now": too many connections (1040),
/// shutdown in progress (1053), connection killed (1927, MariaDB), server gone away (2006),
/// lost connection during query (2013).
const UNAVAILABLE: [u16; 5] = [1040, 1053, 1927, 2006, 2013];

/// The MySQL error number of a database error, if it is one.
fn number(err: &sqlx::Error) -> Option<u16> {
    match err {
        sqlx::Error::Database(db) => db
            .try_downcast_ref::<MySqlDatabaseError>()
            .map(MySqlDatabaseError::number),
        _ => None,
    }
}

/// Whether the error is a deadlock or a lock wait timeout, which the claim retries.
pub(crate) fn is_lock_conflict(err: &sqlx::Error) -> bool {
    matches!(number(err), Some(LOCK_DEADLOCK | LOCK_WAIT_TIMEOUT))
}

/// Whether the error is a duplicate on the live-dedup index (and not, say, on the primary key).
pub(crate) fn is_dedup_violation(err: &sqlx::Error) -> bool {
    number(err) == Some(DUP_ENTRY) && duplicate_entry(err).is_some_and(|(_, key)| key_is_dedup(key))
}

/// The `'entry'` and key name of a duplicate-entry message: MariaDB says
/// `Duplicate entry 'q-k' for key 'dedup_live'`, MySQL 8 `... for key 'table.dedup_live'`.
fn duplicate_entry(err: &sqlx::Error) -> Option<(&str, &str)> {
    let sqlx::Error::Database(db) = err else {
        return None;
    };
    let msg = db.message();
    let rest = msg.strip_prefix("Duplicate entry '")?;
    let (entry, key) = rest.rsplit_once("' for key '")?;
    Some((entry, key.trim_end_matches('\'')))
}

fn key_is_dedup(key: &str) -> bool {
    key == "dedup_live" || key.ends_with(".dedup_live")
}

/// Which of `candidates` (queue, dedup key) a dedup violation names: the one whose
/// `queue-key` matches the entry in the message (the server may cut long entries short), else
/// the first candidate.
pub(crate) fn dedup_culprit<'a>(
    err: &sqlx::Error,
    candidates: &[(&'a str, &'a str)],
) -> Option<(&'a str, &'a str)> {
    let entry = duplicate_entry(err).map(|(entry, _)| entry);
    entry
        .and_then(|entry| {
            candidates.iter().copied().find(|(q, k)| {
                let full = format!("{q}-{k}");
                full == entry
                    || (entry.len() >= 16 && full.starts_with(entry.trim_end_matches("...")))
            })
        })
        .or_else(|| candidates.first().copied())
}

/// Maps a driver error to the queue's error kinds. Lost or refused connections, an exhausted or
/// closed pool and a server that is going away are [`Error::Unavailable`]; everything else is
/// [`Error::Database`]. (Duplicates are turned into [`Error::Duplicate`] by the callers that know
/// which job was pushed, using [`is_dedup_violation`].) Driver errors carry no connection URL,
/// so no password can leak through them.
pub(crate) fn map(err: sqlx::Error) -> Error {
    let unavailable = match &err {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(_) => number(&err).is_some_and(|n| UNAVAILABLE.contains(&n)),
        _ => false,
    };
    if unavailable {
        Error::unavailable(err)
    } else {
        Error::database(err)
    }
}

/// [`map`] for an INSERT of `jobs`: a violation of the live-dedup index becomes
/// [`Error::Duplicate`] naming the job whose key clashed.
pub(crate) fn map_push(err: sqlx::Error, jobs: &[queue_core::NewJob]) -> Error {
    if is_dedup_violation(&err) {
        let candidates: Vec<(&str, &str)> = jobs
            .iter()
            .filter_map(|j| j.dedup_key_value().map(|k| (j.queue(), k)))
            .collect();
        if let Some((queue, key)) = dedup_culprit(&err, &candidates) {
            return Error::Duplicate {
                queue: queue.to_owned(),
                dedup_key: key.to_owned(),
            };
        }
    }
    map(err)
}
