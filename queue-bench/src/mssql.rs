//! SQL Server: our queue in a fresh schema per workload, and the hand-written queue a team
//! would write instead (Hangfire's claim: `UPDATE TOP (n) ... OUTPUT ... WITH (READPAST, UPDLOCK,
//! ROWLOCK)`) in another.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use async_trait::async_trait;
use queue_core::{Limits, Queue};
use queue_mssql::tiberius::{Config, Query, Row};
use queue_mssql::{open_session, Client, UrlParts};

use crate::backend::{fresh_tag, BackendKind, BaselineNs, DrainCheck, OursNs, Server};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Ids per `IN (...)` of the baseline's completion (SQL Server takes 2,100 parameters).
const IDS_PER_STATEMENT: usize = 2_000;

/// Sessions for the baseline, opened as the queue opens its own.
struct Manager {
    config: Config,
}

impl bb8::ManageConnection for Manager {
    type Connection = Client;
    type Error = queue_mssql::tiberius::error::Error;

    async fn connect(&self) -> Result<Client, Self::Error> {
        open_session(&self.config).await
    }

    async fn is_valid(&self, conn: &mut Client) -> Result<(), Self::Error> {
        conn.simple_query("SELECT 1").await?.into_results().await?;
        Ok(())
    }

    fn has_broken(&self, _conn: &mut Client) -> bool {
        false
    }
}

type Pool = bb8::Pool<Manager>;

async fn pool(url: &str, size: u32) -> Result<Pool> {
    let parts = UrlParts::parse(url)?;
    bb8::Pool::builder()
        .max_size(size)
        .connection_timeout(CONNECT_TIMEOUT)
        .build(Manager {
            config: parts.config(),
        })
        .await
        .with_context(|| format!("connect to {}", queue_mssql::redact(url)))
}

/// Runs `sql` with `params` and returns its rows.
async fn rows(pool: &Pool, sql: &str, params: &[&str]) -> Result<Vec<Row>> {
    let mut conn = pool.get().await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut q = Query::new(sql);
    for p in params {
        q.bind(*p);
    }
    let rows = q.query(&mut conn).await?.into_first_result().await?;
    Ok(rows)
}

/// Runs a batch without values.
async fn batch(pool: &Pool, sql: &str) -> Result<()> {
    let mut conn = pool.get().await.map_err(|e| anyhow::anyhow!("{e}"))?;
    conn.simple_query(sql).await?.into_results().await?;
    Ok(())
}

/// Drops `schema` and the tables in it (a name made by [`fresh_tag`]).
async fn drop_schema(admin: &Pool, schema: &str) -> Result<()> {
    queue_core::validate::identifier("schema", schema)?;
    batch(
        admin,
        &format!(
            "DROP TABLE IF EXISTS [{schema}].[jobs]; DROP TABLE IF EXISTS [{schema}].[schedules]; \
             DROP TABLE IF EXISTS [{schema}].[migrations]; DROP SCHEMA IF EXISTS [{schema}];"
        ),
    )
    .await
}

pub(crate) struct MsSqlServer {
    url: String,
    admin: Pool,
}

impl MsSqlServer {
    pub(crate) async fn connect(url: &str) -> Result<Self> {
        // One session first, so an unreachable server is reported with its reason.
        let config = UrlParts::parse(url)?.config();
        tokio::time::timeout(CONNECT_TIMEOUT, open_session(&config))
            .await
            .map_err(|_| anyhow::anyhow!("no answer within {CONNECT_TIMEOUT:?}"))
            .and_then(|r| r.map_err(anyhow::Error::from))
            .with_context(|| format!("connect to {}", queue_mssql::redact(url)))?;
        let admin = pool(url, 2).await?;
        batch(&admin, "SELECT 1").await?;
        Ok(MsSqlServer {
            url: url.to_owned(),
            admin,
        })
    }
}

#[async_trait]
impl Server for MsSqlServer {
    fn kind(&self) -> BackendKind {
        BackendKind::Mssql
    }

    async fn describe(&self) -> Result<Vec<(String, String)>> {
        let r = rows(
            &self.admin,
            "SELECT CAST(SERVERPROPERTY('ProductVersion') AS NVARCHAR(128)) AS version, \
             CAST(SERVERPROPERTY('Edition') AS NVARCHAR(128)) AS edition, \
             CAST(d.is_read_committed_snapshot_on AS NVARCHAR(8)) AS rcsi, \
             CAST(d.recovery_model_desc AS NVARCHAR(60)) AS recovery_model, \
             CAST(d.delayed_durability_desc AS NVARCHAR(60)) AS delayed_durability \
             FROM sys.databases AS d WHERE d.database_id = DB_ID()",
            &[],
        )
        .await?;
        let row = r.first().context("no server description")?;
        let mut out = Vec::new();
        for name in [
            "version",
            "edition",
            "rcsi",
            "recovery_model",
            "delayed_durability",
        ] {
            let v = row.try_get::<&str, _>(name)?.unwrap_or("NULL");
            out.push((name.to_owned(), v.to_owned()));
        }
        out.push(("url".into(), queue_mssql::redact(&self.url)));
        Ok(out)
    }

