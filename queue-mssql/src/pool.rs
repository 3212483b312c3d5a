//! Connections: one TDS session each, set up for the queue at connect, pooled with bb8 by a
//! manager that never hands out a session left mid-request or inside a transaction (tiberius
//! has no connection reset), and the caller's transactions on them.

use std::fmt;

use tiberius::error::Error as TdsError;
use tiberius::{Config, ExecuteResult, Query, Row};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

use crate::bind::Params;
use crate::error::{keeps_connection, MsSqlError};

/// A tiberius client on a TCP connection, as this crate opens them.
pub type Client = tiberius::Client<Compat<TcpStream>>;

/// The pool of a queue value.
pub type Pool = bb8::Pool<ConnectionManager>;

/// Set on every session at connect, in one batch (a `SET` inside `sp_executesql` would revert
/// when it returns). The ANSI options are the ones filtered indexes require of every statement
/// that writes or reads them (error 1934 otherwise). READ COMMITTED is what READPAST needs (a
/// pooled session may come from a caller's transaction at another level: it is reset after
/// each). Implicit transactions stay off, so every statement outside an explicit transaction
/// commits on its own; XACT_ABORT stays off, so a failed statement leaves an explicit
/// transaction open for the driver to roll back (to a savepoint, in a caller's transaction).
/// A lock wait longer than 10 s fails with 1222, which the engine retries, instead of running
/// into the 30 s command timeout, which would cost the connection. NOCOUNT stays off: the
/// fenced transitions read their row counts.
pub(crate) const SESSION: &str = "SET ANSI_NULLS ON; SET ANSI_PADDING ON; SET ANSI_WARNINGS ON; \
SET ARITHABORT ON; SET CONCAT_NULL_YIELDS_NULL ON; SET QUOTED_IDENTIFIER ON; \
SET NUMERIC_ROUNDABORT OFF; SET IMPLICIT_TRANSACTIONS OFF; SET XACT_ABORT OFF; \
SET LOCK_TIMEOUT 10000; SET TRANSACTION ISOLATION LEVEL READ COMMITTED";

/// Transaction verbs, each sent as a batch of its own (never inside `sp_executesql`, where a
/// change of the transaction count fails with error 266).
const BEGIN: &str = "BEGIN TRANSACTION";
/// Commits, and returns the session to READ COMMITTED whatever the transaction set.
const COMMIT: &str = "COMMIT TRANSACTION; SET TRANSACTION ISOLATION LEVEL READ COMMITTED";
/// Rolls back whatever is still open (a deadlock victim's transaction is already gone).
const ROLLBACK: &str =
    "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION; SET TRANSACTION ISOLATION LEVEL READ COMMITTED";

/// Opens one session to the server `config` names, set up as the queue's pooled sessions are
/// (for administration, e.g. statements that may not run inside a transaction). Follows one
/// Azure SQL gateway redirect.
///
/// # Errors
/// tiberius's error when the server cannot be reached, refuses the login or the settings.
pub async fn open(config: &Config) -> Result<Client, TdsError> {
    let mut client = match Client::connect(config.clone(), tcp(config).await?).await {
        Ok(client) => client,
        Err(TdsError::Routing { host, port }) => {
            let mut routed = config.clone();
            routed.host(&host);
            routed.port(port);
            let stream = tcp(&routed).await?;
            Client::connect(routed, stream).await?
        }
        Err(e) => return Err(e),
    };
    client.simple_query(SESSION).await?.into_results().await?;
    Ok(client)
}

#[cfg(feature = "sql-browser")]
async fn tcp(config: &Config) -> Result<Compat<TcpStream>, TdsError> {
    use tiberius::SqlBrowser;
    let stream = TcpStream::connect_named(config).await?;
    stream.set_nodelay(true)?;
    Ok(stream.compat_write())
}

#[cfg(not(feature = "sql-browser"))]
async fn tcp(config: &Config) -> Result<Compat<TcpStream>, TdsError> {
    let stream = TcpStream::connect(config.get_addr()).await?;
    stream.set_nodelay(true)?;
    Ok(stream.compat_write())
}

