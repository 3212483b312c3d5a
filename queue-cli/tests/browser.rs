//! The dashboard end to end: the real `queue serve` process, driven in headless Chromium
//! (Debian's `chromium` and `chromium-driver`) through WebDriver, on every backend that is set
//! up (SQLite always; PostgreSQL and MySQL/MariaDB where `QUEUE_TEST_POSTGRES_URL` and
//! `QUEUE_TEST_MYSQL_URL` are set).
//!
//! Without Chromium or chromedriver every case is reported as ignored, with the reason; when
//! `QUEUE_TEST_REQUIRE` names `browser` they fail instead. `QUEUE_TEST_CHROMIUM` and
//! `QUEUE_TEST_CHROMEDRIVER` override where the two are looked for. The screenshots of the
//! demo's data and of a workflow are written to the target directory, and over `docs/` when
//! `QUEUE_UPDATE_SCREENSHOTS=1`.

#[macro_use]
mod support;

use std::io::{BufRead as _, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure, Context as _};
use dbqueue::{JobState, NewJob, Queue};
use fantoccini::{Client, ClientBuilder, Locator};
use futures::FutureExt as _;
use libtest_mimic::{Completion, Failed, Trial};
use serde_json::json;
use support::{album, completed, dead, dead_job, push, required, running, Backend, Fixture};

/// The flags every Chromium here runs with (plus a fresh `--user-data-dir`).
const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--window-size=1280,900",
];

const TOKEN: &str = "browser-test-token-0123456789";

/// Chromium and chromedriver, where they were found.
#[derive(Clone, Debug)]
struct Programs {
    chromium: PathBuf,
    chromedriver: PathBuf,
}

/// What a trial needs to open a browser: Chromium, and the running chromedriver's URL.
#[derive(Clone, Debug)]
struct Browser {
    chromium: PathBuf,
    driver: String,
}

fn find_program(var: &str, names: &[&str]) -> Option<PathBuf> {
    if let Ok(p) = std::env::var(var) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

fn find_programs() -> Result<Programs, String> {
    let chromium = find_program("QUEUE_TEST_CHROMIUM", &["chromium", "chromium-browser"])
        .ok_or("Chromium was not found (install Debian's chromium, or set QUEUE_TEST_CHROMIUM)")?;
    let chromedriver = find_program("QUEUE_TEST_CHROMEDRIVER", &["chromedriver"]).ok_or(
        "chromedriver was not found (install Debian's chromium-driver, or set \
         QUEUE_TEST_CHROMEDRIVER)",
    )?;
    Ok(Programs {
        chromium,
        chromedriver,
    })
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A child process that is killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// chromedriver, killed when dropped.
struct Driver {
    url: String,
    _child: Killed,
}

/// Starts chromedriver on a free port and waits until it listens.
fn start_chromedriver(path: &Path) -> anyhow::Result<Driver> {
    let port = free_port()?;
    let child = Command::new(path)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", path.display()))?;
    let child = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        ensure!(
            Instant::now() < deadline,
            "chromedriver did not listen within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(Driver {
        url: format!("http://127.0.0.1:{port}"),
        _child: child,
    })
}

/// A Chromium session with its own profile directory, through the chromedriver at `driver`.
async fn open_browser(
    chromium: &Path,
    driver: &str,
) -> anyhow::Result<(Client, tempfile::TempDir)> {
    let profile = tempfile::tempdir()?;
    let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| s.to_string()).collect();
    args.push(format!("--user-data-dir={}", profile.path().display()));
    let caps = json!({
        "browserName": "chrome",
        // Leave confirm() dialogs open, to be accepted by the test.
        "unhandledPromptBehavior": "ignore",
        "goog:chromeOptions": {
            "binary": chromium,
            "args": args,
        },
    });
    let serde_json::Value::Object(caps) = caps else {
        bail!("capabilities are an object");
    };
    let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(driver)
        .await
        .context("opening a Chromium session")?;
    Ok((client, profile))
}

/// `queue serve` on a free port of 127.0.0.1, killed when dropped.
struct Server {
    url: String,
    _child: Killed,
    _log: tempfile::NamedTempFile,
}

fn serve(fx: &Fixture, extra: &[&str], token: Option<&str>) -> anyhow::Result<Server> {
    let mut args = vec!["--url".to_owned(), fx.url.clone()];
    args.extend(fx.args.iter().cloned());
    args.extend(extra.iter().map(|s| s.to_string()));
    serve_in(None, &args, token)
}

/// `queue serve ARGS`, run in `dir` when given.
fn serve_in(dir: Option<&Path>, args: &[String], token: Option<&str>) -> anyhow::Result<Server> {
    let log = tempfile::NamedTempFile::new()?;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_queue"));
    cmd.arg("serve")
        .args(args)
        .args(["--listen", "127.0.0.1:0", "--refresh", "1s"])
        .env_remove("QUEUE_URL")
        .env_remove("QUEUE_DASHBOARD_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log.reopen()?);
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    if let Some(token) = token {
        cmd.env("QUEUE_DASHBOARD_TOKEN", token);
    }
    let mut child = Killed(cmd.spawn().context("starting queue serve")?);
    let stdout = child.0.stdout.take().context("stdout is piped")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
    let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) else {
        let stderr = std::fs::read_to_string(log.path()).unwrap_or_default();
        bail!("queue serve printed no address; it said: {stderr}");
    };
    Ok(Server {
        url: url.trim_end_matches('/').to_owned(),
        _child: child,
        _log: log,
    })
}

/// The text of the first element matching `css`, read in one step (a refresh may replace
/// the element between two steps), or `None`.
async fn live_text(c: &Client, css: &str) -> anyhow::Result<Option<String>> {
    let value = c
        .execute(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent.trim() : null;",
            vec![json!(css)],
        )
        .await?;
    Ok(serde_json::from_value(value)?)
}

/// Waits until `check` holds, polling; fails after 20 s with `what`.
async fn until<F, Fut>(what: &str, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if check().await? {
            return Ok(());
        }
        ensure!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn text_of(c: &Client, css: &str) -> anyhow::Result<String> {
    Ok(c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(css))
        .await
        .with_context(|| format!("no element {css}"))?
        .text()
        .await?)
}

