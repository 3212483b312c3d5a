//! Operator calls (stats, list, prune), migrations, and an unreachable database.

use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use queue_core::{Error, Failure, JobState, ListRequest, PruneRequest};
use serde_json::json;

use super::{all_jobs, expect_state, job, pop, pop_one, LONG_LEASE};
use crate::Ctx;

/// `stats` counts every state per queue (available and scheduled apart) and says when the
/// longest-waiting available job became due.
pub async fn stats_per_state(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    // Claimed first so they are at the head of the queue.
    q.push_batch((0..4).map(|i| job("st", json!(i)).priority(10)).collect())
        .await?;
    let ls = pop(&q, "st", 4, LONG_LEASE, "w").await?;
    ensure!(ls.len() == 4);
    q.ack(&ls[0].lease).await?; // completed
    q.fail(&ls[1].lease, Failure::permanent("x")).await?; // dead
    q.cancel(ls[2].job.id).await?; // cancelled
                                   // ls[3] stays running.
    let available = q
        .push_batch(vec![job("st", json!("a")), job("st", json!("b"))])
        .await?;
    q.push(job("st", json!("later")).delay(Duration::from_secs(3600)))
        .await?; // scheduled
    let cancelled_pending = q.push(job("st", json!("c"))).await?;
    q.cancel(cancelled_pending).await?;
    q.push(job("st-other", json!(1))).await?;
    q.push(job("st-later", json!(1)).delay(Duration::from_secs(3600)))
        .await?;

    let s = q.stats(Some("st")).await?;
    ensure!(s.len() == 1 && s[0].queue == "st", "{s:?}");
    let s = &s[0];
    ensure!(
        (s.available, s.scheduled, s.running, s.completed, s.dead, s.cancelled) == (2, 1, 1, 1, 1, 2),
        "stats {s:?}, expected available 2, scheduled 1, running 1, completed 1, dead 1, cancelled 2"
    );
    // The oldest due: the earlier run_at of the two available jobs, as stored; not the running,
    // finished or cancelled jobs' (all pushed before them), nor the scheduled one's.
    let mut due = Vec::new();
    for id in &available {
        due.push(q.get(*id).await?.context("an available job")?.run_at);
    }
    ensure!(
        s.oldest_due == due.iter().min().copied(),
        "oldest_due {:?}, expected {:?} (the available jobs' run_at: {due:?})",
        s.oldest_due,
        due.iter().min()
    );
    let all = q.stats(None).await?;
    ensure!(
        all.len() == 3,
        "stats(None) returned {} queues: {all:?}",
        all.len()
    );
    let other = all
        .iter()
        .find(|s| s.queue == "st-other")
        .context("no stats for st-other")?;
    ensure!(
        other.available == 1 && other.count(JobState::Running) == 0 && other.oldest_due.is_some(),
        "{other:?}"
    );
    let later = all
        .iter()
        .find(|s| s.queue == "st-later")
        .context("no stats for st-later")?;
    ensure!(
        later.scheduled == 1 && later.oldest_due.is_none(),
        "a queue with only a scheduled job has no oldest due: {later:?}"
    );
    ensure!(
        all.iter().any(|x| x == s),
        "stats(None) disagrees with stats(Some)"
    );
    let none = q.stats(Some("empty-queue")).await?;
    ensure!(
        none.iter().all(|s| s.queue == "empty-queue"
            && s.count(JobState::Pending) == 0
            && s.oldest_due.is_none()),
        "{none:?}"
    );
    Ok(())
}

