//! The `queue` command through the real binary, checked against what the database stores:
//! `push` with payloads from a file and from standard input, with a kind, metadata and a
//! timeout, and unique pushes, `list` paging and its kind filter, `get`, `reschedule`,
//! `schedules`, the queue controls (`pause`, `resume`, `limit`) with `stats`, `work` and `demo`,
//! `bulk`, `retention`, counts at the stats cap, and `get --wait` / `push --wait`.

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use queue_core::{JobId, JobState, NewJob, PopRequest, QueueStats};

fn queue_cmd(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_queue"))
        .args(args)
        .env_remove("QUEUE_URL")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the queue binary starts");
    if let Some(bytes) = stdin {
        let mut input = child.stdin.take().expect("stdin is piped");
        // The command stops reading once the input passes the payload limit.
        match input.write_all(bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            other => other.expect("the payload is written"),
        }
    }
    child.wait_with_output().expect("the queue binary ends")
}

fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}; stderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

/// A JSON payload of about `bytes` bytes: far more than one command-line argument may hold
/// (128 KiB on Linux).
fn big_payload(bytes: usize) -> String {
    let body = "x".repeat(bytes);
    format!("{{\"report\":\"{body}\",\"n\":7}}")
}

async fn stored_payload(url: &str, id: &str) -> String {
    let queue = dbqueue::connect(url).await.expect("connects");
    let id: JobId = id.trim().parse().expect("push printed an id");
    let job = queue.get(id).await.expect("reads").expect("the job exists");
    job.payload.get().to_owned()
}

async fn job_count(url: &str) -> u64 {
    let queue = dbqueue::connect(url).await.expect("connects");
    let stats = queue.stats(None).await.expect("stats");
    stats
        .iter()
        .map(|s| s.available + s.scheduled + s.running + s.completed + s.dead + s.cancelled)
        .sum()
}

fn migrated_db(dir: &Path) -> String {
    let url = format!("sqlite://{}", dir.join("push.db").display());
    ok(&queue_cmd(&["migrate", "--url", &url], None));
    url
}

#[tokio::test]
async fn a_payload_file_larger_than_an_argument_is_stored_whole() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    let payload = big_payload(1024 * 1024);
    let file = dir.path().join("payload.json");
    std::fs::write(&file, format!("{payload}\n")).unwrap();
    let id = ok(&queue_cmd(
        &[
            "push",
            "--url",
            &url,
            "--queue",
            "reports",
            "--payload-file",
            file.to_str().unwrap(),
        ],
        None,
    ));
    let stored: serde_json::Value = serde_json::from_str(&stored_payload(&url, &id).await).unwrap();
    let sent: serde_json::Value = serde_json::from_str(&payload).unwrap();
    assert_eq!(stored, sent);
}

#[tokio::test]
async fn standard_input_is_read_with_a_dash() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    let payload = big_payload(512 * 1024);
    for flag in ["--payload-file", "--payload"] {
        let id = ok(&queue_cmd(
            &["push", "--url", &url, "--queue", "reports", flag, "-"],
            Some(payload.as_bytes()),
        ));
        let stored: serde_json::Value =
            serde_json::from_str(&stored_payload(&url, &id).await).unwrap();
        assert_eq!(stored["n"], 7, "{flag} -");
        assert_eq!(stored["report"].as_str().unwrap().len(), 512 * 1024);
    }
    assert_eq!(job_count(&url).await, 2);
}

#[tokio::test]
async fn bad_payload_input_is_refused_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    /// Extra arguments, standard input, and the start of the expected error.
    type Case = (Vec<String>, Option<Vec<u8>>, &'static str);
    let cases: Vec<Case> = vec![
        // Over the 4 MiB default limit.
        (
            vec!["--payload-file".into(), "-".into()],
            Some(big_payload(5 * 1024 * 1024).into_bytes()),
            "invalid payload_file: standard input holds more than the payload limit",
        ),
        (
            vec![
                "--payload-file".into(),
                dir.path().join("missing.json").display().to_string(),
            ],
            None,
            "invalid payload_file: cannot open",
        ),
        (
            vec!["--payload".into(), "-".into()],
            Some(b"{not json".to_vec()),
            "invalid payload: must be valid JSON",
        ),
        (
            vec![
                "--payload".into(),
                "{}".into(),
                "--payload-file".into(),
                "x".into(),
            ],
            None,
            "cannot be used with",
        ),
    ];
    for (extra, stdin, expected) in cases {
        let mut args = vec!["push", "--url", &url, "--queue", "reports"];
        args.extend(extra.iter().map(String::as_str));
        let out = queue_cmd(&args, stdin.as_deref());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
    assert_eq!(job_count(&url).await, 0);
}

#[tokio::test]
async fn list_pages_with_before() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    let mut pushed = Vec::new();
    for n in 0..5 {
        let payload = format!("{{\"n\":{n}}}");
        let id = ok(&queue_cmd(
            &["push", "--url", &url, "--queue", "q", "--payload", &payload],
            None,
        ));
        pushed.push(id.trim().to_owned());
    }
    let mut seen = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let mut args = vec!["list", "--url", &url, "--limit", "2", "--json"];
        if let Some(b) = &before {
            args.extend(["--before", b.as_str()]);
        }
        let page: Vec<serde_json::Value> =
            serde_json::from_str(&ok(&queue_cmd(&args, None))).unwrap();
        if page.is_empty() {
            break;
        }
        let ids: Vec<String> = page
            .iter()
            .map(|j| j["id"].as_str().unwrap().to_owned())
            .collect();
        before = ids.last().cloned();
        seen.extend(ids);
    }
    pushed.reverse();
    assert_eq!(seen, pushed, "every job once, newest first");
    let out = queue_cmd(&["list", "--url", &url, "--before", "yesterday"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid before: must be a job id"));
}

/// `push` with a kind, metadata and a timeout, `list --kind`, `get` (text and JSON) and
/// `reschedule`, checked against what the database stores; bad input names the field (exit
/// status 2, nothing stored), and a job that is not pending is refused (exit status 1).
#[tokio::test]
async fn kinds_metadata_and_reschedule_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    let id = ok(&queue_cmd(
        &[
            "push",
            "--url",
            &url,
            "--queue",
            "emails",
            "--kind",
            "send_email",
            "--meta",
            r#"{"tenant":7}"#,
            "--timeout",
            "30s",
            "--payload",
            r#"{"to":"ada"}"#,
        ],
        None,
    ));
    let id = id.trim().to_owned();
    ok(&queue_cmd(
        &["push", "--url", &url, "--queue", "emails"],
        None,
    ));
    // list --kind shows only that kind, with the kind column.
    let listed = ok(&queue_cmd(
        &["list", "--url", &url, "--kind", "send_email"],
        None,
    ));
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert!(
        lines[0].contains("kind") && lines[1].contains("send_email"),
        "{listed}"
    );
    // get prints every field; --json the same as data.
    let shown = ok(&queue_cmd(&["get", "--url", &url, &id], None));
    for want in [
        "send_email",
        "timeout          30s",
        "\"tenant\": 7",
        "\"to\": \"ada\"",
    ] {
        assert!(shown.contains(want), "{want:?} in {shown}");
    }
    let json: serde_json::Value = serde_json::from_str(&ok(&queue_cmd(
        &["get", "--url", &url, &id, "--json"],
        None,
    )))
    .unwrap();
    assert_eq!(json["kind"], "send_email");
    assert_eq!(json["meta"]["tenant"], 7);
    assert_eq!(json["timeout_ms"], 30_000);
    // reschedule: an hour later, priority 4, as the database stores it.
    let out = ok(&queue_cmd(
        &[
            "reschedule",
            "--url",
            &url,
            &id,
            "--delay",
            "1h",
            "--priority",
            "4",
        ],
        None,
    ));
    assert!(out.contains("priority 4"), "{out}");
    let queue = dbqueue::connect(&url).await.unwrap();
    let job = queue.get(id.parse().unwrap()).await.unwrap().unwrap();
    assert_eq!(job.priority, 4);
    assert!(job.run_at > chrono::Utc::now() + chrono::Duration::minutes(50));
    assert_eq!(job.kind.as_deref(), Some("send_email"));
    // Refusals name the field and change nothing.
    for (args, field) in [
        (vec!["push", "--queue", "q", "--kind", "bad kind"], "kind"),
        (vec!["push", "--queue", "q", "--meta", "[1]"], "meta"),
        (vec!["push", "--queue", "q", "--timeout", "0s"], "timeout"),
        (vec!["reschedule", id.as_str()], "reschedule"),
        (vec!["reschedule", id.as_str(), "--at", "tomorrow"], "at"),
        (vec!["list", "--kind", "a b"], "kind"),
    ] {
        let mut all = args.clone();
        all.extend(["--url", url.as_str()]);
        let err = failed(&queue_cmd(&all, None));
        assert!(err.contains(&format!("invalid {field}")), "{args:?}: {err}");
    }
    assert_eq!(job_count(&url).await, 2);
    let unchanged = queue.get(id.parse().unwrap()).await.unwrap().unwrap();
    assert_eq!(unchanged.run_at, job.run_at);
    // A job that is not pending is refused (exit 1), naming its state.
    let claimed = queue.pop(PopRequest::new("emails").limit(2)).await.unwrap();
    assert_eq!(claimed.len(), 1);
    let running = claimed[0].job.id.to_string();
    let out = queue_cmd(
        &["reschedule", "--url", &url, &running, "--delay", "0s"],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("running"));
}

