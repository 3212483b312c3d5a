//! Statements that stay on one server connection behind a pooler in transaction mode.
//!
//! sqlx sends a statement with values in two exchanges (Parse and Describe, then Bind and
//! Execute, each ended by a Sync). A pooler in transaction mode (PgBouncer's `pool_mode =
//! transaction`) may hand the server connection to another client between the two when no
//! transaction is open, so the Bind can reach a server that never saw the Parse; and a statement
//! prepared by name exists on one server connection only. With `pooler=transaction` the driver
//! prepares nothing by name (every statement is `.persistent(false)`; with sqlx's statement
//! cache off a persistent statement would still be prepared under a new name each time and never
//! closed), and [`on_pool!`] runs each statement that is not already inside a transaction in one
//! of its own: from BEGIN to COMMIT the pooler keeps the client on one server connection. That
//! costs two round trips per statement; the queue's own transactions (a batch push, a
//! controlled claim, a migration) and the caller's are already pinned and cost nothing more.

/// Runs one statement on the driver's pool: `on_pool!(driver, |e| query.fetch_all(e))` runs
/// `query.fetch_all(&pool)`, or, behind a pooler in transaction mode (`driver.pinned`), the same
/// on a transaction of its own that is committed after the whole result was read (a write is
/// never rolled back because its reader stopped early). Evaluates to the statement's
/// `Result<_, sqlx::Error>`; `driver` is anything with `pool: PgPool` and `pinned: bool`.
macro_rules! on_pool {
    ($driver:expr, |$e:ident| $run:expr) => {{
        if $driver.pinned {
            match $driver.pool.begin().await {
                Ok(mut tx) => {
                    let result = {
                        let $e = &mut *tx;
                        $run.await
                    };
                    match result {
                        Ok(out) => tx.commit().await.map(|()| out),
                        Err(e) => Err(e),
                    }
                }
                Err(e) => Err(e),
            }
        } else {
            let $e = &$driver.pool;
            $run.await
        }
    }};
}

pub(crate) use on_pool;