/// One pooled session.
pub struct MsSqlConnection {
    client: Client,
    /// A request was sent and its response not read to the end, or the connection failed.
    busy: bool,
    /// A transaction is open on the session.
    in_tx: bool,
}

impl fmt::Debug for MsSqlConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsSqlConnection")
            .field("busy", &self.busy)
            .field("in_tx", &self.in_tx)
            .finish_non_exhaustive()
    }
}

impl MsSqlConnection {
    pub(crate) fn new(client: Client) -> Self {
        MsSqlConnection {
            client,
            busy: false,
            in_tx: false,
        }
    }

    pub(crate) fn into_client(self) -> Client {
        self.client
    }

    /// Whether the pool must close this session instead of reusing it.
    pub(crate) fn is_broken(&self) -> bool {
        self.busy || self.in_tx
    }

    /// The outcome of a request: the session is reusable again after success, or after a
    /// server error (the rest of its response is drained before the next request).
    fn settle<T>(&mut self, r: Result<T, TdsError>) -> Result<T, MsSqlError> {
        match r {
            Ok(v) => {
                self.busy = false;
                Ok(v)
            }
            Err(e) => {
                self.busy = !keeps_connection(&e);
                Err(MsSqlError::Tds(e))
            }
        }
    }

    /// Runs a parameterised statement (through `sp_executesql`) and reads its first result set.
    pub(crate) async fn fetch(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Vec<Row>, MsSqlError> {
        self.busy = true;
        let r = async {
            query(sql, params)
                .query(&mut self.client)
                .await?
                .into_first_result()
                .await
        }
        .await;
        self.settle(r)
    }

    /// Runs a parameterised statement and returns the rows it changed.
    pub(crate) async fn execute(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<u64, MsSqlError> {
        self.busy = true;
        let r = query(sql, params)
            .execute(&mut self.client)
            .await
            .map(ExecuteResult::total);
        self.settle(r)
    }

    /// Runs a batch without bound values (session settings, DDL, transaction verbs).
    pub(crate) async fn batch(&mut self, sql: &str) -> Result<(), MsSqlError> {
        self.busy = true;
        let r = async {
            self.client.simple_query(sql).await?.into_results().await?;
            Ok(())
        }
        .await;
        self.settle(r)
    }

    /// Begins a transaction of the driver's or the caller's.
    pub(crate) async fn begin(&mut self) -> Result<(), MsSqlError> {
        self.in_tx = true;
        self.batch(BEGIN).await
    }

    /// Commits the open transaction.
    pub(crate) async fn commit(&mut self) -> Result<(), MsSqlError> {
        self.batch(COMMIT).await?;
        self.in_tx = false;
        Ok(())
    }

    /// Rolls the open transaction back.
    pub(crate) async fn rollback(&mut self) -> Result<(), MsSqlError> {
        self.batch(ROLLBACK).await?;
        self.in_tx = false;
        Ok(())
    }

    /// Sets a savepoint in the open transaction (`SAVE TRANSACTION`).
    pub(crate) async fn savepoint(&mut self, name: &'static str) -> Result<(), MsSqlError> {
        self.batch(&format!("SAVE TRANSACTION {name}")).await
    }

    /// Undoes everything since the savepoint `name`, keeping the transaction open (unless the
    /// server has already rolled it back whole, e.g. for a deadlock victim).
    pub(crate) async fn rollback_to(&mut self, name: &'static str) -> Result<(), MsSqlError> {
        let sql = format!("IF XACT_STATE() = 1 ROLLBACK TRANSACTION {name}");
        self.batch(&sql).await
    }
}

/// The request of `sql` with `params`: every value is bound (see [`crate::bind`]).
fn query<'a>(sql: &'a str, params: Params<'a>) -> Query<'a> {
    let mut q = Query::new(sql);
    for p in params.into_values() {
        q.bind(p);
    }
    q
}

/// Opens sessions for the pool and keeps out of it any session that may be mid-request or
/// inside a transaction (one dropped during a request, or a caller's transaction that was
/// never committed or rolled back): such a session is closed, and the server rolls back what
/// it had open.
#[derive(Clone)]
pub struct ConnectionManager {
    config: Config,
}

impl fmt::Debug for ConnectionManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionManager")
            .field("address", &self.config.get_addr())
            .finish_non_exhaustive()
    }
}

