//! Every route and action of the dashboard, in process, on every backend: SQLite always,
//! PostgreSQL and MySQL/MariaDB where `QUEUE_TEST_POSTGRES_URL` and `QUEUE_TEST_MYSQL_URL` are
//! set. Each case asserts what the database holds afterwards, not only what the page says.

#[macro_use]
mod support;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{ensure, Context as _};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use dbqueue::{
    Failure, JobId, JobState, Lease, NewJob, PopRequest, Queue, Snooze, Workflow, WorkflowId,
};
use queue_cli::serve::{router, Dashboard, DashboardConfig, HostPolicy};
use serde_json::value::RawValue;
use support::{cancelled, completed, dead, dead_job, push, running, Client, Fixture, Page};

fn config() -> DashboardConfig {
    DashboardConfig {
        database: "test database".to_owned(),
        cookie_scope: "_test".to_owned(),
        chart_ttl: Duration::ZERO,
        ..DashboardConfig::default()
    }
}

fn client_with(fx: &Fixture, config: DashboardConfig) -> Client {
    Client::new(router(Dashboard::new(fx.queue.clone(), config)))
}

fn client(fx: &Fixture) -> Client {
    client_with(fx, config())
}

async fn state_of(q: &dyn Queue, id: JobId) -> anyhow::Result<JobState> {
    Ok(q.get(id).await?.context("the job exists")?.state)
}

/// The number in the overview cell of `queue` and column `class` (e.g. `dead`).
fn cell(page: &Page, queue: &str, column: usize) -> anyhow::Result<String> {
    let row_start = page
        .body
        .find(&format!("<tr data-queue=\"{queue}\">"))
        .with_context(|| format!("no row for {queue}"))?;
    let row = &page.body[row_start..];
    let row = &row[..row.find("</tr>").context("row end")?];
    let cell = row
        .split("<td class=\"num")
        .nth(column + 1)
        .with_context(|| format!("no column {column}"))?;
    let value = cell
        .split('>')
        .nth(2)
        .and_then(|s| s.split('<').next())
        .context("cell value")?;
    Ok(value.to_owned())
}

/// The HTML of the overview row of `queue`.
fn row<'a>(page: &'a Page, queue: &str) -> anyhow::Result<&'a str> {
    let start = page
        .body
        .find(&format!("<tr data-queue=\"{queue}\">"))
        .with_context(|| format!("no row for {queue}"))?;
    let row = &page.body[start..];
    Ok(&row[..row.find("</tr>").context("row end")?])
}

/// Whether `queue` is paused and its limit, as the library reads them.
async fn controls_of(q: &dyn Queue, queue: &str) -> anyhow::Result<(bool, Option<u32>)> {
    let stats = q.stats(Some(queue)).await?;
    let s = stats
        .iter()
        .find(|s| s.queue == queue)
        .context("a line for the queue")?;
    Ok((s.paused, s.concurrency_limit))
}

async fn rate_of(q: &dyn Queue, queue: &str) -> anyhow::Result<Option<queue_core::RateLimit>> {
    let stats = q.stats(Some(queue)).await?;
    Ok(stats
        .iter()
        .find(|s| s.queue == queue)
        .and_then(|s| s.rate_limit))
}

/// The key limit of `queue` and whether it has fair shares, as the library reads them.
async fn keys_of(q: &dyn Queue, queue: &str) -> anyhow::Result<(Option<u32>, bool)> {
    let stats = q.stats(Some(queue)).await?;
    Ok(stats
        .iter()
        .find(|s| s.queue == queue)
        .map_or((None, false), |s| (s.key_limit, s.fair_shares)))
}

/// The key controls the overview row of `queue` shows under its limit (`2/key`, `fair`), or
/// `-` when it shows none.
fn keys_cell(page: &Page, queue: &str) -> anyhow::Result<String> {
    let row = row(page, queue)?;
    let Some(note) = row.split("<div class=\"hint keys\"").nth(1) else {
        return Ok("-".to_owned());
    };
    let value = note
        .split('>')
        .nth(1)
        .and_then(|s| s.split('<').next())
        .context("keys value")?;
    Ok(value.to_owned())
}

async fn overview_shows_every_queue_with_its_counts(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    completed(q, "emails", "{}").await?;
    completed(q, "emails", "{}").await?;
    dead(q, "emails", "{}", "boom").await?;
    cancelled(q, "emails", "{}").await?;
    running(q, "emails", "{}", "w1").await?;
    push(q, "emails", "{}").await?;
    q.push(NewJob::from_json("reports", "{}")?.delay(Duration::from_secs(3600)))
        .await?;
    let mut c = client(&fx);
    let page = c.get("/").await?.expect(StatusCode::OK)?;
    // waiting, available, scheduled, running, completed, dead, cancelled
    let emails: Vec<String> = (0..7)
        .map(|i| cell(&page, "emails", i))
        .collect::<anyhow::Result<_>>()?;
    ensure!(emails == ["0", "1", "0", "1", "2", "1", "1"], "{emails:?}");
    ensure!(cell(&page, "reports", 2)? == "1");
    page.has(&format!(
        "href=\"{}\"",
        esc("/jobs?queue=emails&state=dead")
    ))?
    .has("data-refresh=\"/fragment/overview\"")?
    .has("last hour: 2 completed, 1 dead")?
    .has("<rect class=\"done\"")?
    .has("<rect class=\"dead\"")?;
    // The security headers are on every page.
    ensure!(page
        .header("content-security-policy")
        .is_some_and(|v| v.contains("script-src 'self'") && !v.contains("unsafe-inline")));
    ensure!(page.header("x-frame-options") == Some("DENY"));
    ensure!(page.header("cache-control") == Some("no-store"));
    ensure!(c.has_cookie("dbqueue_csrf_test"), "the CSRF cookie is set");
    Ok(())
}

/// The fixture's database through a queue that counts finished jobs up to `cap` per queue
/// and state (the default cap is 100,000: too many jobs for a test).
async fn capped_queue(fx: &Fixture, cap: u64) -> anyhow::Result<Arc<dyn Queue>> {
    let mut options = dbqueue::Options {
        limits: dbqueue::Limits {
            stats_count_cap: Some(cap),
            ..dbqueue::Limits::default()
        },
        max_connections: Some(2),
        ..dbqueue::Options::default()
    };
    match fx.args.as_slice() {
        [flag, schema] if flag == "--schema" => options.schema = Some(schema.clone()),
        [flag, prefix] if flag == "--table-prefix" => options.table_prefix = Some(prefix.clone()),
        _ => {}
    }
    Ok(dbqueue::connect_with(&fx.url, options).await?)
}

/// A count that stopped at the stats cap reads as "at least": `2+` in the overview, its
/// totals and a queue's tabs; counts under the cap read as they are.
async fn capped_counts_read_as_at_least(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    for _ in 0..3 {
        completed(q, "emails", "{}").await?;
    }
    dead(q, "emails", "{}", "boom").await?;
    completed(q, "reports", "{}").await?;
    push(q, "reports", "{}").await?;
    let capped = capped_queue(&fx, 2).await?;
    let mut c = Client::new(router(Dashboard::new(capped, config())));
    let page = c.get("/").await?.expect(StatusCode::OK)?;
    // waiting, available, scheduled, running, completed, dead, cancelled
    let emails: Vec<String> = (0..7)
        .map(|i| cell(&page, "emails", i))
        .collect::<anyhow::Result<_>>()?;
    ensure!(emails == ["0", "0", "0", "0", "2+", "1", "0"], "{emails:?}");
    let reports: Vec<String> = (0..7)
        .map(|i| cell(&page, "reports", i))
        .collect::<anyhow::Result<_>>()?;
    ensure!(
        reports == ["0", "1", "0", "0", "1", "0", "0"],
        "{reports:?}"
    );
    let totals = &page.body[page.body.find("<tfoot>").context("totals")?..];
    ensure!(
        totals.contains(">3+</a>") && totals.contains(">1</a>"),
        "{totals}"
    );
    let list = c.get("/jobs?queue=emails").await?.expect(StatusCode::OK)?;
    list.has(">completed <span class=\"count\">2+</span>")?
        .has(">all <span class=\"count\">3+</span>")?
        .has(">dead <span class=\"count\">1</span>")?;
    // The same database without the low cap counts every job.
    let mut exact = client(&fx);
    let page = exact.get("/").await?.expect(StatusCode::OK)?;
    ensure!(cell(&page, "emails", 4)? == "3");
    page.lacks("+</a>")?;
    Ok(())
}

async fn the_overview_fragment_follows_the_database(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let mut c = client(&fx);
    let empty = c.get("/fragment/overview").await?.expect(StatusCode::OK)?;
    empty.has("No jobs yet")?.lacks("<html")?;
    push(q, "emails", "{}").await?;
    let one = c.get("/fragment/overview").await?.expect(StatusCode::OK)?;
    ensure!(cell(&one, "emails", 1)? == "1");
    push(q, "emails", "{}").await?;
    let two = c.get("/fragment/overview").await?.expect(StatusCode::OK)?;
    ensure!(cell(&two, "emails", 1)? == "2");
    Ok(())
}

/// The ids a job list shows, in its order.
fn ids_on(page: &Page) -> anyhow::Result<Vec<JobId>> {
    page.body
        .split("<td class=\"id\"><a href=\"/jobs/")
        .skip(1)
        .map(|part| Ok(part.get(..36).context("an id")?.parse::<JobId>()?))
        .collect()
}

/// The link to the next (older) page of a job list, unescaped, if it has one.
fn older_link(page: &Page) -> Option<String> {
    if !page.body.contains("id=\"older\"") {
        return None;
    }
    page.body
        .split("id=\"older\"")
        .next()
        .and_then(|s| s.rsplit("href=\"").next())
        .map(|href| href.trim_end_matches(['"', ' ']).replace("&#38;", "&"))
}

async fn job_lists_filter_and_page_newest_first(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let mut ids = Vec::new();
    for n in 0..7 {
        ids.push(push(q, "emails", &format!("{{\"n\":{n}}}")).await?);
    }
    push(q, "other", "{}").await?;
    let mut c = client_with(
        &fx,
        DashboardConfig {
            page_size: 3,
            ..config()
        },
    );
    let mut seen = Vec::new();
    let mut path = "/jobs?queue=emails&state=pending".to_owned();
    for _ in 0..5 {
        let page = c.get(&path).await?.expect(StatusCode::OK)?;
        page.has("Queue emails: pending jobs")?
            .has("class=\"active\" aria-current=\"page\">pending <span class=\"count\">7</span>")?;
        seen.extend(ids_on(&page)?);
        match older_link(&page) {
            Some(href) => path = href,
            None => break,
        }
    }
    let newest_first: Vec<JobId> = ids.iter().rev().copied().collect();
    ensure!(
        seen == newest_first,
        "pages gave {seen:?}, expected {newest_first:?}"
    );
    let all = c.get("/jobs").await?.expect(StatusCode::OK)?;
    all.has("All queues")?.has(">other</a>")?;
    Ok(())
}