/// `get` cuts long errors in its history table and then says where to read them whole.
#[tokio::test]
async fn get_points_to_json_for_errors_it_cuts() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    let queue = dbqueue::connect(&url).await.unwrap();
    let long = format!("the mail server said: {}", "421 try later; ".repeat(8));
    let mut ids = Vec::new();
    for error in ["short", long.as_str()] {
        let id = ok(&queue_cmd(
            &["push", "--url", &url, "--queue", "emails"],
            None,
        ));
        let claimed = queue.pop(PopRequest::new("emails")).await.unwrap();
        queue
            .fail(&claimed[0].lease, dbqueue::Failure::permanent(error))
            .await
            .unwrap();
        ids.push(id.trim().to_owned());
    }
    let short = ok(&queue_cmd(&["get", "--url", &url, &ids[0]], None));
    assert!(!short.contains("--json"), "{short}");
    let shown = ok(&queue_cmd(&["get", "--url", &url, &ids[1]], None));
    assert!(shown.contains("421 try later; 421 \u{2026}"), "{shown}");
    assert!(
        shown.contains(&format!(
            "cut: `queue get {} --json` prints them whole",
            ids[1]
        )),
        "{shown}"
    );
    let json: serde_json::Value = serde_json::from_str(&ok(&queue_cmd(
        &["get", "--url", &url, &ids[1], "--json"],
        None,
    )))
    .unwrap();
    assert_eq!(json["errors"][0]["error"], long.as_str());
}

/// The cells of the line of `table` (as `queue` prints it) that starts with `first`.
fn line_of(table: &str, first: &str) -> Vec<String> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .find(|cells| cells.first().map(String::as_str) == Some(first))
        .unwrap_or_else(|| panic!("no line starts with {first}: {table}"))
}