/// Waits until the first element matching `css` reads `expected` (the page may still be the
/// previous one for a moment after a click).
async fn see(c: &Client, css: &str, expected: impl AsRef<str>) -> anyhow::Result<()> {
    let expected = expected.as_ref();
    let mut last = None;
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        last = live_text(c, css).await?;
        if last.as_deref() == Some(expected) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("{css} reads {last:?}, not {expected:?}")
}

async fn click(c: &Client, css: &str) -> anyhow::Result<()> {
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(css))
        .await
        .with_context(|| format!("no element {css}"))?
        .click()
        .await?;
    Ok(())
}

async fn script<T: serde::de::DeserializeOwned>(c: &Client, js: &str) -> anyhow::Result<T> {
    let value = c.execute(js, Vec::new()).await?;
    serde_json::from_value(value).with_context(|| format!("the result of {js}"))
}

async fn state_of(q: &dyn Queue, id: dbqueue::JobId) -> anyhow::Result<JobState> {
    Ok(q.get(id).await?.context("the job exists")?.state)
}

/// Accepts the confirm() dialog the page opened.
async fn accept_dialog(c: &Client) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match c.accept_alert().await {
            Ok(()) => return Ok(()),
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => return Err(e).context("no dialog to accept"),
        }
    }
}

/// Overview -> queue -> dead tab -> dead job -> Retry: the page and the database say pending.
async fn follow_a_queue_to_a_dead_job_and_retry_it(c: &Client, fx: &Fixture) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    completed(q, "emails", "{}").await?;
    let id = dead(q, "emails", "{\"to\":\"ada@example.com\"}", "SMTP said 550").await?;
    let server = serve(fx, &[], None)?;
    c.goto(&format!("{}/", server.url)).await?;
    ensure!(c.title().await? == "Queues · dbqueue");
    click(c, "tr[data-queue='emails'] th a").await?;
    see(c, "h1", "Queue emails").await?;
    click(c, "nav.tabs a[href*='state=dead']").await?;
    see(c, "h1", "Queue emails: dead jobs").await?;
    click(c, &format!("a[href='/jobs/{id}']")).await?;
    see(c, "#last-error", "SMTP said 550").await?;
    click(c, "#retry").await?;
    let notice = text_of(c, "#notice").await?;
    ensure!(
        notice.starts_with("Retried: the job is pending again"),
        "{notice}"
    );
    see(c, "#job-state", "pending").await?;
    ensure!(state_of(q, id).await? == JobState::Pending);
    Ok(())
}

/// Header -> Workflows -> a workflow: each step's state and what it waits for -> the step a
/// failure cancelled -> the dead dependency -> Retry -> back to the workflow: the cancelled
/// step waits again, as the database says.
async fn follow_a_workflow_to_the_step_a_failure_cancelled(
    c: &Client,
    fx: &Fixture,
) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let wf = album(q, "media", "album-42", "404 not found").await?;
    let fetch = wf.job("fetch").context("fetch")?;
    let resize = wf.job("resize").context("resize")?;
    let server = serve(fx, &[], None)?;
    c.goto(&format!("{}/", server.url)).await?;
    click(c, "#nav-workflows").await?;
    see(c, "h1", "Workflows").await?;
    let row = format!("tr[data-workflow='{}']", wf.id);
    see(c, &format!("{row} td.name"), "album-42").await?;
    see(c, &format!("{row} td[data-count='waiting']"), "1").await?;
    see(c, &format!("{row} td[data-count='dead']"), "1").await?;
    click(c, &format!("{row} td.id a")).await?;
    see(
        c,
        "#workflow-summary",
        "4 jobs: 1 waiting, 1 pending, 1 dead, 1 cancelled",
    )
    .await?;
    for (step, state) in [
        ("fetch", "dead"),
        ("resize", "cancelled"),
        ("cleanup", "pending"),
        ("report", "waiting"),
    ] {
        see(c, &format!("tr[data-step='{step}'] span.state"), state).await?;
    }
    see(c, "tr[data-step='fetch'] td.err", "404 not found").await?;
    see(
        c,
        "tr[data-step='report'] td.waits",
        "resize (any outcome), cleanup",
    )
    .await?;
    see(
        c,
        "tr[data-step='resize'] .blocked",
        "cancelled because fetch ended dead",
    )
    .await?;
    if fx.backend == Backend::Sqlite {
        let png = c.screenshot().await?;
        ensure!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
        save("dashboard-workflow.png", &png)?;
    }
    click(c, "tr[data-step='resize'] td.id a").await?;
    see(c, "#step", "resize").await?;
    see(
        c,
        "#blocked-by",
        "Cancelled because its dependency fetch ended dead. Retrying that job puts this one \
         back to waiting.",
    )
    .await?;
    see(c, "#dependencies td.key", "fetch").await?;
    click(c, "#blocked-by a").await?;
    see(c, "#step", "fetch").await?;
    see(c, "#job-state", "dead").await?;
    click(c, "#retry").await?;
    see(c, "#job-state", "pending").await?;
    click(c, "#workflow a").await?;
    see(c, "tr[data-step='resize'] span.state", "waiting").await?;
    ensure!(c
        .find(Locator::Css("tr[data-step='resize'] .blocked"))
        .await
        .is_err());
    ensure!(state_of(q, fetch).await? == JobState::Pending);
    let stored = q.get(resize).await?.context("resize exists")?;
    ensure!(
        stored.state == JobState::Waiting && stored.blocked_by.is_none(),
        "{stored:?}"
    );
    Ok(())
}

/// The overview refreshes its counts in place: the page is not reloaded.
async fn the_overview_refreshes_without_a_reload(c: &Client, fx: &Fixture) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    push(q, "emails", "{}").await?;
    let server = serve(fx, &[], None)?;
    c.goto(&format!("{}/", server.url)).await?;
    let first = live_text(c, "tr[data-queue='emails'] td[data-count='available'] a").await?;
    ensure!(first.as_deref() == Some("1"), "{first:?}");
    c.execute("window.__notReloaded = true;", Vec::new())
        .await?;
    push(q, "emails", "{}").await?;
    push(q, "emails", "{}").await?;
    until("the overview shows 3 available jobs", || async {
        Ok(
            live_text(c, "tr[data-queue='emails'] td[data-count='available'] a")
                .await?
                .as_deref()
                == Some("3"),
        )
    })
    .await?;
    ensure!(script::<bool>(c, "return window.__notReloaded === true;").await?);
    let refreshed: String = script(
        c,
        "return document.querySelector('#overview').getAttribute('data-refreshed');",
    )
    .await?;
    ensure!(refreshed.parse::<u32>()? >= 1);
    Ok(())
}