/// Jobs of three kinds (and none) in two queues: every list shows each job's kind, and
/// `kind=` narrows a list to one kind, across its pages, tabs and filter form.
async fn job_lists_show_and_filter_by_kind(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let kinded = |queue: &str, kind: &str| -> anyhow::Result<NewJob> {
        Ok(NewJob::from_json(queue, "{}")?.kind(kind))
    };
    let mut sends = Vec::new();
    let mut bounces = Vec::new();
    for _ in 0..4 {
        sends.push(q.push(kinded("emails", "mail.send")?).await?);
        bounces.push(q.push(kinded("emails", "mail.bounce")?).await?);
    }
    let plain = push(q, "emails", "{}").await?;
    let elsewhere = q.push(kinded("reports", "mail.send")?).await?;
    let dead_send = dead_job(q, kinded("emails", "mail.send")?, "boom").await?;
    sends.push(dead_send);

    // Every row shows its kind, a link to the same list narrowed to that kind.
    let mut c = client(&fx);
    let page = c.get("/jobs?queue=emails").await?.expect(StatusCode::OK)?;
    page.has("<th scope=\"col\">kind</th>")?
        .has(&format!(
            "<td class=\"kind\"><a href=\"{}\">mail.bounce</a></td>",
            esc("/jobs?queue=emails&kind=mail.bounce")
        ))?
        .has("<td class=\"kind\"></td>")? // the job without a kind
        .has("name=\"kind\" id=\"kind-filter\" value=\"\"")?
        .lacks("id=\"every-kind\"")?;
    let dead_tab = c
        .get("/jobs?queue=emails&state=dead")
        .await?
        .expect(StatusCode::OK)?;
    dead_tab.has(&format!(
        "<a href=\"{}\">mail.send</a>",
        esc("/jobs?queue=emails&state=dead&kind=mail.send")
    ))?;

    // One kind, page after page (three to a page): the filter stays in every link.
    let mut small = client_with(
        &fx,
        DashboardConfig {
            page_size: 3,
            ..config()
        },
    );
    let mut seen = Vec::new();
    let mut path = "/jobs?queue=emails&kind=mail.send".to_owned();
    for n in 0.. {
        ensure!(n < 5, "the pages do not end");
        let page = small.get(&path).await?.expect(StatusCode::OK)?;
        page.has("<h1>Queue emails: jobs of kind mail.send</h1>")?
            .has("<input type=\"hidden\" name=\"queue\" value=\"emails\">")?
            .has("name=\"kind\" id=\"kind-filter\" value=\"mail.send\"")?
            .has(&format!(
                "href=\"{}\" id=\"every-kind\"",
                esc("/jobs?queue=emails")
            ))?
            .has(&format!(
                "href=\"{}\"",
                esc("/jobs?queue=emails&state=dead&kind=mail.send")
            ))?
            // The counts are the queue's, of every kind: not shown for one kind.
            .lacks("<span class=\"count\">")?
            .has("id=\"kind-note\"")?
            .has("Retry all 1 dead jobs of every kind")?;
        seen.extend(ids_on(&page)?);
        match older_link(&page) {
            Some(href) => {
                ensure!(href.contains("kind=mail.send"), "{href}");
                path = href;
            }
            None => break,
        }
    }
    let newest_first: Vec<JobId> = sends.iter().rev().copied().collect();
    ensure!(
        seen == newest_first,
        "pages gave {seen:?}, expected {newest_first:?}"
    );

    // With a state, and across every queue.
    let page = c
        .get("/jobs?queue=emails&state=dead&kind=mail.send")
        .await?
        .expect(StatusCode::OK)?;
    page.has("<h1>Queue emails: dead jobs of kind mail.send</h1>")?
        .has("<input type=\"hidden\" name=\"state\" value=\"dead\">")?;
    ensure!(ids_on(&page)? == [dead_send]);
    let page = c
        .get("/jobs?kind=mail.send")
        .await?
        .expect(StatusCode::OK)?;
    page.has("<h1>All queues: jobs of kind mail.send</h1>")?;
    let all: Vec<JobId> = ids_on(&page)?;
    ensure!(all.contains(&elsewhere) && all.contains(&dead_send) && all.len() == 6);
    ensure!(!all.contains(&plain) && !all.iter().any(|id| bounces.contains(id)));
    c.get("/jobs?queue=emails&kind=nothing.here")
        .await?
        .expect(StatusCode::OK)?
        .has("No jobs of kind nothing.here here.")?;
    // An empty kind is no filter.
    let page = c
        .get("/jobs?queue=emails&kind=")
        .await?
        .expect(StatusCode::OK)?;
    page.has("<h1>Queue emails</h1>")?
        .has("<span class=\"count\">10</span>")?;
    ensure!(ids_on(&page)?.len() == 10);
    // A kind no job can have is refused, naming the field.
    for bad in ["bad%20kind", "%3Cb%3E", &"k".repeat(129)] {
        c.get(&format!("/jobs?queue=emails&kind={bad}"))
            .await?
            .expect(StatusCode::BAD_REQUEST)?
            .has("invalid kind")?
            .lacks("<b>")?;
    }
    Ok(())
}

async fn the_job_page_shows_everything_a_job_carries(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let running_id = running(
        q,
        "emails",
        "{\"to\":\"ada@example.com\",\"n\":[1,2]}",
        "host-a:42",
    )
    .await?;
    let dead_id = dead_job(
        q,
        NewJob::from_json("emails", "{}")?
            .dedup_key("welcome-42")
            .max_attempts(3),
        "SMTP said 550",
    )
    .await?;
    let mut c = client(&fx);
    let page = c
        .get(&format!("/jobs/{running_id}"))
        .await?
        .expect(StatusCode::OK)?;
    page.has(&esc("\"to\": \"ada@example.com\""))? // pretty JSON, escaped
        .has("lease holder</dt><dd id=\"worker\">host-a:42</dd>")?
        .has("1 of 25")?
        .has("id=\"cancel\"")?
        .lacks("id=\"retry\"")?;
    page.has(&esc("\n  \"n\": [\n"))?; // pretty-printed
    let page = c
        .get(&format!("/jobs/{dead_id}"))
        .await?
        .expect(StatusCode::OK)?;
    page.has("SMTP said 550")?
        .has("welcome-42")?
        .has("1 of 3")?
        .has("id=\"retry\"")?
        .lacks("id=\"cancel\"")?;
    // A large payload is shown in part, and says so.
    let big = format!("{{\"blob\":\"{}\"}}", "x".repeat(300 * 1024));
    let big_id = push(q, "emails", &big).await?;
    let page = c
        .get(&format!("/jobs/{big_id}"))
        .await?
        .expect(StatusCode::OK)?;
    page.has(&format!(
        "The payload is 307,211 bytes; the first 262,144 are shown. `queue get {big_id} --json` \
         prints it whole."
    ))?;
    ensure!(page.body.len() < 300 * 1024, "{} bytes", page.body.len());
    c.get(&format!("/jobs/{}", JobId::new()))
        .await?
        .expect(StatusCode::NOT_FOUND)?;
    c.get("/jobs/not-a-uuid")
        .await?
        .expect(StatusCode::BAD_REQUEST)?
        .has("invalid id")?;
    Ok(())
}

/// Claims the first due job of `queue` as `worker`, which must be `id`.
async fn claim(q: &dyn Queue, queue: &str, id: JobId, worker: &str) -> anyhow::Result<Lease> {
    let leased = q
        .pop(
            PopRequest::new(queue)
                .worker(worker)
                .lease(Duration::from_secs(300)),
        )
        .await?;
    let got = leased.into_iter().next().context("pop found nothing")?;
    ensure!(
        got.job.id == id,
        "pop claimed {} instead of {id}",
        got.job.id
    );
    Ok(got.lease)
}

/// The text of each cell of each body row of the table `id` (tags dropped, entities kept).
fn table_rows(page: &Page, id: &str) -> anyhow::Result<Vec<Vec<String>>> {
    let start = page
        .body
        .find(&format!("id=\"{id}\""))
        .with_context(|| format!("no table {id}"))?;
    let table = &page.body[start..];
    let table = &table[..table.find("</table>").context("table end")?];
    let body = table.split("<tbody>").nth(1).context("a body")?;
    let text = |html: &str| {
        let mut out = String::new();
        let mut in_tag = false;
        for c in html.chars() {
            match c {
                '<' => in_tag = true,
                '>' => in_tag = false,
                c if !in_tag => out.push(c),
                _ => {}
            }
        }
        out.trim().to_owned()
    };
    Ok(body
        .split("<tr")
        .skip(1)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| text(&format!("<td{cell}")))
                .collect()
        })
        .collect())
}

/// A job with a kind, a timeout and metadata fails twice, snoozes once, then completes with an
/// output: its page shows each of them, the history as a table, newest first.
async fn the_job_page_shows_kind_history_metadata_and_output(
    fx: Arc<Fixture>,
) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let id = q
        .push(
            NewJob::from_json("emails", "{\"to\":\"ada@example.com\"}")?
                .kind("mail.send")
                .timeout(Duration::from_secs(90))
                .meta(&serde_json::json!({ "tenant": "acme", "progress": { "done": 0 } }))?,
        )
        .await?;
    let first = claim(q, "emails", id, "host-a:1").await?;
    q.fail(&first, Failure::retry_after("SMTP timeout", Duration::ZERO))
        .await?;
    let second = claim(q, "emails", id, "host-b:2").await?;
    q.fail(
        &second,
        Failure::retry_after("SMTP said 451", Duration::ZERO),
    )
    .await?;
    let third = claim(q, "emails", id, "host-c:3").await?;
    q.merge_meta(&third, &serde_json::json!({ "progress": { "done": 3 } }))
        .await?;
    q.snooze(&third, Snooze::new(Duration::ZERO)).await?;
    let last = claim(q, "emails", id, "host-c:3").await?;
    let output = RawValue::from_string(r#"{"message_id":"<m1@mx>","sent":true}"#.to_owned())?;
    q.ack_with_output(&last, &output).await?;
    let job = q.get(id).await?.context("the job")?;
    ensure!(
        job.state == JobState::Completed && job.snoozes == 1 && job.errors.len() == 2,
        "{job:?}"
    );

    let mut c = client(&fx);
    let page = c
        .get(&format!("/jobs/{id}"))
        .await?
        .expect(StatusCode::OK)?;
    page.has(&format!(
        "<dd id=\"kind\"><a href=\"{}\">mail.send</a></dd>",
        esc("/jobs?queue=emails&kind=mail.send")
    ))?
    .has("<dd id=\"snoozes\">1</dd>")?
    .has("<dd id=\"timeout\">1m 30s per attempt</dd>")?
    .has("<dd>3 of 25</dd>")?
    // Metadata and output as indented JSON, escaped.
    // (the keys in the order the database keeps them)
    .has(&esc("\n  \"tenant\": \"acme\""))?
    .has(&esc("\n  \"progress\": {\n    \"done\": 3\n  }"))?
    .has(&esc("\n  \"message_id\": \"<m1@mx>\",\n"))?
    .lacks("<m1@mx>")?
    .has("id=\"errors-note\">2 failed attempts, newest first.</p>")?;
    let rows = table_rows(&page, "errors")?;
    ensure!(rows.len() == 2, "{rows:?}");
    ensure!(
        rows[0][0] == "2" && rows[0][2] == "host-b:2" && rows[0][3] == "SMTP said 451",
        "{rows:?}"
    );
    ensure!(
        rows[1][0] == "1" && rows[1][2] == "host-a:1" && rows[1][3] == "SMTP timeout",
        "{rows:?}"
    );
    let recorded = job.errors[1].at.format("%Y-%m-%d %H:%M:%S").to_string();
    ensure!(rows[0][1].starts_with(&recorded), "{rows:?} at {recorded}");
    // The last error stays in view above the history.
    if let Some(e) = &job.last_error {
        page.has(&format!(
            "<pre class=\"error\" id=\"last-error\">{}</pre>",
            esc(e)
        ))?;
    }

    // A job of no kind, without a timeout, metadata, output or failure shows none of them.
    let plain = push(q, "emails", "{}").await?;
    let page = c
        .get(&format!("/jobs/{plain}"))
        .await?
        .expect(StatusCode::OK)?;
    page.has("<dd id=\"kind\">-</dd>")?
        .has("<dd id=\"snoozes\">0</dd>")?
        .lacks("id=\"timeout\"")?
        .lacks("id=\"meta\"")?
        .lacks("id=\"output\"")?
        .lacks("id=\"errors\"")?
        .has("<p class=\"empty\">None.</p>")?;

    // A history keeps the 20 newest failures, and the page says older ones are gone.
    let long = q
        .push(NewJob::from_json("reports", "{}")?.max_attempts(30))
        .await?;
    for n in 1..=21 {
        let lease = claim(q, "reports", long, &format!("w-{n}")).await?;
        q.fail(
            &lease,
            Failure::retry_after(format!("failure {n}"), Duration::ZERO),
        )
        .await?;
    }
    let page = c
        .get(&format!("/jobs/{long}"))
        .await?
        .expect(StatusCode::OK)?;
    page.has(
        "The 20 most recent failed attempts, newest first: a job keeps no more than 20, so any \
         older ones are gone.",
    )?;
    let rows = table_rows(&page, "errors")?;
    ensure!(rows.len() == 20, "{} rows", rows.len());
    ensure!(
        rows[0][0] == "21" && rows[0][3] == "failure 21",
        "{:?}",
        rows[0]
    );
    ensure!(
        rows[19][0] == "2" && rows[19][3] == "failure 2",
        "{:?}",
        rows[19]
    );
    Ok(())
}

