//! `/metrics`: the queue's metrics in Prometheus text format, for a scraper, behind the
//! dashboard's token like every other page (`Authorization: Bearer <token>` in the scrape
//! configuration).
//!
//! The process installs a Prometheus recorder the first time a dashboard asks for it; each
//! scrape first reads every queue's jobs per state from the database
//! (`queue_core::metrics::record_queue_gauges`), so the depth of every queue is there without a
//! worker in this process, then renders what was recorded.

use std::sync::{Arc, OnceLock};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use super::app::Dashboard;

/// Bucket bounds of the queue's histograms, in seconds: from a fast claim (half a millisecond)
/// to a long job (ten minutes).
const BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 300.0, 600.0,
];

/// The process's Prometheus recorder, installed on first use; `Err` when another recorder
/// was installed first (then `/metrics` says so).
pub(crate) fn recorder() -> &'static Result<PrometheusHandle, String> {
    static HANDLE: OnceLock<Result<PrometheusHandle, String>> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Prefix("dbqueue_".into()), BUCKETS)
            .map_err(|e| e.to_string())?
            .build_recorder();
        let handle = recorder.handle();
        metrics::set_global_recorder(recorder).map_err(|e| e.to_string())?;
        queue_core::metrics::describe();
        Ok(handle)
    })
}

/// `GET /metrics`.
pub(crate) async fn metrics(State(app): State<Arc<Dashboard>>) -> Response {
    let handle = match recorder() {
        Ok(h) => h,
        Err(e) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("no metrics: another recorder is installed in this process ({e})\n"),
            )
                .into_response()
        }
    };
    if let Err(e) = queue_core::metrics::record_queue_gauges(app.queue.as_ref()).await {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("cannot read the queues' counts: {e}\n"),
        )
            .into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        handle.render(),
    )
        .into_response()
}