/// "Retry all dead jobs" asks first, then retries every dead job of the queue.
async fn bulk_retry_from_the_queue_page(c: &Client, fx: &Fixture) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    for n in 0..12 {
        dead(q, "emails", &format!("{{\"n\":{n}}}"), "boom").await?;
    }
    let other = dead(q, "reports", "{}", "boom").await?;
    let server = serve(fx, &[], None)?;
    c.goto(&format!("{}/jobs?queue=emails", server.url)).await?;
    see(c, "#retry-all-dead", "Retry all 12 dead jobs").await?;
    click(c, "#retry-all-dead").await?;
    let question = c.get_alert_text().await?;
    ensure!(
        question == "Retry all 12 dead jobs of emails?",
        "{question}"
    );
    accept_dialog(c).await?;
    let notice = text_of(c, "#notice").await?;
    ensure!(
        notice.starts_with("Retried 12 dead jobs of queue emails"),
        "{notice}"
    );
    let stats = q.stats(Some("emails")).await?;
    ensure!(stats[0].dead == 0 && stats[0].available == 12, "{stats:?}");
    ensure!(state_of(q, other).await? == JobState::Dead);
    Ok(())
}

/// A filtered list -> "Cancel matching jobs" -> the confirmation says how many -> confirm:
/// exactly the jobs of the filter are cancelled. With an age nothing matches, and the
/// confirmation offers nothing to press.
async fn bulk_cancel_from_a_filtered_list(c: &Client, fx: &Fixture) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let mut send = Vec::new();
    for n in 0..5 {
        let job = NewJob::from_json("emails", &format!("{{\"n\":{n}}}"))?.kind("send");
        send.push(q.push(job).await?);
    }
    let digest = q
        .push(NewJob::from_json("emails", "{}")?.kind("digest"))
        .await?;
    let elsewhere = q
        .push(NewJob::from_json("reports", "{}")?.kind("send"))
        .await?;
    let server = serve(fx, &[], None)?;
    c.goto(&format!("{}/jobs?queue=emails&kind=send", server.url))
        .await?;
    // With an age, nothing matches: the page says so and has no button to press.
    c.find(Locator::Css("#bulk-age"))
        .await?
        .send_keys("1h")
        .await?;
    click(c, "#bulk-delete").await?;
    see(
        c,
        "#bulk-count",
        "No job matches: there is nothing to delete among the waiting, pending, completed, dead and \
         cancelled jobs of queue emails of kind send, created more than 1h ago.",
    )
    .await?;
    ensure!(c.find(Locator::Css("#bulk-confirm")).await.is_err());
    click(c, "#bulk-back").await?;
    see(c, "h1", "Queue emails: jobs of kind send").await?;
    click(c, "#bulk-cancel").await?;
    see(
        c,
        "#bulk-count",
        "This will cancel 5 jobs: the waiting, pending and running jobs of queue emails of kind send.",
    )
    .await?;
    ensure!(
        state_of(q, send[0]).await? == JobState::Pending,
        "nothing yet"
    );
    see(c, "#bulk-confirm", "Cancel 5 jobs").await?;
    click(c, "#bulk-confirm").await?;
    see(
        c,
        "#notice",
        "Cancelled 5 of the waiting, pending and running jobs of queue emails of kind send; skipped 0.",
    )
    .await?;
    for id in &send {
        ensure!(state_of(q, *id).await? == JobState::Cancelled);
    }
    ensure!(state_of(q, digest).await? == JobState::Pending);
    ensure!(state_of(q, elsewhere).await? == JobState::Pending);
    Ok(())
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

/// The limit of `queue` as its overview row shows it: the value of its limit field.
async fn limit_shown(c: &Client, queue: &str) -> anyhow::Result<Option<String>> {
    let value = c
        .execute(
            "const e = document.querySelector(`tr[data-queue='${arguments[0]}'] input[name=limit]`); \
             return e ? e.value : null;",
            vec![json!(queue)],
        )
        .await?;
    Ok(serde_json::from_value(value)?)
}

/// Waits until the limit field of `queue` reads `expected` after a page load.
async fn see_limit(c: &Client, queue: &str, expected: &str) -> anyhow::Result<()> {
    until(
        &format!("the limit of {queue} reads {expected:?}"),
        || async { Ok(limit_shown(c, queue).await?.as_deref() == Some(expected)) },
    )
    .await
}

/// Replaces the text of the limit field of `queue`'s overview row with `text`.
async fn type_limit(c: &Client, queue: &str, text: &str) -> anyhow::Result<()> {
    let field = c
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(&format!(
            "tr[data-queue='{queue}'] input[name=limit]"
        )))
        .await?;
    field.clear().await?;
    field.send_keys(text).await?;
    Ok(())
}