/// `workflows` lists what the database stores, newest first, with its jobs per state and
/// paging; `workflow` shows each step's job, its state and what it waits for; `get` shows a
/// step's workflow, its dependencies and the dependency that cancelled it; `stats` and `list`
/// count and filter waiting jobs; and once the dead dependency is retried, the step it
/// cancelled waits again. A malformed id names the field (exit status 2); an unknown one says
/// so (exit status 1).
#[tokio::test]
async fn workflows_are_listed_and_shown_with_what_each_step_waits_for() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    let queue = dbqueue::connect(&url).await.unwrap();
    let chain = dbqueue::Workflow::chain([
        NewJob::from_json("reports", "{}").unwrap(),
        NewJob::from_json("reports", "{}").unwrap(),
    ])
    .name("nightly");
    let nightly = queue.push_workflow(chain).await.unwrap();
    let album = support::album(queue.as_ref(), "media", "album-42", "404 not found")
        .await
        .unwrap();
    let step = |name: &str| album.job(name).unwrap();
    let (fetch, resize, cleanup, report) = (
        step("fetch"),
        step("resize"),
        step("cleanup"),
        step("report"),
    );
    let plain = support::push(queue.as_ref(), "media", "{}").await.unwrap();

    // The list, newest first: id, name, created_at (two words), status, jobs, then the jobs
    // in each state.
    let table = ok(&queue_cmd(&["workflows", "--url", &url], None));
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "id",
            "name",
            "created_at",
            "status",
            "jobs",
            "waiting",
            "pending",
            "running",
            "completed",
            "dead",
            "cancelled"
        ],
        "{table}"
    );
    let row = line_of(&table, &album.id.to_string());
    assert_eq!(row[1], "album-42", "{table}");
    assert_eq!(
        &row[4..],
        ["active", "4", "1", "1", "0", "0", "1", "1"],
        "{table}"
    );
    let row = line_of(&table, &nightly.id.to_string());
    assert_eq!(&row[4..], ["active", "2", "1", "1", "0", "0", "0", "0"]);
    assert!(
        table.find(&album.id.to_string()) < table.find(&nightly.id.to_string()),
        "newest first: {table}"
    );
    let listed: Vec<serde_json::Value> = serde_json::from_str(&ok(&queue_cmd(
        &["workflows", "--url", &url, "--json"],
        None,
    )))
    .unwrap();
    let stored = queue
        .workflows(dbqueue::WorkflowListRequest::default())
        .await
        .unwrap();
    let ids: Vec<String> = listed
        .iter()
        .map(|w| w["id"].as_str().unwrap().to_owned())
        .collect();
    let stored_ids: Vec<String> = stored.iter().map(|w| w.id.to_string()).collect();
    assert_eq!(ids, stored_ids);
    assert_eq!(ids, [album.id.to_string(), nightly.id.to_string()]);
    let a = &listed[0];
    assert_eq!(
        (&a["name"], &a["jobs"], &a["open"], &a["finished"]),
        (
            &serde_json::json!("album-42"),
            &serde_json::json!(4),
            &serde_json::json!(false),
            &serde_json::json!(false)
        )
    );
    assert_eq!(
        a["counts"],
        serde_json::json!({"waiting": 1, "pending": 1, "running": 0, "completed": 0, "dead": 1,
            "cancelled": 1})
    );
    // Paging: one at a time, then the next one older than it.
    let first = ok(&queue_cmd(
        &["workflows", "--url", &url, "--limit", "1"],
        None,
    ));
    assert_eq!(first.lines().count(), 2, "{first}");
    assert!(first.contains(&album.id.to_string()), "{first}");
    let album_id = album.id.to_string();
    let next = ok(&queue_cmd(
        &[
            "workflows",
            "--url",
            &url,
            "--limit",
            "1",
            "--before",
            &album_id,
        ],
        None,
    ));
    assert!(
        next.contains(&nightly.id.to_string()) && !next.contains(&album_id),
        "{next}"
    );

    // One workflow: its fields, then a line per step in push order.
    let shown = ok(&queue_cmd(&["workflow", &album_id, "--url", &url], None));
    for want in [
        format!("workflow         {album_id}\n"),
        "name             album-42\n".to_owned(),
        "status           active\n".to_owned(),
        "jobs             4: 1 waiting, 1 pending, 1 dead, 1 cancelled\n".to_owned(),
    ] {
        assert!(shown.contains(&want), "{want:?} in {shown}");
    }
    let steps: Vec<&str> = shown
        .lines()
        .skip_while(|l| !l.starts_with("step "))
        .collect();
    assert_eq!(
        steps[0].split_whitespace().collect::<Vec<_>>(),
        [
            "step",
            "id",
            "state",
            "queue",
            "kind",
            "waits_for",
            "blocked_by"
        ],
        "{shown}"
    );
    let cells = |name: &str| line_of(&shown, name).join(" ");
    assert_eq!(
        cells("fetch"),
        format!("fetch {fetch} dead media media.fetch -")
    );
    assert_eq!(
        cells("resize"),
        format!("resize {resize} cancelled media media.resize fetch fetch")
    );
    assert_eq!(
        cells("cleanup"),
        format!("cleanup {cleanup} pending media media.cleanup fetch (any outcome)")
    );
    assert_eq!(
        cells("report"),
        format!("report {report} waiting media media.report resize (any outcome), cleanup")
    );
    // As JSON, each job as `list --json` prints it, with its step and dependencies, as stored.
    let json: serde_json::Value = serde_json::from_str(&ok(&queue_cmd(
        &["workflow", &album_id, "--url", &url, "--json"],
        None,
    )))
    .unwrap();
    let info = queue.workflow(album.id).await.unwrap().unwrap();
    let jobs = json["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), info.jobs.len());
    for (shown, stored) in jobs.iter().zip(&info.jobs) {
        assert_eq!(shown["id"], stored.job.id.to_string());
        assert_eq!(shown["step"], stored.step.as_str());
        assert_eq!(shown["state"], stored.job.state.as_str());
        assert_eq!(
            shown["depends_on"].as_array().unwrap().len(),
            stored.depends_on.len()
        );
    }
    assert_eq!(json["name"], "album-42");
    assert_eq!(json["counts"]["dead"], 1);
    assert_eq!(jobs[1]["blocked_by"], fetch.to_string());
    assert_eq!(
        jobs[3]["depends_on"],
        serde_json::json!([
            {"id": resize, "step": "resize", "policy": "any_outcome"},
            {"id": cleanup, "step": "cleanup", "policy": "completed"},
        ])
    );

    // `get` of a step: its workflow and step, what it depends on, and why it was cancelled.
    let got = ok(&queue_cmd(
        &["get", "--url", &url, &resize.to_string()],
        None,
    ));
    for want in [
        format!(
            "state            cancelled\nworkflow         {album_id}\nstep             resize\n"
        ),
        format!("blocked_by       cancelled because its dependency fetch ({fetch}) ended dead\n"),
        "depends on:\n".to_owned(),
    ] {
        assert!(got.contains(&want), "{want:?} in {got}");
    }
    assert_eq!(
        line_of(&got, "fetch"),
        ["fetch", &fetch.to_string(), "completed", "dead"]
    );
    let got = ok(&queue_cmd(
        &["get", "--url", &url, &report.to_string()],
        None,
    ));
    assert!(!got.contains("blocked_by"), "{got}");
    assert_eq!(
        line_of(&got, "resize"),
        ["resize", &resize.to_string(), "any", "outcome", "cancelled"]
    );
    assert_eq!(
        line_of(&got, "cleanup"),
        ["cleanup", &cleanup.to_string(), "completed", "pending"]
    );
    let json: serde_json::Value = serde_json::from_str(&ok(&queue_cmd(
        &["get", "--url", &url, &resize.to_string(), "--json"],
        None,
    )))
    .unwrap();
    assert_eq!(json["workflow"], album_id);
    assert_eq!(json["step"], "resize");
    assert_eq!(json["blocked_by"], fetch.to_string());
    assert_eq!(json["depends_on"][0]["id"], fetch.to_string());
    assert_eq!(json["depends_on"][0]["policy"], "completed");
    assert_eq!(json["depends_on"][0]["state"], "dead");
    // A job outside any workflow says nothing of one.
    let got = ok(&queue_cmd(
        &["get", "--url", &url, &plain.to_string()],
        None,
    ));
    assert!(
        !got.contains("workflow") && !got.contains("depends on"),
        "{got}"
    );
    let json: serde_json::Value = serde_json::from_str(&ok(&queue_cmd(
        &["get", "--url", &url, &plain.to_string(), "--json"],
        None,
    )))
    .unwrap();
    assert!(json["workflow"].is_null() && json["blocked_by"].is_null());
    assert_eq!(json["depends_on"], serde_json::json!([]));

    // Waiting jobs are counted and listed.
    assert_eq!(stats_row(&url, "media")[1], "1");
    assert_eq!(stats_json(&url, "media")["waiting"], 1);
    assert_eq!(stats_of(&url, "media").await.waiting, 1);
    let waiting = ok(&queue_cmd(
        &[
            "list", "--url", &url, "--queue", "media", "--state", "waiting",
        ],
        None,
    ));
    assert_eq!(waiting.lines().count(), 2, "{waiting}");
    assert!(waiting.contains(&report.to_string()), "{waiting}");

    // Retrying the dead dependency puts the step it cancelled back to waiting.
    ok(&queue_cmd(
        &["retry", "--url", &url, &fetch.to_string()],
        None,
    ));
    let shown = ok(&queue_cmd(&["workflow", &album_id, "--url", &url], None));
    assert_eq!(
        line_of(&shown, "resize").join(" "),
        format!("resize {resize} waiting media media.resize fetch")
    );
    let stored = queue.get(resize).await.unwrap().unwrap();
    assert_eq!((stored.state, stored.blocked_by), (JobState::Waiting, None));

    // Bad and unknown ids.
    for (args, want) in [
        (
            vec!["workflow", "album-42"],
            "error: invalid workflow: must be a UUID",
        ),
        (
            vec!["workflows", "--before", "yesterday"],
            "error: invalid before: must be a workflow id",
        ),
        (
            vec!["workflows", "--limit", "0"],
            "error: invalid limit: must be between 1 and 1000",
        ),
    ] {
        let mut all = args.clone();
        all.extend(["--url", url.as_str()]);
        let err = failed(&queue_cmd(&all, None));
        assert!(err.starts_with(want), "{args:?}: {err}");
    }
    let unknown = dbqueue::WorkflowId::new().to_string();
    let out = queue_cmd(&["workflow", &unknown, "--url", &url], None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("error: workflow {unknown} not found\n")
    );
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let empty = migrated_db(&other);
    assert_eq!(
        ok(&queue_cmd(&["workflows", "--url", &empty], None)),
        "no workflows\n"
    );
}

