//! The spans of a job's life: push, claim, the worker's run, ack and fail, with the queue,
//! kind, job id and attempt as fields, read by a subscriber installed by the test, on the
//! default backend (SQLite).

#![cfg(feature = "sqlite")]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dbqueue::{JobError, NewJob, Worker};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::Layer;

/// Each span made: its target, name, and fields as text (the recorded ones included).
type Spans = Arc<Mutex<Vec<(String, String, BTreeMap<String, String>)>>>;

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

struct Recorder {
    spans: Spans,
    ids: Mutex<BTreeMap<u64, usize>>,
}

impl<S: tracing::Subscriber> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let meta = attrs.metadata();
        let mut spans = self.spans.lock().unwrap();
        self.ids.lock().unwrap().insert(id.into_u64(), spans.len());
        spans.push((meta.target().to_owned(), meta.name().to_owned(), fields));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let Some(&at) = self.ids.lock().unwrap().get(&id.into_u64()) else {
            return;
        };
        values.record(&mut Fields(&mut self.spans.lock().unwrap()[at].2));
    }
}

// One thread: the subscriber is this thread's, and every task of the queue and the worker runs on it.
#[tokio::test(flavor = "current_thread")]
async fn a_jobs_life_is_traced_with_its_queue_kind_id_and_attempt() {
    let spans: Spans = Arc::default();
    let subscriber = tracing_subscriber::registry().with(Recorder {
        spans: spans.clone(),
        ids: Mutex::default(),
    });
    let _guard = tracing::subscriber::set_default(subscriber);

    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("traces.db").display());
    let queue = dbqueue::connect_and_migrate(&url).await.unwrap();
    let ok = queue
        .push(NewJob::new("mail", &json!("ok")).unwrap().kind("send"))
        .await
        .unwrap();
    let bad = queue
        .push(NewJob::new("mail", &json!("bad")).unwrap().kind("send"))
        .await
        .unwrap();
    let handle = Worker::builder(queue.clone(), "mail")
        .handler_fn(|ctx| async move {
            match ctx.payload::<String>()?.as_str() {
                "bad" => Err(JobError::permanent("no such mailbox")),
                _ => Ok(()),
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while counters.completed() + counters.dead() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            counters.snapshot()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    handle.shutdown(Duration::from_secs(5)).await;

    let spans = spans.lock().unwrap().clone();
    let find = |target: &str, name: &str, field: &str, value: &str| {
        spans
            .iter()
            .find(|(t, n, f)| {
                t == target && n == name && f.get(field).map(String::as_str) == Some(value)
            })
            .map(|(_, _, f)| f.clone())
            .unwrap_or_else(|| panic!("no {target} span {name} with {field}={value} in {spans:#?}"))
    };
    for id in [ok, bad] {
        let id = id.to_string();
        let push = find("queue::engine", "push", "job", &id);
        assert_eq!(push["queue"], "mail");
        assert_eq!(push["kind"], "send");
        let run = find("queue::worker", "job", "id", &id);
        assert_eq!(run["queue"], "mail");
        assert_eq!(run["kind"], "send");
        assert_eq!(run["attempt"], "1");
    }
    let fail = find("queue::engine", "fail", "job", &bad.to_string());
    assert_eq!(
        (fail["queue"].as_str(), fail["attempt"].as_str()),
        ("mail", "1")
    );
    // The claims: one of them gave out the two jobs (or one each).
    let claimed: u64 = spans
        .iter()
        .filter(|(t, n, f)| {
            t == "queue::engine"
                && n == "claim"
                && f.get("queue").map(String::as_str) == Some("mail")
        })
        .filter_map(|(_, _, f)| f.get("claimed")?.parse::<u64>().ok())
        .sum();
    assert_eq!(claimed, 2, "{spans:#?}");
    // The completion went in a batch (alone, or with the next claim).
    assert!(
        spans
            .iter()
            .any(|(t, n, _)| t == "queue::engine" && (n == "ack_batch" || n == "ack")),
        "{spans:#?}"
    );
}
