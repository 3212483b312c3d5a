//! What each dashboard page costs the database, on every backend: the SQL statements a request
//! runs, counted from the driver's own statement log (sqlx logs each statement it executes
//! under the `sqlx::query` target), leaving out the setup a new pooled connection runs once.
//! The figures are printed and asserted; the README quotes them.

#[macro_use]
mod support;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::ensure;
use axum::http::StatusCode;
use dbqueue::{Failure, NewJob, PopRequest};
use queue_cli::serve::{router, Dashboard, DashboardConfig};
use support::{cancelled, completed, dead, push, running, Backend, Client, Fixture};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::Layer;

/// The statements logged since the last [`take`], by their first words.
fn log() -> &'static Mutex<Vec<String>> {
    static LOG: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    LOG.get_or_init(Mutex::default)
}

fn take() -> Vec<String> {
    std::mem::take(&mut *log().lock().unwrap_or_else(|e| e.into_inner()))
}

struct Statements;

struct Summary(String);

impl Visit for Summary {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "summary" {
            self.0 = value.to_owned();
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "summary" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: Subscriber> Layer<S> for Statements {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() == "sqlx::query" {
            let mut summary = Summary(String::new());
            event.record(&mut summary);
            log()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(summary.0);
        }
    }
}

/// Whether a statement is the setup of a new pooled connection (SQLite's pragmas, session
/// settings, PostgreSQL's `set_config` of its plan cache mode), run once per connection rather
/// than per request. A page that needs a new connection runs it; the page is not charged.
fn connection_setup(statement: &str) -> bool {
    let s = statement.trim_start().to_ascii_uppercase();
    s.starts_with("PRAGMA") || s.starts_with("SET ") || s.starts_with("SELECT SET_CONFIG(")
}

/// Waits until no statement has run for 300 ms.
async fn settle() {
    for _ in 0..50 {
        take();
        tokio::time::sleep(Duration::from_millis(300)).await;
        if log().lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
            return;
        }
    }
}

/// Runs one request and returns the statements it ran, without connection setup.
async fn cost(c: &mut Client, path: &str) -> anyhow::Result<Vec<String>> {
    take();
    c.get(path).await?.expect(StatusCode::OK)?;
    Ok(take()
        .into_iter()
        .filter(|s| !connection_setup(s))
        .collect())
}

async fn statements_per_page(fx: Arc<Fixture>) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    for queue in ["emails", "reports", "webhooks"] {
        completed(q, queue, "{}").await?;
        dead(q, queue, "{}", "boom").await?;
        cancelled(q, queue, "{}").await?;
        running(q, queue, "{}", "w").await?;
        push(q, queue, "{}").await?;
    }
    let id = push(q, "emails", "{}").await?;
    // A job of a kind with a history of failures: its page is still one read.
    let failed = q
        .push(
            NewJob::from_json("emails", "{}")?
                .kind("mail.send")
                .priority(i32::MAX),
        )
        .await?;
    for attempt in 0..2 {
        let leased = q
            .pop(PopRequest::new("emails").lease(Duration::from_secs(300)))
            .await?;
        ensure!(leased.len() == 1 && leased[0].job.id == failed, "{attempt}");
        q.fail(
            &leased[0].lease,
            Failure::retry_after("boom", Duration::ZERO),
        )
        .await?;
    }
    let dashboard = Dashboard::new(
        fx.queue.clone(),
        DashboardConfig {
            chart_ttl: Duration::from_secs(3600),
            ..DashboardConfig::default()
        },
    );
    let mut c = Client::new(router(dashboard));
    // The pool opens its connections on first use.
    c.get("/jobs").await?.expect(StatusCode::OK)?;
    // Work the pushes left behind (PostgreSQL sends its coalesced NOTIFY a moment later) must
    // not be counted against a page.
    settle().await;

    let cold = cost(&mut c, "/").await?;
    let refresh = cost(&mut c, "/fragment/overview").await?;
    let list = cost(&mut c, "/jobs?queue=emails&state=dead").await?;
    let of_kind = cost(&mut c, "/jobs?queue=emails&kind=mail.send").await?;
    let job = cost(&mut c, &format!("/jobs/{id}")).await?;
    let history = cost(&mut c, &format!("/jobs/{failed}")).await?;
    let schedules = cost(&mut c, "/schedules").await?;
    let bulk = cost(&mut c, "/bulk?action=retry&queue=emails&state=dead").await?;
    let backend = fx.backend.name();
    for (what, statements) in [
        ("overview, first view (counts and chart)", &cold),
        ("overview refresh (chart cached)", &refresh),
        ("job list of one queue and state", &list),
        ("job list of one queue and kind", &of_kind),
        ("job page", &job),
        ("job page with a history of failures", &history),
        ("schedules", &schedules),
        ("confirmation of a bulk action", &bulk),
    ] {
        println!(
            "{backend}: {what}: {} statement(s): {}",
            statements.len(),
            statements.join(" | ")
        );
    }
    // `stats` is two statements: the counts, and the queues' controls (paused, limit). MySQL
    // and MariaDB read the queues' names first (a loose scan of an index), then the counts of
    // up to 100 queues in one statement.
    let stats = if fx.backend == Backend::MySql { 3 } else { 2 };
    ensure!(
        refresh.len() == stats,
        "a refresh runs the stats queries only: {refresh:?}"
    );
    ensure!(list.len() == stats + 1, "stats and one page: {list:?}");
    ensure!(
        of_kind.len() == stats + 1,
        "stats and one page: {of_kind:?}"
    );
    ensure!(job.len() == 1, "one read: {job:?}");
    ensure!(history.len() == 1, "one read: {history:?}");
    ensure!(bulk.len() == 1, "one count: {bulk:?}");
    // The database's clock where it has one, and the schedules with their last jobs.
    ensure!((1..=2).contains(&schedules.len()), "{schedules:?}");
    // Stats, the database's clock where it has one, and one page per finished state.
    ensure!((stats + 2..=stats + 3).contains(&cold.len()), "{cold:?}");
    ensure!(cold.iter().filter(|s| s.contains("payload")).count() == 2);
    Ok(())
}

fn main() {
    let _ =
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(Statements));
    let mut args = libtest_mimic::Arguments::from_args();
    // One at a time: the statement log is shared by the whole process.
    args.test_threads = Some(1);
    let cases = [case!(statements_per_page)];
    libtest_mimic::run(&args, support::backend_trials(&cases)).exit();
}