/// Pause, a bad limit, a limit, resume and "Remove limit", clicked on the overview: after each,
/// the page and the database agree. What is typed into the limit field is not thrown away by
/// the overview's refresh.
async fn pause_resume_and_limit_from_the_overview(c: &Client, fx: &Fixture) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    push(q, "emails", "{}").await?;
    push(q, "reports", "{}").await?;
    let server = serve(fx, &[], None)?;
    c.goto(&format!("{}/", server.url)).await?;
    see(c, "tr[data-queue='emails'] span.qstate", "running").await?;
    see_limit(c, "emails", "").await?;

    click(c, "tr[data-queue='emails'] button.pause").await?;
    let notice = text_of(c, "#notice").await?;
    ensure!(notice.starts_with("Paused queue emails"), "{notice}");
    see(c, "tr[data-queue='emails'] span.qstate", "paused").await?;
    see(c, "tr[data-queue='reports'] span.qstate", "running").await?;
    ensure!(controls_of(q, "emails").await? == (true, None));
    ensure!(q.pop(dbqueue::PopRequest::new("emails")).await?.is_empty());

    // The overview refreshes every second; a field being typed into is left alone.
    type_limit(c, "emails", "0").await?;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let typed: String = script(
        c,
        "return document.querySelector(\"tr[data-queue='emails'] input[name=limit]\").value;",
    )
    .await?;
    ensure!(typed == "0", "the refresh replaced the field: {typed:?}");
    click(c, "tr[data-queue='emails'] button.set-limit").await?;
    see(
        c,
        "#notice",
        "Nothing was changed: invalid concurrency_limit: must be at least 1 (pause the queue to \
         stop it)",
    )
    .await?;
    ensure!(
        controls_of(q, "emails").await? == (true, None),
        "0 stored nothing"
    );

    type_limit(c, "emails", "4").await?;
    click(c, "tr[data-queue='emails'] button.set-limit").await?;
    see(c, "#notice", "Queue emails: at most 4 jobs run at once.").await?;
    see_limit(c, "emails", "4").await?;
    ensure!(controls_of(q, "emails").await? == (true, Some(4)));

    click(c, "tr[data-queue='emails'] button.resume").await?;
    see(
        c,
        "#notice",
        "Resumed queue emails: its jobs are given out again.",
    )
    .await?;
    see(c, "tr[data-queue='emails'] span.qstate", "running").await?;
    ensure!(controls_of(q, "emails").await? == (false, Some(4)));

    click(c, "tr[data-queue='emails'] button.clear-limit").await?;
    see(c, "#notice", "Queue emails: no concurrency limit.").await?;
    see_limit(c, "emails", "").await?;
    ensure!(controls_of(q, "emails").await? == (false, None));
    ensure!(q.controls().await?.is_empty());
    Ok(())
}

/// The key limit of `queue` and whether it has fair shares, as the library reads them.
async fn keys_of(q: &dyn Queue, queue: &str) -> anyhow::Result<(Option<u32>, bool)> {
    let stats = q.stats(Some(queue)).await?;
    Ok(stats
        .iter()
        .find(|s| s.queue == queue)
        .map_or((None, false), |s| (s.key_limit, s.fair_shares)))
}

/// Replaces the text of the field `css` with `text`.
async fn type_into(c: &Client, css: &str, text: &str) -> anyhow::Result<()> {
    let field = c
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(css))
        .await
        .with_context(|| format!("no field {css}"))?;
    field.clear().await?;
    field.send_keys(text).await?;
    Ok(())
}

/// A bad key limit, a key limit, fair shares on, "Remove key limit" and fair shares off,
/// clicked on the queue's page: after each, the page and the database agree. The hot keys are
/// listed, a key's markup shown as text; the overview shows the key controls under the limit.
async fn key_limit_and_fair_shares_from_the_queue_page(
    c: &Client,
    fx: &Fixture,
) -> anyhow::Result<()> {
    const MARKUP: &str = "<img src=x onerror=\"document.title='pwned'\">";
    let q = fx.queue.as_ref();
    for key in ["acme", "acme", "acme", MARKUP] {
        q.push(NewJob::from_json("emails", "{}")?.concurrency_key(key))
            .await?;
    }
    let server = serve(fx, &[], None)?;
    let page = format!("{}/jobs?queue=emails", server.url);
    c.goto(&page).await?;
    see(
        c,
        "#key-controls",
        "No key limit; no key rate limit; fair shares off.",
    )
    .await?;
    see(c, "#keys .fair-state", "off").await?;
    ensure!(
        live_text(c, "#hot-keys").await?.is_none(),
        "no hot keys yet"
    );

    type_into(c, "#keys input[name=key_limit]", "0").await?;
    click(c, "#keys button.set-key-limit").await?;
    see(
        c,
        "#notice",
        "Nothing was changed: invalid key_limit: must be at least 1 (pause the queue to stop it)",
    )
    .await?;
    ensure!(
        keys_of(q, "emails").await? == (None, false),
        "0 stored nothing"
    );

    type_into(c, "#keys input[name=key_limit]", "2").await?;
    click(c, "#keys button.set-key-limit").await?;
    see(
        c,
        "#notice",
        "Queue emails: at most 2 jobs per concurrency key run at once.",
    )
    .await?;
    let shown: String = script(
        c,
        "return document.querySelector('#keys input[name=key_limit]').value;",
    )
    .await?;
    ensure!(shown == "2", "{shown:?}");
    ensure!(keys_of(q, "emails").await? == (Some(2), false));

    // Two of acme's three jobs run, one waits: the page lists the hot keys, most running
    // first, and the markup of a key stays text.
    let leased = q.pop(dbqueue::PopRequest::new("emails").limit(10)).await?;
    ensure!(leased.len() == 3, "{} claimed", leased.len());
    c.goto(&page).await?;
    see(
        c,
        "#hot-keys caption",
        "Hot keys: the keys with the most running jobs",
    )
    .await?;
    let rows: Vec<Vec<String>> = script(
        c,
        "return [...document.querySelectorAll('#hot-keys tbody tr')] \
         .map(r => [...r.cells].map(d => d.textContent.trim()));",
    )
    .await?;
    ensure!(
        rows == [
            vec!["acme".to_owned(), "2".to_owned(), "1".to_owned()],
            vec![MARKUP.to_owned(), "1".to_owned(), "0".to_owned()],
        ],
        "{rows:?}"
    );
    let images: u32 = script(c, "return document.querySelectorAll('img').length;").await?;
    ensure!(images == 0, "a key's markup became an element");
    let title: String = script(c, "return document.title;").await?;
    ensure!(!title.contains("pwned"), "{title}");
    // The panel fits the window: nothing scrolls sideways.
    let (scroll, client): (u32, u32) = script(
        c,
        "const d = document.documentElement; return [d.scrollWidth, d.clientWidth];",
    )
    .await?;
    ensure!(
        scroll <= client,
        "the page scrolls sideways: {scroll} > {client}"
    );
    save("dashboard-keys.png", &c.screenshot().await?)?;

    click(c, "#keys button.fair-on").await?;
    see(
        c,
        "#notice",
        "Queue emails: claims take turns across concurrency keys.",
    )
    .await?;
    see(c, "#keys .fair-state", "on").await?;
    ensure!(keys_of(q, "emails").await? == (Some(2), true));

    c.goto(&format!("{}/", server.url)).await?;
    see(c, "tr[data-queue='emails'] .keys", "2/key").await?;
    c.goto(&page).await?;

    click(c, "#keys button.clear-key-limit").await?;
    see(c, "#notice", "Queue emails: no key limit.").await?;
    see(
        c,
        "#key-controls",
        "No key limit; no key rate limit; fair shares on: claims take turns across concurrency keys.",
    )
    .await?;
    ensure!(keys_of(q, "emails").await? == (None, true));

    click(c, "#keys button.fair-off").await?;
    see(c, "#notice", "Queue emails: fair shares off.").await?;
    see(c, "#keys .fair-state", "off").await?;
    ensure!(keys_of(q, "emails").await? == (None, false));
    ensure!(q.controls().await?.is_empty());
    c.goto(&format!("{}/", server.url)).await?;
    see(c, "tr[data-queue='emails'] span.qstate", "running").await?;
    ensure!(
        live_text(c, "tr[data-queue='emails'] .keys")
            .await?
            .is_none(),
        "no key controls to show"
    );
    Ok(())
}

