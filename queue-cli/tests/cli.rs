//! The `queue` command through the real binary, checked against what the database stores:
//! `push` with payloads from a file and from standard input, `list` paging, and `schedules`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use queue_core::JobId;

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
            "--payload",
            "{\"kind\":\"nightly\"}",
            "--catch-up",
            "3",
        ],
        None,
    ));
    assert!(
        out.starts_with("added schedule nightly; next slot "),
        "{out}"
    );
    let queue = dbqueue::connect(&url).await.expect("connects");
    let stored = queue.schedules().await.expect("lists");
    assert_eq!(stored.len(), 1);
    let s = &stored[0];
    assert_eq!(s.job.expression(), "30 2 * * *");
    assert_eq!(s.job.time_zone_name(), "Europe/Berlin");
    assert_eq!(s.job.payload_json(), "{\"kind\":\"nightly\"}");
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