/// The job's run time and priority, as the library reads them.
async fn schedule_of(q: &dyn Queue, id: JobId) -> anyhow::Result<(JobState, DateTime<Utc>, i32)> {
    let job = q.get(id).await?.context("the job exists")?;
    Ok((job.state, job.run_at, job.priority))
}

/// A pending job run now, after a delay, and given a priority from its page: the database holds
/// each change; bad input names its field and changes nothing.
async fn reschedule_moves_a_pending_job(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let id = q
        .push(NewJob::from_json("emails", "{}")?.delay(Duration::from_secs(3600)))
        .await?;
    let path = format!("/jobs/{id}/reschedule");
    let mut c = client(&fx);
    c.get(&format!("/jobs/{id}"))
        .await?
        .expect(StatusCode::OK)?
        .has(&format!("action=\"{path}\""))?
        .has("id=\"reschedule\"")?;

    // Now, with a priority.
    let page = c
        .post(&path, &[("run", "now"), ("delay", ""), ("priority", "7")])
        .await?
        .expect(StatusCode::OK)?;
    page.has("Rescheduled: the job is due now, with priority 7.")?
        .has("<dd id=\"priority-value\">7</dd>")?
        .has("id=\"job-state\">pending")?;
    let (state, run_at, priority) = schedule_of(q, id).await?;
    let now = q.now().await?;
    ensure!(state == JobState::Pending && priority == 7);
    ensure!(run_at <= now, "due now: {run_at} > {now}");
    ensure!(q.stats(Some("emails")).await?[0].available == 1);

    // After a delay, counted from the database's clock; the priority stays.
    let before = q.now().await?;
    c.post(
        &path,
        &[("run", "delay"), ("delay", "2h"), ("priority", "")],
    )
    .await?
    .expect(StatusCode::OK)?
    .has("Rescheduled: the job is due in 2h; its priority is unchanged.")?;
    let after = q.now().await?;
    let (state, run_at, priority) = schedule_of(q, id).await?;
    let two_hours = chrono::TimeDelta::hours(2);
    let slack = chrono::TimeDelta::seconds(2);
    ensure!(state == JobState::Pending && priority == 7);
    ensure!(
        run_at >= before + two_hours - slack && run_at <= after + two_hours + slack,
        "{run_at} is not 2h after {before}..{after}"
    );
    ensure!(q.stats(Some("emails")).await?[0].scheduled == 1);

    // The priority alone: the run time stays.
    c.post(&path, &[("run", "keep"), ("priority", " -2 ")])
        .await?
        .expect(StatusCode::OK)?
        .has("Rescheduled: the job&#39;s priority is now -2; its run time is unchanged.")?;
    let kept = schedule_of(q, id).await?;
    ensure!(kept == (JobState::Pending, run_at, -2), "{kept:?}");

    // Bad input: refused, naming the field; nothing changes.
    for (fields, expected) in [
        (
            vec![("run", "delay"), ("delay", "soon")],
            "Nothing was changed: invalid delay: &#34;soon&#34; is not a duration",
        ),
        (
            vec![("run", "delay"), ("delay", "")],
            "Nothing was changed: invalid delay: must not be empty",
        ),
        (
            vec![("run", "delay"), ("delay", "4000d")],
            "Nothing was changed: invalid delay: must be at most 10 years",
        ),
        (
            vec![("run", "keep"), ("delay", "5m")],
            "Nothing was changed: invalid delay: is used only when the job runs after a delay",
        ),
        (
            vec![("run", "keep"), ("priority", "")],
            "Nothing was changed: invalid reschedule: must change the run time, the priority or \
             both",
        ),
        (
            vec![("run", "now"), ("priority", "high")],
            "Nothing was changed: invalid priority: must be a whole number",
        ),
        (
            vec![("run", "soon")],
            "Nothing was changed: invalid run: must be keep",
        ),
    ] {
        c.post(&path, &fields)
            .await?
            .expect(StatusCode::BAD_REQUEST)?
            .has(expected)?
            .has("id=\"job-state\">pending")?;
        ensure!(
            schedule_of(q, id).await? == kept,
            "{fields:?} changed nothing"
        );
    }
    c.post(
        &format!("/jobs/{}/reschedule", JobId::new()),
        &[("run", "now")],
    )
    .await?
    .expect(StatusCode::NOT_FOUND)?
    .has("not found")?;
    c.post("/jobs/not-a-uuid/reschedule", &[("run", "now")])
        .await?
        .expect(StatusCode::BAD_REQUEST)?
        .has("invalid id")?;

    // Now again: a worker gets it at once.
    c.post(&path, &[("run", "now")])
        .await?
        .expect(StatusCode::OK)?
        .has("Rescheduled: the job is due now; its priority is unchanged.")?;
    let leased = q.pop(PopRequest::new("emails")).await?;
    ensure!(leased.len() == 1 && leased[0].job.id == id);
    Ok(())
}

/// A job claimed after its page was opened, and finished ones, are refused and left as they
/// are; their pages offer no reschedule.
async fn reschedule_refuses_a_job_that_is_not_pending(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let id = push(q, "emails", "{}").await?;
    let mut c = client(&fx);
    c.get(&format!("/jobs/{id}"))
        .await?
        .expect(StatusCode::OK)?
        .has("id=\"reschedule\"")?;
    // A worker claims it before the form is sent.
    claim(q, "emails", id, "host-a:1").await?;
    let held = q.get(id).await?.context("the job")?;
    let page = c
        .post(
            &format!("/jobs/{id}/reschedule"),
            &[("run", "now"), ("priority", "9")],
        )
        .await?
        .expect(StatusCode::CONFLICT)?;
    page.has(&format!(
        "Nothing was changed: cannot reschedule job {id}: it is running"
    ))?
    .has("id=\"job-state\">running")?
    .lacks("id=\"reschedule\"")?;
    let now = q.get(id).await?.context("the job")?;
    ensure!(
        now.state == JobState::Running
            && now.priority == held.priority
            && now.run_at == held.run_at
            && now.worker.as_deref() == Some("host-a:1")
            && now.lease_expires_at == held.lease_expires_at
            && now.attempts == held.attempts,
        "unchanged: {now:?}"
    );
    let done = completed(q, "emails", "{}").await?;
    let gone = dead(q, "emails", "{}", "boom").await?;
    let stopped = cancelled(q, "emails", "{}").await?;
    for (id, state) in [
        (done, JobState::Completed),
        (gone, JobState::Dead),
        (stopped, JobState::Cancelled),
    ] {
        let before = schedule_of(q, id).await?;
        c.get(&format!("/jobs/{id}"))
            .await?
            .expect(StatusCode::OK)?
            .lacks("id=\"reschedule\"")?;
        c.post(
            &format!("/jobs/{id}/reschedule"),
            &[("run", "delay"), ("delay", "1h"), ("priority", "3")],
        )
        .await?
        .expect(StatusCode::CONFLICT)?
        .has(&format!("cannot reschedule job {id}: it is {state}"))?;
        ensure!(schedule_of(q, id).await? == before, "{state} job unchanged");
    }
    Ok(())
}

async fn search_finds_jobs_by_id_and_dedup_key(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let id = q
        .push(NewJob::from_json("emails", "{}")?.dedup_key("order-7"))
        .await?;
    push(q, "emails", "{}").await?;
    let mut c = client(&fx);
    let by_id = c
        .get(&format!("/search?q={id}"))
        .await?
        .expect(StatusCode::SEE_OTHER)?;
    ensure!(by_id.header("location") == Some(format!("/jobs/{id}").as_str()));
    c.get(&format!("/search?q={}", JobId::new()))
        .await?
        .expect(StatusCode::NOT_FOUND)?
        .has("No job has the id")?;
    let by_key = c.get("/search?q=order-7").await?.expect(StatusCode::OK)?;
    by_key
        .has(&format!("/jobs/{id}"))?
        .has("1 job with this dedup key")?;
    c.get("/search?q=order-7&queue=other")
        .await?
        .expect(StatusCode::OK)?
        .has("No job with this dedup key")?;
    c.get("/search?q=x&queue=bad%20name")
        .await?
        .expect(StatusCode::BAD_REQUEST)?
        .has("invalid queue")?;
    Ok(())
}

async fn retry_brings_a_dead_job_back(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let id = dead(q, "emails", "{}", "boom").await?;
    let mut c = client(&fx);
    c.get(&format!("/jobs/{id}"))
        .await?
        .expect(StatusCode::OK)?;
    let page = c
        .post(&format!("/jobs/{id}/retry"), &[])
        .await?
        .expect(StatusCode::OK)?;
    page.has("Retried: the job is pending again")?
        .has("id=\"job-state\">pending")?;
    let job = q.get(id).await?.context("exists")?;
    ensure!(
        job.state == JobState::Pending && job.attempts == 0,
        "{job:?}"
    );
    // Retrying it again is refused, and says why.
    let again = c
        .post(&format!("/jobs/{id}/retry"), &[])
        .await?
        .expect(StatusCode::CONFLICT)?;
    again.has("cannot retry job")?.has("it is pending")?;
    Ok(())
}

async fn cancel_stops_pending_and_running_jobs(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let pending = push(q, "emails", "{}").await?;
    let running = running(q, "reports", "{}", "w").await?;
    let done = completed(q, "emails", "{}").await?;
    let mut c = client(&fx);
    c.get("/").await?;
    for id in [pending, running] {
        c.post(&format!("/jobs/{id}/cancel"), &[])
            .await?
            .expect(StatusCode::OK)?
            .has("Cancelled: the job will not run again")?;
        ensure!(state_of(q, id).await? == JobState::Cancelled);
    }
    c.post(&format!("/jobs/{done}/cancel"), &[])
        .await?
        .expect(StatusCode::CONFLICT)?
        .has("it is completed")?;
    ensure!(state_of(q, done).await? == JobState::Completed);
    Ok(())
}

async fn bulk_retry_retries_every_dead_job_of_the_queue(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let mut dead_ids = Vec::new();
    for n in 0..7 {
        dead_ids.push(dead(q, "emails", &format!("{{\"n\":{n}}}"), "boom").await?);
    }
    // A dead job whose dedup key a live job now holds cannot come back: it is reported.
    let blocked = dead_job(
        q,
        NewJob::from_json("emails", "{}")?.dedup_key("k1"),
        "boom",
    )
    .await?;
    q.push(NewJob::from_json("emails", "{}")?.dedup_key("k1"))
        .await?;
    let other = dead(q, "reports", "{}", "boom").await?;
    let mut c = client_with(
        &fx,
        DashboardConfig {
            bulk_chunk: 3,
            ..config()
        },
    );
    c.get("/jobs?queue=emails")
        .await?
        .has("Retry all 8 dead jobs")?;
    let page = c
        .post("/actions/retry-dead", &[("queue", "emails")])
        .await?
        .expect(StatusCode::OK)?;
    page.has("Retried 7 dead jobs of queue emails")?
        .has("1 could not be retried")?
        .has(&blocked.to_string())?;
    for id in dead_ids {
        ensure!(state_of(q, id).await? == JobState::Pending);
    }
    ensure!(state_of(q, blocked).await? == JobState::Dead);
    ensure!(
        state_of(q, other).await? == JobState::Dead,
        "another queue is untouched"
    );
    Ok(())
}

async fn bulk_retry_stops_at_its_limit(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    for _ in 0..5 {
        dead(q, "emails", "{}", "boom").await?;
    }
    let mut c = client_with(
        &fx,
        DashboardConfig {
            bulk_chunk: 2,
            bulk_limit: 3,
            ..config()
        },
    );
    c.get("/").await?;
    c.post("/actions/retry-dead", &[("queue", "emails")])
        .await?
        .expect(StatusCode::OK)?
        .has("Retried 3 dead jobs")?
        .has("press the button again")?;
    let stats = q.stats(Some("emails")).await?;
    ensure!(stats[0].dead == 2 && stats[0].available == 3, "{stats:?}");
    Ok(())
}

