//! The decoding of the dialect's rows: jobs, leases, stats, unique inserts.

use super::*;

#[test]
fn job_rows_decode_their_history_and_output() {
    let (workflow, blocker) = (Uuid::now_v7(), Uuid::now_v7());
    let row = Row::builder()
        .column("id", ColumnType::BigBinary, Uuid::now_v7().as_bytes().to_vec().into_sql())
        .column("queue", ColumnType::NVarchar, "q".into_sql())
        .column("payload", ColumnType::NVarchar, "1".into_sql())
        .column("priority", ColumnType::Int4, 0i32.into_sql())
        .column("state", ColumnType::NVarchar, "dead".into_sql())
        .column("attempts", ColumnType::Int4, 2i32.into_sql())
        .column("max_attempts", ColumnType::Int4, 2i32.into_sql())
        .column("run_at", ColumnType::Datetime2, at(0).into_sql())
        .column("lease_token", ColumnType::Guid, None::<Uuid>.into_sql())
        .column("lease_expires_at", ColumnType::Datetime2, None::<DateTime<Utc>>.into_sql())
        .column("worker", ColumnType::NVarchar, "w".into_sql())
        .column("last_error", ColumnType::NVarchar, "b\"c".into_sql())
        .column("dedup_key", ColumnType::BigVarBin, None::<Vec<u8>>.into_sql())
        .column("created_at", ColumnType::Datetime2, at(0).into_sql())
        .column("updated_at", ColumnType::Datetime2, at(0).into_sql())
        .column("finished_at", ColumnType::Datetime2, Some(at(1)).into_sql())
        .column("kind", ColumnType::NVarchar, None::<&str>.into_sql())
        .column("meta", ColumnType::NVarchar, None::<&str>.into_sql())
        .column("timeout_us", ColumnType::Int8, None::<i64>.into_sql())
        .column("snoozes", ColumnType::Int4, 3i32.into_sql())
        // As the statements write it: FOR JSON PATH entries, style 126 times with a `Z`.
        .column(
            "errors",
            ColumnType::NVarchar,
            r#"[{"attempt":1,"at":"2026-11-25T10:00:00.1234567Z","error":"a","worker":null},{"attempt":2,"at":"2026-11-25T10:00:01.0000000Z","error":"b\"c","worker":"w"}]"#
                .into_sql(),
        )
        .column("output", ColumnType::NVarchar, None::<&str>.into_sql())
        .column("workflow_id", ColumnType::BigBinary, Some(workflow.as_bytes().to_vec()).into_sql())
        .column("blocked_by", ColumnType::BigBinary, Some(blocker.as_bytes().to_vec()).into_sql())
        .column("step", ColumnType::NVarchar, "resize ✂".into_sql())
        .build();
    let job = job_detail_from_row(&row).unwrap();
    // A step of a workflow, cancelled because the job it needed died.
    assert_eq!(job.workflow, Some(WorkflowId(workflow)));
    assert_eq!(job.blocked_by, Some(JobId(blocker)));
    assert_eq!(job.step.as_deref(), Some("resize ✂"));
    assert_eq!(job.snoozes, 3);
    assert_eq!(job.errors.len(), 2);
    assert_eq!(job.errors[0].worker, None);
    assert_eq!(job.errors[1].error, "b\"c");
    assert_eq!(job.errors[1].worker.as_deref(), Some("w"));
    assert!(job.errors[0].at < job.errors[1].at);
    assert!(job.output.is_none() && job.kind.is_none() && job.meta.is_none());
}

