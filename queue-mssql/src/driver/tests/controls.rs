//! Queue controls: their rows, the values their statements bind, and their writes' transactions.

use super::*;

#[test]
fn control_rows_decode() {
    let full = |paused: bool,
                limit: Option<i32>,
                rate: Option<i32>,
                period: Option<i64>,
                keys: (Option<i32>, bool, Option<&[u8]>),
                key_rate: (Option<i32>, Option<i64>)| {
        let (key_limit, fair, cursor) = keys;
        let (key_rate_limit, key_rate_period) = key_rate;
        Row::builder()
            .column("name", ColumnType::NVarchar, "emails".into_sql())
            .column("paused", ColumnType::Bit, paused.into_sql())
            .column("concurrency_limit", ColumnType::Int4, limit.into_sql())
            .column("rate_limit", ColumnType::Int4, rate.into_sql())
            .column("rate_period_us", ColumnType::Int8, period.into_sql())
            .column("key_limit", ColumnType::Int4, key_limit.into_sql())
            .column("fair_shares", ColumnType::Bit, fair.into_sql())
            .column(
                "key_cursor",
                ColumnType::BigVarBin,
                cursor.map(<[u8]>::to_vec).into_sql(),
            )
            .column(
                "key_rate_limit",
                ColumnType::Int4,
                key_rate_limit.into_sql(),
            )
            .column(
                "key_rate_period_us",
                ColumnType::Int8,
                key_rate_period.into_sql(),
            )
            .build()
    };
    let rated = |paused: bool, limit: Option<i32>, rate: Option<i32>, period: Option<i64>| {
        full(
            paused,
            limit,
            rate,
            period,
            (None, false, None),
            (None, None),
        )
    };
    let keyed = |keys: (Option<i32>, bool, Option<&[u8]>)| {
        full(false, None, None, None, keys, (None, None))
    };
    let key_rated = |rate: Option<i32>, period: Option<i64>| {
        full(false, None, None, None, (None, false, None), (rate, period))
    };
    let row = |paused: bool, limit: Option<i32>| rated(paused, limit, None, None);
    let c = control(&row(true, None)).unwrap();
    assert_eq!(
        c,
        QueueControl {
            queue: "emails".into(),
            paused: true,
            concurrency_limit: None,
            rate_limit: None,
            key_limit: None,
            fair_shares: false,
            key_cursor: None,
            key_rate_limit: None,
        }
    );
    let c = control(&row(false, Some(3))).unwrap();
    assert!(!c.paused && c.concurrency_limit == Some(3) && c.restricts());
    assert!(!control(&row(false, None)).unwrap().restricts());
    // A rate limit alone restricts the queue: its claims take the controlled path.
    let c = control(&rated(false, None, Some(10), Some(1_500_000))).unwrap();
    assert_eq!(
        c.rate_limit,
        Some(queue_core::RateLimit {
            limit: 10,
            period: Duration::from_millis(1_500),
        })
    );
    assert!(c.restricts() && c.concurrency_limit.is_none());
    // Half a limit is none.
    for (rate, period) in [(Some(10), None), (None, Some(1_000_000))] {
        let c = control(&rated(false, None, rate, period)).unwrap();
        assert_eq!(c.rate_limit, None);
        assert!(!c.restricts());
    }
    // A key limit alone, or fair shares alone, makes the queue keyed (and controlled);
    // the cursor is the key's UTF-8 bytes, exactly (case and trailing spaces kept).
    let cursor = "Acmé ".as_bytes();
    let c = control(&keyed((Some(2), false, Some(cursor)))).unwrap();
    assert_eq!(
        (c.key_limit, c.fair_shares, c.key_cursor.as_deref()),
        (Some(2), false, Some("Acmé "))
    );
    assert!(c.keyed() && c.restricts());
    let c = control(&keyed((None, true, None))).unwrap();
    assert_eq!(
        (c.key_limit, c.fair_shares, c.key_cursor.as_deref()),
        (None, true, None)
    );
    assert!(c.keyed() && c.restricts());
    // A limit the column's check forbids is none, never a wrapped number.
    let c = control(&keyed((Some(-1), false, None))).unwrap();
    assert_eq!(c.key_limit, None);
    assert!(!c.keyed());
    // A cursor that is not UTF-8 is a decoding error, never a guessed key.
    let bad = keyed((None, true, Some(&[0xff, 0x41])));
    assert!(control(&bad).is_err());
    // A key rate limit alone makes the queue keyed (and controlled), from its own two
    // columns, never the queue's rate limit.
    let c = control(&key_rated(Some(5), Some(60_000_000))).unwrap();
    assert_eq!(
        c.key_rate_limit,
        Some(queue_core::RateLimit {
            limit: 5,
            period: Duration::from_secs(60),
        })
    );
    assert_eq!(
        (c.rate_limit, c.key_limit, c.fair_shares),
        (None, None, false)
    );
    assert!(c.keyed() && c.restricts());
    let c = control(&full(
        false,
        None,
        Some(10),
        Some(1_000_000),
        (None, false, None),
        (Some(2), Some(3_000_000)),
    ))
    .unwrap();
    assert_eq!(
        c.rate_limit.map(|r| (r.limit, r.period_us())),
        Some((10, 1_000_000))
    );
    assert_eq!(
        c.key_rate_limit.map(|r| (r.limit, r.period_us())),
        Some((2, 3_000_000))
    );
    // Half a key rate limit, or one the columns' checks forbid, is none.
    for (rate, period) in [
        (Some(5), None),
        (None, Some(1_000_000)),
        (Some(-1), Some(1_000_000)),
        (Some(5), Some(-1)),
    ] {
        let c = control(&key_rated(rate, period)).unwrap();
        assert_eq!(c.key_rate_limit, None, "{rate:?} per {period:?}");
        assert!(!c.keyed() && !c.restricts());
    }
    // fair_shares is NOT NULL: a NULL is a malformed row.
    let null_fair = Row::builder()
        .column("name", ColumnType::NVarchar, "emails".into_sql())
        .column("paused", ColumnType::Bit, false.into_sql())
        .column(
            "concurrency_limit",
            ColumnType::Int4,
            None::<i32>.into_sql(),
        )
        .column("rate_limit", ColumnType::Int4, None::<i32>.into_sql())
        .column("rate_period_us", ColumnType::Int8, None::<i64>.into_sql())
        .column("key_limit", ColumnType::Int4, None::<i32>.into_sql())
        .column("fair_shares", ColumnType::Bit, None::<bool>.into_sql())
        .column(
            "key_cursor",
            ColumnType::BigVarBin,
            None::<Vec<u8>>.into_sql(),
        )
        .column("key_rate_limit", ColumnType::Int4, None::<i32>.into_sql())
        .column(
            "key_rate_period_us",
            ColumnType::Int8,
            None::<i64>.into_sql(),
        )
        .build();
    assert!(control(&null_fair).is_err());
}

