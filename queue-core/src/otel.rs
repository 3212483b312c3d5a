//! Traces that follow a job from its producer to its run (feature `opentelemetry`).
//!
//! A push made inside a span that OpenTelemetry records (through
//! [`tracing-opentelemetry`](tracing_opentelemetry)'s layer) stores that span's context with the
//! job, in the W3C Trace Context format, as two keys of the job's meta:
//!
//! - `traceparent`: `00-<trace id>-<span id>-<flags>` (the push span when the engine's spans are
//!   enabled, else the caller's span);
//! - `tracestate`: the vendors' entries, when there are any.
//!
//! When a worker runs the job, its `job` span (target `queue::worker`) takes that context as its
//! parent, so one trace shows the request that pushed the job, the push, and every attempt of
//! the run, however long the job waited and whichever process ran it. When the engine's `push`
//! span is recorded, a push outside the application's spans still stores one (the push is then
//! the root of the job's trace); with no recorded span at all, nothing is stored. A job whose
//! meta already has a `traceparent` (set by the application) keeps it. The two keys count toward the meta's size limit like any other key.
//! Scheduled jobs (fired by a schedule, not pushed inside a request) carry no context.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::Context;
use serde::Deserialize;
use serde_json::value::RawValue;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::job::NewJob;

/// The meta key of the W3C `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// The meta key of the W3C `tracestate`.
pub const TRACESTATE: &str = "tracestate";

/// The only version of `traceparent` this writes (and the one it reads; a later version's
/// first four fields are read the same way, as the specification asks).
const VERSION: &str = "00";

/// The span context the current `tracing` span records in OpenTelemetry (or, without one,
/// the OpenTelemetry context current on this thread), when it is valid.
fn current() -> Option<SpanContext> {
    let from_span = tracing::Span::current().context();
    let span = from_span.span();
    let sc = span.span_context();
    if sc.is_valid() {
        return Some(sc.clone());
    }
    let cx = Context::current();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then_some(sc)
}

/// `sc` as a `traceparent` header value.
pub fn traceparent(sc: &SpanContext) -> String {
    format!(
        "{VERSION}-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    )
}

/// The remote span context a `traceparent` (and `tracestate`) names; `None` when it is not a
/// valid header value (malformed, or an all-zero trace or span id).
pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    let mut parts = traceparent.trim().split('-');
    let version = parts.next()?;
    let trace = parts.next()?;
    let span = parts.next()?;
    let flags = parts.next()?;
    // Version 00 has exactly four fields; a later version may add more after them.
    if version.len() != 2 || version == "ff" || (version == VERSION && parts.next().is_some()) {
        return None;
    }
    if trace.len() != 32 || span.len() != 16 || flags.len() != 2 {
        return None;
    }
    let hex = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if ![version, trace, span, flags].into_iter().all(hex) {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let state = tracestate
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    let sc = SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags) & TraceFlags::SAMPLED,
        true,
        state,
    );
    sc.is_valid().then_some(sc)
}

/// `job` with the current span's context in its meta (see the module's documentation); the
/// job unchanged when no span is recorded, its meta has a `traceparent` already, or the keys
/// would take the meta past `max_meta_bytes`.
pub(crate) fn carry(job: NewJob, max_meta_bytes: usize) -> NewJob {
    let Some(sc) = current() else {
        return job;
    };
    carry_context(job, &sc, max_meta_bytes)
}

/// [`carry`] for each of `jobs`, the current span read once.
pub(crate) fn carry_all(jobs: Vec<NewJob>, max_meta_bytes: usize) -> Vec<NewJob> {
    let Some(sc) = current() else {
        return jobs;
    };
    jobs.into_iter()
        .map(|j| carry_context(j, &sc, max_meta_bytes))
        .collect()
}

/// The keys of a meta object, each value left unread.
type Keys = std::collections::HashMap<String, serde::de::IgnoredAny>;

fn carry_context(mut job: NewJob, sc: &SpanContext, max_meta_bytes: usize) -> NewJob {
    let mut keys = format!(
        "{}:{}",
        serde_json::Value::from(TRACEPARENT),
        serde_json::Value::from(traceparent(sc))
    );
    let state = sc.trace_state().header();
    if !state.is_empty() {
        keys.push_str(&format!(
            ",{}:{}",
            serde_json::Value::from(TRACESTATE),
            serde_json::Value::from(state)
        ));
    }
    // The keys go in front of the application's, whose text is kept byte for byte (no
    // reordering, no reformatted numbers).
    let text = match job.meta.as_deref() {
        None => format!("{{{keys}}}"),
        Some(raw) => {
            let Ok(present) = serde_json::from_str::<Keys>(raw.get()) else {
                // Validated as an object at push; anything else is left as it is.
                return job;
            };
            if present.contains_key(TRACEPARENT) {
                return job;
            }
            let body = raw.get().trim_start();
            let Some(rest) = body.strip_prefix('{') else {
                return job;
            };
            if present.is_empty() {
                format!("{{{keys}}}")
            } else {
                format!("{{{keys},{rest}")
            }
        }
    };
    if text.len() > max_meta_bytes {
        return job;
    }
    if let Ok(raw) = RawValue::from_string(text) {
        job.meta = Some(raw);
    }
    job
}