/// The jobs of `queue` by state: available, scheduled, running, completed, dead, cancelled.
async fn counts_of(q: &dyn Queue, queue: &str) -> anyhow::Result<[u64; 6]> {
    let stats = q.stats(Some(queue)).await?;
    Ok(stats.iter().find(|s| s.queue == queue).map_or([0; 6], |s| {
        [
            s.available,
            s.scheduled,
            s.running,
            s.completed,
            s.dead,
            s.cancelled,
        ]
    }))
}

/// The fields of a bulk form: the action and the list's filter.
fn bulk_fields<'a>(
    action: &'a str,
    queue: &'a str,
    state: &'a str,
    kind: &'a str,
    older_than: &'a str,
) -> Vec<(&'static str, &'a str)> {
    vec![
        ("action", action),
        ("queue", queue),
        ("state", state),
        ("kind", kind),
        ("older_than", older_than),
    ]
}

/// Each list offers the bulk actions that apply to it; a button's confirmation page says how
/// many jobs it would change (and changes nothing), and its form changes exactly the jobs of
/// the filter, as the database shows.
async fn bulk_actions_confirm_then_change_exactly_the_filtered_jobs(
    fx: Arc<Fixture>,
) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let mut send = Vec::new();
    for n in 0..3 {
        send.push(
            q.push(NewJob::from_json("emails", &format!("{{\"n\":{n}}}"))?.kind("send"))
                .await?,
        );
    }
    let busy = q
        .push(
            NewJob::from_json("emails", "{}")?
                .kind("send")
                .priority(i32::MAX),
        )
        .await?;
    claim(q, "emails", busy, "w1").await?;
    send.push(busy);
    let digest = q
        .push(NewJob::from_json("emails", "{}")?.kind("digest"))
        .await?;
    let elsewhere = q
        .push(NewJob::from_json("reports", "{}")?.kind("send"))
        .await?;
    let dead_send = dead_job(q, NewJob::from_json("emails", "{}")?.kind("send"), "boom").await?;
    let dead_other = dead(q, "reports", "{}", "boom").await?;
    let done = completed(q, "emails", "{}").await?;
    let emails = counts_of(q, "emails").await?;
    ensure!(emails == [4, 0, 1, 1, 1, 0], "{emails:?}");
    let mut c = client(&fx);

    // The list of a kind offers every action, keeping its filter; a list of completed jobs
    // offers only delete.
    let list = c
        .get("/jobs?queue=emails&kind=send")
        .await?
        .expect(StatusCode::OK)?;
    list.has("<form class=\"bulk\" id=\"bulk\" action=\"/bulk\" method=\"get\"")?
        .has("<input type=\"hidden\" name=\"queue\" value=\"emails\">")?
        .has("<input type=\"hidden\" name=\"kind\" value=\"send\">")?
        .has("id=\"bulk-cancel\" class=\"bulk-action\">Cancel matching jobs…</button>")?
        .has("id=\"bulk-retry\"")?
        .has("id=\"bulk-delete\"")?;
    c.get("/jobs?queue=emails&state=completed")
        .await?
        .expect(StatusCode::OK)?
        .has("id=\"bulk-delete\"")?
        .lacks("id=\"bulk-cancel\"")?
        .lacks("id=\"bulk-retry\"")?;
    c.get("/jobs?queue=nothing")
        .await?
        .expect(StatusCode::OK)?
        .lacks("id=\"bulk\"")?;

    // Cancel: the confirmation counts the pending and the running job of the kind.
    let confirm = c
        .get("/bulk?action=cancel&queue=emails&kind=send&older_than=")
        .await?
        .expect(StatusCode::OK)?;
    confirm
        .has("This will cancel 4 jobs: the waiting, pending and running jobs of queue emails of kind send.")?
        .has("id=\"bulk-confirm\" class=\"danger\">Cancel 4 jobs</button>")?
        .has("<input type=\"hidden\" name=\"action\" value=\"cancel\">")?
        .has(&format!("name=\"csrf\" value=\"{}\"", c.csrf()))?;
    ensure!(
        counts_of(q, "emails").await? == emails,
        "a GET changes nothing"
    );
    let page = c
        .post(
            "/actions/bulk",
            &bulk_fields("cancel", "emails", "", "send", ""),
        )
        .await?
        .expect(StatusCode::OK)?;
    page.has(
        "Cancelled 4 of the waiting, pending and running jobs of queue emails of kind send; skipped 0.",
    )?
    .has("<h1>Queue emails: jobs of kind send</h1>")?;
    for id in &send {
        ensure!(state_of(q, *id).await? == JobState::Cancelled, "{id}");
    }
    ensure!(state_of(q, digest).await? == JobState::Pending);
    ensure!(state_of(q, elsewhere).await? == JobState::Pending);
    ensure!(state_of(q, dead_send).await? == JobState::Dead);

    // Retry the cancelled jobs of the queue: the dead one stays dead.
    c.get("/bulk?action=retry&queue=emails&state=cancelled")
        .await?
        .expect(StatusCode::OK)?
        .has("This will retry 4 jobs: the cancelled jobs of queue emails.")?
        .has("id=\"bulk-confirm\">Retry 4 jobs</button>")?;
    c.post(
        "/actions/bulk",
        &bulk_fields("retry", "emails", "cancelled", "", ""),
    )
    .await?
    .expect(StatusCode::OK)?
    .has("Retried 4 of the cancelled jobs of queue emails; skipped 0.")?;
    for id in &send {
        ensure!(state_of(q, *id).await? == JobState::Pending, "{id}");
    }
    ensure!(state_of(q, dead_send).await? == JobState::Dead);

    // Nothing was created an hour ago: nothing to confirm, and a post deletes nothing.
    c.get("/bulk?action=delete&queue=emails&older_than=1h")
        .await?
        .expect(StatusCode::OK)?
        .has(
            "No job matches: there is nothing to delete among the waiting, pending, completed, dead and \
             cancelled jobs of queue emails, created more than 1h ago.",
        )?
        .lacks("id=\"bulk-confirm\"")?
        .lacks("This cannot be undone.")?;
    c.post(
        "/actions/bulk",
        &bulk_fields("delete", "emails", "", "", "1h"),
    )
    .await?
    .expect(StatusCode::OK)?
    .has("Deleted 0 of")?;
    ensure!(counts_of(q, "emails").await? == [5, 0, 0, 1, 1, 0]);

    // Delete the dead jobs of every queue: the finished ones of other states stay.
    c.get("/bulk?action=delete&state=dead")
        .await?
        .expect(StatusCode::OK)?
        .has("This will delete 2 jobs: the dead jobs of every queue.")?
        .has("This cannot be undone.")?;
    c.post("/actions/bulk", &bulk_fields("delete", "", "dead", "", ""))
        .await?
        .expect(StatusCode::OK)?
        .has("Deleted 2 of the dead jobs of every queue; skipped 0.")?
        .has("<h1>All queues: dead jobs</h1>")?;
    ensure!(q.get(dead_send).await?.is_none() && q.get(dead_other).await?.is_none());
    ensure!(state_of(q, done).await? == JobState::Completed);
    ensure!(counts_of(q, "emails").await? == [5, 0, 0, 1, 0, 0]);
    ensure!(counts_of(q, "reports").await? == [1, 0, 0, 0, 0, 0]);
    Ok(())
}

/// A bulk delete's confirmation says how many waiting workflow steps it cancels (those that
/// need a job it deletes to complete), and the delete does cancel them.
async fn bulk_delete_counts_the_steps_it_cancels(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let wf = dbqueue::Workflow::new()
        .add("a", dbqueue::NewJob::new("imports", &1)?)
        .add_after("b", dbqueue::NewJob::new("reports", &2)?, ["a"])
        .add_after("c", dbqueue::NewJob::new("reports", &3)?, ["a"])
        .add_after(
            "d",
            dbqueue::NewJob::new("reports", &4)?,
            [dbqueue::Dep::on("a").run_anyway()],
        );
    let p = q.push_workflow(wf).await?;
    let mut c = client(&fx);
    c.get("/bulk?action=delete&queue=imports")
        .await?
        .expect(StatusCode::OK)?
        .has("This will delete 1 job: ")?
        .has(
            "It also cancels 2 waiting workflow steps that need one of them to complete \
             (and the steps that wait for those).",
        )?;
    c.post(
        "/actions/bulk",
        &bulk_fields("delete", "imports", "", "", ""),
    )
    .await?
    .expect(StatusCode::OK)?
    .has("Deleted 1 of")?;
    for step in ["b", "c"] {
        let id = p.job(step).context("step")?;
        ensure!(state_of(q, id).await? == JobState::Cancelled, "{step}");
    }
    ensure!(state_of(q, p.job("d").context("d")?).await? == JobState::Pending);
    Ok(())
}

/// A bulk action needs a valid filter and the dashboard's own form: bad input names the field,
/// and a post without the CSRF token, with another one, or from another site changes nothing.
async fn bulk_actions_refuse_bad_filters_and_forged_posts(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    for _ in 0..3 {
        push(q, "emails", "{}").await?;
    }
    let mut c = client(&fx);
    for (path, expected) in [
        (
            "/bulk?action=cancel&state=completed",
            "invalid state: cancel applies to waiting, pending, running jobs, not completed",
        ),
        (
            "/bulk?action=purge",
            "invalid action: must be cancel, retry or delete",
        ),
        ("/bulk?queue=emails", "invalid action"),
        ("/bulk?action=delete&older_than=soon", "invalid older_than"),
        ("/bulk?action=delete&queue=bad%20name", "invalid queue"),
    ] {
        c.get(path)
            .await?
            .expect(StatusCode::BAD_REQUEST)?
            .has(expected)?;
    }
    c.post(
        "/actions/bulk",
        &bulk_fields("delete", "emails", "running", "", ""),
    )
    .await?
    .expect(StatusCode::BAD_REQUEST)?
    .has("invalid state: delete applies to")?;
    let csrf = c.csrf();
    ensure!(csrf.len() == 64);
    let fields = bulk_fields("cancel", "emails", "", "", "");
    let same_origin = [("origin", "http://127.0.0.1:8787")];
    c.post_raw("/actions/bulk", &fields, &same_origin)
        .await?
        .expect(StatusCode::FORBIDDEN)?
        .has("CSRF token is missing")?;
    let other = "0".repeat(64);
    let mut with_token = fields.clone();
    with_token.push(("csrf", &other));
    c.post_raw("/actions/bulk", &with_token, &same_origin)
        .await?
        .expect(StatusCode::FORBIDDEN)?;
    with_token.pop();
    with_token.push(("csrf", &csrf));
    c.post_raw(
        "/actions/bulk",
        &with_token,
        &[("sec-fetch-site", "cross-site")],
    )
    .await?
    .expect(StatusCode::FORBIDDEN)?;
    ensure!(
        counts_of(q, "emails").await? == [3, 0, 0, 0, 0, 0],
        "nothing changed"
    );
    c.post_raw("/actions/bulk", &with_token, &same_origin)
        .await?
        .expect(StatusCode::OK)?;
    ensure!(counts_of(q, "emails").await? == [0, 0, 0, 0, 0, 3]);
    Ok(())
}

async fn prune_deletes_only_what_was_asked(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let done = completed(q, "emails", "{}").await?;
    let gone = dead(q, "emails", "{}", "boom").await?;
    let kept = dead(q, "reports", "{}", "boom").await?;
    let live = push(q, "emails", "{}").await?;
    let mut c = client(&fx);
    c.get("/").await?;
    // Bad input is refused, naming the field, and deletes nothing.
    c.post(
        "/actions/prune",
        &[("older_than", "soon"), ("completed", "on")],
    )
    .await?
    .expect(StatusCode::BAD_REQUEST)?
    .has("Nothing was pruned: invalid older_than")?;
    c.post("/actions/prune", &[("older_than", "1d")])
        .await?
        .expect(StatusCode::BAD_REQUEST)?
        .has("invalid states")?;
    ensure!(q.get(done).await?.is_some());
    // Nothing finished a day ago.
    c.post(
        "/actions/prune",
        &[("older_than", "1d"), ("completed", "on"), ("dead", "on")],
    )
    .await?
    .expect(StatusCode::OK)?
    .has("Pruned 0 completed, dead jobs")?;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    c.post(
        "/actions/prune",
        &[
            ("older_than", "1s"),
            ("completed", "on"),
            ("dead", "on"),
            ("queue", "emails"),
        ],
    )
    .await?
    .expect(StatusCode::OK)?
    .has("Pruned 2 completed, dead jobs that finished more than 1s ago, from queue emails.")?;
    ensure!(q.get(done).await?.is_none() && q.get(gone).await?.is_none());
    ensure!(q.get(kept).await?.is_some() && q.get(live).await?.is_some());
    Ok(())
}