/// Read-only: no page has a button that changes anything, and a POST is refused.
async fn read_only_mode_has_no_buttons(c: &Client, fx: &Fixture) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let id = dead(q, "emails", "{}", "boom").await?;
    let pending = push(q, "emails", "{}").await?;
    q.pause("emails").await?;
    q.set_concurrency_limit("emails", Some(3)).await?;
    let server = serve(fx, &["--read-only"], None)?;
    for path in [
        "/".to_owned(),
        "/jobs?queue=emails".to_owned(),
        format!("/jobs/{id}"),
        format!("/jobs/{pending}"),
    ] {
        c.goto(&format!("{}{path}", server.url)).await?;
        see(c, "#read-only", "read-only").await?;
        let forms: u32 = script(
            c,
            "return document.querySelectorAll('form[method=post]').length;",
        )
        .await?;
        // Only the forms that read (search, the kind filter) have buttons.
        let buttons: Vec<String> = script(
            c,
            "return [...document.querySelectorAll('button')] \
             .filter(b => !b.form || b.form.method !== 'get') \
             .map(b => b.textContent.trim());",
        )
        .await?;
        ensure!(forms == 0, "{path}: {forms} forms that post");
        ensure!(buttons.is_empty(), "{path}: buttons {buttons:?}");
    }
    let status: u16 = script(
        c,
        &format!("return fetch('/jobs/{id}/retry', {{method: 'POST'}}).then(r => r.status);"),
    )
    .await?;
    ensure!(status == 403, "{status}");
    ensure!(state_of(q, id).await? == JobState::Dead);
    // Bulk actions: no confirmation page, and no post.
    let status: u16 = script(
        c,
        "return fetch('/bulk?action=delete&queue=emails').then(r => r.status);",
    )
    .await?;
    ensure!(status == 403, "{status}");
    let status: u16 = script(
        c,
        "return fetch('/actions/bulk', {method: 'POST', headers: {'Content-Type': \
         'application/x-www-form-urlencoded'}, body: 'action=delete&queue=emails'}) \
         .then(r => r.status);",
    )
    .await?;
    ensure!(status == 403, "{status}");
    ensure!(q.get(id).await?.is_some() && q.get(pending).await?.is_some());
    let before = q.get(pending).await?.context("the job")?;
    let status: u16 = script(
        c,
        &format!(
            "return fetch('/jobs/{pending}/reschedule', {{method: 'POST', headers: \
             {{'Content-Type': 'application/x-www-form-urlencoded'}}, body: \
             'run=now&priority=5'}}).then(r => r.status);"
        ),
    )
    .await?;
    ensure!(status == 403, "{status}");
    let after = q.get(pending).await?.context("the job")?;
    ensure!(after.priority == before.priority && after.run_at == before.run_at);
    // The queue controls are shown, and cannot be changed.
    c.goto(&format!("{}/", server.url)).await?;
    see(c, "tr[data-queue='emails'] span.qstate", "paused").await?;
    see(c, "tr[data-queue='emails'] td.limit", "3").await?;
    for (path, body) in [
        ("/actions/resume", "queue=emails"),
        ("/actions/limit", "queue=emails&clear=1"),
        ("/actions/keys", "queue=emails&clear=1"),
        ("/actions/keys", "queue=emails&fair=on"),
    ] {
        let status: u16 = script(
            c,
            &format!(
                "return fetch('{path}', {{method: 'POST', headers: {{'Content-Type': \
                 'application/x-www-form-urlencoded'}}, body: '{body}'}}).then(r => r.status);"
            ),
        )
        .await?;
        ensure!(status == 403, "{path}: {status}");
    }
    ensure!(controls_of(q, "emails").await? == (true, Some(3)));
    ensure!(keys_of(q, "emails").await? == (None, false));
    Ok(())
}

/// The rows of the error history, as the page shows them: attempt, worker, error.
async fn history_shown(c: &Client) -> anyhow::Result<Vec<[String; 3]>> {
    let rows: Vec<Vec<String>> = script(
        c,
        "return [...document.querySelectorAll('#errors tbody tr')] \
         .map(r => [...r.cells].map(d => d.textContent.trim()));",
    )
    .await?;
    rows.into_iter()
        .map(|r| match r.as_slice() {
            [attempt, _, worker, error] => Ok([attempt.clone(), worker.clone(), error.clone()]),
            other => Err(anyhow!("a row of 4 cells, not {other:?}")),
        })
        .collect()
}