/// The two keys of a job's meta this module reads.
#[derive(Deserialize)]
struct Carried<'a> {
    #[serde(borrow, default)]
    traceparent: Option<&'a str>,
    #[serde(borrow, default)]
    tracestate: Option<&'a str>,
}

/// The producer's span context a job's meta carries, if any.
pub fn carried(meta: Option<&RawValue>) -> Option<SpanContext> {
    let meta = meta?;
    // Only the two keys are borrowed out of the text; the rest is skipped without being built.
    let c: Carried<'_> = serde_json::from_str(meta.get()).ok()?;
    parse(c.traceparent?, c.tracestate)
}

/// Makes `span` (a job's run span, not yet entered) continue the trace its job's meta carries.
pub(crate) fn continue_trace(span: &tracing::Span, meta: Option<&RawValue>) {
    if let Some(sc) = carried(meta) {
        // Fails only when no OpenTelemetry layer records the span: nothing to continue then.
        let _ = span.set_parent(Context::new().with_remote_span_context(sc));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(state: &str) -> SpanContext {
        SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            TraceFlags::SAMPLED,
            false,
            state.parse().unwrap(),
        )
    }

    #[test]
    fn a_context_round_trips_through_the_header() {
        let sc = context("congo=t61rcWkgMzE");
        let header = traceparent(&sc);
        assert_eq!(
            header,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        let back = parse(&header, Some("congo=t61rcWkgMzE")).unwrap();
        assert_eq!(back.trace_id(), sc.trace_id());
        assert_eq!(back.span_id(), sc.span_id());
        assert!(back.is_sampled());
        assert!(back.is_remote());
        assert_eq!(back.trace_state().get("congo"), Some("t61rcWkgMzE"));
    }

    #[test]
    fn malformed_headers_name_no_context() {
        for bad in [
            "",
            "00",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
        ] {
            assert!(parse(bad, None).is_none(), "{bad:?} was accepted");
        }
        // A later version may carry more fields after the four it shares with 00.
        assert!(parse(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later",
            None
        )
        .is_some());
    }

    #[test]
    fn the_context_joins_the_meta_and_keeps_what_was_there() {
        let job = NewJob::new("q", &1)
            .unwrap()
            .meta(&serde_json::json!({"tenant": "acme"}))
            .unwrap();
        let job = carry_context(job, &context("congo=t61rcWkgMzE"), 1024);
        let meta: serde_json::Value = serde_json::from_str(job.meta_json().unwrap()).unwrap();
        assert_eq!(meta["tenant"], "acme");
        assert_eq!(
            meta[TRACEPARENT],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        assert_eq!(meta[TRACESTATE], "congo=t61rcWkgMzE");
        let sc = carried(job.meta.as_deref()).unwrap();
        assert_eq!(sc.trace_id(), context("").trace_id());
    }

    #[test]
    fn a_traceparent_set_by_the_application_is_kept() {
        let own = "00-11111111111111111111111111111111-2222222222222222-00";
        let job = NewJob::new("q", &1)
            .unwrap()
            .meta(&serde_json::json!({ "traceparent": own }))
            .unwrap();
        let job = carry_context(job, &context(""), 1024);
        let meta: serde_json::Value = serde_json::from_str(job.meta_json().unwrap()).unwrap();
        assert_eq!(meta[TRACEPARENT], own);
        assert!(meta.get(TRACESTATE).is_none());
    }

    #[test]
    fn no_recorded_span_leaves_the_job_alone() {
        let job = carry(NewJob::new("q", &1).unwrap(), 1024);
        assert!(job.meta_json().is_none());
    }

    #[test]
    fn the_applications_meta_is_kept_byte_for_byte() {
        let text = r#"{ "z": 1e3, "big": 123456789012345678901234567890, "a": [1, 2] }"#;
        let job = NewJob::new("q", &1)
            .unwrap()
            .meta(&serde_json::value::RawValue::from_string(text.to_owned()).unwrap())
            .unwrap();
        let job = carry_context(job, &context(""), 1024);
        assert_eq!(
            job.meta_json().unwrap(),
            r#"{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "z": 1e3, "big": 123456789012345678901234567890, "a": [1, 2] }"#
        );
        // An empty object gets the key alone.
        let job = NewJob::new("q", &1)
            .unwrap()
            .meta(&serde_json::json!({}))
            .unwrap();
        let job = carry_context(job, &context(""), 1024);
        assert_eq!(
            job.meta_json().unwrap(),
            r#"{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#
        );
    }

    #[test]
    fn a_meta_that_would_pass_its_limit_carries_no_context() {
        let job = NewJob::new("q", &1)
            .unwrap()
            .meta(&serde_json::json!({"note": "x".repeat(40)}))
            .unwrap();
        let before = job.meta_json().unwrap().to_owned();
        let job = carry_context(job, &context(""), before.len() + 20);
        assert_eq!(job.meta_json().unwrap(), before);
    }
}