/// `schedules add`, the listing, bad input (exit status 2, nothing stored) and `remove`, checked
/// against the schedules the database stores.
#[tokio::test]
async fn schedules_are_added_listed_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    let out = ok(&queue_cmd(
        &[
            "schedules",
            "add",
            "nightly",
            "--url",
            &url,
            "--cron",
            "30 2 * * *",
            "--time-zone",
            "Europe/Berlin",
            "--queue",
            "reports",
            "--kind",
            "report.nightly",
            "--payload",
            "{\"kind\":\"nightly\"}",
            "--catch-up",
            "3",
        ],
        None,
    ));
    assert!(
        out.starts_with("added schedule nightly; next slot ") && out.trim_end().ends_with(" (UTC)"),
        "{out}"
    );
    let queue = dbqueue::connect(&url).await.expect("connects");
    let stored = queue.schedules().await.expect("lists");
    assert_eq!(stored.len(), 1);
    let s = &stored[0];
    assert_eq!(s.job.expression(), "30 2 * * *");
    assert_eq!(s.job.time_zone_name(), "Europe/Berlin");
    assert_eq!(s.job.payload_json(), "{\"kind\":\"nightly\"}");
    assert_eq!(s.job.kind_value(), Some("report.nightly"));
    assert_eq!(
        s.job.misfire_policy(),
        dbqueue::periodic::Misfire::CatchUp { max: 3 }
    );
    assert_eq!(s.origin, dbqueue::periodic::Origin::Operator);

    let listing = ok(&queue_cmd(&["schedules", "--url", &url], None));
    assert!(
        listing.contains("nightly  30 2 * * *  Europe/Berlin  reports  operator"),
        "{listing}"
    );

    for (args, field) in [
        (&["--cron", "61 * * * *", "--queue", "q"][..], "expression"),
        (
            &[
                "--cron",
                "* * * * *",
                "--queue",
                "q",
                "--time-zone",
                "Nowhere/Else",
            ],
            "time_zone",
        ),
        (
            &["--cron", "* * * * *", "--queue", "q", "--catch-up", "0"],
            "catch_up",
        ),
        (&["--cron", "* * * * *", "--queue", "bad queue"], "queue"),
        (
            &["--cron", "* * * * *", "--queue", "q", "--kind", "bad kind"],
            "kind",
        ),
    ] {
        let mut all = vec!["schedules", "add", "other", "--url", &url];
        all.extend_from_slice(args);
        let out = queue_cmd(&all, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("invalid {field}:")),
            "{args:?}: {err}"
        );
    }
    assert_eq!(queue.schedules().await.expect("lists").len(), 1);

    ok(&queue_cmd(
        &["schedules", "remove", "nightly", "--url", &url],
        None,
    ));
    assert!(queue.schedules().await.expect("lists").is_empty());
    let out = queue_cmd(&["schedules", "remove", "nightly", "--url", &url], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no schedule named \"nightly\""));
}

fn failed(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(2),
        "a usage error; stdout: {}; stderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    stderr
}

/// The stats of `name`, as the library reads them.
async fn stats_of(url: &str, name: &str) -> QueueStats {
    let queue = dbqueue::connect(url).await.expect("connects");
    let stats = queue.stats(Some(name)).await.expect("stats");
    stats
        .into_iter()
        .find(|s| s.queue == name)
        .expect("a line for the queue")
}

/// `queue stats --json`, the entry of `name`.
fn stats_json(url: &str, name: &str) -> serde_json::Value {
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&ok(&queue_cmd(&["stats", "--url", url, "--json"], None)))
            .expect("stats --json prints JSON");
    rows.into_iter()
        .find(|r| r["queue"] == name)
        .unwrap_or_else(|| panic!("no entry for {name}"))
}

/// The row of `name` in the `queue stats` table, split into its cells.
fn stats_row(url: &str, name: &str) -> Vec<String> {
    let table = ok(&queue_cmd(&["stats", "--url", url], None));
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().expect("a header").split_whitespace().collect();
    assert_eq!(
        header,
        [
            "queue",
            "waiting",
            "available",
            "scheduled",
            "running",
            "completed",
            "dead",
            "cancelled",
            "state",
            "limit",
            "rate",
            "keys"
        ],
        "{table}"
    );
    lines
        .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .find(|cells| cells[0] == name)
        .unwrap_or_else(|| panic!("no row for {name}: {table}"))
}

/// A `queue work` process, stopped (SIGTERM, as Ctrl-C would) and reaped when dropped.
struct Worker(Option<Child>);

impl Worker {
    fn start(url: &str, queue: &str) -> Worker {
        Worker::start_with(url, queue, &[])
    }