/// A job that failed twice and waits out its backoff: its page shows the history, newest first;
/// typing a delay into the reschedule form picks "after", and the job moves, in the page and in
/// the database; then "now" runs it at once.
async fn reschedule_a_job_with_a_history(c: &Client, fx: &Fixture) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let id = q
        .push(
            NewJob::from_json("emails", "{\"to\":\"ada@example.com\"}")?
                .kind("mail.send")
                .priority(i32::MAX),
        )
        .await?;
    for (worker, error, backoff) in [
        ("host-a:1", "SMTP timeout", 0),
        ("host-b:2", "SMTP said 451", 3600),
    ] {
        let leased = q
            .pop(
                dbqueue::PopRequest::new("emails")
                    .worker(worker)
                    .lease(Duration::from_secs(300)),
            )
            .await?;
        ensure!(leased.len() == 1 && leased[0].job.id == id, "{leased:?}");
        q.fail(
            &leased[0].lease,
            dbqueue::Failure::retry_after(error, Duration::from_secs(backoff)),
        )
        .await?;
    }
    let server = serve(fx, &[], None)?;
    c.goto(&format!("{}/jobs/{id}", server.url)).await?;
    see(c, "#job-state", "pending").await?;
    see(c, "#kind", "mail.send").await?;
    see(c, "#last-error", "SMTP said 451").await?;
    see(c, "#errors-note", "2 failed attempts, newest first.").await?;
    let shown = history_shown(c).await?;
    ensure!(
        shown
            == [
                ["2".to_owned(), "host-b:2".into(), "SMTP said 451".into()],
                ["1".to_owned(), "host-a:1".into(), "SMTP timeout".into()],
            ],
        "{shown:?}"
    );

    // Typing a delay picks "after"; the priority field starts empty (the current one is its
    // placeholder).
    let delay = c.find(Locator::Css("#delay")).await?;
    delay.send_keys("2h").await?;
    ensure!(script::<bool>(c, "return document.getElementById('run-delay').checked;").await?);
    c.find(Locator::Css("#priority"))
        .await?
        .send_keys("9")
        .await?;
    let before = q.now().await?;
    click(c, "#reschedule").await?;
    see(
        c,
        "#notice",
        "Rescheduled: the job is due in 2h, with priority 9.",
    )
    .await?;
    see(c, "#priority-value", "9").await?;
    let after = q.now().await?;
    let job = q.get(id).await?.context("the job")?;
    let two_hours = chrono::TimeDelta::hours(2);
    let slack = chrono::TimeDelta::seconds(2);
    ensure!(
        job.state == JobState::Pending && job.priority == 9,
        "{job:?}"
    );
    ensure!(
        job.run_at >= before + two_hours - slack && job.run_at <= after + two_hours + slack,
        "{} is not 2h after {before}..{after}",
        job.run_at
    );
    // The history is untouched by a reschedule.
    ensure!(history_shown(c).await? == shown);

    // Now: due at once, and a worker gets it.
    click(c, "#run-now").await?;
    click(c, "#reschedule").await?;
    see(
        c,
        "#notice",
        "Rescheduled: the job is due now; its priority is unchanged.",
    )
    .await?;
    see(c, "#job-state", "pending").await?;
    let leased = q.pop(dbqueue::PopRequest::new("emails")).await?;
    ensure!(leased.len() == 1 && leased[0].job.id == id && leased[0].job.priority == 9);
    // Claimed meanwhile, it can no longer be rescheduled: the page, which still shows the form,
    // says so, and nothing changes.
    click(c, "#run-now").await?;
    click(c, "#reschedule").await?;
    see(
        c,
        "#notice",
        format!("Nothing was changed: cannot reschedule job {id}: it is running"),
    )
    .await?;
    see(c, "#job-state", "running").await?;
    ensure!(state_of(q, id).await? == JobState::Running);
    Ok(())
}

/// With a token: nothing is shown without it, a wrong one is refused (401) and changes
/// nothing, the right one opens the dashboard.
async fn a_wrong_or_missing_token_is_refused(c: &Client, fx: &Fixture) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let id = dead(q, "emails", "{}", "boom").await?;
    let server = serve(fx, &[], Some(TOKEN))?;
    c.goto(&format!("{}/jobs/{id}", server.url)).await?;
    ensure!(c.title().await? == "Log in · dbqueue");
    let source = c.source().await?;
    ensure!(!source.contains("boom"), "the job's data is not shown");
    let status = |path: String, init: &'static str| {
        let c = c.clone();
        async move {
            script::<u16>(
                &c,
                &format!("return fetch('{path}', {init}).then(r => r.status);"),
            )
            .await
        }
    };
    ensure!(status("/".into(), "{}").await? == 401);
    ensure!(
        status(
            format!("/jobs/{id}/retry"),
            "{method: 'POST', headers: {Authorization: 'Bearer wrong-token-0123456789'}}"
        )
        .await?
            == 401
    );
    // A wrong token typed into the form.
    c.find(Locator::Css("input[name=token]"))
        .await?
        .send_keys("wrong-token-0123456789")
        .await?;
    click(c, "form.login button").await?;
    see(c, "#login-problem", "The token is wrong.").await?;
    ensure!(state_of(q, id).await? == JobState::Dead);
    // The right one, then the page that was asked for.
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("input[name=token]"))
        .await?
        .send_keys(TOKEN)
        .await?;
    click(c, "form.login button").await?;
    see(c, "#last-error", "boom").await?;
    click(c, "#retry").await?;
    see(c, "#job-state", "pending").await?;
    ensure!(state_of(q, id).await? == JobState::Pending);
    Ok(())
}

const SCRIPT: &str = "<script>window.__xss = 'script'</script>";
const IMG: &str = "\"><img src=x onerror=\"window.__xss = 'img'\">";

/// A payload, an error, a dedup key and a worker id carrying markup render as text and run
/// nothing, on every page that shows them.
async fn markup_in_jobs_renders_as_text_and_runs_nothing(
    c: &Client,
    fx: &Fixture,
) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let payload = json!({ "html": SCRIPT, "attr": IMG }).to_string();
    let id = dead_job(
        q,
        NewJob::from_json("emails", &payload)?.dedup_key(IMG),
        &format!("{SCRIPT} {IMG}"),
    )
    .await?;
    let worker_job = running(q, "emails", "{}", SCRIPT).await?;
    let server = serve(fx, &[], None)?;
    let search = format!("/search?q={}", support::query_value(IMG));
    for path in [
        "/".to_owned(),
        "/jobs?queue=emails".to_owned(),
        format!("/jobs/{id}"),
        format!("/jobs/{worker_job}"),
        search,
    ] {
        c.goto(&format!("{}{path}", server.url)).await?;
        // Let an injected handler run, if any had got through.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let ran: Option<String> = script(c, "return window.__xss || null;").await?;
        ensure!(ran.is_none(), "{path}: injected {ran:?} ran");
        let images: u32 = script(c, "return document.images.length;").await?;
        let scripts: Vec<String> =
            script(c, "return [...document.scripts].map(s => s.src);").await?;
        ensure!(images == 0, "{path}: {images} injected images");
        ensure!(
            scripts.len() == 1 && scripts[0].contains("/static/app.js"),
            "{path}: scripts {scripts:?}"
        );
    }
    c.goto(&format!("{}/jobs/{id}", server.url)).await?;
    let payload_text = text_of(c, "#payload").await?;
    ensure!(payload_text.contains(SCRIPT), "{payload_text}");
    see(c, "#last-error", format!("{SCRIPT} {IMG}")).await?;
    see(c, "#dedup-key", IMG).await?;
    c.goto(&format!("{}/jobs/{worker_job}", server.url)).await?;
    see(c, "#worker", SCRIPT).await?;
    Ok(())
}