#[test]
fn claimed_rows_decode_into_leases() {
    let token = Uuid::new_v4();
    let workflow = Uuid::now_v7();
    let rows = [claimed_row(Some(token), Some("k "), Some(workflow))];
    let leased = leased(&rows).unwrap();
    let l = &leased[0];
    assert_eq!(l.job.queue, "emails");
    assert_eq!(l.job.payload.get(), r#"{"to":"ḱ","n":[1,2]}"#);
    assert_eq!(l.job.priority, -7);
    assert_eq!(l.job.state, JobState::Running);
    assert_eq!((l.job.attempts, l.job.max_attempts), (2, 5));
    assert_eq!(l.job.run_at, at(0));
    assert_eq!(l.job.worker.as_deref(), Some("w-1"));
    assert_eq!(l.job.last_error, None);
    assert_eq!(
        l.job.dedup_key.as_deref(),
        Some("k "),
        "trailing space kept"
    );
    assert_eq!(l.job.finished_at, None);
    assert_eq!(l.job.kind.as_deref(), Some("send_email"));
    assert_eq!(
        l.job.meta.as_deref().map(RawValue::get),
        Some(r#"{"step":2}"#)
    );
    assert_eq!(l.job.timeout, Some(Duration::from_millis(1500)));
    assert_eq!(l.job.snoozes, 0);
    assert!(l.job.errors.is_empty() && l.job.output.is_none());
    assert_eq!(l.lease.token, token);
    assert_eq!(l.lease.expires_at, at(30));
    assert_eq!(l.lease.attempt, 2);
    assert_eq!(l.lease.job_id, l.job.id);
    // A step of a workflow: the lease knows it (its end lets the steps after it go on).
    assert_eq!(l.job.workflow, Some(WorkflowId(workflow)));
    assert_eq!(l.lease.workflow, Some(WorkflowId(workflow)));
    assert_eq!((l.job.blocked_by, l.job.step.as_deref()), (None, None));
    assert!(l.job.depends_on.is_empty());
}

#[test]
fn a_claimed_row_without_a_token_is_refused() {
    let err = leased(&[claimed_row(None, None, None)]).unwrap_err();
    assert!(err.to_string().contains("no lease token"), "{err}");
}

#[test]
fn malformed_rows_are_decode_errors() {
    let short_id = Row::builder()
        .column("id", ColumnType::BigBinary, vec![1u8, 2, 3].into_sql())
        .build();
    let err = uuid_of(&short_id, "id").unwrap_err();
    assert!(err.to_string().contains("3 bytes"), "{err}");
    let bad_state = Row::builder()
        .column("state", ColumnType::NVarchar, "zombie".into_sql())
        .build();
    assert!(parse_state(&text(&bad_state, "state").unwrap()).is_err());
    let bad_key = Row::builder()
        .column(
            "dedup_key",
            ColumnType::BigVarBin,
            vec![0xffu8, 0xfe].into_sql(),
        )
        .build();
    assert!(dedup_key(&bad_key).is_err());
    let null = Row::builder()
        .column("queue", ColumnType::NVarchar, None::<&str>.into_sql())
        .build();
    assert!(text(&null, "queue")
        .unwrap_err()
        .to_string()
        .contains("NULL"));
}

#[test]
fn ids_bind_as_big_endian_bytes() {
    // BINARY(16) compares bytes in order, which is the order of UUID v7 ids.
    let a = JobId(Uuid::now_v7());
    std::thread::sleep(Duration::from_millis(2));
    let b = JobId(Uuid::now_v7());
    let (ColumnData::Binary(Some(x)), ColumnData::Binary(Some(y))) = (a.bind(), b.bind()) else {
        panic!("ids bind as binary");
    };
    assert_eq!(x.len(), 16);
    assert!(x < y && a < b);
}

#[test]
fn unique_insert_rows_say_what_became_of_the_job() {
    let row = |inserted: i32, holder: Option<Uuid>| {
        Row::builder()
            .column("inserted", ColumnType::Int4, inserted.into_sql())
            .column(
                "holder",
                ColumnType::BigBinary,
                holder.map(|h| h.as_bytes().to_vec()).into_sql(),
            )
            .build()
    };
    assert_eq!(
        unique_insert_outcome(&[row(1, None)]).unwrap(),
        UniqueInsert::Inserted
    );
    let holder = Uuid::now_v7();
    assert_eq!(
        unique_insert_outcome(&[row(0, Some(holder))]).unwrap(),
        UniqueInsert::Held(JobId(holder))
    );
    assert_eq!(unique_insert_outcome(&[]).unwrap(), UniqueInsert::Released);
    // A held key without a holder's id is a malformed row, not a guess.
    assert!(unique_insert_outcome(&[row(0, None)]).is_err());
}

#[test]
fn the_stats_cap_is_never_null() {
    assert_eq!(stats_cap(None), i64::MAX);
    assert_eq!(stats_cap(Some(3)), 3);
    assert_eq!(stats_cap(Some(u64::MAX)), i64::MAX);
}

#[test]
fn stats_rows_decode() {
    let row = Row::builder()
        .column("queue", ColumnType::NVarchar, "emails".into_sql())
        .column("waiting", ColumnType::Int8, 9i64.into_sql())
        .column("available", ColumnType::Int8, 4i64.into_sql())
        .column("scheduled", ColumnType::Int8, 1i64.into_sql())
        .column("running", ColumnType::Int8, 2i64.into_sql())
        .column("oldest_due", ColumnType::Datetime2, at(0).into_sql())
        .column("completed", ColumnType::Int8, 3i64.into_sql())
        .column("dead", ColumnType::Int8, 0i64.into_sql())
        .column("cancelled", ColumnType::Int8, 7i64.into_sql())
        .build();
    let s = stats_from_row(&row).unwrap();
    assert_eq!(s.queue, "emails");
    assert_eq!(s.oldest_due, Some(at(0)));
    assert_eq!(s.waiting, 9);
    assert_eq!(
        (
            s.available,
            s.scheduled,
            s.running,
            s.completed,
            s.dead,
            s.cancelled
        ),
        (4, 1, 2, 3, 0, 7)
    );
    // The engine sets the cap it counted with.
    assert_eq!(s.count_cap, None);
}