/// Pause, resume, and set and remove a limit from the overview and from the queue's page; bad
/// input shows the library's error and stores nothing.
async fn queue_controls_from_the_overview_and_the_queue_page(
    fx: Arc<Fixture>,
) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    push(q, "emails", "{}").await?;
    push(q, "emails", "{}").await?;
    push(q, "reports", "{}").await?;
    let mut c = client(&fx);
    let page = c.get("/").await?.expect(StatusCode::OK)?;
    let emails = row(&page, "emails")?;
    ensure!(
        emails.contains("<span class=\"qstate running\""),
        "{emails}"
    );
    ensure!(emails.contains("<td class=\"limit\""), "{emails}");
    ensure!(emails.contains("action=\"/actions/pause\""), "{emails}");
    ensure!(emails.contains("action=\"/actions/limit\""), "{emails}");
    ensure!(
        emails.contains("name=\"limit\" value=\"\""),
        "no limit: {emails}"
    );
    ensure!(
        !emails.contains("clear-limit"),
        "no limit to remove: {emails}"
    );
    // The refreshing part carries the forms too, with this browser's CSRF token.
    let csrf = c.csrf();
    c.get("/fragment/overview")
        .await?
        .expect(StatusCode::OK)?
        .has(&format!("name=\"csrf\" value=\"{csrf}\""))?
        .has("action=\"/actions/pause\"")?;

    // Pause: the overview says so, and nothing of the queue is given out.
    let page = c
        .post(
            "/actions/pause",
            &[("queue", "emails"), ("back", "overview")],
        )
        .await?
        .expect(StatusCode::OK)?;
    page.has("Paused queue emails: no job of it is given out")?;
    let emails = row(&page, "emails")?;
    ensure!(emails.contains("<span class=\"qstate paused\""), "{emails}");
    ensure!(emails.contains("action=\"/actions/resume\""), "{emails}");
    ensure!(controls_of(q, "emails").await? == (true, None));
    ensure!(q.pop(PopRequest::new("emails")).await?.is_empty());
    ensure!(
        controls_of(q, "reports").await? == (false, None),
        "another queue is untouched"
    );

    // A limit, from the queue's page: that page comes back, saying what is now true.
    let page = c
        .post(
            "/actions/limit",
            &[("queue", "emails"), ("limit", " 4 "), ("back", "queue")],
        )
        .await?
        .expect(StatusCode::OK)?;
    page.has("<h1>Queue emails</h1>")?
        .has("Queue emails: at most 4 jobs run at once.")?
        .has("Paused: no job is given out until it is resumed; at most 4 jobs run at once.")?
        .has("value=\"4\"")?
        .has("Remove limit")?;
    ensure!(controls_of(q, "emails").await? == (true, Some(4)));

    // Bad input: the library's words (or, for text that is no number, the same field's), and
    // nothing stored.
    for (limit, expected) in [
        ("0", "invalid concurrency_limit: must be at least 1"),
        (
            "2000000",
            "invalid concurrency_limit: must be at most 1000000 (got 2000000)",
        ),
        ("abc", "invalid concurrency_limit: must be a whole number"),
        ("-3", "invalid concurrency_limit: must be a whole number"),
        ("", "invalid concurrency_limit: must be a whole number"),
    ] {
        c.post(
            "/actions/limit",
            &[("queue", "emails"), ("limit", limit), ("back", "overview")],
        )
        .await?
        .expect(StatusCode::BAD_REQUEST)?
        .has(&format!("Nothing was changed: {expected}"))?
        .has("<h1>Queues</h1>")?;
        ensure!(
            controls_of(q, "emails").await? == (true, Some(4)),
            "{limit:?} changed nothing"
        );
    }
    for path in ["/actions/pause", "/actions/resume", "/actions/limit"] {
        c.post(path, &[("queue", "bad name"), ("limit", "3")])
            .await?
            .expect(StatusCode::BAD_REQUEST)?
            .has("Nothing was changed: invalid queue")?;
    }
    ensure!(q.controls().await?.len() == 1, "{:?}", q.controls().await?);

    // Resume: the queue gives out jobs again, within its limit.
    c.post("/actions/resume", &[("queue", "emails"), ("back", "queue")])
        .await?
        .expect(StatusCode::OK)?
        .has("Resumed queue emails: its jobs are given out again.")?
        .has("Running; at most 4 jobs run at once.")?;
    ensure!(controls_of(q, "emails").await? == (false, Some(4)));
    ensure!(q.pop(PopRequest::new("emails")).await?.len() == 1);

    // Remove the limit with its button (whatever the field says), or by typing `none`.
    let page = c
        .post(
            "/actions/limit",
            &[("queue", "emails"), ("limit", "4"), ("clear", "1")],
        )
        .await?
        .expect(StatusCode::OK)?;
    page.has("Queue emails: no concurrency limit.")?;
    ensure!(controls_of(q, "emails").await? == (false, None));
    // A queue without jobs gets a row once it has a control.
    let page = c
        .post("/actions/limit", &[("queue", "idle"), ("limit", "1")])
        .await?
        .expect(StatusCode::OK)?;
    page.has("Queue idle: at most 1 job runs at once.")?;
    let idle = row(&page, "idle")?;
    ensure!(
        idle.contains("name=\"limit\" value=\"1\"") && idle.contains("clear-limit"),
        "{idle}"
    );
    c.post("/actions/limit", &[("queue", "idle"), ("limit", "none")])
        .await?
        .expect(StatusCode::OK)?
        .has("Queue idle: no concurrency limit.")?;
    ensure!(q.controls().await?.is_empty(), "{:?}", q.controls().await?);

    // A rate limit, from the queue's page, as N/PERIOD; bad text changes nothing; its button
    // removes it.
    let page = c
        .post(
            "/actions/rate",
            &[("queue", "emails"), ("rate", " 100/1m "), ("back", "queue")],
        )
        .await?
        .expect(StatusCode::OK)?;
    page.has("Queue emails: at most 100 jobs start per 1m.")?
        .has("Running; no concurrency limit; at most 100 jobs start per 1m.")?
        .has("name=\"rate\" value=\"100/1m\"")?
        .has("Remove rate")?;
    let hundred = queue_core::RateLimit::new(100, Duration::from_secs(60))?;
    ensure!(rate_of(q, "emails").await? == Some(hundred));
    for (text, expected) in [
        ("0/1m", "invalid rate_limit.limit: must be at least 1"),
        (
            "5/1ms",
            "invalid rate_limit.period: must be from 10 ms to 7 days",
        ),
        ("fast", "invalid rate_limit: must be N/PERIOD"),
    ] {
        c.post(
            "/actions/rate",
            &[("queue", "emails"), ("rate", text), ("back", "queue")],
        )
        .await?
        .expect(StatusCode::BAD_REQUEST)?
        .has(&format!("Nothing was changed: {expected}"))?;
        ensure!(
            rate_of(q, "emails").await? == Some(hundred),
            "{text:?} changed nothing"
        );
    }
    c.post(
        "/actions/rate",
        &[
            ("queue", "emails"),
            ("rate", "100/1m"),
            ("clear", "1"),
            ("back", "queue"),
        ],
    )
    .await?
    .expect(StatusCode::OK)?
    .has("Queue emails: no rate limit.")?;
    ensure!(rate_of(q, "emails").await?.is_none());
    ensure!(q.controls().await?.is_empty(), "{:?}", q.controls().await?);
    Ok(())
}

/// The key limit and fair shares, from the queue's page and the overview: set, shown, removed;
/// bad input names its field and stores nothing; the hot keys are listed, their text escaped.
async fn key_controls_from_the_queue_page(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    for key in ["acme", "acme", "acme", SCRIPT, IMG] {
        q.push(NewJob::from_json("emails", "{}")?.concurrency_key(key))
            .await?;
    }
    push(q, "reports", "{}").await?;
    let mut c = client(&fx);

    // Nothing set: the page says so, offers both forms, and lists no hot keys.
    let page = c.get("/jobs?queue=emails").await?.expect(StatusCode::OK)?;
    page.has("<h2 id=\"keys-heading\">Concurrency keys</h2>")?
        .has("No key limit; no key rate limit; fair shares off.")?
        .has("action=\"/actions/keys\"")?
        .has("name=\"key_limit\" value=\"\"")?
        .has("name=\"fair\" value=\"on\"")?
        .has("Turn fair shares on")?
        .lacks("clear-key-limit")?
        .lacks("id=\"hot-keys\"")?;
    let overview = c.get("/").await?.expect(StatusCode::OK)?;
    ensure!(keys_cell(&overview, "emails")? == "-");

    // A key limit: the queue's page comes back, saying what is now true.
    let page = c
        .post(
            "/actions/keys",
            &[("queue", "emails"), ("key_limit", " 2 "), ("back", "queue")],
        )
        .await?
        .expect(StatusCode::OK)?;
    page.has("<h1>Queue emails</h1>")?
        .has("Queue emails: at most 2 jobs per concurrency key run at once.")?
        .has("Running; no concurrency limit; at most 2 jobs per concurrency key run at once.")?
        .has(
            "At most 2 jobs per concurrency key run at once; no key rate limit; fair shares off \
             (a key limit takes turns across keys).",
        )?
        .has("name=\"key_limit\" value=\"2\"")?
        .has("Remove key limit")?;
    ensure!(keys_of(q, "emails").await? == (Some(2), false));
    ensure!(keys_of(q, "reports").await? == (None, false), "untouched");

    // Claims respect it: two of acme's three run, one waits; the page lists the hot keys,
    // most running first, their markup as text.
    let leased = q.pop(PopRequest::new("emails").limit(10)).await?;
    ensure!(leased.len() == 4, "{} claimed", leased.len());
    let page = c.get("/jobs?queue=emails").await?.expect(StatusCode::OK)?;
    page.lacks("<script>document")?.lacks("<img")?;
    let rows = table_rows(&page, "hot-keys")?;
    ensure!(
        rows.first() == Some(&vec!["acme".to_owned(), "2".to_owned(), "1".to_owned()]),
        "{rows:?}"
    );
    let mut rest: Vec<Vec<String>> = rows[1..].to_vec();
    rest.sort();
    let mut expected = vec![
        vec![esc(SCRIPT), "1".to_owned(), "0".to_owned()],
        vec![esc(IMG), "1".to_owned(), "0".to_owned()],
    ];
    expected.sort();
    ensure!(rest == expected, "{rows:?}");

    // Bad input: the field's name and rule, and nothing stored (not even the valid field of
    // the two).
    for (fields, said) in [
        (
            vec![("key_limit", "0")],
            "invalid key_limit: must be at least 1",
        ),
        (
            vec![("key_limit", "2000000")],
            "invalid key_limit: must be at most 1000000 (got 2000000)",
        ),
        (
            vec![("key_limit", "abc")],
            "invalid key_limit: must be a whole number",
        ),
        (
            vec![("key_limit", "-3")],
            "invalid key_limit: must be a whole number",
        ),
        (
            vec![("key_limit", "")],
            "invalid key_limit: must be a whole number",
        ),
        (
            vec![("key_limit", "5"), ("fair", "maybe")],
            "invalid fair: must be `on` or `off` (got `maybe`)",
        ),
        (
            vec![("fair", "on"), ("key_limit", "0")],
            "invalid key_limit: must be at least 1",
        ),
        (vec![], "invalid key_limit: give a key limit"),
    ] {
        let mut form = vec![("queue", "emails"), ("back", "queue")];
        form.extend(fields.iter().copied());
        c.post("/actions/keys", &form)
            .await?
            .expect(StatusCode::BAD_REQUEST)?
            .has(&format!("Nothing was changed: {said}"))?
            .has("<h1>Queue emails</h1>")?;
        ensure!(
            keys_of(q, "emails").await? == (Some(2), false),
            "{fields:?} changed nothing"
        );
    }
    c.post(
        "/actions/keys",
        &[("queue", "bad name"), ("key_limit", "3"), ("fair", "on")],
    )
    .await?
    .expect(StatusCode::BAD_REQUEST)?
    .has("Nothing was changed: invalid queue")?;

    // Fair shares on, from the overview: the overview comes back, the row saying so.
    let page = c
        .post(
            "/actions/keys",
            &[("queue", "emails"), ("fair", "on"), ("back", "overview")],
        )
        .await?
        .expect(StatusCode::OK)?;
    page.has("<h1>Queues</h1>")?
        .has("Queue emails: claims take turns across concurrency keys.")?;
    ensure!(keys_cell(&page, "emails")? == "2/key");
    ensure!(keys_of(q, "emails").await? == (Some(2), true));
    c.get("/jobs?queue=emails")
        .await?
        .expect(StatusCode::OK)?
        .has(
            "At most 2 jobs per concurrency key run at once; no key rate limit; fair shares on: claims take turns \
             across concurrency keys.",
        )?
        .has("name=\"fair\" value=\"off\"")?
        .has("Turn fair shares off")?;

    // Remove the key limit with its button (whatever the field says): fair shares stay.
    let page = c
        .post(
            "/actions/keys",
            &[
                ("queue", "emails"),
                ("key_limit", "2"),
                ("clear", "1"),
                ("back", "overview"),
            ],
        )
        .await?
        .expect(StatusCode::OK)?;
    page.has("Queue emails: no key limit.")?;
    ensure!(keys_cell(&page, "emails")? == "fair");
    ensure!(keys_of(q, "emails").await? == (None, true));

    // Both at once, then both off (`none` removes the limit as its button does).
    c.post(
        "/actions/keys",
        &[
            ("queue", "emails"),
            ("key_limit", "5"),
            ("fair", "off"),
            ("back", "queue"),
        ],
    )
    .await?
    .expect(StatusCode::OK)?
    .has("Queue emails: at most 5 jobs per concurrency key run at once; fair shares off.")?;
    ensure!(keys_of(q, "emails").await? == (Some(5), false));
    c.post(
        "/actions/keys",
        &[
            ("queue", "emails"),
            ("key_limit", "none"),
            ("back", "queue"),
        ],
    )
    .await?
    .expect(StatusCode::OK)?
    .has("Queue emails: no key limit.")?
    .has("No key limit; no key rate limit; fair shares off.")?;
    ensure!(keys_of(q, "emails").await? == (None, false));

    // A key rate limit from its own form: set, refused when bad (nothing stored), removed.
    c.post(
        "/actions/keys",
        &[("queue", "emails"), ("key_rate", "3/1s"), ("back", "queue")],
    )
    .await?
    .expect(StatusCode::OK)?
    .has("Queue emails: at most 3 jobs per concurrency key start per 1s.")?
    .has("name=\"key_rate\" value=\"3/1s\"")?
    .has("Remove key rate")?;
    async fn rate(q: &dyn Queue) -> anyhow::Result<Option<dbqueue::RateLimit>> {
        Ok(q.stats(Some("emails"))
            .await?
            .first()
            .and_then(|s| s.key_rate_limit))
    }
    let three = dbqueue::RateLimit::new(3, Duration::from_secs(1))?;
    ensure!(rate(q).await? == Some(three));
    for (text, said) in [
        ("0/1s", "invalid key_rate_limit.limit: must be at least 1"),
        ("5/1ms", "invalid key_rate_limit.period"),
    ] {
        c.post(
            "/actions/keys",
            &[("queue", "emails"), ("key_rate", text), ("back", "queue")],
        )
        .await?
        .expect(StatusCode::BAD_REQUEST)?
        .has(&format!("Nothing was changed: {said}"))?;
        ensure!(rate(q).await? == Some(three), "{text} changed nothing");
    }
    c.post(
        "/actions/keys",
        &[
            ("queue", "emails"),
            ("key_rate", "3/1s"),
            ("clear_key_rate", "1"),
            ("back", "queue"),
        ],
    )
    .await?
    .expect(StatusCode::OK)?
    .has("Queue emails: no key rate limit.")?;
    ensure!(rate(q).await?.is_none());
    ensure!(q.controls().await?.is_empty(), "{:?}", q.controls().await?);
    Ok(())
}