    fn start_with(url: &str, queue: &str, extra: &[&str]) -> Worker {
        let child = Command::new(env!("CARGO_BIN_EXE_queue"))
            .args(["work", "--url", url, "--queue", queue, "--concurrency", "4"])
            .args(extra)
            .env_remove("QUEUE_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("queue work starts");
        Worker(Some(child))
    }

    /// Stops the worker gracefully and returns what it printed on stderr.
    fn stop(mut self) -> String {
        let child = self.0.take().expect("running");
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let out = child.wait_with_output().expect("queue work ends");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Polls `check` until it holds; panics after 20 s with `what`.
async fn wait_until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `pause` stops `queue work` (and any pop) from getting the queue's jobs, `stats` shows it in
/// the table and in JSON, and `resume` lets the running worker drain the queue.
#[tokio::test]
async fn a_paused_queue_gives_out_nothing_until_it_is_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    for n in 0..5 {
        let payload = format!("{{\"n\":{n}}}");
        ok(&queue_cmd(
            &[
                "push",
                "--url",
                &url,
                "--queue",
                "emails",
                "--payload",
                &payload,
            ],
            None,
        ));
    }
    let out = ok(&queue_cmd(&["pause", "emails", "--url", &url], None));
    assert_eq!(out, "paused queue emails\n");
    assert!(stats_of(&url, "emails").await.paused);
    let row = stats_row(&url, "emails");
    assert_eq!(row[2], "5", "{row:?}");
    assert_eq!(&row[8..11], ["paused", "-", "-"], "{row:?}");
    let json = stats_json(&url, "emails");
    assert_eq!(json["paused"], true, "{json}");
    assert!(json["concurrency_limit"].is_null(), "{json}");
    // The paused queue's oldest job has been due since it was pushed.
    let oldest: chrono::DateTime<chrono::Utc> = json["oldest_due"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no oldest_due in {json}"));
    assert!(oldest <= chrono::Utc::now(), "{json}");
    // Pausing again is not an error.
    ok(&queue_cmd(&["pause", "emails", "--url", &url], None));

    // Nothing is given out: not to a pop, not to a worker that runs for a while.
    let queue = dbqueue::connect(&url).await.expect("connects");
    let popped = queue
        .pop(PopRequest::new("emails").limit(10))
        .await
        .unwrap();
    assert!(popped.is_empty(), "a paused queue gave out {popped:?}");
    let worker = Worker::start(&url, "emails");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let s = stats_of(&url, "emails").await;
    assert_eq!(
        (s.available, s.running, s.completed),
        (5, 0, 0),
        "the worker claimed from a paused queue: {s:?}"
    );

    // Resumed: the worker that is already running drains the queue.
    let out = ok(&queue_cmd(&["resume", "emails", "--url", &url], None));
    assert_eq!(out, "resumed queue emails\n");
    wait_until("the worker completed every job", || async {
        stats_of(&url, "emails").await.completed == 5
    })
    .await;
    let said = worker.stop();
    assert!(said.contains("queue emails is paused"), "{said}");
    assert!(said.contains("5 completed"), "{said}");
    let json = stats_json(&url, "emails");
    assert_eq!(json["paused"], false, "{json}");
    assert_eq!(&stats_row(&url, "emails")[8..11], ["running", "-", "-"]);
    // Resuming a running queue is not an error either.
    ok(&queue_cmd(&["resume", "emails", "--url", &url], None));
}

/// `limit QUEUE N` and `limit QUEUE none`, on a queue with jobs and on one without, as `stats`
/// and the library read them.
#[tokio::test]
async fn limits_are_set_shown_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    ok(&queue_cmd(
        &["push", "--url", &url, "--queue", "emails"],
        None,
    ));
    let out = ok(&queue_cmd(&["limit", "emails", "5", "--url", &url], None));
    assert_eq!(out, "queue emails: at most 5 jobs run at once\n");
    assert_eq!(stats_of(&url, "emails").await.concurrency_limit, Some(5));
    assert_eq!(&stats_row(&url, "emails")[8..11], ["running", "5", "-"]);
    assert_eq!(stats_json(&url, "emails")["concurrency_limit"], 5);

    // A queue without jobs is listed once it has a control.
    let out = ok(&queue_cmd(&["limit", "reports", "1", "--url", &url], None));
    assert_eq!(out, "queue reports: at most 1 job runs at once\n");
    let row = stats_row(&url, "reports");
    assert_eq!(
        row,
        ["reports", "0", "0", "0", "0", "0", "0", "0", "running", "1", "-", "-"]
    );

    // Paused and limited: the line says both.
    ok(&queue_cmd(&["pause", "emails", "--url", &url], None));
    let out = ok(&queue_cmd(&["limit", "emails", "2", "--url", &url], None));
    assert_eq!(
        out,
        "queue emails: at most 2 jobs run at once (paused: nothing runs until `queue resume \
         emails`)\n"
    );
    assert_eq!(&stats_row(&url, "emails")[8..11], ["paused", "2", "-"]);
    let out = ok(&queue_cmd(&["resume", "emails", "--url", &url], None));
    assert_eq!(
        out,
        "resumed queue emails; at most 2 of its jobs run at once\n"
    );

    let out = ok(&queue_cmd(
        &["limit", "emails", "none", "--url", &url],
        None,
    ));
    assert_eq!(out, "queue emails: no concurrency limit\n");
    let s = stats_of(&url, "emails").await;
    assert_eq!((s.paused, s.concurrency_limit), (false, None));
    assert_eq!(&stats_row(&url, "emails")[8..11], ["running", "-", "-"]);
    assert!(stats_json(&url, "emails")["concurrency_limit"].is_null());
    let controls = dbqueue::connect(&url)
        .await
        .unwrap()
        .controls()
        .await
        .unwrap();
    assert_eq!(
        controls.len(),
        1,
        "only reports is still limited: {controls:?}"
    );
    assert_eq!(controls[0].queue, "reports");
}

/// `limit QUEUE --rate N/PERIOD` sets a rate limit beside (or without) the concurrency limit;
/// `stats` shows it as `N/PERIOD`, its JSON in milliseconds; `--rate none` removes it; bad
/// text names its field and stores nothing.
#[tokio::test]
async fn rate_limits_are_set_shown_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    ok(&queue_cmd(
        &["push", "--url", &url, "--queue", "calls"],
        None,
    ));
    let out = ok(&queue_cmd(
        &["limit", "calls", "--rate", "100/1m", "--url", &url],
        None,
    ));
    assert_eq!(out, "queue calls: at most 100 jobs start per 1m\n");
    let s = stats_of(&url, "calls").await;
    assert_eq!(
        s.rate_limit,
        Some(queue_core::RateLimit {
            limit: 100,
            period: Duration::from_secs(60)
        })
    );
    assert_eq!(s.concurrency_limit, None);
    assert_eq!(&stats_row(&url, "calls")[8..11], ["running", "-", "100/1m"]);
    let json = stats_json(&url, "calls");
    assert_eq!(json["rate_limit"]["limit"], 100, "{json}");
    assert_eq!(json["rate_limit"]["period_ms"], 60_000, "{json}");

    let out = ok(&queue_cmd(
        &["limit", "calls", "3", "--rate", "5/500ms", "--url", &url],
        None,
    ));
    assert_eq!(
        out,
        "queue calls: at most 3 jobs run at once, at most 5 jobs start per 500ms\n"
    );
    assert_eq!(
        &stats_row(&url, "calls")[8..11],
        ["running", "3", "5/500ms"]
    );

    for (rate, says) in [
        ("0/1s", "rate_limit.limit"),
        ("abc", "rate_limit"),
        ("5/1ms", "rate_limit.period"),
        ("5/xyz", "rate_limit.period"),
        ("-5/1s", "rate_limit.limit"),
    ] {
        let arg = format!("--rate={rate}");
        let out = queue_cmd(&["limit", "calls", &arg, "--url", &url], None);
        assert_eq!(out.status.code(), Some(2), "{rate}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{rate}: {err}");
    }
    assert_eq!(
        &stats_row(&url, "calls")[8..11],
        ["running", "3", "5/500ms"]
    );

    let out = ok(&queue_cmd(
        &["limit", "calls", "--rate", "none", "--url", &url],
        None,
    ));
    assert_eq!(out, "queue calls: no rate limit\n");
    assert_eq!(&stats_row(&url, "calls")[8..11], ["running", "3", "-"]);
    assert!(stats_json(&url, "calls")["rate_limit"].is_null());
}

/// `limit QUEUE --key-limit N --fair on` sets the key controls; `push --concurrency-key`
/// stores a job's key; `stats` shows the controls and the hot keys (table and JSON); `none` and
/// `off` remove them; bad values name their field and store nothing.
#[tokio::test]
async fn key_limits_and_fair_shares_are_set_shown_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    for _ in 0..3 {
        ok(&queue_cmd(
            &[
                "push",
                "--url",
                &url,
                "--queue",
                "sync",
                "--concurrency-key",
                "acme",
            ],
            None,
        ));
    }
    let out = ok(&queue_cmd(
        &[
            "limit",
            "sync",
            "--key-limit",
            "1",
            "--fair",
            "on",
            "--url",
            &url,
        ],
        None,
    ));
    assert_eq!(
        out,
        "queue sync: at most 1 job per concurrency key runs at once, claims take turns across \
         concurrency keys\n"
    );
    let s = stats_of(&url, "sync").await;
    assert_eq!((s.key_limit, s.fair_shares), (Some(1), true));
    let queue = dbqueue::connect(&url).await.unwrap();
    let got = queue
        .pop(queue_core::PopRequest::new("sync").limit(5))
        .await
        .unwrap();
    assert_eq!(got.len(), 1, "one job of key acme at a time");
    assert_eq!(
        &stats_row(&url, "sync")[8..],
        ["running", "-", "-", "1/key"]
    );
    let table = ok(&queue_cmd(&["stats", "--url", &url], None));
    assert!(
        table.ends_with("hot keys of sync: acme 1 running, 2 waiting\n"),
        "{table}"
    );
    let json = stats_json(&url, "sync");
    assert_eq!(json["key_limit"], 1, "{json}");
    assert_eq!(json["fair_shares"], true, "{json}");
    assert_eq!(json["hot_keys"][0]["key"], "acme", "{json}");
    assert_eq!(json["hot_keys"][0]["waiting"], 2, "{json}");

