//! Workflows: the values of their statements, the decoding of their rows, and the transactions their writes run in.

use super::*;

#[test]
fn workflow_values_follow_the_statements() {
    let id = WorkflowId::new();
    let callback = JobId::new();
    let bytes = |b: &[u8]| ColumnData::Binary(Some(b.to_vec().into()));
    // workflow_insert: id, name, open, callback.
    let v = workflow_insert_values(&WorkflowInsert {
        id,
        name: Some("album-42"),
        open: true,
        callback: Some(callback),
    });
    assert_eq!(
        v.values(),
        &[
            bytes(id.0.as_bytes()),
            ColumnData::String(Some("album-42".into())),
            ColumnData::Bit(Some(true)),
            bytes(callback.0.as_bytes()),
        ]
    );
    // workflow_steps_insert: the workflow, then each job and its step.
    let (a, b) = (JobId::new(), JobId::new());
    let v = steps_values(id, &[(a, "fetch"), (b, "resize ✂")]);
    assert_eq!(
        v.values(),
        &[
            bytes(id.0.as_bytes()),
            bytes(a.0.as_bytes()),
            ColumnData::String(Some("fetch".into())),
            bytes(b.0.as_bytes()),
            ColumnData::String(Some("resize ✂".into())),
        ]
    );
    // workflow_deps_insert: per edge the job depended on, the job that waits, the code.
    let v = edges_values(&[
        WorkflowEdge {
            job: b,
            dep: a,
            policy: DepPolicy::Completed,
        },
        WorkflowEdge {
            job: a,
            dep: b,
            policy: DepPolicy::AnyOutcome,
        },
    ]);
    assert_eq!(
        v.values(),
        &[
            bytes(a.0.as_bytes()),
            bytes(b.0.as_bytes()),
            ColumnData::I32(Some(0)),
            bytes(b.0.as_bytes()),
            bytes(a.0.as_bytes()),
            ColumnData::I32(Some(1)),
        ]
    );
}

fn workflow_row(id: Uuid, name: Option<&'static str>, open: bool, callback: Option<Uuid>) -> Row {
    workflow_count_row(id, name, open, callback, None, 0)
}

/// A row of `workflow_list` (the columns of `workflow_get`, then a state and a count).
fn workflow_count_row(
    id: Uuid,
    name: Option<&'static str>,
    open: bool,
    callback: Option<Uuid>,
    state: Option<&'static str>,
    n: i64,
) -> Row {
    Row::builder()
        .column(
            "id",
            ColumnType::BigBinary,
            id.as_bytes().to_vec().into_sql(),
        )
        .column("name", ColumnType::NVarchar, name.into_sql())
        .column("open", ColumnType::Bit, open.into_sql())
        .column(
            "callback",
            ColumnType::BigBinary,
            callback.map(|c| c.as_bytes().to_vec()).into_sql(),
        )
        .column("created_at", ColumnType::Datetime2, at(0).into_sql())
        .column("state", ColumnType::NVarchar, state.into_sql())
        .column("jobs", ColumnType::Int8, n.into_sql())
        .build()
}