async fn read_only_shows_no_actions_and_refuses_them(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let id = dead(q, "emails", "{}", "boom").await?;
    let pending = push(q, "emails", "{}").await?;
    let pending_before = schedule_of(q, pending).await?;
    q.pause("emails").await?;
    q.set_concurrency_limit("emails", Some(3)).await?;
    q.set_key_limit("emails", Some(2)).await?;
    let mut c = client_with(
        &fx,
        DashboardConfig {
            read_only: true,
            ..config()
        },
    );
    for path in [
        "/".to_owned(),
        "/jobs?queue=emails".to_owned(),
        format!("/jobs/{id}"),
        format!("/jobs/{pending}"),
    ] {
        let page = c.get(&path).await?.expect(StatusCode::OK)?;
        page.lacks("method=\"post\"")?
            .lacks("id=\"reschedule\"")?
            .lacks("id=\"bulk\"")?
            .has("id=\"read-only\"")?;
    }
    // The controls are shown, without their forms.
    let page = c.get("/").await?.expect(StatusCode::OK)?;
    let emails = row(&page, "emails")?;
    ensure!(emails.contains("<span class=\"qstate paused\""), "{emails}");
    ensure!(
        emails.contains(">3<div class=\"hint keys\""),
        "the limit, then the key limit: {emails}"
    );
    c.get("/fragment/overview")
        .await?
        .expect(StatusCode::OK)?
        .has("qstate paused")?
        .lacks("method=\"post\"")?
        .lacks("<th scope=\"col\">controls</th>")?;
    ensure!(keys_cell(&page, "emails")? == "2/key");
    c.get("/jobs?queue=emails")
        .await?
        .expect(StatusCode::OK)?
        .has(
            "Paused: no job is given out until it is resumed; at most 3 jobs run at once; at \
             most 2 jobs per concurrency key run at once.",
        )?
        .has("At most 2 jobs per concurrency key run at once;")?
        .lacks("name=\"key_limit\"")?
        .lacks("Turn fair shares")?;
    for (path, fields) in [
        (format!("/jobs/{id}/retry"), vec![]),
        (format!("/jobs/{pending}/cancel"), vec![]),
        (
            format!("/jobs/{pending}/reschedule"),
            vec![("run", "delay"), ("delay", "1h"), ("priority", "5")],
        ),
        ("/actions/retry-dead".to_owned(), vec![("queue", "emails")]),
        (
            "/actions/bulk".to_owned(),
            vec![("action", "delete"), ("queue", "emails")],
        ),
        (
            "/actions/prune".to_owned(),
            vec![("older_than", "0s"), ("dead", "on")],
        ),
        ("/actions/pause".to_owned(), vec![("queue", "reports")]),
        ("/actions/resume".to_owned(), vec![("queue", "emails")]),
        (
            "/actions/limit".to_owned(),
            vec![("queue", "emails"), ("limit", "9")],
        ),
        (
            "/actions/limit".to_owned(),
            vec![("queue", "emails"), ("clear", "1")],
        ),
        (
            "/actions/keys".to_owned(),
            vec![("queue", "emails"), ("key_limit", "9")],
        ),
        (
            "/actions/keys".to_owned(),
            vec![("queue", "emails"), ("clear", "1")],
        ),
        (
            "/actions/keys".to_owned(),
            vec![("queue", "emails"), ("fair", "on")],
        ),
    ] {
        c.post(&path, &fields)
            .await?
            .expect(StatusCode::FORBIDDEN)?
            .has("read-only")?;
    }
    // The confirmation page of a bulk action is refused too.
    c.get("/bulk?action=delete&queue=emails")
        .await?
        .expect(StatusCode::FORBIDDEN)?
        .has("read-only")?
        .lacks("method=\"post\"")?;
    ensure!(state_of(q, id).await? == JobState::Dead);
    ensure!(schedule_of(q, pending).await? == pending_before);
    ensure!(controls_of(q, "emails").await? == (true, Some(3)));
    ensure!(keys_of(q, "emails").await? == (Some(2), false));
    ensure!(q.controls().await?.len() == 1, "reports was not paused");
    Ok(())
}

const TOKEN: &str = "s3cret-token-0123456789";

async fn a_token_guards_every_page_and_action(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let id = dead(q, "emails", "{}", "boom").await?;
    let cfg = || DashboardConfig {
        auth_token: Some(TOKEN.to_owned()),
        ..config()
    };
    // No token: every page answers 401 with the login form, and nothing leaks.
    let mut c = client_with(&fx, cfg());
    for path in [
        "/",
        "/jobs?queue=emails",
        &format!("/jobs/{id}"),
        "/search?q=x",
        "/bulk?action=retry&queue=emails",
    ] {
        let page = c.get(path).await?.expect(StatusCode::UNAUTHORIZED)?;
        page.has("name=\"token\"")?
            .lacks("data-queue")?
            .lacks("boom")?;
    }
    c.get("/fragment/overview")
        .await?
        .expect(StatusCode::UNAUTHORIZED)?;
    c.get("/static/app.css").await?.expect(StatusCode::OK)?;
    c.post(&format!("/jobs/{id}/retry"), &[])
        .await?
        .expect(StatusCode::UNAUTHORIZED)?;
    // A wrong token, typed or sent as a header, is refused and changes nothing.
    c.post(
        "/login",
        &[("token", "wrong-token-0123456789"), ("next", "/")],
    )
    .await?
    .expect(StatusCode::UNAUTHORIZED)?
    .has("The token is wrong.")?;
    ensure!(!c.has_cookie("dbqueue_session"));
    let mut wrong = client_with(&fx, cfg());
    wrong.bearer = Some("wrong-token-0123456789".to_owned());
    wrong.get("/").await?.expect(StatusCode::UNAUTHORIZED)?;
    wrong
        .post(&format!("/jobs/{id}/retry"), &[])
        .await?
        .expect(StatusCode::UNAUTHORIZED)?;
    ensure!(state_of(q, id).await? == JobState::Dead);
    // The right token, as a header: no CSRF form token needed (a browser never adds it).
    let mut api = client_with(&fx, cfg());
    api.bearer = Some(TOKEN.to_owned());
    api.get("/").await?.expect(StatusCode::OK)?;
    // Logging in opens a session that the pages accept, until logout.
    let login = c
        .post(
            "/login",
            &[("token", TOKEN), ("next", "/jobs?queue=emails")],
        )
        .await?
        .expect(StatusCode::SEE_OTHER)?;
    ensure!(login.header("location") == Some("/jobs?queue=emails"));
    ensure!(login
        .header("set-cookie")
        .is_some_and(|v| v.contains("HttpOnly") && v.contains("SameSite=Strict")));
    c.get("/").await?.expect(StatusCode::OK)?.has("Log out")?;
    c.post(&format!("/jobs/{id}/retry"), &[])
        .await?
        .expect(StatusCode::OK)?;
    ensure!(state_of(q, id).await? == JobState::Pending);
    c.post("/logout", &[])
        .await?
        .expect(StatusCode::SEE_OTHER)?;
    c.get("/").await?.expect(StatusCode::UNAUTHORIZED)?;
    Ok(())
}

/// Where a login returns to: a page of this dashboard, or `/` when `next` would leave it, with
/// no token (`GET /login` redirects at once) and with one (`POST /login`).
async fn a_login_returns_only_to_this_dashboard(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let cases = [
        ("/jobs?state=dead", "/jobs?state=dead"),
        ("/\t/evil.example", "/"),
        ("/\n/evil.example", "/"),
        ("/\r/evil.example", "/"),
        ("//evil.example", "/"),
        ("/\\evil.example", "/"),
        ("/.//evil.example", "/"),
        ("https://evil.example/", "/"),
        ("javascript:alert(1)", "/"),
        ("/%2F%2Fevil.example", "/%2F%2Fevil.example"),
    ];
    let mut open = client(&fx);
    for (next, expected) in cases {
        let page = open
            .get(&format!("/login?next={}", support::query_value(next)))
            .await?
            .expect(StatusCode::SEE_OTHER)?;
        ensure!(
            page.header("location") == Some(expected),
            "GET /login with next {next:?}: Location {:?}, not {expected:?}",
            page.header("location")
        );
    }
    let mut c = client_with(
        &fx,
        DashboardConfig {
            auth_token: Some(TOKEN.to_owned()),
            ..config()
        },
    );
    c.get("/login").await?.expect(StatusCode::OK)?;
    for (next, expected) in cases {
        let page = c
            .post("/login", &[("token", TOKEN), ("next", next)])
            .await?
            .expect(StatusCode::SEE_OTHER)?;
        ensure!(
            page.header("location") == Some(expected),
            "POST /login with next {next:?}: Location {:?}, not {expected:?}",
            page.header("location")
        );
    }
    Ok(())
}