    let out = ok(&queue_cmd(
        &["limit", "sync", "--key-rate", "5/1s", "--url", &url],
        None,
    ));
    assert_eq!(
        out,
        "queue sync: at most 5 jobs per concurrency key start per 1s\n"
    );
    assert_eq!(
        &stats_row(&url, "sync")[8..],
        ["running", "-", "-", "1/key,5/1s/key"]
    );
    assert_eq!(
        stats_json(&url, "sync")["key_rate_limit"]["period_ms"],
        1000
    );
    let out = ok(&queue_cmd(
        &["limit", "sync", "--key-rate", "none", "--url", &url],
        None,
    ));
    assert_eq!(out, "queue sync: no key rate limit\n");
    for (args, says) in [
        (&["--key-rate", "0/1s"][..], "key_rate_limit.limit"),
        (&["--key-rate", "5/1ms"][..], "key_rate_limit.period"),
        (&["--key-limit", "0"][..], "key_limit"),
        (&["--key-limit", "abc"][..], "key_limit"),
        (&["--fair", "maybe"][..], "on` or `off"),
    ] {
        let mut all = vec!["limit", "sync"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--url", &url]);
        let out = queue_cmd(&all, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let out = queue_cmd(
        &[
            "push",
            "--url",
            &url,
            "--queue",
            "sync",
            "--concurrency-key",
            "",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("concurrency_key"));
    assert_eq!(stats_of(&url, "sync").await.available, 2, "nothing stored");

    let out = ok(&queue_cmd(
        &[
            "limit",
            "sync",
            "--key-limit",
            "none",
            "--fair",
            "off",
            "--url",
            &url,
        ],
        None,
    ));
    assert_eq!(out, "queue sync: no key limit, fair shares off\n");
    assert_eq!(&stats_row(&url, "sync")[8..], ["running", "-", "-", "-"]);
}

/// Bad input exits with status 2 and one line that names the field and the rule, and stores
/// nothing: 0, too large, text that is not a number, a bad queue name.
#[tokio::test]
async fn bad_control_input_is_refused_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    ok(&queue_cmd(&["limit", "emails", "3", "--url", &url], None));
    let cases: [(&[&str], &str); 10] = [
        (
            &["limit", "emails", "0"],
            "error: invalid concurrency_limit: must be at least 1",
        ),
        (
            &["limit", "fresh", "0"],
            "error: invalid concurrency_limit: must be at least 1",
        ),
        (
            &["limit", "emails", "2000000"],
            "error: invalid concurrency_limit: must be at most 1000000 (got 2000000)",
        ),
        (
            &["limit", "emails", "abc"],
            "error: invalid value 'abc' for '[LIMIT]': concurrency_limit must be a whole number",
        ),
        (
            &["limit", "emails", "-1"],
            "error: invalid value '-1' for '[LIMIT]': concurrency_limit must be a whole number",
        ),
        (
            &["limit", "emails", "2.5"],
            "error: invalid value '2.5' for '[LIMIT]': concurrency_limit must be a whole number",
        ),
        (
            &["limit", "emails", "99999999999"],
            "concurrency_limit must be at most 1000000",
        ),
        (&["limit", "bad queue", "5"], "error: invalid queue:"),
        (&["pause", "bad queue"], "error: invalid queue:"),
        (&["resume", ""], "error: invalid queue: must not be empty"),
    ];
    for (args, expected) in cases {
        let mut all = args.to_vec();
        all.extend(["--url", &url]);
        let err = failed(&queue_cmd(&all, None));
        assert!(
            err.starts_with("error: ") && err.contains(expected),
            "{all:?}: {err}"
        );
    }
    let out = queue_cmd(&["limit", "emails", "--url", &url], None);
    assert!(failed(&out).contains("<LIMIT>"), "a missing limit is named");
    // Nothing was stored: emails keeps its limit, no other queue has a control.
    let queue = dbqueue::connect(&url).await.unwrap();
    let controls = queue.controls().await.unwrap();
    assert_eq!(controls.len(), 1, "{controls:?}");
    assert_eq!(
        (
            controls[0].queue.as_str(),
            controls[0].paused,
            controls[0].concurrency_limit
        ),
        ("emails", false, Some(3))
    );
}

/// The demo refuses a paused queue (its jobs would never run), and on a limited queue it runs
/// every job and prints the stats table with the limit.
#[tokio::test]
async fn the_demo_respects_the_controls() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    ok(&queue_cmd(&["pause", "held", "--url", &url], None));
    let out = queue_cmd(
        &["demo", "--url", &url, "--queue", "held", "--jobs", "20"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let err = stderr.lines().last().unwrap_or_default();
    assert!(err.contains("\"held\" is paused"), "{err}");
    assert!(err.contains("queue resume held"), "{err}");
    assert_eq!(
        stats_of(&url, "held").await.available,
        0,
        "nothing was pushed"
    );

    ok(&queue_cmd(&["limit", "narrow", "2", "--url", &url], None));
    let out = ok(&queue_cmd(
        &["demo", "--url", &url, "--queue", "narrow", "--jobs", "60"],
        None,
    ));
    assert!(out.contains("stats for queue narrow:"), "{out}");
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("stats for queue"))
        .skip(1)
        .collect();
    assert!(table[0].ends_with("state    limit  rate  keys"), "{out}");
    let cells: Vec<&str> = table[1].split_whitespace().collect();
    assert_eq!(cells[0], "narrow");
    assert_eq!(&cells[8..11], ["running", "2", "-"], "{out}");
    let s = stats_of(&url, "narrow").await;
    assert_eq!(s.completed + s.dead, 60, "{s:?}");
}

/// Finished jobs are counted up to the cap (10,000 per queue and state): `stats` marks a
/// count that stopped there with `+` and a note, and its JSON names it.
#[tokio::test]
async fn stats_marks_counts_at_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    let queue = dbqueue::connect(&url).await.unwrap();
    let cap = queue_core::validate::STATS_COUNT_CAP;
    let mut left = cap + 1;
    while left > 0 {
        let n = left.min(10_000);
        let jobs = (0..n)
            .map(|_| NewJob::from_json("flood", "{}").unwrap())
            .collect();
        queue.push_batch(jobs).await.unwrap();
        left -= n;
    }
    let filter = queue_core::JobFilter {
        queue: Some("flood".into()),
        ..Default::default()
    };
    let outcome = queue
        .bulk(queue_core::BulkAction::Cancel, &filter)
        .await
        .unwrap();
    assert_eq!(outcome.changed, cap + 1);
    support::completed(queue.as_ref(), "flood", "{}")
        .await
        .unwrap();

    let row = stats_row(&url, "flood");
    assert_eq!(
        row,
        [
            "flood",
            "0",
            "0",
            "0",
            "0",
            "1",
            "0",
            format!("{cap}+").as_str(),
            "running",
            "-",
            "-",
            "-"
        ]
    );
    let table = ok(&queue_cmd(&["stats", "--url", &url], None));
    assert!(
        table.ends_with(&format!(
            "+: at least this many; finished jobs are counted up to {cap} per queue and state\n"
        )),
        "{table}"
    );
    let json = stats_json(&url, "flood");
    assert_eq!(json["cancelled"], cap, "{json}");
    assert_eq!(json["count_cap"], cap, "{json}");
    assert_eq!(json["at_least"], serde_json::json!(["cancelled"]), "{json}");
}

/// `push --unique...`: standard output is the id of the job that stands for the push, and
/// standard error says whether it was inserted, met an existing job or replaced a pending one,
/// as the database shows; a bad rule names its field and stores nothing.
#[tokio::test]
async fn unique_pushes_say_what_they_met() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    let push = |extra: &[&str]| {
        let mut args = vec!["push", "--url", url.as_str(), "--kind", "report"];
        args.extend(extra);
        let out = queue_cmd(&args, None);
        let id = ok(&out).trim().parse::<JobId>().expect("an id");
        (id, String::from_utf8_lossy(&out.stderr).trim().to_owned())
    };
    let payload = r#"{"customer":7,"n":1}"#;
    let (first, said) = push(&["--queue", "a", "--payload", payload, "--unique"]);
    assert_eq!(
        said,
        format!("inserted {first}: no job held its unique key")
    );
    // The same payload in other words is the same job, in this queue or another.
    for queue in ["a", "b"] {
        let (id, said) = push(&[
            "--queue",
            queue,
            "--payload",
            r#"{ "n": 1, "customer": 7 }"#,
            "--unique",
        ]);
        assert_eq!(id, first);
        assert_eq!(
            said,
            format!("existing {first} (pending): it holds the unique key; nothing was stored")
        );
    }
    assert_eq!(job_count(&url).await, 1);
    // The queue is part of the key when asked.
    let (by_queue, said) = push(&[
        "--queue",
        "b",
        "--payload",
        payload,
        "--unique",
        "--unique-by-queue",
    ]);
    assert_ne!(by_queue, first);
    assert!(said.starts_with("inserted "), "{said}");
    // A completed job holds its key by default.
    let queue = dbqueue::connect(&url).await.unwrap();
    let leased = queue.pop(PopRequest::new("a")).await.unwrap();
    assert_eq!(leased[0].job.id, first);
    queue.ack(&leased[0].lease).await.unwrap();
    let (id, said) = push(&["--queue", "a", "--payload", payload, "--unique"]);
    assert_eq!(id, first);
    assert!(
        said.starts_with(&format!("existing {first} (completed)")),
        "{said}"
    );

    // By one field, replacing a pending job's payload and priority.
    let (held, said) = push(&[
        "--queue",
        "c",
        "--payload",
        payload,
        "--unique-fields",
        "customer",
        "--unique-replace",
    ]);
    assert!(said.starts_with("inserted "), "{said}");
    let (id, said) = push(&[
        "--queue",
        "c",
        "--payload",
        r#"{"customer":7,"n":2}"#,
        "--priority",
        "9",
        "--unique-fields",
        "customer",
        "--unique-replace",
    ]);
    assert_eq!(id, held);
    assert!(
        said.starts_with(&format!("replaced {held}: it was pending")),
        "{said}"
    );
    let job = queue.get(held).await.unwrap().unwrap();
    assert_eq!(job.priority, 9);
    assert_eq!(job.payload_value()["n"], 2);
    assert_eq!(job_count(&url).await, 3);

    // A bad rule names its field, exits 2 and stores nothing.
    for (extra, field) in [
        (&["--unique-states", "pending"][..], "unique.states"),
        (
            &["--unique-states", "pending,running,done"],
            "unique.states",
        ),
        (&["--unique-fields", "missing"], "unique.fields"),
        (&["--unique-period", "0s"], "unique.period"),
    ] {
        let mut args = vec!["push", "--url", &url, "--queue", "c", "--kind", "report"];
        args.extend(["--payload", payload]);
        args.extend(extra);
        let err = failed(&queue_cmd(&args, None));
        assert!(
            err.contains(&format!("invalid {field}:")),
            "{extra:?}: {err}"
        );
    }
    let err = failed(&queue_cmd(
        &["push", "--url", &url, "--queue", "c", "--unique-replace"],
        None,
    ));
    assert!(
        err.contains("invalid unique: has nothing to tell jobs apart"),
        "{err}"
    );
    assert_eq!(job_count(&url).await, 3);
}

/// The jobs of `name` by state, in the order of the stats table: available, scheduled,
/// running, completed, dead, cancelled.
async fn counts_of(url: &str, name: &str) -> [u64; 6] {
    let queue = dbqueue::connect(url).await.expect("connects");
    let stats = queue.stats(Some(name)).await.expect("stats");
    stats.iter().find(|s| s.queue == name).map_or([0; 6], |s| {
        [
            s.available,
            s.scheduled,
            s.running,
            s.completed,
            s.dead,
            s.cancelled,
        ]
    })
}

async fn state_of(url: &str, id: JobId) -> Option<JobState> {
    let queue = dbqueue::connect(url).await.expect("connects");
    queue.get(id).await.expect("reads").map(|j| j.state)
}

/// `bulk` says how many jobs match and changes nothing without a confirmation: without a
/// terminal it needs `--yes`, even with "y" on standard input. With it, each action changes
/// exactly the jobs its filter matches, as the database shows; bad filters name the field.
#[tokio::test]
async fn bulk_changes_exactly_the_filtered_jobs_once_confirmed() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    let queue = dbqueue::connect(&url).await.unwrap();
    let q = queue.as_ref();
    let mut send = Vec::new();
    for n in 0..3 {
        let job = NewJob::from_json("emails", &format!("{{\"n\":{n}}}"))
            .unwrap()
            .kind("send");
        send.push(q.push(job).await.unwrap());
    }
    let other_kind = q
        .push(NewJob::from_json("emails", "{}").unwrap().kind("digest"))
        .await
        .unwrap();
    let other_queue = q
        .push(NewJob::from_json("reports", "{}").unwrap().kind("send"))
        .await
        .unwrap();
    let dead = support::dead(q, "emails", "{}", "boom").await.unwrap();
    let done = support::completed(q, "emails", "{}").await.unwrap();
    let before = counts_of(&url, "emails").await;
    assert_eq!(before, [4, 0, 0, 1, 1, 0]);