#[test]
fn key_lease_rows_decode() {
    let row = |key: Option<&str>, n: i64| {
        Row::builder()
            .column(
                "concurrency_key",
                ColumnType::BigVarBin,
                key.map(|k| k.as_bytes().to_vec()).into_sql(),
            )
            .column("running", ColumnType::Int8, n.into_sql())
            .build()
    };
    assert_eq!(
        key_leases(&[row(Some("acme"), 3), row(Some("Acme"), 1)]).unwrap(),
        vec![("acme".to_owned(), 3), ("Acme".to_owned(), 1)]
    );
    assert_eq!(key_leases(&[]).unwrap(), Vec::<(String, u64)>::new());
    // The statement leaves out jobs without a key: a NULL key is a malformed row.
    assert!(key_leases(&[row(None, 1)]).is_err());
    // The next key: NULL past the last.
    let next = |key: Option<Vec<u8>>| {
        Row::builder()
            .column("next_key", ColumnType::BigVarBin, key.into_sql())
            .build()
    };
    assert_eq!(
        key_column(&next(Some("tenant-ü".as_bytes().to_vec())), "next_key").unwrap(),
        Some("tenant-ü".to_owned())
    );
    assert_eq!(key_column(&next(None), "next_key").unwrap(), None);
    assert!(key_column(&next(Some(vec![0xc3])), "next_key").is_err());
}

