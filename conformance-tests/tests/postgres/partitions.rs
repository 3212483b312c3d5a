//! Finished partitions (`PostgresQueueBuilder::finished_partitions`): where finished jobs go,
//! what reads and operator actions see, retention by whole partitions, turning them on over a
//! database with jobs in every state, and bad input. (The whole catalogue also runs with them
//! on: `QUEUE_TEST_PG_PARTITIONS`.)

use super::*;
use queue_core::{BulkAction, Failure, JobFilter, ListRequest, PruneRequest, Retention, Unique};

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);

/// How many jobs of `table` (jobs, jobs_done, or one of its partitions) are in `state`.
async fn rows(q: &PostgresQueue, table: &str, state: &str) -> anyhow::Result<i64> {
    let sql = format!("SELECT count(*) FROM {{schema}}.{table} WHERE state = $1");
    Ok(sqlx::query_scalar(in_schema(&sql, q.schema()))
        .bind(state)
        .fetch_one(q.pool())
        .await?)
}

/// The table a job's row is in: `jobs`, a partition of `jobs_done`, or none.
async fn home(q: &PostgresQueue, id: JobId) -> anyhow::Result<Option<String>> {
    Ok(sqlx::query_scalar(in_schema(
        "SELECT tableoid::regclass::text FROM {schema}.jobs WHERE id = $1 \
         UNION ALL SELECT tableoid::regclass::text FROM {schema}.jobs_done WHERE id = $1",
        q.schema(),
    ))
    .bind(id.0)
    .fetch_optional(q.pool())
    .await?)
}

async fn state_of(q: &PostgresQueue, id: JobId) -> anyhow::Result<JobState> {
    Ok(q.get(id)
        .await?
        .with_context(|| format!("{id} is gone"))?
        .state)
}