/// With no token, `/login` redirects at once to its `next`. For a `next` that a browser would
/// read as another host (a tab, or a CR and LF, between its two slashes: browsers drop both)
/// and for one whose path normalises to `//evil.example`, Chromium follows the redirect to the
/// dashboard's overview.
async fn a_login_redirect_stays_on_the_dashboard(c: &Client, fx: &Fixture) -> anyhow::Result<()> {
    let server = serve(fx, &[], None)?;
    let dashboard = url::Url::parse(&server.url)?;
    for next in [
        "/%09/evil.example",
        "/%0D%0A/evil.example",
        "/.//evil.example",
    ] {
        // A redirect off the site fails to load (the other host does not resolve): where the
        // browser went is what matters, so the address is checked before the load's outcome.
        let loaded = c.goto(&format!("{}/login?next={next}", server.url)).await;
        let now = c.current_url().await?;
        ensure!(
            now.scheme() == dashboard.scheme()
                && now.host_str() == dashboard.host_str()
                && now.port_or_known_default() == dashboard.port_or_known_default(),
            "next={next} left the dashboard ({}) for {now}",
            server.url
        );
        loaded.with_context(|| format!("next={next}: loading {now}"))?;
        ensure!(
            now.path() == "/",
            "next={next} led to {now}, not the overview"
        );
        ensure!(
            c.title().await? == "Queues · dbqueue",
            "next={next}: {now} is not the overview"
        );
    }
    Ok(())
}

/// A page on another site that posts a form to the dashboard is refused, and nothing changes.
async fn a_cross_site_post_is_refused(c: &Client, fx: &Fixture) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    let id = dead(q, "emails", "{}", "boom").await?;
    let server = serve(fx, &[], None)?;
    // The other site: `localhost` is another site than `127.0.0.1` to the browser.
    let evil = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let evil_port = evil.local_addr()?.port();
    let target = format!("{}/jobs/{id}/retry", server.url);
    let page = format!(
        "<!doctype html><title>evil</title><form id=f method=post action=\"{target}\">\
         <input name=csrf value=guessed></form>\
         <script>document.getElementById('f').submit()</script>"
    );
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let page = page.clone();
            async move { axum::response::Html(page) }
        }),
    );
    let evil_task = tokio::spawn(async move { axum::serve(evil, app).await });
    // The victim has the dashboard open, so the browser holds its cookies.
    c.goto(&format!("{}/jobs/{id}", server.url)).await?;
    see(c, "#job-state", "dead").await?;
    c.goto(&format!("http://localhost:{evil_port}/")).await?;
    until("the forged form was answered", || async {
        Ok(c.current_url().await?.as_str() == target)
    })
    .await?;
    let body: String = script(c, "return document.body.innerText;").await?;
    ensure!(body.contains("refused"), "{body}");
    ensure!(
        state_of(q, id).await? == JobState::Dead,
        "the forged retry changed nothing"
    );
    evil_task.abort();
    Ok(())
}

/// The screenshots in the dashboard guide (docs/guide/dashboard.md): the demo's data, the
/// overview and a dead job's page, served as a user would, from the default `queue.db` of the
/// current directory.
async fn screenshots_of_the_demo(c: &Client, _fx: &Fixture) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    for (queue, jobs) in [("emails", "3000"), ("reports", "800")] {
        let out = Command::new(env!("CARGO_BIN_EXE_queue"))
            .args([
                "demo",
                "--url",
                "sqlite://queue.db",
                "--queue",
                queue,
                "--jobs",
                jobs,
            ])
            .current_dir(dir.path())
            .env_remove("QUEUE_URL")
            .stdin(Stdio::null())
            .output()?;
        ensure!(
            out.status.success(),
            "demo failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Some work waiting, as in a live system.
    let url = format!("sqlite://{}", dir.path().join("queue.db").display());
    let queue = dbqueue::connect(&url).await?;
    for n in 0..40 {
        push(queue.as_ref(), "emails", &format!("{{\"n\":{n}}}")).await?;
    }
    let server = serve_in(Some(dir.path()), &[], None)?;
    c.goto(&format!("{}/", server.url)).await?;
    text_of(c, "tr[data-queue='reports']").await?;
    let overview = c.screenshot().await?;
    click(c, "tr[data-queue='emails'] td.dead a").await?;
    click(c, "table.jobs td.id a").await?;
    text_of(c, "#last-error").await?;
    let job = c.screenshot().await?;
    for (name, png) in [("overview", &overview), ("job", &job)] {
        ensure!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{name} is a PNG");
        ensure!(
            png.len() > 10_000,
            "{name} has content ({} bytes)",
            png.len()
        );
        save(&format!("dashboard-{name}.png"), png)?;
    }
    Ok(())
}

/// A screenshot of the overview with a paused queue and a limited one, for a look at the
/// layout of the controls.
async fn screenshot_of_the_queue_controls(c: &Client, fx: &Fixture) -> anyhow::Result<()> {
    let q = fx.queue.as_ref();
    for n in 0..6 {
        completed(q, "emails", &format!("{{\"n\":{n}}}")).await?;
        push(q, "emails", "{}").await?;
    }
    for _ in 0..3 {
        completed(q, "reports", "{}").await?;
        running(q, "reports", "{}", "w1").await?;
    }
    dead(q, "reports", "{}", "boom").await?;
    push(q, "webhooks", "{}").await?;
    q.pause("emails").await?;
    q.set_concurrency_limit("reports", Some(3)).await?;
    q.set_concurrency_limit("thumbnails", Some(12)).await?;
    q.pause("thumbnails").await?;
    q.set_key_limit("reports", Some(2)).await?;
    q.set_fair_shares("webhooks", true).await?;
    let server = serve(fx, &[], None)?;
    c.goto(&format!("{}/", server.url)).await?;
    see(c, "tr[data-queue='emails'] span.qstate", "paused").await?;
    see_limit(c, "reports", "3").await?;
    see_limit(c, "thumbnails", "12").await?;
    see(c, "tr[data-queue='reports'] .keys", "2/key").await?;
    see(c, "tr[data-queue='webhooks'] .keys", "fair").await?;
    let png = c.screenshot().await?;
    ensure!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    save("dashboard-controls.png", &png)?;
    // The controls fit the window's width (1280 px): the table stays inside the page's
    // content, and nothing scrolls sideways.
    let (scroll, client, table, room): (u32, u32, u32, u32) = script(
        c,
        "const d = document.documentElement; const m = document.querySelector('main'); \
         const t = document.querySelector('table.queues').getBoundingClientRect(); \
         const right = m.getBoundingClientRect().right - \
         parseFloat(getComputedStyle(m).paddingRight); \
         return [d.scrollWidth, d.clientWidth, Math.ceil(t.right), Math.ceil(right)];",
    )
    .await?;
    println!(
        "page {scroll} px wide in a {client} px window; the table ends at {table} px, the \
         content at {room} px"
    );
    ensure!(
        scroll <= client,
        "the page scrolls sideways: {scroll} > {client}"
    );
    ensure!(table <= room, "the table is wider than the page's content");
    Ok(())
}

fn save(name: &str, png: &[u8]) -> anyhow::Result<()> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(name), png)?;
    println!("screenshot: {}", dir.join(name).display());
    if std::env::var("QUEUE_UPDATE_SCREENSHOTS").as_deref() == Ok("1") {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
        std::fs::create_dir_all(&docs)?;
        std::fs::write(docs.join(name), png)?;
        println!("updated: {}", docs.join(name).display());
    }
    Ok(())
}