    async fn ours(&self, pool_size: u32) -> Result<Box<dyn OursNs>> {
        let schema = fresh_tag("bench_q")?;
        let queue = open_queue(&self.url, &schema, pool_size, Limits::default()).await?;
        Ok(Box::new(MsOurs {
            schema,
            queue,
            admin: self.admin.clone(),
        }))
    }

    async fn attach_with(
        &self,
        namespace: &str,
        pool_size: u32,
        limits: Limits,
    ) -> Result<Arc<dyn Queue>> {
        open_queue(&self.url, namespace, pool_size, limits).await
    }

    async fn baseline(&self, pool_size: u32) -> Result<Box<dyn BaselineNs>> {
        let schema = fresh_tag("bench_b")?;
        batch(
            &self.admin,
            &format!(
                "EXEC(N'CREATE SCHEMA [{schema}]');
                 CREATE TABLE [{schema}].[jobs] (
                     id       BIGINT IDENTITY(1, 1) NOT NULL PRIMARY KEY,
                     payload  NVARCHAR(MAX) NOT NULL,
                     state    NVARCHAR(16)  NOT NULL DEFAULT N'pending',
                     attempts INT           NOT NULL DEFAULT 0
                 );
                 CREATE INDEX pending ON [{schema}].[jobs] (state, id);"
            ),
        )
        .await
        .context("create the baseline table")?;
        let t = format!("[{schema}].[jobs]");
        Ok(Box::new(MsBaseline {
            claim: format!(
                "UPDATE TOP (@P1) j SET state = N'running', attempts = j.attempts + 1 \
                 OUTPUT inserted.id, inserted.payload \
                 FROM {t} AS j WITH (READPAST, UPDLOCK, ROWLOCK, READCOMMITTEDLOCK) \
                 WHERE j.state = N'pending'"
            ),
            table: t,
            schema,
            pool: pool(&self.url, pool_size).await?,
            admin: self.admin.clone(),
        }))
    }
}

async fn open_queue(
    url: &str,
    schema: &str,
    pool_size: u32,
    limits: Limits,
) -> Result<Arc<dyn Queue>> {
    let q = queue_mssql::MsSqlQueue::builder(url)
        .schema(schema)
        .max_connections(pool_size)
        .limits(limits)
        .keep_completed_jobs(crate::backend::keep_completed())
        .connect_timeout(CONNECT_TIMEOUT)
        .connect()
        .await?;
    q.migrate().await?;
    Ok(Arc::new(q))
}

async fn check_counts(admin: &Pool, sql: &str, params: &[&str]) -> Result<DrainCheck> {
    let r = rows(admin, sql, params).await?;
    let row = r.first().context("no counts")?;
    let get =
        |i: usize| -> Result<u64> { Ok(row.try_get::<i64, _>(i)?.unwrap_or(0).max(0) as u64) };
    Ok(DrainCheck {
        total: get(0)?,
        completed: get(1)?,
        not_once: get(2)?,
    })
}

struct MsOurs {
    schema: String,
    queue: Arc<dyn Queue>,
    admin: Pool,
}

#[async_trait]
impl OursNs for MsOurs {
    fn queue(&self) -> Arc<dyn Queue> {
        self.queue.clone()
    }

    fn namespace(&self) -> String {
        self.schema.clone()
    }

    async fn check(&self, queue: &str) -> Result<DrainCheck> {
        let s = &self.schema;
        check_counts(
            &self.admin,
            &format!(
                "SELECT COUNT_BIG(*), \
                 COALESCE(SUM(CAST(CASE WHEN state = N'completed' THEN 1 ELSE 0 END AS BIGINT)), 0), \
                 COALESCE(SUM(CAST(CASE WHEN state = N'completed' AND attempts <> 1 THEN 1 ELSE 0 END AS BIGINT)), 0) \
                 FROM [{s}].[jobs] WHERE queue = @P1"
            ),
            &[queue],
        )
        .await
    }