    let filter = ["--queue", "emails", "--kind", "send"];
    for stdin in [None, Some(&b"y\n"[..])] {
        let mut args = vec!["bulk", "cancel", "--url", &url];
        args.extend(filter);
        let out = queue_cmd(&args, stdin);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout,
            "3 jobs to cancel: the waiting, pending and running jobs of queue emails of kind send\n"
        );
        let err = failed(&out);
        assert!(
            err.starts_with("error: refused: standard input is not a terminal")
                && err.contains("pass --yes to cancel these 3 jobs (nothing was changed)"),
            "{err}"
        );
        assert_eq!(counts_of(&url, "emails").await, before, "nothing changed");
    }

    let mut args = vec!["bulk", "cancel", "--url", &url, "--yes"];
    args.extend(filter);
    let out = ok(&queue_cmd(&args, None));
    assert_eq!(
        out,
        "3 jobs to cancel: the waiting, pending and running jobs of queue emails of kind send\n\
         cancelled 3 jobs, skipped 0\n"
    );
    for id in &send {
        assert_eq!(state_of(&url, *id).await, Some(JobState::Cancelled));
    }
    assert_eq!(state_of(&url, other_kind).await, Some(JobState::Pending));
    assert_eq!(state_of(&url, other_queue).await, Some(JobState::Pending));
    assert_eq!(state_of(&url, dead).await, Some(JobState::Dead));

    // Retry one state of one queue: the cancelled jobs come back, the dead one stays.
    let out = ok(&queue_cmd(
        &[
            "bulk",
            "retry",
            "--url",
            &url,
            "--queue",
            "emails",
            "--state",
            "cancelled",
            "-y",
        ],
        None,
    ));
    assert!(out.ends_with("retried 3 jobs, skipped 0\n"), "{out}");
    for id in &send {
        assert_eq!(state_of(&url, *id).await, Some(JobState::Pending));
    }
    assert_eq!(state_of(&url, dead).await, Some(JobState::Dead));

    // Nothing was created an hour ago: nothing to do, and nothing is asked.
    let out = ok(&queue_cmd(
        &["bulk", "delete", "--url", &url, "--older-than", "1h"],
        None,
    ));
    assert_eq!(
        out,
        "no job to delete among the waiting, pending, completed, dead and cancelled jobs of every \
         queue, created more than 1h ago\n"
    );
    assert_eq!(counts_of(&url, "emails").await, before);

    // Delete the finished jobs of every queue: the dead and the completed one.
    for state in ["dead", "completed"] {
        let out = ok(&queue_cmd(
            &["bulk", "delete", "--url", &url, "--state", state, "--yes"],
            None,
        ));
        assert!(out.ends_with("deleted 1 job, skipped 0\n"), "{out}");
    }
    assert_eq!(state_of(&url, dead).await, None);
    assert_eq!(state_of(&url, done).await, None);
    assert_eq!(counts_of(&url, "emails").await, [4, 0, 0, 0, 0, 0]);
    assert_eq!(counts_of(&url, "reports").await, [1, 0, 0, 0, 0, 0]);

    // Bad input names the field and the rule, exits 2 and changes nothing.
    for (args, expected) in [
        (
            &["bulk", "cancel", "--state", "completed", "--yes"][..],
            "error: invalid state: cancel applies to waiting, pending, running jobs, not completed",
        ),
        (
            &["bulk", "delete", "--state", "running", "--yes"],
            "error: invalid state: delete applies to waiting, pending, completed, dead, cancelled jobs",
        ),
        (
            &["bulk", "delete", "--state", "lost", "--yes"],
            "error: invalid state: must be one of",
        ),
        (
            &["bulk", "delete", "--older-than", "soon", "--yes"],
            "error: invalid older_than:",
        ),
        (
            &["bulk", "cancel", "--queue", "bad queue", "--yes"],
            "error: invalid queue:",
        ),
        (
            &["bulk", "cancel", "--kind", "a b", "--yes"],
            "error: invalid kind:",
        ),
        (
            &["bulk", "purge", "--yes"],
            "error: invalid value 'purge' for '<ACTION>': action must be cancel, retry or delete",
        ),
    ] {
        let mut all = args.to_vec();
        all.extend(["--url", &url]);
        let err = failed(&queue_cmd(&all, None));
        assert!(err.contains(expected), "{all:?}: {err}");
    }
    assert_eq!(counts_of(&url, "emails").await, [4, 0, 0, 0, 0, 0]);
}