type BrowserCase = for<'a> fn(
    &'a Client,
    &'a Fixture,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = anyhow::Result<()>> + 'a>,
>;

macro_rules! browser_case {
    ($f:ident) => {
        (stringify!($f), (|c, fx| Box::pin($f(c, fx))) as BrowserCase)
    };
}

/// Runs `case` with a fresh fixture and a fresh browser session, and closes both whatever the
/// outcome.
fn run(
    browser: Browser,
    backend: Backend,
    server: Option<String>,
    case: BrowserCase,
) -> Result<(), Failed> {
    support::runtime()?.block_on(async move {
        let fx = Fixture::new(backend, server.as_deref())
            .await
            .map_err(|e| Failed::from(format!("fixture: {e:#}")))?;
        let outcome = match open_browser(&browser.chromium, &browser.driver).await {
            Ok((client, profile)) => {
                // A panic in the case must not leave its browser running.
                let outcome = std::panic::AssertUnwindSafe(case(&client, &fx))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|_| Err(anyhow!("the case panicked")));
                let closed = client.close().await;
                drop(profile);
                outcome.and(closed.context("closing the browser session"))
            }
            Err(e) => Err(e),
        };
        let teardown = fx.teardown().await;
        outcome.map_err(|e| Failed::from(format!("{e:#}")))?;
        teardown.map_err(|e| Failed::from(format!("teardown: {e:#}")))
    })
}

fn main() {
    let mut args = libtest_mimic::Arguments::from_args();
    // One browser at a time: each case starts Chromium and a server.
    args.test_threads = Some(1);
    let cases = [
        browser_case!(follow_a_queue_to_a_dead_job_and_retry_it),
        browser_case!(the_overview_refreshes_without_a_reload),
        browser_case!(bulk_retry_from_the_queue_page),
        browser_case!(bulk_cancel_from_a_filtered_list),
        browser_case!(pause_resume_and_limit_from_the_overview),
        browser_case!(key_limit_and_fair_shares_from_the_queue_page),
        browser_case!(read_only_mode_has_no_buttons),
        browser_case!(a_wrong_or_missing_token_is_refused),
        browser_case!(markup_in_jobs_renders_as_text_and_runs_nothing),
        browser_case!(a_cross_site_post_is_refused),
        browser_case!(a_login_redirect_stays_on_the_dashboard),
        browser_case!(reschedule_a_job_with_a_history),
        browser_case!(follow_a_workflow_to_the_step_a_failure_cancelled),
    ];
    // One chromedriver for the run, stopped before the process exits.
    let driver = find_programs().and_then(|p| {
        start_chromedriver(&p.chromedriver)
            .map(|d| (p.chromium, d))
            .map_err(|e| format!("{e:#}"))
    });
    let browser = match &driver {
        Ok((chromium, d)) => Ok(Browser {
            chromium: chromium.clone(),
            driver: d.url.clone(),
        }),
        Err(why) => Err(why.clone()),
    };
    if let Err(why) = &browser {
        if !required("browser") {
            println!(
                "note: the browser cases are ignored: {why} (QUEUE_TEST_REQUIRE=browser makes \
                 this a failure)"
            );
        }
    }
    let mut trials = Vec::new();
    for backend in Backend::ALL {
        let server = backend.server();
        if let (Ok(_), Err(why)) = (&browser, &server) {
            if !required(backend.name()) {
                println!(
                    "note: the {} browser cases are ignored: {why}",
                    backend.name()
                );
            }
        }
        let mut all: Vec<(&'static str, BrowserCase)> = cases.to_vec();
        if backend == Backend::Sqlite {
            all.push(browser_case!(screenshots_of_the_demo));
            all.push(browser_case!(screenshot_of_the_queue_controls));
        }
        for (name, case) in all {
            let name = format!("browser::{}::{name}", backend.name());
            let missing = match (&browser, &server) {
                (Err(why), _) => Some(("browser", why.clone())),
                (_, Err(why)) => Some((backend.name(), why.clone())),
                _ => None,
            };
            trials.push(match missing {
                None => {
                    let (b, url) = (browser.clone().ok(), server.clone().ok().flatten());
                    Trial::test(name, move || match b {
                        Some(b) => run(b, backend, url, case),
                        None => Err(Failed::from("no browser")),
                    })
                }
                Some((what, why)) if required(what) => {
                    let message =
                        format!("{what} is required by QUEUE_TEST_REQUIRE but missing: {why}");
                    Trial::test(name, move || Err(Failed::from(message)))
                }
                Some((_, why)) => {
                    Trial::ignorable_test(name, move || Ok(Completion::ignored_with(why)))
                }
            });
        }
    }
    let conclusion = libtest_mimic::run(&args, trials);
    drop(driver);
    conclusion.exit();
}