/// Completed, dead and cancelled jobs move to their state's partition for this day; the steps
/// of a workflow and a job whose uniqueness covers its finished state stay in jobs. Every read
/// and operator action sees both tables, and retention drops whole partitions.
pub(super) async fn finished_partitions_keep_finished_jobs_apart(
    server: Server,
) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b.finished_partitions(DAY)).await?;
    let s = q.schema().to_owned();
    let ids = q.push_batch((0..6).map(|i| job("fp", i)).collect()).await?;
    let held =
        Unique::new()
            .by_args()
            .states([JobState::Pending, JobState::Running, JobState::Completed]);
    let unique = q
        .push(job("fp", 100).kind("u").unique(held.clone()))
        .await?;
    let flow = q
        .push_workflow(queue_core::Workflow::new().add("only", job("fp", 200)))
        .await?;
    let step = flow.job("only").context("no step")?;
    let cancelled = q.push(job("fp", 300).delay(HOUR)).await?;
    q.cancel(cancelled).await?;

    let leased = q
        .pop(queue_core::PopRequest::new("fp").limit(20).lease(HOUR))
        .await?;
    ensure!(leased.len() == 8, "claimed {}", leased.len());
    let lease = |id: JobId| {
        leased
            .iter()
            .find(|l| l.job.id == id)
            .map(|l| l.lease.clone())
            .with_context(|| format!("{id} was not claimed"))
    };
    ensure!(
        q.ack_batch(&[lease(ids[0])?, lease(ids[1])?, lease(ids[2])?])
            .await?
            == 3
    );
    q.ack(&lease(ids[3])?).await?;
    q.ack_with_output(
        &lease(ids[4])?,
        &serde_json::value::RawValue::from_string("{\"out\":1}".into())?,
    )
    .await?;
    q.fail(&lease(ids[5])?, Failure::permanent("boom")).await?;
    q.ack(&lease(unique)?).await?;
    q.ack(&lease(step)?).await?;

    let leaf = |state: &str| format!("{s}.jobs_done_{state}_");
    for (id, state) in [
        (ids[0], "completed"),
        (ids[3], "completed"),
        (ids[4], "completed"),
        (ids[5], "dead"),
        (cancelled, "cancelled"),
    ] {
        let at = home(&q, id).await?.context("no row")?;
        ensure!(
            at.starts_with(&leaf(state)) && !at.ends_with("_default"),
            "{id} ({state}) is in {at}, not its state's partition of this day"
        );
    }
    for id in [unique, step] {
        let at = home(&q, id).await?.context("no row")?;
        ensure!(at == format!("{s}.jobs"), "{id} is in {at}, not in jobs");
    }
    ensure!(rows(&q, "jobs_done", "completed").await? == 5);
    ensure!(rows(&q, "jobs", "completed").await? == 2);

    // Reads see both tables: get (with the output and the history), list, stats.
    let got = q.get(ids[4]).await?.context("gone")?;
    ensure!(got.state == JobState::Completed && got.finished_at.is_some());
    let dead = q.get(ids[5]).await?.context("gone")?;
    ensure!(
        dead.state == JobState::Dead && dead.last_error.as_deref() == Some("boom"),
        "{dead:?}"
    );
    let listed = q
        .list(ListRequest {
            queue: Some("fp".into()),
            state: Some(JobState::Completed),
            ..Default::default()
        })
        .await?;
    ensure!(listed.len() == 7, "listed {} completed jobs", listed.len());
    let stats = q.stats(Some("fp")).await?;
    ensure!(
        stats.len() == 1
            && (stats[0].completed, stats[0].dead, stats[0].cancelled) == (7, 1, 1)
            && stats[0].running == 0,
        "{stats:?}"
    );
    // The unique job holds its key while completed: another push of it is refused.
    let again = q
        .push_outcome(job("fp", 100).kind("u").unique(held))
        .await?;
    ensure!(
        matches!(again, queue_core::PushOutcome::Existing(id) if id == unique),
        "a completed unique job in jobs did not hold its key: {again:?}"
    );

    // Operator actions: a dead job retried comes back into jobs, pending; a cancelled one is
    // deleted from its partition; a prune of one queue deletes rows of any age.
    q.retry(ids[5]).await?;
    ensure!(state_of(&q, ids[5]).await? == JobState::Pending);
    ensure!(home(&q, ids[5]).await?.as_deref() == Some(format!("{s}.jobs").as_str()));
    ensure!(rows(&q, "jobs_done", "dead").await? == 0);
    let deleted = q
        .bulk(
            BulkAction::Delete,
            &JobFilter {
                queue: Some("fp".into()),
                state: Some(JobState::Cancelled),
                ..Default::default()
            },
        )
        .await?;
    ensure!(deleted.changed == 1, "{deleted:?}");
    ensure!(q.get(cancelled).await?.is_none());

    // Retention drops a partition whose every job is older than the rule, whole, and deletes
    // the old rows of the default partition; younger partitions stay.
    sqlx::raw_sql(in_schema(
        "CREATE TABLE {schema}.jobs_done_completed_20000101t000000 \
         PARTITION OF {schema}.jobs_done_completed \
         FOR VALUES FROM ('2000-01-01 00:00:00+00') TO ('2000-01-02 00:00:00+00')",
        &s,
    ))
    .execute(q.pool())
    .await?;
    sqlx::query(in_schema(
        "UPDATE {schema}.jobs_done SET finished_at = CASE WHEN id = $1 \
         THEN now() - interval '5 days' ELSE '2000-01-01 00:30:00+00' END \
         WHERE id = ANY($2)",
        &s,
    ))
    .bind(ids[2].0)
    .bind(vec![ids[0].0, ids[1].0, ids[2].0])
    .execute(q.pool())
    .await?;
    sqlx::raw_sql(in_schema(
        "ANALYZE {schema}.jobs_done_completed_20000101t000000",
        &s,
    ))
    .execute(q.pool())
    .await?;
    ensure!(
        home(&q, ids[2]).await?.as_deref()
            == Some(format!("{s}.jobs_done_completed_default").as_str())
    );
    let short = q
        .run_retention(
            &Retention::off()
                .delete_after(JobState::Completed, DAY / 2)
                .interval(Duration::from_secs(1)),
        )
        .await;
    let refused = short
        .err()
        .context("a rule shorter than a partition was accepted")?;
    ensure!(
        refused.to_string().contains("retention.completed"),
        "{refused}"
    );
    ensure!(
        rows(&q, "jobs_done", "completed").await? == 5,
        "a refused round deleted"
    );
    // The refused round's lease holds the next one back for its interval.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let round = q
        .run_retention(&Retention::off().delete_after(JobState::Completed, DAY))
        .await?
        .context("the round did not run")?;
    ensure!(round.completed == 3, "{round:?}");
    let gone: Option<String> = sqlx::query_scalar(in_schema(
        "SELECT to_regclass('{schema}.jobs_done_completed_20000101t000000')::text",
        &s,
    ))
    .fetch_one(q.pool())
    .await?;
    ensure!(gone.is_none(), "the old partition is still there");
    for id in &ids[..3] {
        ensure!(q.get(*id).await?.is_none(), "{id} outlived retention");
    }
    for id in [ids[3], ids[4], unique, step] {
        ensure!(state_of(&q, id).await? == JobState::Completed);
    }
    let pruned = q
        .prune(PruneRequest {
            older_than: Duration::ZERO,
            states: vec![JobState::Completed],
            queue: Some("fp".into()),
        })
        .await?;
    ensure!(pruned == 3, "pruned {pruned}");
    ensure!(rows(&q, "jobs_done", "completed").await? == 0);
    drop_schema(&q).await
}