#[test]
fn key_values_follow_the_statements() {
    let p = JobClaim {
        queue: "q",
        limit: 5_000,
        lease: Duration::from_micros(90_000_001),
        worker: "w",
        controls_checked: true,
        after: None,
    };
    // job_claim_key: job_claim's first five, then the key's bytes in place of the flag.
    let keyed = claim_key_values(p, Some("Acmé"));
    let ordinary = claim_values(p);
    assert_eq!(keyed.values()[..5], ordinary.values()[..5]);
    assert_eq!(
        keyed.values()[1],
        ColumnData::I64(Some(MAX_ROWS_PER_STATEMENT as i64))
    );
    assert_eq!(
        keyed.values()[5],
        ColumnData::Binary(Some("Acmé".as_bytes().into()))
    );
    assert_eq!(keyed.len(), 6);
    // job_claim_unkeyed: the five alone.
    let unkeyed = claim_key_values(p, None);
    assert_eq!(unkeyed.values(), &ordinary.values()[..5]);
    // job_key_next from the start: the empty value (below every key), not NULL.
    let v = key_next_values("q", "", 32);
    assert_eq!(
        v.values(),
        &[
            ColumnData::String(Some("q".into())),
            ColumnData::Binary(Some(b"".as_slice().into())),
            ColumnData::I64(Some(32)),
        ]
    );
    // The cursor: the key's bytes, or a typed NULL for the jobs without a key.
    let v = key_cursor_values("q", Some("b"));
    assert_eq!(
        v.values()[1],
        ColumnData::Binary(Some(b"b".as_slice().into()))
    );
    assert_eq!(
        key_cursor_values("q", None).values()[1],
        ColumnData::Binary(None)
    );
    // The key limit as `int`, as the concurrency limit.
    let v = set_limit_values("q", Some(4));
    assert_eq!(v.values()[1], ColumnData::I32(Some(4)));
}

#[test]
fn rate_state_rows_decode() {
    let row = |window: Option<i64>, count: i32| {
        Row::builder()
            .column("rate_window", ColumnType::Int8, window.into_sql())
            .column("rate_count", ColumnType::Int4, count.into_sql())
            .column(
                "now_us",
                ColumnType::Int8,
                1_800_000_000_123_456i64.into_sql(),
            )
            .build()
    };
    assert_eq!(
        rate_state(&row(None, 0)).unwrap(),
        RateState {
            window: None,
            count: 0,
            now_us: 1_800_000_000_123_456,
        }
    );
    let s = rate_state(&row(Some(1_800_000), 7)).unwrap();
    assert_eq!((s.window, s.count), (Some(1_800_000), 7));
    // A NULL clock is a decoding error, never a window of its own.
    let no_clock = Row::builder()
        .column("rate_window", ColumnType::Int8, None::<i64>.into_sql())
        .column("rate_count", ColumnType::Int4, 0i32.into_sql())
        .column("now_us", ColumnType::Int8, None::<i64>.into_sql())
        .build();
    assert!(rate_state(&no_clock).is_err());
}

#[test]
fn rate_values_follow_the_statements() {
    // queue_set_rate: the queue, the starts as `int`, the window as `bigint`.
    let v = set_rate_values("q", Some((25, 60_000_000)));
    assert_eq!(
        v.values(),
        &[
            ColumnData::String(Some("q".into())),
            ColumnData::I32(Some(25)),
            ColumnData::I64(Some(60_000_000)),
        ]
    );
    let v = set_rate_values("q", None);
    assert_eq!(
        v.values()[1..],
        [ColumnData::I32(None), ColumnData::I64(None)]
    );
    // queue_rate_record: the queue, the window as `bigint`, the count as `int`.
    let v = rate_record_values("q", 29_999_999, 3);
    assert_eq!(
        v.values(),
        &[
            ColumnData::String(Some("q".into())),
            ColumnData::I64(Some(29_999_999)),
            ColumnData::I32(Some(3)),
        ]
    );
    // queue_set_key_rate binds queue_set_rate's values, in its order: the limit as `int`
    // (key_rate_limit) and the window as `bigint` (key_rate_period_us), both NULL when the
    // limit is removed.
    let v = set_rate_values("q", Some((2, 1_000_000)));
    assert_eq!(
        v.values()[1..],
        [ColumnData::I32(Some(2)), ColumnData::I64(Some(1_000_000))]
    );
    // queue_key_rate_put: the queue, the key's bytes exactly (case and trailing spaces
    // kept), the window as `bigint`, the count as `int` (saturated, never wrapped).
    let v = key_rate_put_values("q", "Acmé ", 1_800_000, 4);
    assert_eq!(
        v.values(),
        &[
            ColumnData::String(Some("q".into())),
            ColumnData::Binary(Some("Acmé ".as_bytes().into())),
            ColumnData::I64(Some(1_800_000)),
            ColumnData::I32(Some(4)),
        ]
    );
    assert_eq!(
        key_rate_put_values("q", "k", 1, u32::MAX).values()[3],
        ColumnData::I32(Some(i32::MAX))
    );
    // queue_key_rate_get: the queue and the key's bytes, as job_key_waiting binds them.
    assert_eq!(
        key_values("q", "Acmé ").values(),
        &[
            ColumnData::String(Some("q".into())),
            ColumnData::Binary(Some("Acmé ".as_bytes().into())),
        ]
    );
}

