//! The values each statement binds, in its placeholders' order, and the types of its NULLs.

use super::*;

#[test]
fn claim_values_follow_the_statement() {
    let p = JobClaim {
        queue: "q",
        limit: 5_000,
        lease: Duration::from_micros(90_000_001),
        worker: "w",
        controls_checked: true,
        after: None,
    };
    let v = claim_values(p);
    let v = v.values();
    assert_eq!(v.len(), 6);
    assert_eq!(v[1], ColumnData::I64(Some(MAX_ROWS_PER_STATEMENT as i64)));
    assert_eq!(v[2], ColumnData::I32(Some(90)));
    assert_eq!(v[3], ColumnData::I32(Some(1)));
    assert_eq!(v[5], ColumnData::Bit(Some(true)));
    let unchecked = claim_values(JobClaim {
        controls_checked: false,
        after: None,
        ..p
    });
    assert_eq!(unchecked.values()[5], ColumnData::Bit(Some(false)));
}

#[test]
fn chunks_cover_every_item_once() {
    assert_eq!(chunks(0, 250), Vec::<(usize, usize)>::new());
    assert_eq!(chunks(1, 250), vec![(0, 1)]);
    assert_eq!(chunks(250, 250), vec![(0, 250)]);
    assert_eq!(chunks(251, 250), vec![(0, 250), (250, 251)]);
    let c = chunks(10_000, INSERT_ROWS);
    assert_eq!(c.len(), 10_000usize.div_ceil(INSERT_ROWS));
    assert!(c.windows(2).all(|w| w[0].1 == w[1].0));
    assert_eq!(c.last().map(|l| l.1), Some(10_000));
}

fn schedule(at: DateTime<Utc>) -> StoredSchedule {
    StoredSchedule {
        name: "nightly".into(),
        expression: "0 3 * * *".into(),
        time_zone: "UTC".into(),
        queue: "q".into(),
        kind: Some("nightly.report".into()),
        payload: "{}".into(),
        priority: 0,
        max_attempts: 3,
        misfire: "skip".into(),
        misfire_max: 1,
        origin: "operator".into(),
        since: at,
        last_slot: None,
        last_job: None,
        expires_at: None,
        version: 1,
        created_at: at,
        updated_at: at,
        last_job_state: None,
    }
}