/// Turning finished partitions on over a database with jobs in every state: nothing is
/// rewritten (the jobs table keeps its file), every job reads back as it was, the finished
/// ones stay where they are and act as before, and new finishes move, also of the lease taken
/// before. A process connected before goes on finishing in place, which everyone reads.
pub(super) async fn finished_partitions_turn_on_with_jobs_in_every_state(
    server: Server,
) -> anyhow::Result<()> {
    let before = fresh(&server, |b| b).await?;
    let s = before.schema().to_owned();
    let ids = before
        .push_batch((0..6).map(|i| job("on", i)).collect())
        .await?;
    let later = before.push(job("on", 10).delay(HOUR)).await?;
    let flow = before
        .push_workflow(
            queue_core::Workflow::new()
                .add("a", job("on-flow", 1).delay(HOUR))
                .add_after("b", job("on-flow", 2), ["a"]),
        )
        .await?;
    let waiting = flow.job("b").context("no step b")?;
    let leased = before
        .pop(queue_core::PopRequest::new("on").limit(6).lease(HOUR))
        .await?;
    ensure!(leased.len() == 6, "claimed {}", leased.len());
    before.ack(&leased[0].lease).await?;
    before
        .fail(&leased[1].lease, Failure::permanent("old"))
        .await?;
    before.cancel(ids[2]).await?;
    // leased[3..6]: held over the migration.
    let all = [ids.to_vec(), vec![later, waiting]].concat();
    let mut was = Vec::new();
    for id in &all {
        let j = before.get(*id).await?.context("gone")?;
        was.push((
            j.state,
            j.attempts,
            j.lease_expires_at,
            j.finished_at,
            j.last_error,
        ));
    }
    let file = "SELECT pg_relation_filenode('{schema}.jobs')::bigint";
    let file_before: i64 = sqlx::query_scalar(in_schema(file, &s))
        .fetch_one(before.pool())
        .await?;

    let q = builder(&server.url, &s)
        .finished_partitions(DAY)
        .connect()
        .await?;
    q.migrate().await?;
    let file_after: i64 = sqlx::query_scalar(in_schema(file, &s))
        .fetch_one(q.pool())
        .await?;
    ensure!(
        file_before == file_after,
        "the migration rewrote the jobs table"
    );
    for (id, then) in all.iter().zip(&was) {
        let j = q.get(*id).await?.context("gone")?;
        let now = (
            j.state,
            j.attempts,
            j.lease_expires_at,
            j.finished_at,
            j.last_error,
        );
        ensure!(&now == then, "{id} changed: {then:?} -> {now:?}");
    }
    // The finished jobs of before stay in jobs; a finish now moves, also under an old lease.
    for id in &ids[..3] {
        ensure!(home(&q, *id).await?.as_deref() == Some(format!("{s}.jobs").as_str()));
    }
    q.ack(&leased[3].lease).await?;
    let moved = home(&q, ids[3]).await?.context("no row")?;
    ensure!(
        moved.starts_with(&format!("{s}.jobs_done_completed_")),
        "{moved}"
    );
    // The process that connected before read the layout then: it finishes in place, and both
    // see the job.
    before.ack(&leased[4].lease).await?;
    ensure!(home(&q, ids[4]).await?.as_deref() == Some(format!("{s}.jobs").as_str()));
    ensure!(state_of(&q, ids[4]).await? == JobState::Completed);
    ensure!(state_of(&before, ids[3]).await? == JobState::Completed);
    // A dead job of before is retried where it is; it runs, and its completion moves.
    q.retry(ids[1]).await?;
    q.fail(&leased[5].lease, Failure::permanent("new")).await?;
    ensure!(home(&q, ids[5])
        .await?
        .is_some_and(|t| t.starts_with(&format!("{s}.jobs_done_dead_"))));
    q.retry(ids[5]).await?;
    let handle = queue_core::Worker::builder(std::sync::Arc::new(q.clone()), "on")
        .poll_interval(Duration::from_millis(10), Duration::from_millis(50))
        .retention(Retention::off())
        .handler_fn(|_| async { Ok::<(), queue_core::JobError>(()) })
        .build()?
        .start();
    let until = Instant::now() + Duration::from_secs(15);
    let mut ran = false;
    while !ran && Instant::now() < until {
        ran = state_of(&q, ids[1]).await? == JobState::Completed
            && state_of(&q, ids[5]).await? == JobState::Completed;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.shutdown(Duration::from_secs(5)).await;
    ensure!(ran, "the retried jobs did not run");
    for id in [ids[1], ids[5]] {
        ensure!(home(&q, id)
            .await?
            .is_some_and(|t| t.starts_with(&format!("{s}.jobs_done_completed_"))));
    }
    let stats = q.stats(Some("on")).await?;
    ensure!(
        stats.len() == 1
            && (stats[0].completed, stats[0].dead, stats[0].cancelled) == (5, 0, 1)
            && stats[0].scheduled == 1,
        "{stats:?}"
    );
    ensure!(state_of(&q, waiting).await? == JobState::Waiting);
    drop_schema(&q).await
}

/// An interval that is not a whole number of days from one to seven is refused
/// naming the option (or `url`, for `finished_partitions=` in the URL, which wins over the
/// builder's); a second interval for a schema that has one fails the migration, which changes
/// nothing.
pub(super) async fn finished_partitions_refuse_bad_input(server: Server) -> anyhow::Result<()> {
    for bad in [
        Duration::ZERO,
        HOUR,
        Duration::from_secs(36 * 3600),
        DAY + Duration::from_millis(1),
        Duration::from_secs(8 * 24 * 3600),
    ] {
        let refused = builder(&server.url, "t_never")
            .finished_partitions(bad)
            .connect()
            .await
            .err()
            .with_context(|| format!("{bad:?} was accepted"))?;
        ensure!(
            matches!(&refused, Error::InvalidInput { field, .. } if field == "finished_partitions"),
            "{bad:?}: {refused:?}"
        );
    }
    let with_param = |value: &str| {
        let sep = if server.url.contains('?') { '&' } else { '?' };
        format!("{}{sep}finished_partitions={value}", server.url)
    };
    let refused = builder(&with_param("12h"), "t_never")
        .connect()
        .await
        .err()
        .context("finished_partitions=12h was accepted")?;
    ensure!(
        matches!(&refused, Error::InvalidInput { field, rule } if field == "url" && rule.contains("finished_partitions")),
        "{refused:?}"
    );
    let q = fresh(&server, |b| b.finished_partitions(2 * DAY)).await?;
    let s = q.schema().to_owned();
    // The URL's interval wins over the builder's.
    let other = builder(&with_param("3d"), &s)
        .finished_partitions(2 * DAY)
        .connect()
        .await?;
    let failed = other
        .migrate()
        .await
        .err()
        .context("a second interval was accepted")?;
    ensure!(
        format!("{failed:#}").contains("finished_partitions"),
        "{failed:#}"
    );
    let interval: i64 = sqlx::query_scalar(in_schema(
        "SELECT interval_s FROM {schema}.finished_partitions",
        &s,
    ))
    .fetch_one(q.pool())
    .await?;
    ensure!(interval == 2 * 86_400, "the interval is now {interval} s");
    // The same interval again (here in the URL), and none at all, leave them as they are.
    builder(&with_param("48h"), &s)
        .connect()
        .await?
        .migrate()
        .await?;
    builder(&server.url, &s).connect().await?.migrate().await?;
    let id = q.push(job("bad", 1)).await?;
    let leased = q.pop(queue_core::PopRequest::new("bad")).await?;
    q.ack(&leased[0].lease).await?;
    ensure!(home(&q, id)
        .await?
        .is_some_and(|t| t.starts_with(&format!("{s}.jobs_done_completed_"))));
    drop_schema(&q).await
}

/// jobs_done has the columns of jobs, in their order (the view jobs_all and the moves depend on
/// it), and every statement that moves a row between them names every column: a column added
/// to jobs later and forgotten in jobs_done or in a move fails here, not as a lost value.
pub(super) async fn finished_partitions_moves_carry_every_column(
    server: Server,
) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b.finished_partitions(DAY)).await?;
    let columns = |table: &'static str| {
        let q = q.clone();
        async move {
            let names: Vec<String> = sqlx::query_scalar(
                "SELECT column_name::text FROM information_schema.columns \
                 WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position",
            )
            .bind(q.schema())
            .bind(table)
            .fetch_all(q.pool())
            .await?;
            anyhow::Ok(names)
        }
    };
    let jobs = columns("jobs").await?;
    ensure!(jobs.len() > 20, "{jobs:?}");
    for table in ["jobs_done", "jobs_done_completed_default", "jobs_all"] {
        let other = columns(table).await?;
        ensure!(other == jobs, "{table}: {other:?}\njobs: {jobs:?}");
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../queue-postgres/queries");
    let mut moves = 0;
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        let text = std::fs::read_to_string(&path)?;
        // Only the statements that move rows between the two tables (a push names its own).
        if !text.contains("{schema}.jobs_done") {
            continue;
        }
        for target in [
            "INSERT INTO {schema}.jobs_done (",
            "INSERT INTO {schema}.jobs (",
        ] {
            let Some((_, rest)) = text.split_once(target) else {
                continue;
            };
            let list = rest.split_once(')').context("no column list")?.0;
            let named: Vec<&str> = list.split(',').map(str::trim).collect();
            ensure!(
                named == jobs,
                "{}: {target} names {named:?}\njobs: {jobs:?}",
                path.display()
            );
            moves += 1;
        }
    }
    ensure!(moves >= 10, "{moves} moves found");
    drop_schema(&q).await
}