    async fn fill_finished(&self, queue: &str, rows_wanted: u64, payload: &str) -> Result<()> {
        let s = &self.schema;
        // Set-based: numbers from a cross join of catalog views, ids from NEWID() (not time
        // ordered, as such a backlog would not be either after years of pruning).
        let mut conn = self.admin.get().await.map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut q = Query::new(format!(
            "WITH n AS (SELECT TOP (@P1) 1 AS one \
                        FROM sys.all_columns AS a CROSS JOIN sys.all_columns AS b) \
             INSERT INTO [{s}].[jobs] (id, queue, payload, priority, state, attempts, max_attempts, \
                                      run_at, created_at, updated_at, finished_at) \
             SELECT CAST(NEWID() AS BINARY(16)), @P2, @P3, 0, N'completed', 1, 25, \
                    DATEADD(DAY, -1, SYSUTCDATETIME()), DATEADD(DAY, -1, SYSUTCDATETIME()), \
                    DATEADD(DAY, -1, SYSUTCDATETIME()), DATEADD(DAY, -1, SYSUTCDATETIME()) \
             FROM n"
        ));
        q.bind(i64::try_from(rows_wanted)?);
        q.bind(queue);
        q.bind(payload);
        q.execute(&mut *conn).await?;
        conn.simple_query(format!("UPDATE STATISTICS [{s}].[jobs]"))
            .await?
            .into_results()
            .await?;
        Ok(())
    }

    async fn cleanup(&self) -> Result<()> {
        drop_schema(&self.admin, &self.schema).await
    }
}

struct MsBaseline {
    schema: String,
    table: String,
    claim: String,
    pool: Pool,
    admin: Pool,
}

fn placeholders(n: usize) -> String {
    (1..=n)
        .map(|i| format!("@P{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[async_trait]
impl BaselineNs for MsBaseline {
    async fn insert_one(&self, payload: &str) -> Result<()> {
        let sql = format!("INSERT INTO {} (payload) VALUES (@P1)", self.table);
        rows(&self.pool, &sql, &[payload]).await?;
        Ok(())
    }

    async fn insert_many(&self, payloads: &[String]) -> Result<()> {
        // INSERT ... VALUES takes at most 1,000 rows.
        for chunk in payloads.chunks(1_000) {
            let values = (1..=chunk.len())
                .map(|i| format!("(@P{i})"))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!("INSERT INTO {} (payload) VALUES {values}", self.table);
            let params: Vec<&str> = chunk.iter().map(String::as_str).collect();
            rows(&self.pool, &sql, &params).await?;
        }
        Ok(())
    }

    async fn claim(&self, limit: usize) -> Result<Vec<i64>> {
        let mut conn = self.pool.get().await.map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut q = Query::new(self.claim.as_str());
        q.bind(i64::try_from(limit)?);
        let claimed = q.query(&mut conn).await?.into_first_result().await?;
        let mut ids = Vec::with_capacity(claimed.len());
        for r in &claimed {
            let _payload = r.try_get::<&str, _>(1)?;
            ids.push(
                r.try_get::<i64, _>(0)?
                    .context("a claimed row without id")?,
            );
        }
        Ok(ids)
    }

    async fn complete(&self, ids: &[i64]) -> Result<()> {
        let mut conn = self.pool.get().await.map_err(|e| anyhow::anyhow!("{e}"))?;
        for chunk in ids.chunks(IDS_PER_STATEMENT) {
            let sql = format!(
                "UPDATE {} SET state = N'done' WHERE id IN ({})",
                self.table,
                placeholders(chunk.len())
            );
            let mut q = Query::new(sql);
            for id in chunk {
                q.bind(*id);
            }
            q.execute(&mut *conn).await?;
        }
        Ok(())
    }

    async fn check(&self) -> Result<DrainCheck> {
        check_counts(
            &self.admin,
            &format!(
                "SELECT COUNT_BIG(*), \
                 COALESCE(SUM(CAST(CASE WHEN state = N'done' THEN 1 ELSE 0 END AS BIGINT)), 0), \
                 COALESCE(SUM(CAST(CASE WHEN state = N'done' AND attempts <> 1 THEN 1 ELSE 0 END AS BIGINT)), 0) \
                 FROM {}",
                self.table
            ),
            &[],
        )
        .await
    }

    async fn cleanup(&self) -> Result<()> {
        drop_schema(&self.admin, &self.schema).await
    }
}

/// Refuses anything but a `mssql://` URL up front, with the form to use.
pub(crate) fn check_url(url: &str) -> Result<()> {
    if UrlParts::parse(url).is_err() {
        bail!(
            "mssql needs a mssql:// URL, e.g. \
             mssql://sa:password@127.0.0.1:1433/master?trust_server_certificate=true"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_from_one() {
        assert_eq!(placeholders(3), "@P1, @P2, @P3");
        assert!(placeholders(IDS_PER_STATEMENT).ends_with("@P2000"));
    }

    #[test]
    fn only_mssql_urls_are_taken() {
        assert!(check_url("mssql://sa:pw@127.0.0.1:1433/master").is_ok());
        let err = check_url("Server=tcp:h,1433;Password=hunter2").unwrap_err();
        assert!(!err.to_string().contains("hunter2"));
    }
}