/// Every statement that can bind a NULL, with each of those values NULL, as sent to a
/// server: each NULL is sent as its own placeholder's type (the type the request declares
/// it as, and the type of the column or comparison it meets), never as the untyped NULL.
#[tokio::test]
async fn every_null_the_statements_bind_goes_out_typed() {
    let sql = Statements::new(&[("{schema}", "s")]);
    let jobs = [queue_core::NewJob::from_json("q", "1").unwrap()];
    let insert = JobInsert {
        jobs: &jobs,
        delays: &[Duration::ZERO],
        notify: &[],
    };
    let prune = JobPrune {
        states: &[JobState::Completed],
        older_than: Duration::from_secs(60),
        queue: None,
        limit: 10,
        retention: false,
    };
    let list = ListRequest::default();
    let every_job = JobMatch {
        queue: None,
        states: &[JobState::Dead],
        kind: None,
        older_than: None,
        before: None,
        limit: 1_000,
    };
    let stored = schedule(at(0));
    let lease = Lease {
        job_id: JobId::new(),
        queue: "q".into(),
        token: Uuid::new_v4(),
        expires_at: at(0),
        attempt: 1,
        max_attempts: 1,
        workflow: None,
    };
    // A statement, its text, its values, and the placeholders that are NULL with the types
    // they are declared as.
    type Case<'a> = (&'a str, String, Params<'a>, &'a [(usize, &'a str)]);
    let key = [7u8; 32];
    let claim = JobClaim {
        queue: "q",
        limit: 10,
        lease: Duration::from_secs(30),
        worker: "w",
        controls_checked: true,
        after: None,
    };
    let unique = JobInsertUnique {
        job: &jobs[0],
        delay: Duration::ZERO,
        key: &key,
        states: 7,
    };
    let cases: Vec<Case<'_>> = vec![
        (
            "job_insert",
            sql.job_insert_rows(1),
            insert_values(&insert, 0, 1),
            &[
                (8, "varbinary(max)"),
                (9, "nvarchar(4000)"),
                (10, "nvarchar(4000)"),
                (11, "bigint"),
                (12, "varbinary(max)"),
                (14, "varbinary(max)"),
            ],
        ),
        (
            "job_insert_unique",
            sql.job_insert_unique.to_string(),
            unique_insert_values(&unique),
            &[
                (8, "varbinary(max)"),
                (9, "nvarchar(4000)"),
                (10, "nvarchar(4000)"),
                (11, "bigint"),
                (14, "varbinary(max)"),
            ],
        ),
        (
            "job_list",
            sql.job_list.to_string(),
            list_values(&list),
            &[
                (1, "nvarchar(4000)"),
                (2, "nvarchar(4000)"),
                (3, "varbinary(max)"),
                (5, "nvarchar(4000)"),
            ],
        ),
        (
            "job_complete",
            sql.job_complete.to_string(),
            params![lease.job_id, lease.token, None::<&str>],
            &[(3, "nvarchar(4000)")],
        ),
        (
            "job_reschedule",
            sql.job_reschedule.to_string(),
            reschedule_values(JobReschedule {
                id: JobId::new(),
                delay: None,
                priority: None,
            }),
            &[(2, "int"), (3, "int"), (4, "int")],
        ),
        (
            "job_stats",
            sql.job_stats.to_string(),
            params![None::<&str>, stats_cap(None)],
            &[(1, "nvarchar(4000)")],
        ),
        (
            "job_ids",
            sql.job_ids_for(1),
            ids_values(&every_job),
            &[
                (1, "nvarchar(4000)"),
                (2, "nvarchar(4000)"),
                (3, "int"),
                (4, "int"),
                (5, "varbinary(max)"),
            ],
        ),
        (
            "job_count",
            sql.job_count_for(1),
            count_values(&every_job),
            &[
                (1, "nvarchar(4000)"),
                (2, "nvarchar(4000)"),
                (3, "int"),
                (4, "int"),
            ],
        ),
        (
            "job_prune",
            sql.job_prune_for(1),
            prune_values(&prune, 10),
            &[(3, "nvarchar(4000)")],
        ),
        (
            "queue_set_limit",
            sql.queue_set_limit.to_string(),
            set_limit_values("q", None),
            &[(2, "int")],
        ),
        (
            "queue_set_rate",
            sql.queue_set_rate.to_string(),
            set_rate_values("q", None),
            &[(2, "int"), (3, "bigint")],
        ),
        (
            "queue_rate_record",
            sql.queue_rate_record.to_string(),
            rate_record_values("q", 1, 1),
            &[],
        ),
        (
            "queue_set_key_limit",
            sql.queue_set_key_limit.to_string(),
            set_limit_values("q", None),
            &[(2, "int")],
        ),
        (
            "queue_set_fair",
            sql.queue_set_fair.to_string(),
            params!["q", false],
            &[],
        ),
        (
            "queue_key_cursor",
            sql.queue_key_cursor.to_string(),
            key_cursor_values("q", None),
            &[(2, "varbinary(max)")],
        ),
        (
            "queue_set_key_rate",
            sql.queue_set_key_rate.to_string(),
            set_rate_values("q", None),
            &[(2, "int"), (3, "bigint")],
        ),
        (
            "queue_key_rate_get",
            sql.queue_key_rate_get.to_string(),
            key_values("q", "k"),
            &[],
        ),
        (
            "queue_key_rate_put",
            sql.queue_key_rate_put.to_string(),
            key_rate_put_values("q", "k", 1, 1),
            &[],
        ),
        (
            "queue_key_rate_prune",
            sql.queue_key_rate_prune.to_string(),
            key_rate_prune_values("q", 7, 10),
            &[],
        ),
        (
            "job_key_next",
            sql.job_key_next.to_string(),
            key_next_values("q", "", 32),
            &[],
        ),
        (
            "job_claim_key",
            sql.job_claim_key.to_string(),
            claim_key_values(claim, Some("k")),
            &[],
        ),
        (
            "job_claim_unkeyed",
            sql.job_claim_unkeyed.to_string(),
            claim_key_values(claim, None),
            &[],
        ),
        (
            "schedule_insert",
            sql.schedule_insert.to_string(),
            schedule_insert_values(&stored),
            &[(12, "datetime2"), (13, "varbinary(max)"), (14, "datetime2")],
        ),
        (
            "schedule_update",
            sql.schedule_update.to_string(),
            schedule_update_values(&stored, 1),
            &[(12, "datetime2"), (13, "varbinary(max)"), (14, "datetime2")],
        ),
        (
            "workflow_insert",
            sql.workflow_insert.to_string(),
            workflow_insert_values(&WorkflowInsert {
                id: WorkflowId::new(),
                name: None,
                open: false,
                callback: None,
            }),
            &[(2, "nvarchar(4000)"), (4, "varbinary(max)")],
        ),
        (
            "workflow_steps_insert",
            sql.workflow_steps_insert_for(1),
            steps_values(WorkflowId::new(), &[(JobId::new(), "a")]),
            &[],
        ),
        (
            "workflow_deps_insert",
            sql.workflow_deps_insert_for(1),
            edges_values(&[WorkflowEdge {
                job: JobId::new(),
                dep: JobId::new(),
                policy: DepPolicy::AnyOutcome,
            }]),
            &[],
        ),
        (
            "workflow_waiting",
            sql.workflow_waiting.to_string(),
            params![None::<JobId>, limit(100)],
            &[(1, "varbinary(max)")],
        ),
        (
            "workflow_list",
            sql.workflow_list.to_string(),
            params![None::<WorkflowId>, limit(50)],
            &[(1, "varbinary(max)")],
        ),
    ];
    let expected: Vec<(&str, &[(usize, &str)])> = cases
        .iter()
        .map(|(name, _, _, nulls)| (*name, *nulls))
        .collect();
    let requests = crate::wire::sent(
        cases
            .into_iter()
            .map(|(_, text, params, _)| (text, params))
            .collect(),
    )
    .await;
    assert_eq!(requests.len(), expected.len());
    for ((name, nulls), sent) in expected.into_iter().zip(requests) {
        let got: Vec<(usize, &str)> = sent
            .iter()
            .enumerate()
            .filter(|(_, p)| p.value.is_none())
            .map(|(i, p)| (i + 1, p.declared.as_str()))
            .collect();
        assert_eq!(got, nulls, "{name}: the NULL placeholders");
        for p in &sent {
            assert_eq!(
                Some((p.ty, p.size)),
                crate::wire::wire_type(&p.declared),
                "{name}: {} is not sent as it is declared: {p:?}",
                p.name
            );
        }
    }
}

#[test]
fn unique_insert_values_follow_the_statement() {
    let job = queue_core::NewJob::from_json("q", r#"{"a":1}"#)
        .unwrap()
        .dedup_key("k")
        .kind("sync")
        .priority(4)
        .max_attempts(6)
        .concurrency_key("tenant-7");
    let key: [u8; 32] = std::array::from_fn(|i| i as u8);
    let p = JobInsertUnique {
        job: &job,
        delay: Duration::from_micros(3_000_250),
        key: &key,
        states: 1 | 2 | 8,
    };
    let v = unique_insert_values(&p);
    let v = v.values();
    assert_eq!(v.len(), 14);
    assert_eq!(
        v[0],
        ColumnData::Binary(Some(job.id().0.as_bytes().to_vec().into()))
    );
    assert_eq!(v[1], ColumnData::String(Some("q".into())));
    assert_eq!(v[2], ColumnData::String(Some(r#"{"a":1}"#.into())));
    assert_eq!(v[3], ColumnData::I32(Some(4)));
    assert_eq!(v[4], ColumnData::I32(Some(6)));
    assert_eq!(v[5], ColumnData::I32(Some(3)));
    assert_eq!(v[6], ColumnData::I32(Some(250)));
    assert_eq!(v[7], ColumnData::Binary(Some(b"k".as_slice().into())));
    assert_eq!(v[8], ColumnData::String(Some("sync".into())));
    assert_eq!(v[9], ColumnData::String(None));
    assert_eq!(v[10], ColumnData::I64(None));
    assert_eq!(v[11], ColumnData::Binary(Some(key.as_slice().into())));
    assert_eq!(v[12], ColumnData::I32(Some(11)));
    assert_eq!(
        v[13],
        ColumnData::Binary(Some(b"tenant-7".as_slice().into()))
    );

    let replace = unique_replace_values(&JobUniqueReplace {
        id: JobId(Uuid::now_v7()),
        job: &job,
        delay: Duration::from_secs(90),
    });
    let r = replace.values();
    assert_eq!(r.len(), 5);
    assert_eq!(r[1], ColumnData::String(Some(r#"{"a":1}"#.into())));
    assert_eq!(r[2], ColumnData::I32(Some(4)));
    assert_eq!(
        (&r[3], &r[4]),
        (&ColumnData::I32(Some(90)), &ColumnData::I32(Some(0)))
    );
}

#[test]
fn insert_values_follow_the_statement() {
    let jobs = vec![
        queue_core::NewJob::from_json("q", "1")
            .unwrap()
            .dedup_key("k")
            .kind("send")
            .meta(&serde_json::json!({"a": 1}))
            .unwrap()
            .timeout(Duration::from_millis(2)),
        queue_core::NewJob::from_json("q", "\"x\"")
            .unwrap()
            .priority(3)
            .concurrency_key("Acmé"),
    ];
    let delays = [
        Duration::from_secs(3600 * 24 * 365 * 10),
        Duration::from_micros(1_500_000),
    ];
    let p = JobInsert {
        jobs: &jobs,
        delays: &delays,
        notify: &[],
    };
    let v = insert_values(&p, 0, 2);
    let v = v.values();
    assert_eq!(v.len(), 2 * INSERT_VALUES);
    assert_eq!(v[5], ColumnData::I32(Some(315_360_000)));
    assert_eq!(v[6], ColumnData::I32(Some(0)));
    assert_eq!(v[7], ColumnData::Binary(Some(b"k".as_slice().into())));
    assert_eq!(v[8], ColumnData::String(Some("send".into())));
    assert_eq!(v[9], ColumnData::String(Some(r#"{"a":1}"#.into())));
    assert_eq!(v[10], ColumnData::I64(Some(2_000)));
    assert_eq!(v[11], ColumnData::Binary(None), "no concurrency key");
    // A job pushed alone: pending (its state bound, as a workflow's waiting step's is), no
    // workflow (a NULL of the id's type).
    assert_eq!(v[12], ColumnData::String(Some("pending".into())));
    assert_eq!(v[13], ColumnData::Binary(None));
    assert_eq!(v[17], ColumnData::I32(Some(3)));
    assert_eq!(v[19], ColumnData::I32(Some(1)));
    assert_eq!(v[20], ColumnData::I32(Some(500_000)));
    assert_eq!(v[21], ColumnData::Binary(None));
    assert_eq!(v[22], ColumnData::String(None));
    assert_eq!(v[23], ColumnData::String(None));
    assert_eq!(v[24], ColumnData::I64(None));
    // The key as its UTF-8 bytes (binary comparisons, whatever the collation).
    assert_eq!(v[25], ColumnData::Binary(Some("Acmé".as_bytes().into())));
    assert_eq!(v[26], ColumnData::String(Some("pending".into())));
    assert_eq!(v[27], ColumnData::Binary(None));
}
#[test]
fn bulk_values_follow_the_statements() {
    let before = JobId(Uuid::now_v7());
    let states = [JobState::Completed, JobState::Cancelled];
    let m = JobMatch {
        queue: Some("q"),
        states: &states,
        kind: Some("sync"),
        older_than: Some(Duration::from_micros(3_600_000_250)),
        before: Some(before),
        limit: 1_000,
    };
    let ids = ids_values(&m);
    let v = ids.values();
    assert_eq!(v.len(), 6 + states.len());
    assert_eq!(v[0], ColumnData::String(Some("q".into())));
    assert_eq!(v[1], ColumnData::String(Some("sync".into())));
    // Past DATEADD's int of microseconds: whole seconds, then the rest.
    assert_eq!(v[2], ColumnData::I32(Some(3_600)));
    assert_eq!(v[3], ColumnData::I32(Some(250)));
    assert_eq!(
        v[4],
        ColumnData::Binary(Some(before.0.as_bytes().to_vec().into()))
    );
    assert_eq!(v[5], ColumnData::I64(Some(1_000)));
    assert_eq!(v[6], ColumnData::String(Some("completed".into())));
    assert_eq!(v[7], ColumnData::String(Some("cancelled".into())));
    // job_count: the same filter, the states right after it.
    let counted = count_values(&m);
    let c = counted.values();
    assert_eq!(c.len(), 4 + states.len());
    assert_eq!(&c[..4], &v[..4]);
    assert_eq!(&c[4..], &v[6..]);
    // A list of ids, then the states.
    let a = JobId(Uuid::now_v7());
    let listed = id_values(&[a, before], &states[..1]);
    let l = listed.values();
    assert_eq!(l.len(), 3);
    assert_eq!(
        l[0],
        ColumnData::Binary(Some(a.0.as_bytes().to_vec().into()))
    );
    assert_eq!(l[2], ColumnData::String(Some("completed".into())));
    assert_eq!(id_values(&[a], &[]).len(), 1);
}