async fn forged_and_cross_site_posts_are_refused(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let id = dead(q, "emails", "{}", "boom").await?;
    let mut c = client(&fx);
    c.get("/").await?;
    let csrf = c.csrf();
    ensure!(csrf.len() == 64);
    let path = format!("/jobs/{id}/retry");
    let same_origin = [("origin", "http://127.0.0.1:8787")];
    // No token in the form.
    c.post_raw(&path, &[], &same_origin)
        .await?
        .expect(StatusCode::FORBIDDEN)?;
    // A token that is not this browser's.
    let other = "0".repeat(64);
    c.post_raw(&path, &[("csrf", &other)], &same_origin)
        .await?
        .expect(StatusCode::FORBIDDEN)?;
    // The right token from another site, by Origin or by Sec-Fetch-Site.
    c.post_raw(
        &path,
        &[("csrf", &csrf)],
        &[("origin", "http://evil.example")],
    )
    .await?
    .expect(StatusCode::FORBIDDEN)?;
    c.post_raw(
        &path,
        &[("csrf", &csrf)],
        &[("sec-fetch-site", "cross-site")],
    )
    .await?
    .expect(StatusCode::FORBIDDEN)?;
    ensure!(state_of(q, id).await? == JobState::Dead, "nothing changed");
    c.post_raw(&path, &[("csrf", &csrf)], &same_origin)
        .await?
        .expect(StatusCode::OK)?;
    ensure!(state_of(q, id).await? == JobState::Pending);
    // The queue controls are guarded the same way.
    for (path, fields) in [
        ("/actions/pause", vec![("queue", "emails")]),
        ("/actions/limit", vec![("queue", "emails"), ("limit", "2")]),
        (
            "/actions/keys",
            vec![("queue", "emails"), ("key_limit", "2")],
        ),
        ("/actions/keys", vec![("queue", "emails"), ("fair", "on")]),
    ] {
        c.post_raw(path, &fields, &same_origin)
            .await?
            .expect(StatusCode::FORBIDDEN)?;
        let mut with_token = fields.clone();
        with_token.push(("csrf", &csrf));
        c.post_raw(path, &with_token, &[("sec-fetch-site", "cross-site")])
            .await?
            .expect(StatusCode::FORBIDDEN)?;
    }
    ensure!(q.controls().await?.is_empty(), "nothing changed");
    // So is a reschedule.
    let pending = push(q, "emails", "{}").await?;
    let before = schedule_of(q, pending).await?;
    let path = format!("/jobs/{pending}/reschedule");
    let fields = [("run", "delay"), ("delay", "1h"), ("priority", "4")];
    c.post_raw(&path, &fields, &same_origin)
        .await?
        .expect(StatusCode::FORBIDDEN)?
        .has("CSRF token is missing")?;
    let mut with_token = fields.to_vec();
    with_token.push(("csrf", &other));
    c.post_raw(&path, &with_token, &same_origin)
        .await?
        .expect(StatusCode::FORBIDDEN)?;
    with_token.pop();
    with_token.push(("csrf", &csrf));
    c.post_raw(&path, &with_token, &[("origin", "http://evil.example")])
        .await?
        .expect(StatusCode::FORBIDDEN)?;
    ensure!(schedule_of(q, pending).await? == before, "nothing changed");
    c.post_raw(&path, &with_token, &same_origin)
        .await?
        .expect(StatusCode::OK)?;
    ensure!(schedule_of(q, pending).await?.2 == 4);
    Ok(())
}

async fn foreign_host_names_are_refused(fx: Arc<Fixture>) -> anyhow::Result<()> {
    push(fx.queue.as_ref(), "emails", "{}").await?;
    let mut c = client(&fx);
    c.host = "rebound.example:8787".to_owned();
    c.get("/")
        .await?
        .expect(StatusCode::FORBIDDEN)?
        .lacks("emails")?;
    let mut any = client_with(
        &fx,
        DashboardConfig {
            hosts: HostPolicy::Any,
            auth_token: Some(TOKEN.to_owned()),
            ..config()
        },
    );
    any.host = "queue.internal:8787".to_owned();
    any.bearer = Some(TOKEN.to_owned());
    any.get("/").await?.expect(StatusCode::OK)?;
    Ok(())
}

/// The workflows page lists each workflow with its jobs per state, newest first, a page at a
/// time; a workflow's page shows each step's job, its state and what it waits for, as stored;
/// a step's job page links to its workflow, lists its dependencies and says which one
/// cancelled it; the lists and the overview count waiting jobs. Bad and unknown ids are
/// refused.
async fn workflow_pages_show_each_step_and_what_it_waits_for(
    fx: Arc<Fixture>,
) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let nightly = q
        .push_workflow(
            Workflow::chain([
                NewJob::from_json("reports", "{}")?,
                NewJob::from_json("reports", "{}")?,
            ])
            .name("nightly"),
        )
        .await?;
    let album = support::album(q, "media", "album-42", "404 not found").await?;
    let step = |name: &str| album.job(name).context("a step");
    let (fetch, resize, cleanup, report) = (
        step("fetch")?,
        step("resize")?,
        step("cleanup")?,
        step("report")?,
    );
    let plain = push(q, "media", "{}").await?;
    let mut c = client(&fx);

    // The list, newest first: id, name, created, status, jobs, then each state's count.
    let list = c.get("/workflows").await?.expect(StatusCode::OK)?;
    let rows = table_rows(&list, "workflows")?;
    ensure!(rows.len() == 2, "{rows:?}");
    ensure!(rows[0][0] == album.id.to_string() && rows[0][1] == "album-42");
    ensure!(
        rows[0][3..] == ["active", "4", "1", "1", "0", "0", "1", "1"],
        "{rows:?}"
    );
    ensure!(rows[1][0] == nightly.id.to_string() && rows[1][1] == "nightly");
    ensure!(
        rows[1][3..] == ["active", "2", "1", "1", "0", "0", "0", "0"],
        "{rows:?}"
    );
    list.has(&format!("href=\"/workflows/{}\"", album.id))?
        .has("href=\"/workflows\" id=\"nav-workflows\"")?;
    let mut paged = client_with(
        &fx,
        DashboardConfig {
            page_size: 1,
            ..config()
        },
    );
    let first = paged.get("/workflows").await?.expect(StatusCode::OK)?;
    first
        .has(&album.id.to_string())?
        .lacks(&nightly.id.to_string())?
        .has(&format!(
            "href=\"/workflows?before={}\" id=\"older\"",
            album.id
        ))?;
    let second = paged
        .get(&format!("/workflows?before={}", album.id))
        .await?
        .expect(StatusCode::OK)?;
    second
        .has(&nightly.id.to_string())?
        .lacks(&format!("data-workflow=\"{}\"", album.id))?
        .has("id=\"newest\"")?
        .lacks("id=\"older\"")?;

    // The workflow: a row per step, in push order, as the database has it.
    let page = c
        .get(&format!("/workflows/{}", album.id))
        .await?
        .expect(StatusCode::OK)?;
    page.has("id=\"workflow-name\">album-42<")?
        .has("4 jobs: 1 waiting, 1 pending, 1 dead, 1 cancelled")?;
    let rows = table_rows(&page, "steps")?;
    let info = q.workflow(album.id).await?.context("the workflow")?;
    ensure!(rows.len() == info.jobs.len(), "{rows:?}");
    for (row, stored) in rows.iter().zip(&info.jobs) {
        ensure!(
            row[0] == stored.step
                && row[1] == stored.job.id.to_string()
                && row[2] == stored.job.state.as_str(),
            "{row:?} against {stored:?}"
        );
    }
    let shown: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r[0].as_str(), r[2].as_str()))
        .collect();
    ensure!(
        shown
            == [
                ("fetch", "dead"),
                ("resize", "cancelled"),
                ("cleanup", "pending"),
                ("report", "waiting")
            ],
        "{shown:?}"
    );
    ensure!(rows[0][6] == "nothing" && rows[0][7] == "404 not found");
    ensure!(
        rows[1][6] == "fetchcancelled because fetch ended dead",
        "{rows:?}"
    );
    ensure!(rows[2][6] == "fetch (any outcome)", "{rows:?}");
    ensure!(rows[3][6] == "resize (any outcome), cleanup", "{rows:?}");
    page.has(&format!(
        "<a href=\"/jobs/{resize}\">resize</a> <span class"
    ))?
    .has(&format!("<a href=\"/jobs/{cleanup}\">cleanup</a>"))?;

    // A step's job page: its workflow and step, its dependencies, what cancelled it.
    let job = c
        .get(&format!("/jobs/{resize}"))
        .await?
        .expect(StatusCode::OK)?;
    job.has(&format!(
        "<dd id=\"workflow\"><a href=\"/workflows/{}\">",
        album.id
    ))?
    .has("id=\"step\">resize<")?
    .has(&format!(
        "Cancelled because its dependency <a href=\"/jobs/{fetch}\">fetch</a> ended dead."
    ))?;
    ensure!(
        table_rows(&job, "dependencies")?
            == [[
                "fetch".to_owned(),
                fetch.to_string(),
                "completed".to_owned(),
                "dead".to_owned()
            ]]
    );
    let job = c
        .get(&format!("/jobs/{report}"))
        .await?
        .expect(StatusCode::OK)?;
    job.lacks("id=\"blocked-by\"")?.has("id=\"cancel\"")?;
    let deps = table_rows(&job, "dependencies")?;
    ensure!(
        deps == [
            [
                "resize".to_owned(),
                resize.to_string(),
                "any outcome".to_owned(),
                "cancelled".to_owned()
            ],
            [
                "cleanup".to_owned(),
                cleanup.to_string(),
                "completed".to_owned(),
                "pending".to_owned()
            ]
        ],
        "{deps:?}"
    );
    c.get(&format!("/jobs/{plain}"))
        .await?
        .expect(StatusCode::OK)?
        .lacks("id=\"workflow\"")?
        .lacks("id=\"dependencies\"")?;

    // Waiting jobs: a column of the overview, a tab of the lists.
    let overview = c.get("/").await?.expect(StatusCode::OK)?;
    ensure!(cell(&overview, "media", 0)? == "1");
    ensure!(cell(&overview, "reports", 0)? == "1");
    let media = c.get("/jobs?queue=media").await?.expect(StatusCode::OK)?;
    media.has(">waiting <span class=\"count\">1</span>")?;
    let waiting = c
        .get("/jobs?queue=media&state=waiting")
        .await?
        .expect(StatusCode::OK)?;
    ensure!(ids_on(&waiting)? == [report]);

    // Bad and unknown ids.
    c.get("/workflows/album-42")
        .await?
        .expect(StatusCode::BAD_REQUEST)?
        .has("invalid workflow: must be a UUID")?;
    let unknown = WorkflowId::new();
    c.get(&format!("/workflows/{unknown}"))
        .await?
        .expect(StatusCode::NOT_FOUND)?
        .has(&format!("workflow {unknown} not found"))?;
    c.get("/workflows?before=yesterday")
        .await?
        .expect(StatusCode::BAD_REQUEST)?
        .has("invalid before: must be a workflow id")?;
    Ok(())
}

/// `text` as the templates escape it.
fn esc(text: &str) -> String {
    text.replace('&', "&#38;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;")
        .replace('<', "&#60;")
        .replace('>', "&#62;")
}

const SCRIPT: &str = "<script>document.title='pwned'</script>";
const IMG: &str = "\"><img src=x onerror=\"document.title='pwned'\">";

