//! Statements that stay on one server connection behind a pooler in transaction mode.
//!
//! sqlx sends a statement with values in two exchanges (Parse and Describe, then Bind and
//! Execute, each ended by a Sync). A pooler in transaction mode (PgBouncer's `pool_mode =
//! transaction`) may hand the server connection to another client between the two when no
//! transaction is open, so the Bind can reach a server that never saw the Parse; and prepared
//! statements that sqlx keeps by name exist on one server only. With `pooler=transaction` the
//! queue keeps no named statements (`statement_cache_capacity(0)`), and [`Exec`] runs each
//! statement that is not already inside a transaction in one of its own: from BEGIN to COMMIT
//! the pooler keeps the client on one server. That costs two round trips per statement; the
//! queue's own transactions (a batch push, a controlled claim, a migration) and the caller's
//! are already pinned and cost nothing more.

use futures::{StreamExt, TryStreamExt};
use sqlx::postgres::{PgQueryResult, PgRow, PgStatement, PgTypeInfo};
use sqlx::{Either, Execute, Executor, PgPool, Postgres, SqlStr};

/// The executor of statements on the queue's pool: the pool itself, or, behind a pooler in
/// transaction mode, a transaction per statement.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Exec<'c> {
    pub(crate) pool: &'c PgPool,
    /// Whether each statement gets a transaction of its own.
    pub(crate) pinned: bool,
}

impl<'c> Executor<'c> for Exec<'c> {
    type Database = Postgres;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> futures::stream::BoxStream<'e, Result<Either<PgQueryResult, PgRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        if !self.pinned {
            return self.pool.fetch_many(query);
        }
        let pool = self.pool.clone();
        // The whole result is read before COMMIT: a caller that stops reading early must not
        // roll back a write that the statement made.
        futures::stream::once(async move {
            let mut tx = pool.begin().await?;
            let items: Vec<_> = (&mut *tx).fetch_many(query).try_collect().await?;
            tx.commit().await?;
            Ok::<_, sqlx::Error>(futures::stream::iter(items.into_iter().map(Ok)))
        })
        .try_flatten()
        .boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> futures::future::BoxFuture<'e, Result<Option<PgRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        if !self.pinned {
            return self.pool.fetch_optional(query);
        }
        let pool = self.pool.clone();
        Box::pin(async move {
            let mut tx = pool.begin().await?;
            let row = (&mut *tx).fetch_optional(query).await?;
            tx.commit().await?;
            Ok(row)
        })
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [PgTypeInfo],
    ) -> futures::future::BoxFuture<'e, Result<PgStatement, sqlx::Error>>
    where
        'c: 'e,
    {
        self.pool.prepare_with(sql, parameters)
    }
}