/// `retention` deletes finished jobs by age, per state, and runs at most one round an interval
/// across processes: a second round right after says so and deletes nothing.
#[tokio::test]
async fn retention_deletes_by_age_once_per_interval() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    let queue = dbqueue::connect(&url).await.unwrap();
    let q = queue.as_ref();
    let done = [
        support::completed(q, "emails", "{}").await.unwrap(),
        support::completed(q, "reports", "{}").await.unwrap(),
    ];
    let cancelled = support::cancelled(q, "emails", "{}").await.unwrap();
    let dead = support::dead(q, "emails", "{}", "boom").await.unwrap();
    let pending = support::push(q, "emails", "{}").await.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;

    let err = failed(&queue_cmd(
        &["retention", "--url", &url, "--dead", "soon"],
        None,
    ));
    assert!(err.contains("invalid dead:"), "{err}");
    let err = failed(&queue_cmd(
        &[
            "retention",
            "--url",
            &url,
            "--completed",
            "keep",
            "--cancelled",
            "keep",
            "--dead",
            "keep",
        ],
        None,
    ));
    assert!(
        err.contains("invalid retention: every state is kept"),
        "{err}"
    );

    let out = ok(&queue_cmd(
        &[
            "retention",
            "--url",
            &url,
            "--completed",
            "1s",
            "--cancelled",
            "keep",
        ],
        None,
    ));
    assert_eq!(
        out,
        "deleted 2 jobs (2 completed, 0 cancelled, 0 dead; completed after 1s, cancelled kept, \
         dead after 7d)\n"
    );
    for id in done {
        assert_eq!(state_of(&url, id).await, None);
    }
    assert_eq!(state_of(&url, cancelled).await, Some(JobState::Cancelled));
    assert_eq!(state_of(&url, dead).await, Some(JobState::Dead));
    assert_eq!(state_of(&url, pending).await, Some(JobState::Pending));

    let out = ok(&queue_cmd(
        &["retention", "--url", &url, "--cancelled", "0s"],
        None,
    ));
    assert!(
        out.starts_with("nothing was deleted: another process is running a retention round"),
        "{out}"
    );
    assert_eq!(state_of(&url, cancelled).await, Some(JobState::Cancelled));
}

/// `queue work` runs the retention task (its round keeps another from running within the
/// interval); with `--no-retention` it runs none, and `queue retention` then can.
#[tokio::test]
async fn work_runs_retention_unless_told_not_to() {
    for no_retention in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let url = migrated_db(dir.path());
        let queue = dbqueue::connect(&url).await.unwrap();
        let done = support::completed(queue.as_ref(), "old", "{}")
            .await
            .unwrap();
        support::push(queue.as_ref(), "emails", "{}").await.unwrap();
        let extra: &[&str] = if no_retention {
            &["--no-retention"]
        } else {
            &[]
        };
        let worker = Worker::start_with(&url, "emails", extra);
        wait_until("the worker completed the job", || async {
            stats_of(&url, "emails").await.completed == 1
        })
        .await;
        // The retention task starts with the worker; give its first round time to end.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let out = ok(&queue_cmd(
            &["retention", "--url", &url, "--completed", "0s"],
            None,
        ));
        if no_retention {
            assert!(out.starts_with("deleted 2 jobs (2 completed"), "{out}");
            assert_eq!(state_of(&url, done).await, None);
        } else {
            assert!(out.starts_with("nothing was deleted"), "{out}");
            assert_eq!(state_of(&url, done).await, Some(JobState::Completed));
        }
        worker.stop();
    }
}

/// Whether `get`'s text shows the job in `state`.
fn shows_state(text: &str, state: &str) -> bool {
    text.lines()
        .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["state", state])
}

/// `get --wait` and `push --wait` wait for the job to finish and say how it ended: a job
/// completed by a worker elsewhere meanwhile prints its state and output and exits 0; a job
/// that went dead exits non-zero; a job nobody runs ends the wait with an error once the
/// seconds pass, and a wait of 0 seconds is refused as bad input. The database holds what
/// they printed.
#[tokio::test]
async fn get_and_push_wait_for_the_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let url = migrated_db(dir.path());
    let queue = dbqueue::connect(&url).await.unwrap();

    let idle = ok(&queue_cmd(
        &["push", "--url", &url, "--queue", "w.idle"],
        None,
    ));
    let out = queue_cmd(&["get", "--url", &url, idle.trim(), "--wait", "0.3"], None);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("did not finish"), "{said}");
    let out = queue_cmd(&["get", "--url", &url, idle.trim(), "--wait", "0"], None);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let idle: JobId = idle.trim().parse().unwrap();
    assert_eq!(state_of(&url, idle).await, Some(JobState::Pending));

    // `get --wait` while another process completes the job with an output.
    let id = ok(&queue_cmd(
        &["push", "--url", &url, "--queue", "w.ok"],
        None,
    ));
    let waiting = Command::new(env!("CARGO_BIN_EXE_queue"))
        .args(["get", "--url", &url, id.trim(), "--wait", "20"])
        .env_remove("QUEUE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("queue get starts");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let claimed = queue.pop(PopRequest::new("w.ok")).await.unwrap();
    let output = serde_json::value::to_raw_value(&serde_json::json!({ "rows": 1234 })).unwrap();
    queue
        .ack_with_output(&claimed[0].lease, &output)
        .await
        .unwrap();
    let printed = ok(&waiting.wait_with_output().unwrap());
    assert!(shows_state(&printed, "completed"), "{printed}");
    assert!(printed.contains("\"rows\": 1234"), "{printed}");
    let id: JobId = id.trim().parse().unwrap();
    assert_eq!(state_of(&url, id).await, Some(JobState::Completed));

    // `push --wait` of a job that fails for good.
    let pushing = Command::new(env!("CARGO_BIN_EXE_queue"))
        .args(["push", "--url", &url, "--queue", "w.dead", "--wait", "20"])
        .env_remove("QUEUE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("queue push starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    let claimed = loop {
        let got = queue.pop(PopRequest::new("w.dead")).await.unwrap();
        if !got.is_empty() {
            break got;
        }
        assert!(
            Instant::now() < deadline,
            "the pushed job was never there to claim"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    queue
        .fail(
            &claimed[0].lease,
            dbqueue::Failure::permanent("no such customer"),
        )
        .await
        .unwrap();
    let out = pushing.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(shows_state(&printed, "dead"), "{printed}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("ended dead"), "{said}");
    assert_eq!(
        state_of(&url, claimed[0].lease.job_id).await,
        Some(JobState::Dead)
    );
}
