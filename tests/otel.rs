//! With the `opentelemetry` feature, a job carries its producer's trace context in its meta and
//! the worker's run span continues that trace: read back from an in-memory OpenTelemetry
//! exporter, on the default backend (SQLite), with the producer and the worker on two queue
//! values of their own (as two processes would be), so the context can only have travelled
//! through the database.

use std::time::Duration;

use dbqueue::{NewJob, Worker};
use opentelemetry::trace::{SpanId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing::Instrument as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::EnvFilter;

fn span<'a>(spans: &'a [SpanData], name: &str, attr: (&str, &str)) -> &'a SpanData {
    spans
        .iter()
        .find(|s| {
            s.name == name
                && s.attributes
                    .iter()
                    .any(|kv| kv.key.as_str() == attr.0 && kv.value.as_str() == attr.1)
        })
        .unwrap_or_else(|| {
            let names: Vec<_> = spans.iter().map(|s| (&s.name, &s.attributes)).collect();
            panic!("no span {name} with {attr:?} among {names:#?}")
        })
}

// One thread: the subscriber is this thread's, and every task of the queues and the worker runs
// on it.
#[tokio::test(flavor = "current_thread")]
async fn the_run_of_a_job_continues_the_trace_of_the_request_that_pushed_it() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(EnvFilter::new("info,queue::engine=debug"))
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    let _guard = tracing::subscriber::set_default(subscriber);

    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("otel.db").display());
    let producer = dbqueue::connect_and_migrate(&url).await.unwrap();
    let consumer = dbqueue::connect(&url).await.unwrap();

    // A request that pushes a job, and a push made outside any span of the application's (its
    // own push span, recorded, is then the root of the job's trace).
    let request = tracing::info_span!("http_request", route = "/signup");
    let traced = producer
        .push(NewJob::new("mail", &json!("welcome")).unwrap().kind("send"))
        .instrument(request)
        .await
        .unwrap();
    let untraced = producer
        .push(NewJob::new("mail", &json!("digest")).unwrap().kind("send"))
        .await
        .unwrap();

    // The context is stored with the job, in the W3C format.
    let meta = producer.get(traced).await.unwrap().unwrap().meta_value();
    let header = meta["traceparent"]
        .as_str()
        .expect("a traceparent")
        .to_owned();
    assert!(dbqueue::otel::parse(&header, None).is_some(), "{header}");
    let meta = producer.get(untraced).await.unwrap().unwrap().meta_value();
    let lone_header = meta["traceparent"]
        .as_str()
        .expect("a traceparent")
        .to_owned();

    let handle = Worker::builder(consumer.clone(), "mail")
        .handler_fn(|_ctx| async move {
            tracing::info!("sending");
            Ok(())
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while counters.completed() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            counters.snapshot()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    handle.shutdown(Duration::from_secs(5)).await;
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();

    let request = span(&spans, "http_request", ("route", "/signup"));
    let push = span(&spans, "push", ("job", &traced.to_string()));
    let run = span(&spans, "job", ("id", &traced.to_string()));
    // request -> push -> run: one trace, the run a child of the push that stored the job.
    assert_eq!(
        push.span_context.trace_id(),
        request.span_context.trace_id()
    );
    assert_eq!(push.parent_span_id, request.span_context.span_id());
    assert_eq!(run.span_context.trace_id(), request.span_context.trace_id());
    assert_eq!(run.parent_span_id, push.span_context.span_id());
    assert_eq!(
        header,
        format!(
            "00-{}-{}-01",
            push.span_context.trace_id(),
            push.span_context.span_id()
        )
    );

    // The job pushed outside the request runs in a trace of its own, rooted at its push.
    let lone_push = span(&spans, "push", ("job", &untraced.to_string()));
    let lone = span(&spans, "job", ("id", &untraced.to_string()));
    assert_eq!(lone_push.parent_span_id, SpanId::INVALID);
    assert_ne!(
        lone.span_context.trace_id(),
        request.span_context.trace_id()
    );
    assert_eq!(
        lone.span_context.trace_id(),
        lone_push.span_context.trace_id()
    );
    assert_eq!(lone.parent_span_id, lone_push.span_context.span_id());
    assert!(lone_header.contains(&lone_push.span_context.span_id().to_string()));
}