impl ConnectionManager {
    pub(crate) fn new(config: Config) -> Self {
        ConnectionManager { config }
    }
}

impl bb8::ManageConnection for ConnectionManager {
    type Connection = MsSqlConnection;
    type Error = TdsError;

    async fn connect(&self) -> Result<MsSqlConnection, TdsError> {
        Ok(MsSqlConnection::new(open(&self.config).await?))
    }

    async fn is_valid(&self, conn: &mut MsSqlConnection) -> Result<(), TdsError> {
        conn.batch("SELECT 1").await.map_err(|e| match e {
            MsSqlError::Tds(e) => e,
            other => TdsError::Protocol(other.to_string().into()),
        })
    }

    fn has_broken(&self, conn: &mut MsSqlConnection) -> bool {
        conn.is_broken()
    }
}

/// A session of `pool`, waiting for one at most the pool's connection timeout (the builder's
/// connect timeout), which the error of an exhausted pool names.
pub(crate) async fn checkout(
    pool: &Pool,
) -> Result<bb8::PooledConnection<'_, ConnectionManager>, MsSqlError> {
    pool.get()
        .await
        .map_err(|e| MsSqlError::checkout(e, pool.config().connection_timeout))
}

/// [`checkout`], for a session that outlives the borrow of `pool` (a transaction's).
pub(crate) async fn checkout_owned(
    pool: &Pool,
) -> Result<bb8::PooledConnection<'static, ConnectionManager>, MsSqlError> {
    pool.get_owned()
        .await
        .map_err(|e| MsSqlError::checkout(e, pool.config().connection_timeout))
}

/// A transaction of the caller's, on one pooled session: made by
/// [`MsSqlQueue::begin`](crate::MsSqlQueue::begin), taken by `push_in_tx`,
/// `push_batch_in_tx` and `complete_in_tx`, and ended with [`commit`](Self::commit) or
/// [`rollback`](Self::rollback). Dropped without either, its session is closed rather than
/// returned to the pool, and the server rolls the transaction back.
pub struct MsSqlTransaction {
    pub(crate) conn: bb8::PooledConnection<'static, ConnectionManager>,
}

impl fmt::Debug for MsSqlTransaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsSqlTransaction")
            .field("conn", &*self.conn)
            .finish()
    }
}

impl MsSqlTransaction {
    pub(crate) async fn begin(pool: &Pool) -> Result<Self, MsSqlError> {
        let mut conn = checkout_owned(pool).await?;
        conn.begin().await?;
        Ok(MsSqlTransaction { conn })
    }

    /// The session, for the caller's own statements inside the transaction (bind every value:
    /// `client().execute("INSERT ... VALUES (@P1)", &[&value])`). Do not end the transaction
    /// through it: use [`commit`](Self::commit) or [`rollback`](Self::rollback).
    pub fn client(&mut self) -> &mut Client {
        // Whatever the caller sends, the session is reused only after commit or rollback.
        &mut self.conn.client
    }

    /// Commits; the session goes back to the pool at READ COMMITTED.
    ///
    /// # Errors
    /// The server's error; the session is then closed, and the server rolls back.
    pub async fn commit(mut self) -> Result<(), MsSqlError> {
        self.conn.commit().await
    }

    /// Rolls back; the session goes back to the pool at READ COMMITTED.
    ///
    /// # Errors
    /// The server's error; the session is then closed, and the server rolls back.
    pub async fn rollback(mut self) -> Result<(), MsSqlError> {
        self.conn.rollback().await
    }

    pub(crate) fn connection(&mut self) -> &mut MsSqlConnection {
        &mut self.conn
    }
}
