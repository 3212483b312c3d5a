//! The shapes of the dialect's statements and the decoding of its rows, checked without a
//! server.

use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use queue_core::engine::{
    Controls, DriverFault, JobClaim, JobInsert, JobInsertUnique, JobMatch, JobPrune, JobReschedule,
    JobUniqueReplace, Lifecycle, RateState, StoredSchedule, StoredWorkflow, Target, UniqueInsert,
    WorkflowEdge, WorkflowInsert, WorkflowPrune, WorkflowPruneLock, Workflows,
};
use queue_core::{DepPolicy, JobId, JobState, Lease, ListRequest, QueueControl, WorkflowId};
use serde_json::value::RawValue;
use tiberius::{ColumnData, ColumnType, IntoSql, Row};
use uuid::Uuid;

use crate::bind::{params, Bind, Params};
use crate::error::MsSqlError;
use crate::sql::{
    Statements, BULK_IDS, INSERT_ROWS, INSERT_VALUES, MAX_ROWS_PER_STATEMENT, WORKFLOW_ROWS,
};

use super::rows::*;
use super::*;

mod controls;
mod rows;
mod values;
mod workflows;

fn at(s: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + s, 123_456_000).unwrap()
}

/// A row as `OUTPUT inserted.*` of a claim returns it.
fn claimed_row(token: Option<Uuid>, dedup: Option<&str>, workflow: Option<Uuid>) -> Row {
    let id = Uuid::now_v7();
    Row::builder()
        .column(
            "id",
            ColumnType::BigBinary,
            id.as_bytes().to_vec().into_sql(),
        )
        .column("queue", ColumnType::NVarchar, "emails".into_sql())
        .column(
            "payload",
            ColumnType::NVarchar,
            r#"{"to":"ḱ","n":[1,2]}"#.into_sql(),
        )
        .column("priority", ColumnType::Int4, (-7i32).into_sql())
        .column("state", ColumnType::NVarchar, "running".into_sql())
        .column("attempts", ColumnType::Int4, 2i32.into_sql())
        .column("max_attempts", ColumnType::Int4, 5i32.into_sql())
        .column("run_at", ColumnType::Datetime2, at(0).into_sql())
        .column("lease_token", ColumnType::Guid, token.into_sql())
        .column(
            "lease_expires_at",
            ColumnType::Datetime2,
            Some(at(30)).into_sql(),
        )
        .column("worker", ColumnType::NVarchar, "w-1".into_sql())
        .column("last_error", ColumnType::NVarchar, None::<&str>.into_sql())
        .column(
            "dedup_key",
            ColumnType::BigVarBin,
            dedup.map(|k| k.as_bytes().to_vec()).into_sql(),
        )
        .column("created_at", ColumnType::Datetime2, at(-5).into_sql())
        .column("updated_at", ColumnType::Datetime2, at(1).into_sql())
        .column(
            "finished_at",
            ColumnType::Datetime2,
            None::<DateTime<Utc>>.into_sql(),
        )
        .column("kind", ColumnType::NVarchar, "send_email".into_sql())
        .column("meta", ColumnType::NVarchar, r#"{"step":2}"#.into_sql())
        .column(
            "timeout_us",
            ColumnType::Int8,
            Some(1_500_000i64).into_sql(),
        )
        // A row from before the column existed: NULL counts as no snooze.
        .column("snoozes", ColumnType::Int4, None::<i32>.into_sql())
        .column(
            "workflow_id",
            ColumnType::BigBinary,
            workflow.map(|w| w.as_bytes().to_vec()).into_sql(),
        )
        .column(
            "blocked_by",
            ColumnType::BigBinary,
            None::<Vec<u8>>.into_sql(),
        )
        .build()
}

/// A driver on the local stand-in server (one session), whose requests come back when the
/// driver is dropped.
async fn stand_in() -> (
    MsSqlDriver,
    tokio::task::JoinHandle<Vec<crate::wire::Request>>,
) {
    let (config, server) = crate::wire::server().await;
    let pool = bb8::Pool::builder()
        .max_size(1)
        .build_unchecked(crate::pool::ConnectionManager::new(config));
    let driver = MsSqlDriver {
        pool,
        schema: "s".into(),
        sql: Statements::new(&[("{schema}", "s")]),
    };
    (driver, server)
}

/// A checkout that waits out the pool's connection timeout names that wait (the builder's
/// connect timeout), not zero; it is unavailable, as a server that does not answer is.
#[tokio::test]
async fn an_exhausted_pool_names_its_connection_timeout() {
    let (config, server) = crate::wire::server().await;
    let pool = bb8::Pool::builder()
        .max_size(1)
        .connection_timeout(Duration::from_millis(50))
        .build_unchecked(crate::pool::ConnectionManager::new(config));
    let driver = MsSqlDriver {
        pool,
        schema: "s".into(),
        sql: Statements::new(&[("{schema}", "s")]),
    };
    let held = driver.conn().await.unwrap();
    let err = driver.now().await.unwrap_err();
    assert!(
        matches!(err, MsSqlError::PoolTimedOut(d) if d == Duration::from_millis(50)),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "no connection to SQL Server within 50ms");
    assert_eq!(driver.classify(&err), DriverFault::Unavailable);
    // A transaction's checkout too.
    let err = driver.tx_begin().await.unwrap_err();
    assert_eq!(err.to_string(), "no connection to SQL Server within 50ms");
    drop(held);
    drop(driver);
    server.await.unwrap();
}

/// The statements and values of the RPC requests, after the session's own batches.
fn rpcs(requests: &[crate::wire::Request]) -> Vec<(String, Vec<crate::wire::Sent>)> {
    requests
        .iter()
        .filter_map(|r| match r {
            crate::wire::Request::Rpc(sql, params) => Some((sql.clone(), params.clone())),
            crate::wire::Request::Batch(_) => None,
        })
        .collect()
}