/// `prune` deletes only finished jobs that finished long enough ago, in the states (and queue)
/// asked for; pending, running and recent jobs stay. The recent job must stay younger than
/// the age through about seventeen calls, which a loaded machine may take seconds over.
pub async fn prune_removes_only_old_finished(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    q.push_batch((0..3).map(|i| job("pr", json!(i)).priority(5)).collect())
        .await?;
    let ls = pop(&q, "pr", 3, LONG_LEASE, "w").await?;
    q.ack(&ls[0].lease).await?;
    q.fail(&ls[1].lease, Failure::permanent("x")).await?;
    q.ack(&ls[2].lease).await?;
    let old_other = q.push(job("pr-other", json!("o"))).await?;
    let l = pop_one(&q, "pr-other").await?;
    q.ack(&l.lease).await?;
    let old_cancelled = q.push(job("pr", json!("c"))).await?;
    q.cancel(old_cancelled).await?;
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    // Recent finished jobs, and live ones.
    let recent = q.push(job("pr", json!("recent"))).await?;
    let l = pop_one(&q, "pr").await?;
    ensure!(l.job.id == recent);
    q.ack(&l.lease).await?;
    let pending = q.push(job("pr", json!("pending"))).await?;
    let low = q.push(job("pr", json!("low")).priority(-1)).await?;
    let l = pop_one(&q, "pr").await?;
    ensure!(l.job.id == pending);
    q.release(&l.lease).await?;

    // Only dead ones in queue pr.
    let n = q
        .prune(PruneRequest {
            older_than: Duration::from_millis(2_500),
            states: vec![JobState::Dead],
            queue: Some("pr".into()),
        })
        .await?;
    ensure!(n == 1, "pruning old dead jobs removed {n}");
    ensure!(
        q.get(ls[1].job.id).await?.is_none(),
        "the old dead job is still stored"
    );
    // Every finished state, in queue pr.
    let n = q
        .prune(PruneRequest {
            older_than: Duration::from_millis(2_500),
            states: JobState::FINISHED.to_vec(),
            queue: Some("pr".into()),
        })
        .await?;
    ensure!(
        n == 3,
        "pruning old finished jobs of pr removed {n}, expected 3"
    );
    for id in [ls[0].job.id, ls[2].job.id, old_cancelled] {
        ensure!(q.get(id).await?.is_none(), "old finished job {id} survived");
    }
    expect_state(&q, recent, JobState::Completed).await?;
    expect_state(&q, pending, JobState::Pending).await?;
    expect_state(&q, old_other, JobState::Completed).await?;
    // Every queue.
    let n = q
        .prune(PruneRequest::older_than(Duration::from_millis(2_500)))
        .await?;
    ensure!(
        n == 1,
        "pruning every queue removed {n}, expected the one in pr-other"
    );
    ensure!(q.get(old_other).await?.is_none());
    let left = all_jobs(&q).await?;
    ensure!(
        left.len() == 3,
        "{} jobs left, expected the recent, the released and the low one",
        left.len()
    );
    expect_state(&q, low, JobState::Pending).await?;
    ensure!(
        q.prune(PruneRequest::older_than(Duration::from_millis(2_500)))
            .await?
            == 0
    );
    Ok(())
}

/// `list` filters by queue and by state, returns newest first, and honours its limit.
pub async fn list_filters_by_queue_and_state(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let mut a_ids = Vec::new();
    for i in 0..5 {
        a_ids.push(q.push(job("la", json!(i))).await?);
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let b = q.push(job("lb", json!("b"))).await?;
    let l = pop_one(&q, "la").await?;
    ensure!(l.job.id == a_ids[0]);
    let all_a = q
        .list(ListRequest {
            queue: Some("la".into()),
            state: None,
            limit: 100,
            before: None,
            kind: None,
        })
        .await?;
    let ids: Vec<_> = all_a.iter().map(|j| j.id).collect();
    let mut newest_first = a_ids.clone();
    newest_first.reverse();
    ensure!(
        ids == newest_first,
        "list of la is not its 5 jobs newest first"
    );
    let running = q
        .list(ListRequest {
            queue: None,
            state: Some(JobState::Running),
            limit: 100,
            before: None,
            kind: None,
        })
        .await?;
    ensure!(
        running.len() == 1 && running[0].id == a_ids[0],
        "running: {running:?}"
    );
    let pending_a = q
        .list(ListRequest {
            queue: Some("la".into()),
            state: Some(JobState::Pending),
            limit: 100,
            before: None,
            kind: None,
        })
        .await?;
    ensure!(
        pending_a.len() == 4
            && pending_a
                .iter()
                .all(|j| j.queue == "la" && j.state == JobState::Pending)
    );
    let pending_b = q
        .list(ListRequest {
            queue: Some("lb".into()),
            state: Some(JobState::Pending),
            limit: 100,
            before: None,
            kind: None,
        })
        .await?;
    ensure!(pending_b.len() == 1 && pending_b[0].id == b);
    let two = q
        .list(ListRequest {
            queue: None,
            state: None,
            limit: 2,
            before: None,
            kind: None,
        })
        .await?;
    ensure!(
        two.len() == 2 && two[0].id == b && two[1].id == a_ids[4],
        "limit 2: {two:?}"
    );
    let none = q
        .list(ListRequest {
            queue: Some("la".into()),
            state: Some(JobState::Dead),
            limit: 100,
            before: None,
            kind: None,
        })
        .await?;
    ensure!(none.is_empty());
    Ok(())
}

/// Migrating an already migrated database again succeeds and keeps the jobs.
pub async fn migrate_twice(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("mg", json!("kept"))).await?;
    q.migrate().await.context("second migrate")?;
    q.migrate().await.context("third migrate")?;
    let j = expect_state(&q, id, JobState::Pending).await?;
    ensure!(j.payload_value() == json!("kept"));
    let l = pop_one(&q, "mg").await?;
    q.ack(&l.lease).await?;
    Ok(())
}