/// Every write of a queue's controls (an UPDATE, then an INSERT when it changed no row;
/// queue_set_key_rate also drops the keys' counts) goes out as one request inside a
/// transaction of the driver's, each verb a batch of its own (never inside
/// `sp_executesql`), so the UPDATE's key lock lasts until the INSERT is done.
#[tokio::test]
async fn control_writes_go_out_in_a_transaction_of_the_drivers() {
    let q = || Some(vec![b'q', 0]);
    let writes: [(&str, Vec<Option<Vec<u8>>>); 6] = [
        ("queue_set_paused", vec![q(), Some(vec![1])]),
        (
            "queue_set_limit",
            vec![q(), Some(3i32.to_le_bytes().to_vec())],
        ),
        ("queue_set_rate", vec![q(), None, None]),
        ("queue_set_key_limit", vec![q(), None]),
        ("queue_set_fair", vec![q(), Some(vec![0])]),
        (
            "queue_set_key_rate",
            vec![
                q(),
                Some(2i32.to_le_bytes().to_vec()),
                Some(1_000_000i64.to_le_bytes().to_vec()),
            ],
        ),
    ];
    for (name, values) in writes {
        let (driver, server) = stand_in().await;
        let written = match name {
            "queue_set_paused" => driver.queue_set_paused("q", true).await,
            "queue_set_limit" => driver.queue_set_limit("q", Some(3)).await,
            "queue_set_rate" => driver.queue_set_rate("q", None).await,
            "queue_set_key_limit" => driver.queue_set_key_limit("q", None).await,
            "queue_set_fair" => driver.queue_set_fair("q", false).await,
            _ => driver.queue_set_key_rate("q", Some((2, 1_000_000))).await,
        };
        written.unwrap();
        let statement = driver
            .sql
            .all()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, text)| text.to_owned())
            .unwrap();
        drop(driver);
        let requests = server.await.unwrap();
        // From the transaction on (the session's settings and checks come before it).
        let begin = crate::wire::Request::Batch("BEGIN TRANSACTION".into());
        let from = requests.iter().position(|r| *r == begin).unwrap();
        let [crate::wire::Request::Rpc(sent, params), crate::wire::Request::Batch(commit)] =
            &requests[from + 1..]
        else {
            panic!("{name}: not one request, then the commit: {requests:?}");
        };
        assert_eq!(*sent, statement, "{name}");
        assert!(
            sent.starts_with("UPDATE [s].[queues] WITH (UPDLOCK, HOLDLOCK)")
                && sent.contains("IF @@ROWCOUNT = 0")
                && !sent.contains("MERGE"),
            "{name}: {sent}"
        );
        let sent_values: Vec<Option<Vec<u8>>> = params.iter().map(|p| p.value.clone()).collect();
        assert_eq!(sent_values, values, "{name}");
        assert!(commit.starts_with("COMMIT TRANSACTION"), "{name}: {commit}");
        // Nothing of the transaction's went inside the request.
        assert!(
            !requests[..from]
                .iter()
                .any(|r| matches!(r, crate::wire::Request::Rpc(..))),
            "{name}"
        );
    }
}

#[test]
fn key_rate_rows_decode() {
    let row = |window: Option<i64>, count: Option<i32>| {
        Row::builder()
            .column("rate_window", ColumnType::Int8, window.into_sql())
            .column("rate_count", ColumnType::Int4, count.into_sql())
            .build()
    };
    assert_eq!(
        key_rate(&row(Some(1_800_000), Some(7))).unwrap(),
        (1_800_000, 7)
    );
    // Windows before the epoch are negative, and kept.
    assert_eq!(key_rate(&row(Some(-3), Some(1))).unwrap(), (-3, 1));
    // Both columns are NOT NULL: a NULL is a malformed row, never a window of its own.
    assert!(key_rate(&row(None, Some(1))).is_err());
    assert!(key_rate(&row(Some(1), None)).is_err());
}