#[test]
fn workflow_rows_decode() {
    let (id, callback) = (Uuid::now_v7(), Uuid::now_v7());
    let w = workflow_from_row(&workflow_row(id, Some("nightly"), true, Some(callback))).unwrap();
    assert_eq!(
        w,
        StoredWorkflow {
            id: WorkflowId(id),
            name: Some("nightly".into()),
            open: true,
            callback: Some(JobId(callback)),
            created_at: at(0),
        }
    );
    let w = workflow_from_row(&workflow_row(id, None, false, None)).unwrap();
    assert_eq!((w.name, w.open, w.callback), (None, false, None));

    // Edges: the policy as stored (SMALLINT).
    let edge = |policy: Option<i16>| {
        Row::builder()
            .column(
                "job_id",
                ColumnType::BigBinary,
                id.as_bytes().to_vec().into_sql(),
            )
            .column(
                "dep_id",
                ColumnType::BigBinary,
                callback.as_bytes().to_vec().into_sql(),
            )
            .column("policy", ColumnType::Int2, policy.into_sql())
            .build()
    };
    assert_eq!(
        edge_from_row(&edge(Some(1))).unwrap(),
        WorkflowEdge {
            job: JobId(id),
            dep: JobId(callback),
            policy: DepPolicy::AnyOutcome,
        }
    );
    assert_eq!(
        edge_from_row(&edge(Some(0))).unwrap().policy,
        DepPolicy::Completed
    );
    assert!(edge_from_row(&edge(None)).is_err());

    // Dependencies: a finished one with its output, and one whose job was deleted.
    let dep = |state: Option<&'static str>, output: Option<&'static str>, step: &'static str| {
        Row::builder()
            .column(
                "dep_id",
                ColumnType::BigBinary,
                id.as_bytes().to_vec().into_sql(),
            )
            .column("step", ColumnType::NVarchar, step.into_sql())
            .column("policy", ColumnType::Int2, 0i16.into_sql())
            .column("state", ColumnType::NVarchar, state.into_sql())
            .column("output", ColumnType::NVarchar, output.into_sql())
            .build()
    };
    let d = dependency_from_row(&dep(Some("completed"), Some(r#"{"n":1}"#), "a")).unwrap();
    assert_eq!(
        (d.id, d.step.as_str(), d.policy, d.state),
        (
            JobId(id),
            "a",
            DepPolicy::Completed,
            Some(JobState::Completed)
        )
    );
    assert_eq!(d.output.as_deref().map(RawValue::get), Some(r#"{"n":1}"#));
    let gone = dependency_from_row(&dep(None, None, "")).unwrap();
    assert_eq!((gone.state, gone.output.is_none()), (None, true));
    assert!(dependency_from_row(&dep(Some("zombie"), None, "a")).is_err());
}

#[test]
fn a_workflows_jobs_decode_with_their_steps() {
    let workflow = Uuid::now_v7();
    let row = |step: Option<&'static str>| {
        let row = claimed_row(None, None, Some(workflow));
        // A row of workflow_jobs has job_list's columns and the step.
        let mut b = Row::builder();
        for (c, v) in row.cells() {
            b = b.column(c.name(), c.column_type(), v.clone());
        }
        b.column("step", ColumnType::NVarchar, step.into_sql())
            .build()
    };
    let job = workflow_job_from_row(&row(Some("fetch"))).unwrap();
    assert_eq!(job.step.as_deref(), Some("fetch"));
    assert_eq!(job.workflow, Some(WorkflowId(workflow)));
    // workflow_jobs joins workflow_jobs: every row has its step.
    assert!(workflow_job_from_row(&row(None)).is_err());
}

#[test]
fn workflow_list_rows_group_by_workflow_newest_first() {
    let (new, old, empty) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let rows = [
        workflow_count_row(new, Some("n"), false, None, Some("running"), 1),
        workflow_count_row(new, Some("n"), false, None, Some("waiting"), 3),
        // Its deleted jobs: no state, nothing counted.
        workflow_count_row(new, Some("n"), false, None, None, 0),
        workflow_count_row(old, None, true, Some(empty), Some("completed"), 2),
        // A workflow whose jobs were all deleted.
        workflow_count_row(empty, None, false, None, None, 0),
    ];
    let listed = workflow_list_from_rows(&rows).unwrap();
    let ids: Vec<WorkflowId> = listed.iter().map(|(w, _)| w.id).collect();
    assert_eq!(ids, [WorkflowId(new), WorkflowId(old), WorkflowId(empty)]);
    // Counts in lifecycle order, whatever order the rows came in.
    assert_eq!(
        listed[0].1,
        [(JobState::Waiting, 3), (JobState::Running, 1)]
    );
    assert_eq!(listed[0].0.name.as_deref(), Some("n"));
    assert_eq!(listed[1].1, [(JobState::Completed, 2)]);
    assert!(listed[1].0.open);
    assert_eq!(listed[1].0.callback, Some(JobId(empty)));
    assert!(listed[2].1.is_empty());
    assert!(workflow_list_from_rows(&[]).unwrap().is_empty());
}

/// A workflow's rows go out on the caller's transaction, in chunks of `WORKFLOW_ROWS`,
/// every value bound; nothing is sent for an empty list.
#[tokio::test]
async fn a_workflows_rows_are_inserted_in_the_callers_transaction() {
    let (driver, server) = stand_in().await;
    let id = WorkflowId::new();
    let jobs: Vec<JobId> = (0..WORKFLOW_ROWS + 1).map(|_| JobId::new()).collect();
    let steps: Vec<(JobId, &str)> = jobs.iter().map(|j| (*j, "step")).collect();
    let edges: Vec<WorkflowEdge> = jobs
        .windows(2)
        .map(|w| WorkflowEdge {
            job: w[1],
            dep: w[0],
            policy: DepPolicy::Completed,
        })
        .collect();
    let mut tx = driver.tx_begin().await.unwrap();
    let conn = MsSqlDriver::tx_conn(&mut tx);
    driver
        .workflow_insert(
            conn,
            WorkflowInsert {
                id,
                name: Some("w"),
                open: false,
                callback: None,
            },
        )
        .await
        .unwrap();
    driver
        .workflow_steps_insert(conn, id, &steps)
        .await
        .unwrap();
    driver.workflow_steps_insert(conn, id, &[]).await.unwrap();
    driver.workflow_deps_insert(conn, &edges).await.unwrap();
    driver.workflow_deps_insert(conn, &[]).await.unwrap();
    driver.workflow_lock(conn, id).await.unwrap();
    driver.tx_commit(tx).await.unwrap();
    let statements = (
        driver.sql.workflow_insert.to_string(),
        driver.sql.workflow_steps_insert_for(WORKFLOW_ROWS),
        driver.sql.workflow_steps_insert_for(1),
        driver.sql.workflow_deps_insert_for(WORKFLOW_ROWS),
        driver.sql.workflow_lock.to_string(),
    );
    drop(driver);
    let requests = server.await.unwrap();
    let begin = crate::wire::Request::Batch("BEGIN TRANSACTION".into());
    let from = requests.iter().position(|r| *r == begin).unwrap();
    assert!(rpcs(&requests[..from]).is_empty());
    let sent = rpcs(&requests[from..]);
    let texts: Vec<&str> = sent.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        texts,
        [
            statements.0.as_str(),
            statements.1.as_str(),
            statements.2.as_str(),
            statements.3.as_str(),
            statements.4.as_str(),
        ]
    );
    let counts: Vec<usize> = sent.iter().map(|(_, p)| p.len()).collect();
    assert_eq!(
        counts,
        [4, 1 + 2 * WORKFLOW_ROWS, 1 + 2, 3 * WORKFLOW_ROWS, 1]
    );
    // The last step's chunk: the workflow, its job and its name.
    let last = &sent[2].1;
    assert_eq!(last[0].value.as_deref(), Some(id.0.as_bytes().as_slice()));
    assert_eq!(
        last[1].value.as_deref(),
        Some(jobs[WORKFLOW_ROWS].0.as_bytes().as_slice())
    );
    // The policy as an int.
    assert_eq!(sent[3].1[2].declared, "int");
    assert!(matches!(
        requests.last(),
        Some(crate::wire::Request::Batch(c)) if c.starts_with("COMMIT")
    ));
}

/// Settling goes out in statements of at most 1,000 ids (`BULK_IDS`), each id bound as
/// the jobs table stores it; an empty list sends nothing.
#[tokio::test]
async fn settling_binds_its_ids_in_chunks() {
    let (driver, server) = stand_in().await;
    let ids: Vec<JobId> = (0..BULK_IDS + 1).map(|_| JobId::new()).collect();
    // The stand-in returns no rows: nothing waits, nothing changes.
    assert!(driver
        .workflow_dependents(Target::Pool, &ids)
        .await
        .unwrap()
        .is_empty());
    assert!(driver
        .workflow_block(Target::Pool, &ids[..2])
        .await
        .unwrap()
        .is_empty());
    assert!(driver
        .workflow_promote(Target::Pool, &ids[..1])
        .await
        .unwrap()
        .is_empty());
    // A retry reopens inside its transaction.
    let mut tx = driver.tx_begin().await.unwrap();
    assert!(driver
        .workflow_reopen(&mut tx, &ids[..3])
        .await
        .unwrap()
        .is_empty());
    assert!(driver
        .workflow_reopen(&mut tx, &[])
        .await
        .unwrap()
        .is_empty());
    driver.tx_rollback(tx).await.unwrap();
    for empty in [
        driver.workflow_dependents(Target::Pool, &[]).await.unwrap(),
        driver.workflow_block(Target::Pool, &[]).await.unwrap(),
    ] {
        assert!(empty.is_empty());
    }
    assert!(driver
        .workflow_promote(Target::Pool, &[])
        .await
        .unwrap()
        .is_empty());
    let statements = [
        driver.sql.workflow_dependents_for(BULK_IDS),
        driver.sql.workflow_dependents_for(1),
        driver.sql.workflow_block_for(2),
        driver.sql.workflow_promote_for(1),
        driver.sql.workflow_reopen_for(3),
    ];
    drop(driver);
    let sent = rpcs(&server.await.unwrap());
    let texts: Vec<&str> = sent.iter().map(|(s, _)| s.as_str()).collect();
    let want: Vec<&str> = statements.iter().map(String::as_str).collect();
    assert_eq!(texts, want);
    let counts: Vec<usize> = sent.iter().map(|(_, p)| p.len()).collect();
    assert_eq!(counts, [BULK_IDS, 1, 2, 1, 3]);
    assert_eq!(
        sent[1].1[0].value.as_deref(),
        Some(ids[BULK_IDS].0.as_bytes().as_slice())
    );
    for (_, params) in &sent {
        for p in params {
            assert_eq!(p.value.as_ref().map(Vec::len), Some(16), "{p:?}");
        }
    }
}

/// Retention's deletion of whole workflows goes out in the transaction it is given: the
/// page of workflows it locks (the age as seconds and microseconds, the cursor before every
/// workflow, the limit as a `bigint`), then one request over their ids (each state's age as
/// seconds and microseconds, both NULL for a state that is kept; each id bound as stored).
/// A request that returns no count (as the stand-in answers) is an error.
#[tokio::test]
async fn a_workflow_prune_runs_in_the_transaction_it_is_given() {
    let (driver, server) = stand_in().await;
    let hour = Duration::from_secs(3600);
    let mut tx = driver.tx_begin().await.unwrap();
    let page = driver
        .workflow_prune_lock(
            &mut tx,
            WorkflowPruneLock {
                older_than: hour,
                after: None,
                limit: 500,
            },
        )
        .await
        .unwrap();
    assert!(page.is_empty());
    let ids = [WorkflowId::new(), WorkflowId(Uuid::max())];
    let e = driver
        .workflow_prune(
            &mut tx,
            WorkflowPrune {
                ids: &ids,
                completed: Some(hour),
                dead: None,
                cancelled: Some(Duration::from_micros(5_400_000_001)),
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(e, MsSqlError::Decode(_)), "{e:?}");
    driver.tx_rollback(tx).await.unwrap();
    let lock = driver.sql.workflow_prune_lock.to_string();
    let prune = driver.sql.workflow_prune_for(2);
    drop(driver);
    let requests = server.await.unwrap();
    let begin = crate::wire::Request::Batch("BEGIN TRANSACTION".into());
    let from = requests.iter().position(|r| *r == begin).unwrap();
    assert!(rpcs(&requests[..from]).is_empty());
    let sent = rpcs(&requests[from + 1..]);
    assert_eq!(sent.len(), 2, "{requests:?}");
    assert_eq!(sent[0].0, lock);
    let p = &sent[0].1;
    assert_eq!(p.len(), 5);
    assert_eq!(p[0].value.as_deref(), Some(&3600i32.to_le_bytes()[..]));
    assert_eq!(p[1].value.as_deref(), Some(&0i32.to_le_bytes()[..]));
    assert_eq!(p[2].declared, "datetime2");
    assert_eq!(p[3].value.as_deref(), Some(&[0u8; 16][..]));
    assert_eq!(p[4].declared, "bigint");
    assert_eq!(p[4].value.as_deref(), Some(&500i64.to_le_bytes()[..]));
    assert_eq!(sent[1].0, prune);
    let p = &sent[1].1;
    assert_eq!(p.len(), 8);
    assert_eq!(p[0].value.as_deref(), Some(&3600i32.to_le_bytes()[..]));
    assert_eq!(p[1].value.as_deref(), Some(&0i32.to_le_bytes()[..]));
    assert!(p[2].value.is_none() && p[3].value.is_none(), "{p:?}");
    assert_eq!(p[2].declared, "int");
    assert_eq!(p[4].value.as_deref(), Some(&5400i32.to_le_bytes()[..]));
    assert_eq!(p[5].value.as_deref(), Some(&1i32.to_le_bytes()[..]));
    assert_eq!(p[6].value.as_deref(), Some(ids[0].0.as_bytes().as_slice()));
    assert_eq!(p[7].value.as_deref(), Some(&[0xffu8; 16][..]));
    assert!(matches!(
        requests.last(),
        Some(crate::wire::Request::Batch(c)) if c.contains("ROLLBACK")
    ));
}