/// Two migrations racing on the same fresh namespace (two queue values, as two processes)
/// both succeed and leave a working schema.
pub async fn concurrent_migrate(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    // The fixture is migrated; race the next ones: both must succeed and nothing breaks.
    let a = fx.another().await?;
    let b = fx.another().await?;
    let c = fx.queue();
    let (ra, rb, rc) = tokio::join!(a.migrate(), b.migrate(), c.migrate());
    ra.context("migrate through value a")?;
    rb.context("migrate through value b")?;
    rc.context("migrate through value c")?;
    let id = a.push(job("cm", json!(1))).await?;
    let l = pop_one(&b, "cm").await?;
    ensure!(
        l.job.id == id,
        "a job pushed through one value was not seen by another"
    );
    c.ack(&l.lease).await?;
    expect_state(&a, id, JobState::Completed).await?;
    Ok(())
}

/// Two migrations racing on an empty namespace, where neither has created anything yet.
pub async fn concurrent_first_migrate(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.unmigrated_fixture().await?;
    let a = fx.queue();
    let b = fx.another().await?;
    let (ra, rb) = tokio::join!(a.migrate(), b.migrate());
    ra.context("first migrate through value a")?;
    rb.context("first migrate through value b")?;
    let id = b.push(job("cfm", json!(1))).await?;
    let l = pop_one(&a, "cfm").await?;
    ensure!(l.job.id == id);
    a.ack(&l.lease).await?;
    expect_state(&b, id, JobState::Completed).await?;
    Ok(())
}

/// A database that cannot be reached yields `Unavailable` (never a panic or a hang).
pub async fn unreachable_is_unavailable(ctx: Ctx) -> anyhow::Result<()> {
    let cfg = ctx.config();
    let attempt = async {
        match ctx.harness().unreachable(&cfg).await {
            Err(Error::Unavailable { .. }) => Ok(()),
            Err(other) => bail!("connect to an unreachable database: {other:?}"),
            Ok(None) => Err(ctx.skip(
                "the backend keeps its jobs in the test's own process: there is no database \
                 that could be out of reach",
            )),
            Ok(Some(q)) => {
                match q.migrate().await {
                    Err(Error::Unavailable { .. }) => {}
                    other => bail!("migrate on an unreachable database: {other:?}"),
                }
                match q.push(job("u", json!(1))).await {
                    Err(Error::Unavailable { .. }) => {}
                    other => bail!("push to an unreachable database: {other:?}"),
                }
                match q.pop(queue_core::PopRequest::new("u")).await {
                    Err(Error::Unavailable { .. }) => Ok(()),
                    other => bail!("pop from an unreachable database: {other:?}"),
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), attempt)
        .await
        .map_err(|_| anyhow::anyhow!("an unreachable database hung for 20 s"))??;
    Ok(())
}

/// `list` pages newest first by id: each page continues below the last id of the one before,
/// with no job skipped or repeated, filters included.
pub async fn list_pages_by_id(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let ids = q
        .push_batch((0..23).map(|i| job("pages", json!(i))).collect())
        .await?;
    q.push(job("other", json!("x"))).await?;
    let page = |before| ListRequest {
        queue: Some("pages".into()),
        state: Some(JobState::Pending),
        limit: 10,
        before,
        kind: None,
    };
    let mut seen = Vec::new();
    let mut before = None;
    loop {
        let got = q.list(page(before)).await?;
        ensure!(got.len() <= 10);
        ensure!(
            got.windows(2).all(|w| w[0].id > w[1].id),
            "a page is not newest first"
        );
        match got.last() {
            Some(last) => before = Some(last.id),
            None => break,
        }
        seen.extend(got.iter().map(|j| j.id));
        ensure!(seen.len() <= ids.len(), "pages repeat jobs");
    }
    let mut newest_first = ids.clone();
    newest_first.sort();
    newest_first.reverse();
    ensure!(seen == newest_first, "paging skipped or repeated jobs");
    Ok(())
}