async fn untrusted_text_is_escaped_everywhere(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let payload = serde_json::json!({ "html": SCRIPT, "attr": IMG }).to_string();
    let id = dead_job(
        q,
        NewJob::from_json("emails", &payload)?.dedup_key(IMG),
        &format!("{SCRIPT} {IMG}"),
    )
    .await?;
    let running_id = running(q, "emails", "{}", SCRIPT).await?;
    // Metadata, an output and a history whose worker id carry markup too.
    let recorded = q
        .push(
            NewJob::from_json("emails", "{}")?
                .priority(i32::MAX)
                .meta(&serde_json::json!({ "html": SCRIPT }))?,
        )
        .await?;
    let lease = claim(q, "emails", recorded, IMG).await?;
    q.fail(&lease, Failure::retry_after(SCRIPT, Duration::ZERO))
        .await?;
    let lease = claim(q, "emails", recorded, "w").await?;
    let output = serde_json::json!({ "attr": IMG }).to_string();
    q.ack_with_output(&lease, &RawValue::from_string(output)?)
        .await?;
    // A workflow whose name and step names carry markup.
    let wf = q
        .push_workflow(
            Workflow::new()
                .name(SCRIPT)
                .add(IMG, NewJob::from_json("media", "{}")?)
                .add_after(SCRIPT, NewJob::from_json("media", "{}")?, [IMG]),
        )
        .await?;
    let step = wf.job(SCRIPT).context("a step")?;
    let mut c = client(&fx);
    for path in [
        "/".to_owned(),
        "/jobs?queue=emails".to_owned(),
        format!("/jobs/{id}"),
        format!("/jobs/{running_id}"),
        format!("/jobs/{recorded}"),
        format!("/search?q={}", support::query_value(IMG)),
        "/workflows".to_owned(),
        format!("/workflows/{}", wf.id),
        format!("/jobs/{step}"),
    ] {
        let page = c.get(&path).await?;
        ensure!(page.status.is_success(), "{path}: {}", page.status);
        page.lacks("<script>document")?.lacks("<img")?;
    }
    let page = c.get(&format!("/jobs/{id}")).await?;
    page.has(&esc(SCRIPT))?.has(&esc(IMG))?;
    let page = c.get(&format!("/jobs/{recorded}")).await?;
    let rows = table_rows(&page, "errors")?;
    ensure!(
        rows.len() == 1 && rows[0][2] == esc(IMG) && rows[0][3] == esc(SCRIPT),
        "{rows:?}"
    );
    page.has(&esc(&serde_json::json!(SCRIPT).to_string()))? // in the metadata
        .has(&esc(&serde_json::json!(IMG).to_string()))?; // in the output
    let page = c.get(&format!("/workflows/{}", wf.id)).await?;
    page.has(&format!("id=\"workflow-name\">{}<", esc(SCRIPT)))?
        .has(&format!("data-step=\"{}\"", esc(IMG)))?
        .has(&format!(">{}</a>", esc(IMG)))?;
    let page = c.get(&format!("/jobs/{step}")).await?;
    page.has(&format!("id=\"step\">{}<", esc(SCRIPT)))?
        .has(&format!("<td class=\"key\">{}</td>", esc(IMG)))?;
    Ok(())
}

async fn bad_requests_name_the_field(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let mut c = client(&fx);
    c.get("/jobs?state=stuck")
        .await?
        .expect(StatusCode::BAD_REQUEST)?
        .has("invalid state: must be one of")?;
    c.get("/jobs?queue=bad%20name")
        .await?
        .expect(StatusCode::BAD_REQUEST)?
        .has("invalid queue")?;
    c.get("/jobs?before=yesterday")
        .await?
        .expect(StatusCode::BAD_REQUEST)?
        .has("invalid before")?;
    c.get("/no/such/page")
        .await?
        .expect(StatusCode::NOT_FOUND)?;
    c.get("/").await?;
    c.post("/actions/retry-dead", &[("queue", "")])
        .await?
        .expect(StatusCode::BAD_REQUEST)?
        .has("invalid queue")?;
    Ok(())
}

async fn missing_tables_say_to_migrate(fx: Arc<Fixture>) -> anyhow::Result<()> {
    // A queue on a namespace that was never migrated.
    let fresh = match fx.backend {
        support::Backend::Sqlite => {
            let dir = tempfile::tempdir()?;
            let url = format!("sqlite://{}", dir.path().join("empty.db").display());
            let q = dbqueue::connect(&url).await?;
            (q, Some(dir))
        }
        _ => {
            let mut options = dbqueue::Options::default();
            match fx.backend {
                support::Backend::Postgres => options.schema = Some("dash_never_migrated".into()),
                _ => options.table_prefix = Some("dash_never_migrated_".into()),
            }
            (dbqueue::connect_with(&fx.url, options).await?, None)
        }
    };
    let mut c = Client::new(router(Dashboard::new(fresh.0, config())));
    c.get("/")
        .await?
        .expect(StatusCode::INTERNAL_SERVER_ERROR)?
        .has("run `queue migrate` with the same --url")?;
    Ok(())
}

async fn the_schedules_page_lists_every_schedule(fx: Arc<Fixture>) -> anyhow::Result<()> {
    use dbqueue::periodic::{PeriodicJob, Registration};
    let q = fx.queue.as_ref();
    let mut c = client(&fx);
    c.get("/schedules")
        .await?
        .expect(StatusCode::OK)?
        .has("id=\"no-schedules\"")?;
    let now = q.now().await?;
    let nightly =
        PeriodicJob::new("nightly", "30 2 * * *", "reports", &"r")?.time_zone("Europe/Berlin");
    q.schedule_register(&nightly, Registration::Operator, now)
        .await?;
    let beat = PeriodicJob::new("beat", "* * * * * *", "pings", &"p")?;
    q.schedule_register(
        &beat,
        Registration::Operator,
        now - chrono::TimeDelta::seconds(10),
    )
    .await?;
    let report = q.schedule_tick(now).await?;
    ensure!(report.enqueued.len() == 1, "{report:?}");
    let id = report.enqueued[0].2;
    let page = c.get("/schedules").await?.expect(StatusCode::OK)?;
    page.has("<tr data-schedule=\"nightly\">")?
        .has("Europe/Berlin")?
        .has("<tr data-schedule=\"beat\">")?
        .has(&format!("<a href=\"/jobs/{id}\">pending</a>"))?
        .has(&format!("href=\"{}\"", esc("/jobs?queue=pings")))?;
    // Its job completes: the page says the last slot's job succeeded.
    let leased = q.pop(dbqueue::PopRequest::new("pings")).await?;
    ensure!(leased.len() == 1 && leased[0].job.id == id);
    q.ack(&leased[0].lease).await?;
    c.get("/schedules")
        .await?
        .expect(StatusCode::OK)?
        .has(&format!("<a href=\"/jobs/{id}\">succeeded</a>"))?;
    Ok(())
}

/// The samples of a Prometheus text exposition: each sample line parsed (`name{labels}` and its
/// value); a line that is neither a comment nor a sample fails.
fn prometheus_samples(text: &str) -> anyhow::Result<Vec<(String, f64)>> {
    let mut out = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (series, value) = line
            .rsplit_once(' ')
            .with_context(|| format!("not a sample: {line:?}"))?;
        let name_end = series.find('{').unwrap_or(series.len());
        let name = &series[..name_end];
        ensure!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name in {line:?}"
        );
        ensure!(
            name_end == series.len() || series.ends_with('}'),
            "bad labels in {line:?}"
        );
        let value: f64 = value
            .parse()
            .with_context(|| format!("bad value in {line:?}"))?;
        out.push((series.to_owned(), value));
    }
    Ok(out)
}

async fn metrics_are_served_for_prometheus_behind_the_token(
    fx: Arc<Fixture>,
) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    // A queue name of this run only: the recorder is the test process's, shared by the cases
    // of every backend.
    let queue = format!("metered_{}", uuid::Uuid::new_v4().simple());
    for _ in 0..3 {
        push(q, &queue, "{}").await?;
    }
    dead(q, &queue, "{}", "boom").await?;
    let mut c = client(&fx);
    let page = c.get("/metrics").await?.expect(StatusCode::OK)?;
    ensure!(
        page.header("content-type")
            .is_some_and(|v| v.starts_with("text/plain; version=0.0.4")),
        "content type {:?}",
        page.header("content-type")
    );
    page.has("# TYPE dbqueue_queue_jobs gauge")?;
    let samples = prometheus_samples(&page.body)?;
    let gauge = |state: &str| {
        let series = format!("dbqueue_queue_jobs{{queue=\"{queue}\",state=\"{state}\"}}");
        samples
            .iter()
            .find(|(s, _)| *s == series)
            .map(|(_, v)| *v)
            .with_context(|| format!("no sample {series}"))
    };
    ensure!(
        gauge("available")? == 3.0,
        "available: {}",
        gauge("available")?
    );
    ensure!(gauge("dead")? == 1.0, "dead: {}", gauge("dead")?);
    ensure!(gauge("running")? == 0.0);
    // The scrape reads the database again: a claim shows at the next one.
    let leased = q.pop(PopRequest::new(&queue)).await?;
    ensure!(leased.len() == 1);
    let page = c.get("/metrics").await?.expect(StatusCode::OK)?;
    let samples = prometheus_samples(&page.body)?;
    let running = format!("dbqueue_queue_jobs{{queue=\"{queue}\",state=\"running\"}}");
    ensure!(
        samples.iter().any(|(s, v)| *s == running && *v == 1.0),
        "no running job in {samples:?}"
    );
    // Behind a token like every page: none or a wrong one is refused, the right one as a
    // bearer header (what a scraper sends) is served.
    let cfg = || DashboardConfig {
        auth_token: Some(TOKEN.to_owned()),
        ..config()
    };
    client_with(&fx, cfg())
        .get("/metrics")
        .await?
        .expect(StatusCode::UNAUTHORIZED)?
        .lacks("dbqueue_queue_jobs")?;
    let mut wrong = client_with(&fx, cfg());
    wrong.bearer = Some("wrong-token-0123456789".to_owned());
    wrong
        .get("/metrics")
        .await?
        .expect(StatusCode::UNAUTHORIZED)?;
    let mut scraper = client_with(&fx, cfg());
    scraper.bearer = Some(TOKEN.to_owned());
    scraper
        .get("/metrics")
        .await?
        .expect(StatusCode::OK)?
        .has(&running)?;
    Ok(())
}

fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let cases = [
        case!(overview_shows_every_queue_with_its_counts),
        case!(capped_counts_read_as_at_least),
        case!(the_overview_fragment_follows_the_database),
        case!(job_lists_filter_and_page_newest_first),
        case!(job_lists_show_and_filter_by_kind),
        case!(the_job_page_shows_everything_a_job_carries),
        case!(the_job_page_shows_kind_history_metadata_and_output),
        case!(reschedule_moves_a_pending_job),
        case!(reschedule_refuses_a_job_that_is_not_pending),
        case!(search_finds_jobs_by_id_and_dedup_key),
        case!(retry_brings_a_dead_job_back),
        case!(cancel_stops_pending_and_running_jobs),
        case!(bulk_retry_retries_every_dead_job_of_the_queue),
        case!(bulk_retry_stops_at_its_limit),
        case!(bulk_actions_confirm_then_change_exactly_the_filtered_jobs),
        case!(bulk_actions_refuse_bad_filters_and_forged_posts),
        case!(bulk_delete_counts_the_steps_it_cancels),
        case!(prune_deletes_only_what_was_asked),
        case!(queue_controls_from_the_overview_and_the_queue_page),
        case!(key_controls_from_the_queue_page),
        case!(read_only_shows_no_actions_and_refuses_them),
        case!(a_token_guards_every_page_and_action),
        case!(a_login_returns_only_to_this_dashboard),
        case!(forged_and_cross_site_posts_are_refused),
        case!(foreign_host_names_are_refused),
        case!(untrusted_text_is_escaped_everywhere),
        case!(bad_requests_name_the_field),
        case!(missing_tables_say_to_migrate),
        case!(the_schedules_page_lists_every_schedule),
        case!(workflow_pages_show_each_step_and_what_it_waits_for),
        case!(metrics_are_served_for_prometheus_behind_the_token),
    ];
    libtest_mimic::run(&args, support::backend_trials(&cases)).exit();
}
