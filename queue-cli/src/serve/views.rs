//! The pages, as compile-time checked templates (`queue-cli/templates/`), and the view models
//! they show. Every value a job carries is untrusted: the templates escape everything they
//! print, and nothing here marks text as safe HTML.

use askama::Template;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use std::collections::HashMap;

use queue_core::{
    AttemptError, DepPolicy, Error, Job, JobId, JobState, QueueStats, ScheduleInfo, WorkflowInfo,
    WorkflowSummary, ERRORS_KEPT,
};

use super::app::{Dashboard, ASSET_VERSION};
use super::chart::{self, Chart, Throughput};
use crate::admin::{capped, counts, COUNT_COLUMNS};
use crate::failure::is_missing_table;

/// What every page shows around its content.
#[derive(Debug)]
pub(crate) struct Layout {
    pub(crate) title: String,
    pub(crate) backend: String,
    pub(crate) database: String,
    pub(crate) read_only: bool,
    pub(crate) logout: bool,
    pub(crate) csrf: String,
    pub(crate) search: String,
    pub(crate) asset: &'static str,
}

impl Layout {
    pub(crate) fn new(app: &Dashboard, title: impl Into<String>, csrf: &str) -> Self {
        Layout {
            title: title.into(),
            backend: app.backend.clone(),
            database: app.config.database.clone(),
            read_only: app.config.read_only,
            logout: app.config.auth_token.is_some(),
            csrf: csrf.to_owned(),
            search: String::new(),
            asset: ASSET_VERSION,
        }
    }
}

/// A message at the top of a page: what an action changed, or why it failed.
#[derive(Clone, Debug)]
pub(crate) struct Notice {
    pub(crate) ok: bool,
    pub(crate) text: String,
}

impl Notice {
    pub(crate) fn ok(text: impl Into<String>) -> Self {
        Notice {
            ok: true,
            text: text.into(),
        }
    }

    pub(crate) fn error(text: impl Into<String>) -> Self {
        Notice {
            ok: false,
            text: text.into(),
        }
    }
}

/// Renders `page` as an HTML response with `status`.
pub(crate) fn html(status: StatusCode, page: &impl Template) -> Response {
    match page.render() {
        Ok(body) => (
            status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            body,
        )
            .into_response(),
        Err(e) => {
            tracing::error!(target: crate::LOG_TARGET, error = %e, "a page failed to render");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                "the page failed to render\n",
            )
                .into_response()
        }
    }
}

/// The HTTP status for a failed call.
pub(crate) fn error_status(e: &Error) -> StatusCode {
    match e {
        Error::InvalidInput { .. } | Error::Payload(_) => StatusCode::BAD_REQUEST,
        Error::NotFound { .. } | Error::UnknownWorkflow { .. } => StatusCode::NOT_FOUND,
        Error::InvalidState { .. }
        | Error::Duplicate { .. }
        | Error::WorkflowExists { .. }
        | Error::WorkflowSealed { .. } => StatusCode::CONFLICT,
        Error::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A failed call in words, with what to do where there is something to do.
pub(crate) fn error_text(e: &Error) -> String {
    let text = e.to_string();
    if matches!(e, Error::Database { .. }) && is_missing_table(&text) {
        format!(
            "{text} (the queue's tables do not exist yet: run `queue migrate` with the same --url)"
        )
    } else {
        text
    }
}

#[derive(Template)]
#[template(path = "error.html")]
pub(crate) struct ErrorPage {
    pub(crate) layout: Layout,
    pub(crate) status: String,
    pub(crate) message: String,
}

/// An error page for `e`.
pub(crate) fn error_page(app: &Dashboard, csrf: &str, e: &Error) -> Response {
    let status = error_status(e);
    message_page(app, csrf, status, error_text(e))
}

/// An error page with `message`.
pub(crate) fn message_page(
    app: &Dashboard,
    csrf: &str,
    status: StatusCode,
    message: String,
) -> Response {
    let page = ErrorPage {
        layout: Layout::new(app, status.to_string(), csrf),
        status: status.to_string(),
        message,
    };
    html(status, &page)
}

#[derive(Template)]
#[template(path = "login.html")]
pub(crate) struct LoginPage {
    pub(crate) layout: Layout,
    pub(crate) next: String,
    pub(crate) problem: String,
}

/// The login form (answered with `status`: 401 when a page was asked for without a login).
pub(crate) fn login_page(
    app: &Dashboard,
    csrf: &str,
    next: &str,
    problem: &str,
    status: StatusCode,
) -> Response {
    let mut layout = Layout::new(app, "Log in", csrf);
    layout.logout = false;
    let page = LoginPage {
        layout,
        next: next.to_owned(),
        problem: problem.to_owned(),
    };
    html(status, &page)
}

/// `1234567` as `1,234,567`.
pub(crate) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// [`count`] of `n`, followed by `+` when it is a count that stopped at the stats cap: there
/// are at least that many (`100,000+`).
pub(crate) fn count_at_least(n: u64, at_least: bool) -> String {
    if at_least {
        format!("{}+", count(n))
    } else {
        count(n)
    }
}

/// The counts of one queue or the sum of several, in the order of [`COUNT_COLUMNS`], and
/// which of them stopped at the stats cap (a sum that includes such a count is at least that
/// much too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    values: [u64; 7],
    capped: [bool; 7],
}

impl Counts {
    pub(crate) fn of(s: &QueueStats) -> Self {
        Counts {
            values: counts(s),
            capped: capped(s),
        }
    }

    /// The sum of `stats`.
    pub(crate) fn sum(stats: &[QueueStats]) -> Self {
        stats.iter().fold(Counts::default(), |mut total, s| {
            total.add(&Counts::of(s));
            total
        })
    }

    pub(crate) fn add(&mut self, other: &Counts) {
        for (value, more) in self.values.iter_mut().zip(other.values) {
            *value += more;
        }
        for (capped, more) in self.capped.iter_mut().zip(other.capped) {
            *capped |= more;
        }
    }

    /// The columns that count jobs in `state` (pending: available and scheduled).
    fn columns(state: JobState) -> &'static [usize] {
        match state {
            JobState::Waiting => &[0],
            JobState::Pending => &[1, 2],
            JobState::Running => &[3],
            JobState::Completed => &[4],
            JobState::Dead => &[5],
            JobState::Cancelled => &[6],
        }
    }

    /// The jobs in `state`.
    pub(crate) fn count(&self, state: JobState) -> u64 {
        Self::columns(state).iter().map(|&i| self.values[i]).sum()
    }

    /// Whether the count of `state` is a lower bound.
    pub(crate) fn at_least(&self, state: JobState) -> bool {
        Self::columns(state).iter().any(|&i| self.capped[i])
    }

    /// The count of `state` as the pages show it.
    pub(crate) fn text(&self, state: JobState) -> String {
        count_at_least(self.count(state), self.at_least(state))
    }

    /// Every job, as the pages show it.
    pub(crate) fn all_text(&self) -> String {
        count_at_least(self.values.iter().sum(), self.capped.iter().any(|&c| c))
    }
}

/// A timestamp as shown everywhere: UTC, to the millisecond.
pub(crate) fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S%.3f").to_string()
}

/// How long ago (or how far ahead) `t` is from `now`, roughly: `3 min ago`, `in 5 s`.
pub(crate) fn relative(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let secs = (now - t).num_seconds();
    let (n, ahead) = if secs < 0 {
        (-secs, true)
    } else {
        (secs, false)
    };
    let span = match n {
        0..=59 => format!("{n} s"),
        60..=3599 => format!("{} min", n / 60),
        3600..=172_799 => format!("{} h", n / 3600),
        _ => format!("{} d", n / 86_400),
    };
    if ahead {
        format!("in {span}")
    } else {
        format!("{span} ago")
    }
}

/// A query string (`a=1&b=x%20y`) from pairs, each value percent-encoded.
pub(crate) fn query(pairs: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap_or_default()
}

/// The list of jobs of `queue` (and `state`).
pub(crate) fn jobs_href(queue: Option<&str>, state: Option<JobState>) -> String {
    list_href(queue, state, None, None)
}

/// The list of jobs of `queue`, `state` and `kind` (each optional), older than `before` when
/// given: the one place a list's link is made, so that paging and tabs keep every filter.
pub(crate) fn list_href(
    queue: Option<&str>,
    state: Option<JobState>,
    kind: Option<&str>,
    before: Option<JobId>,
) -> String {
    let before = before.map(|id| id.to_string());
    let mut pairs = Vec::new();
    if let Some(q) = queue {
        pairs.push(("queue", q));
    }
    if let Some(s) = state {
        pairs.push(("state", s.as_str()));
    }
    if let Some(k) = kind {
        pairs.push(("kind", k));
    }
    if let Some(id) = &before {
        pairs.push(("before", id.as_str()));
    }
    if pairs.is_empty() {
        "/jobs".to_owned()
    } else {
        format!("/jobs?{}", query(&pairs))
    }
}

/// Cuts `text` to `max` characters on one line.
pub(crate) fn clip(text: &str, max: usize) -> String {
    crate::table::clip(text, max)
}

/// One count of the overview, linking to its jobs.
#[derive(Debug)]
pub(crate) struct Cell {
    pub(crate) value: String,
    pub(crate) href: String,
    pub(crate) class: &'static str,
    /// What it counts: one of [`COUNT_COLUMNS`].
    pub(crate) name: &'static str,
}

/// One queue of the overview.
#[derive(Debug)]
pub(crate) struct QueueRow {
    pub(crate) name: String,
    pub(crate) href: String,
    pub(crate) cells: Vec<Cell>,
    pub(crate) chart: Chart,
    pub(crate) last_hour: String,
    pub(crate) control: ControlView,
}

/// Whether a queue is paused, its limits and its key controls, as the overview and the queue's
/// page show them (and the values of their Pause / Resume, limit, rate and key forms).
#[derive(Debug)]
pub(crate) struct ControlView {
    pub(crate) queue: String,
    pub(crate) paused: bool,
    /// `paused` or `running`.
    pub(crate) state: &'static str,
    /// The limit, or `-`.
    pub(crate) limit: String,
    /// The limit as the form shows it: the number, or empty.
    pub(crate) limit_input: String,
    /// The rate limit as the form shows it: `N/PERIOD`, or empty.
    pub(crate) rate_input: String,
    /// The key limit as the form shows it: the number, or empty.
    pub(crate) key_limit_input: String,
    /// The key rate limit as the form shows it: `N/PERIOD`, or empty.
    pub(crate) key_rate_input: String,
    /// Whether claims take turns across the queue's concurrency keys.
    pub(crate) fair_shares: bool,
    /// The key controls in short, as `queue stats` shows them and the overview under the
    /// limit (where `-` shows nothing): `3/key`, `fair`, or `-`.
    pub(crate) keys: String,
    /// The key controls in words, e.g. `At most 3 jobs per concurrency key run at once; fair
    /// shares off.`
    pub(crate) keys_summary: String,
    /// The keys with the most running jobs (only in a queue with a key limit or fair shares).
    pub(crate) hot_keys: Vec<HotKeyRow>,
    /// The whole state in words, e.g. `Running; at most 5 jobs run at once.`
    pub(crate) summary: String,
}

/// One hot key of a queue: its running and waiting jobs. The key is the user's text, printed
/// escaped like every other.
#[derive(Debug)]
pub(crate) struct HotKeyRow {
    pub(crate) key: String,
    pub(crate) running: String,
    pub(crate) waiting: String,
}

/// `text` with its first letter upper-case.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

impl ControlView {
    pub(crate) fn new(s: &QueueStats) -> Self {
        let mut limit = crate::admin::limit_words(s.concurrency_limit);
        if s.rate_limit.is_some() {
            limit = format!("{limit}; {}", crate::admin::rate_words(s.rate_limit));
        }
        if s.key_limit.is_some() {
            limit = format!("{limit}; {}", crate::admin::key_limit_words(s.key_limit));
        }
        if s.key_rate_limit.is_some() {
            limit = format!(
                "{limit}; {}",
                crate::admin::key_rate_words(s.key_rate_limit)
            );
        }
        if s.fair_shares {
            limit = format!("{limit}; {}", crate::admin::fair_words(true));
        }
        let keys_summary = format!(
            "{}; {}; {}.",
            capitalized(&crate::admin::key_limit_words(s.key_limit)),
            crate::admin::key_rate_words(s.key_rate_limit),
            if s.fair_shares {
                "fair shares on: claims take turns across concurrency keys"
            } else if s.key_limit.is_some() || s.key_rate_limit.is_some() {
                // A key limit takes turns across keys by itself.
                "fair shares off (a key limit takes turns across keys)"
            } else {
                "fair shares off"
            }
        );
        let summary = if s.paused {
            format!("Paused: no job is given out until it is resumed; {limit}.")
        } else {
            format!("Running; {limit}.")
        };
        ControlView {
            queue: s.queue.clone(),
            paused: s.paused,
            state: crate::admin::queue_state(s),
            limit: s
                .concurrency_limit
                .map_or_else(|| "-".to_owned(), |n| n.to_string()),
            limit_input: s
                .concurrency_limit
                .map(|n| n.to_string())
                .unwrap_or_default(),
            rate_input: s
                .rate_limit
                .map(|r| format!("{}/{}", r.limit, crate::admin::period_words(r.period)))
                .unwrap_or_default(),
            key_limit_input: s.key_limit.map(|n| n.to_string()).unwrap_or_default(),
            key_rate_input: s
                .key_rate_limit
                .map(|r| format!("{}/{}", r.limit, crate::admin::period_words(r.period)))
                .unwrap_or_default(),
            fair_shares: s.fair_shares,
            keys: crate::admin::key_words(s),
            keys_summary,
            hot_keys: s
                .hot_keys
                .iter()
                .map(|h| HotKeyRow {
                    key: h.key.clone(),
                    running: count(h.running),
                    waiting: count(h.waiting),
                })
                .collect(),
            summary,
        }
    }
}

fn column_state(i: usize) -> JobState {
    match i {
        0 => JobState::Waiting,
        1 | 2 => JobState::Pending,
        3 => JobState::Running,
        4 => JobState::Completed,
        5 => JobState::Dead,
        _ => JobState::Cancelled,
    }
}

fn cells(queue: Option<&str>, counts: &Counts) -> Vec<Cell> {
    counts
        .values
        .iter()
        .zip(counts.capped)
        .enumerate()
        .map(|(i, (&n, at_least))| Cell {
            value: count_at_least(n, at_least),
            href: jobs_href(queue, Some(column_state(i))),
            class: if n == 0 { "zero" } else { COUNT_COLUMNS[i] },
            name: COUNT_COLUMNS[i],
        })
        .collect()
}

/// The refreshing part of the overview.
#[derive(Debug)]
pub(crate) struct OverviewBody {
    pub(crate) rows: Vec<QueueRow>,
    pub(crate) totals: Vec<Cell>,
    pub(crate) updated: String,
    pub(crate) chart_note: String,
    pub(crate) error: Option<String>,
    /// The CSRF token for the forms of each row; `None` when the dashboard is read-only (no
    /// forms are shown).
    pub(crate) csrf: Option<String>,
}

impl OverviewBody {
    pub(crate) fn new(
        stats: &[QueueStats],
        throughput: Result<&Throughput, String>,
        now: DateTime<Utc>,
        csrf: Option<String>,
    ) -> Self {
        let mut totals = Counts::default();
        let mut error = None;
        let empty = Throughput::empty(now);
        let t = match throughput {
            Ok(t) => t,
            Err(e) => {
                error = Some(format!("the throughput chart could not be read: {e}"));
                &empty
            }
        };
        let rows = stats
            .iter()
            .map(|s| {
                let values = Counts::of(s);
                totals.add(&values);
                let series = t.series(&s.queue);
                QueueRow {
                    name: s.queue.clone(),
                    href: jobs_href(Some(&s.queue), None),
                    cells: cells(Some(&s.queue), &values),
                    last_hour: format!(
                        "{} done, {} dead",
                        count(series.completed_total()),
                        count(series.dead_total())
                    ),
                    chart: chart::draw(&series, t.start, 180, 32),
                    control: ControlView::new(s),
                }
            })
            .collect();
        let chart_note = if t.truncated {
            format!(
                "Charts count the newest {} finished jobs; older finishes in the hour are not shown.",
                count(t.scanned as u64)
            )
        } else {
            String::new()
        };
        OverviewBody {
            rows,
            totals: cells(None, &totals),
            updated: now.format("%H:%M:%S UTC").to_string(),
            chart_note,
            error,
            csrf,
        }
    }
}

#[derive(Template)]
#[template(path = "overview.html")]
pub(crate) struct OverviewPage {
    pub(crate) layout: Layout,
    pub(crate) body: OverviewBody,
    pub(crate) refresh_ms: u64,
    pub(crate) notice: Option<Notice>,
}

#[derive(Template)]
#[template(path = "overview_fragment.html")]
pub(crate) struct OverviewFragment {
    pub(crate) body: OverviewBody,
}

/// One state tab of a job list.
#[derive(Debug)]
pub(crate) struct Tab {
    pub(crate) label: &'static str,
    pub(crate) count: String,
    pub(crate) href: String,
    pub(crate) active: bool,
}

/// One row of a job list.
#[derive(Debug)]
pub(crate) struct JobRow {
    pub(crate) id: String,
    pub(crate) href: String,
    pub(crate) queue: String,
    pub(crate) queue_href: String,
    /// The job's kind, or empty.
    pub(crate) kind: String,
    /// The list of the jobs of its kind.
    pub(crate) kind_href: String,
    pub(crate) state: &'static str,
    pub(crate) attempts: String,
    pub(crate) priority: i32,
    pub(crate) created: String,
    pub(crate) created_ago: String,
    pub(crate) when: String,
    pub(crate) error: String,
    pub(crate) dedup: String,
}

impl JobRow {
    /// `job` as a row; its kind links to the jobs of that kind in its queue.
    pub(crate) fn new(job: &Job, now: DateTime<Utc>) -> Self {
        Self::listed(job, now, Some(&job.queue), None)
    }

    /// `job` as a row of the list of `queue` and `state`; its kind links to the jobs of that
    /// kind in the same list.
    pub(crate) fn listed(
        job: &Job,
        now: DateTime<Utc>,
        queue: Option<&str>,
        state: Option<JobState>,
    ) -> Self {
        let when = match job.state {
            JobState::Waiting => "waits for its dependencies".to_owned(),
            JobState::Pending => format!("runs {}", relative(job.run_at, now)),
            JobState::Running => job
                .lease_expires_at
                .map(|t| format!("lease ends {}", relative(t, now)))
                .unwrap_or_default(),
            _ => job
                .finished_at
                .map(|t| format!("finished {}", relative(t, now)))
                .unwrap_or_default(),
        };
        JobRow {
            id: job.id.to_string(),
            href: format!("/jobs/{}", job.id),
            queue: job.queue.clone(),
            queue_href: jobs_href(Some(&job.queue), None),
            kind: job.kind.clone().unwrap_or_default(),
            kind_href: job
                .kind
                .as_deref()
                .map(|k| list_href(queue, state, Some(k), None))
                .unwrap_or_default(),
            state: job.state.as_str(),
            attempts: format!("{}/{}", job.attempts, job.max_attempts),
            priority: job.priority,
            created: time(job.created_at),
            created_ago: relative(job.created_at, now),
            when,
            error: job
                .last_error
                .as_deref()
                .map(|e| clip(e, 80))
                .unwrap_or_default(),
            dedup: job
                .dedup_key
                .as_deref()
                .map(|k| clip(k, 40))
                .unwrap_or_default(),
        }
    }
}

/// One row of the schedules page.
#[derive(Debug)]
pub(crate) struct ScheduleRow {
    pub(crate) name: String,
    pub(crate) expression: String,
    pub(crate) time_zone: String,
    pub(crate) queue: String,
    pub(crate) queue_href: String,
    pub(crate) registered: &'static str,
    pub(crate) next: String,
    pub(crate) last_slot: String,
    pub(crate) last_job: &'static str,
    pub(crate) last_job_href: Option<String>,
}

impl ScheduleRow {
    pub(crate) fn new(s: &ScheduleInfo, now: DateTime<Utc>) -> Self {
        let slot = |t: Option<DateTime<Utc>>| {
            t.map_or_else(
                || "-".to_owned(),
                |t| t.format("%Y-%m-%d %H:%M:%S").to_string(),
            )
        };
        ScheduleRow {
            name: s.job.name().to_owned(),
            expression: s.job.expression().to_owned(),
            time_zone: s.job.time_zone_name().to_owned(),
            queue: s.job.queue().to_owned(),
            queue_href: jobs_href(Some(s.job.queue()), None),
            registered: crate::schedules::registered(s, now),
            next: slot(crate::schedules::next(s, now)),
            last_slot: slot(s.last_slot),
            last_job: crate::schedules::last_job(s),
            // A pruned job has no page.
            last_job_href: s
                .last_job
                .filter(|_| s.last_job_state.is_some())
                .map(|id| format!("/jobs/{id}")),
        }
    }
}

#[derive(Template)]
#[template(path = "schedules.html")]
pub(crate) struct SchedulesPage {
    pub(crate) layout: Layout,
    pub(crate) rows: Vec<ScheduleRow>,
    pub(crate) updated: String,
}

/// The bulk actions of one queue.
#[derive(Debug)]
pub(crate) struct QueueActions {
    pub(crate) queue: String,
    pub(crate) dead: u64,
    pub(crate) dead_text: String,
    /// Whether the list shows one kind: the bulk retry still takes the queue's dead jobs of
    /// every kind, and says so.
    pub(crate) every_kind: bool,
}

/// The bulk actions of a job list: its filter, and a button per action that applies to it.
#[derive(Debug)]
pub(crate) struct BulkPanel {
    pub(crate) queue: Option<String>,
    pub(crate) state: Option<&'static str>,
    pub(crate) kind: Option<String>,
    /// `(action, label)`: `("cancel", "Cancel matching jobs")`.
    pub(crate) actions: Vec<(&'static str, String)>,
}

/// The confirmation of a bulk action: how many jobs it would change, and the form that does it
/// (when there are any).
#[derive(Template)]
#[template(path = "bulk.html")]
pub(crate) struct BulkPage {
    pub(crate) layout: Layout,
    pub(crate) text: String,
    pub(crate) matching: u64,
    /// The confirming button's label, e.g. `Cancel 12 jobs`.
    pub(crate) button: String,
    pub(crate) danger: bool,
    /// Whether the action can be undone (delete cannot).
    pub(crate) undoable: bool,
    pub(crate) action: String,
    pub(crate) queue: String,
    pub(crate) state: &'static str,
    pub(crate) kind: String,
    pub(crate) older_than: String,
    /// The list the action was asked from, and its heading.
    pub(crate) back_href: String,
    pub(crate) back_label: String,
}

#[derive(Template)]
#[template(path = "jobs.html")]
pub(crate) struct JobsPage {
    pub(crate) layout: Layout,
    pub(crate) heading: String,
    pub(crate) queue: Option<String>,
    pub(crate) queue_href: String,
    pub(crate) tabs: Vec<Tab>,
    /// The kind filter's form: the queue and state it keeps, and the kind (or empty).
    pub(crate) filter: KindFilter,
    pub(crate) rows: Vec<JobRow>,
    pub(crate) show_queue: bool,
    pub(crate) newest_href: Option<String>,
    pub(crate) older_href: Option<String>,
    pub(crate) chart: Option<Chart>,
    pub(crate) chart_caption: String,
    pub(crate) actions: Option<QueueActions>,
    /// The bulk actions on the jobs of the list (none when read-only or when it is empty).
    pub(crate) bulk: Option<BulkPanel>,
    /// Whether the queue shown is paused and its limit (one queue only).
    pub(crate) control: Option<ControlView>,
    pub(crate) notice: Option<Notice>,
    pub(crate) empty_text: String,
}

/// The form that filters a job list by kind, keeping its queue and state.
#[derive(Debug)]
pub(crate) struct KindFilter {
    pub(crate) queue: Option<String>,
    pub(crate) state: Option<&'static str>,
    /// The kind shown, or empty for every kind.
    pub(crate) kind: String,
    /// The same list of every kind.
    pub(crate) every_kind_href: String,
}

/// One failed attempt of a job's history, as its page shows it.
#[derive(Debug)]
pub(crate) struct ErrorRow {
    pub(crate) attempt: u32,
    pub(crate) at: String,
    pub(crate) at_ago: String,
    pub(crate) worker: String,
    pub(crate) error: String,
}

impl ErrorRow {
    fn new(e: &AttemptError, now: DateTime<Utc>) -> Self {
        ErrorRow {
            attempt: e.attempt,
            at: time(e.at),
            at_ago: relative(e.at, now),
            worker: e.worker.clone().unwrap_or_else(|| "-".to_owned()),
            error: e.error.clone(),
        }
    }
}

/// A duration as the dashboard's forms take it: `30s`, `1m 30s`, `250ms`, `2d 1h`.
pub(crate) fn duration_text(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return if d.is_zero() {
            "0s".to_owned()
        } else {
            format!("{}µs", d.as_micros())
        };
    }
    let parts = [
        (ms / 86_400_000, "d"),
        (ms / 3_600_000 % 24, "h"),
        (ms / 60_000 % 60, "m"),
        (ms / 1000 % 60, "s"),
        (ms % 1000, "ms"),
    ];
    parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One job, as its page shows it.
#[derive(Debug)]
pub(crate) struct JobView {
    pub(crate) id: String,
    pub(crate) queue: String,
    pub(crate) queue_href: String,
    pub(crate) state: &'static str,
    pub(crate) attempts: String,
    pub(crate) priority: i32,
    pub(crate) run_at: String,
    pub(crate) created: String,
    pub(crate) updated: String,
    pub(crate) finished: String,
    pub(crate) worker: String,
    pub(crate) lease_expires: String,
    pub(crate) dedup: String,
    /// Its kind, or `-`.
    pub(crate) kind: String,
    /// The list of the jobs of its kind in its queue, when it has a kind.
    pub(crate) kind_href: Option<String>,
    pub(crate) snoozes: u32,
    /// The longest one attempt may run, when the job was pushed with a limit.
    pub(crate) timeout: Option<String>,
    pub(crate) last_error: Option<String>,
    /// Its failed attempts, newest first.
    pub(crate) errors: Vec<ErrorRow>,
    /// What the page says about the history: its order, and whether older failures were
    /// dropped.
    pub(crate) errors_note: String,
    pub(crate) payload: String,
    pub(crate) payload_note: String,
    /// Its metadata as indented JSON, when it has any.
    pub(crate) meta: Option<String>,
    pub(crate) meta_note: String,
    /// The output its handler recorded, as indented JSON, when it recorded one.
    pub(crate) output: Option<String>,
    pub(crate) output_note: String,
    pub(crate) can_retry: bool,
    pub(crate) can_cancel: bool,
    pub(crate) can_reschedule: bool,
    /// The workflow it is a step of, and its step.
    pub(crate) workflow: Option<WorkflowLink>,
    /// What it depends on, in the order stored.
    pub(crate) dependencies: Vec<DependencyRow>,
    /// The dependency whose failure cancelled it.
    pub(crate) blocked: Option<BlockedView>,
}

/// The workflow a job is a step of, as its page links to it.
#[derive(Debug)]
pub(crate) struct WorkflowLink {
    pub(crate) id: String,
    pub(crate) href: String,
    pub(crate) step: String,
}

/// One dependency of a job, as its page shows it.
#[derive(Debug)]
pub(crate) struct DependencyRow {
    pub(crate) step: String,
    pub(crate) id: String,
    /// Its page; `None` once it was deleted.
    pub(crate) href: Option<String>,
    /// `completed` or `any outcome`.
    pub(crate) needs: &'static str,
    /// Its state, or `deleted`.
    pub(crate) state: &'static str,
}

/// The dependency whose failure cancelled a job: `Cancelled because its dependency fetch ended
/// dead.`
#[derive(Debug)]
pub(crate) struct BlockedView {
    /// Its step, or its id when it is no longer among the job's dependencies.
    pub(crate) label: String,
    pub(crate) href: Option<String>,
    /// `dead`, `cancelled`, or `dead or cancelled`.
    pub(crate) ended: &'static str,
}

impl BlockedView {
    fn new(job: &Job, blocked_by: JobId) -> Self {
        let dep = job.depends_on.iter().find(|d| d.id == blocked_by);
        BlockedView {
            label: dep.map_or_else(|| blocked_by.to_string(), |d| d.step.clone()),
            href: dep
                .filter(|d| d.state.is_some())
                .map(|_| format!("/jobs/{blocked_by}")),
            ended: crate::workflows::ended_words(dep),
        }
    }
}

/// The most payload a job page shows.
const MAX_PAYLOAD_SHOWN: usize = 256 * 1024;

/// JSON text indented two spaces a level, its keys in their stored order. Text that is not
/// JSON (or was cut short) is indented as far as it goes and never lost.
pub(crate) fn pretty_json(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len() + raw.len() / 4);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = raw.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', depth * 2));
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                // An empty object or array stays on one line.
                while chars.peek().is_some_and(|n| n.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}' | ']')) {
                    if let Some(close) = chars.next() {
                        out.push(close);
                    }
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

fn with_relative(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    format!("{} UTC ({})", time(t), relative(t, now))
}

/// `raw` JSON of job `id` indented for a page, cut to [`MAX_PAYLOAD_SHOWN`] bytes, with a note
/// saying so (naming `what`, e.g. `payload`, and where to read it whole) when it was cut.
fn shown_json(raw: &str, what: &str, id: JobId) -> (String, String) {
    if raw.len() <= MAX_PAYLOAD_SHOWN {
        return (pretty_json(raw), String::new());
    }
    let mut cut = MAX_PAYLOAD_SHOWN;
    while !raw.is_char_boundary(cut) {
        cut -= 1;
    }
    (
        pretty_json(&raw[..cut]),
        format!(
            "The {what} is {} bytes; the first {} are shown. `queue get {id} --json` prints it \
             whole.",
            count(raw.len() as u64),
            count(cut as u64)
        ),
    )
}

impl JobView {
    pub(crate) fn new(job: &Job, now: DateTime<Utc>) -> Self {
        let (payload, payload_note) = shown_json(job.payload.get(), "payload", job.id);
        let (meta, meta_note) = match &job.meta {
            Some(m) => {
                let (text, note) = shown_json(m.get(), "metadata", job.id);
                (Some(text), note)
            }
            None => (None, String::new()),
        };
        let (output, output_note) = match &job.output {
            Some(o) => {
                let (text, note) = shown_json(o.get(), "output", job.id);
                (Some(text), note)
            }
            None => (None, String::new()),
        };
        let kept = job.errors.len();
        let errors_note = match kept {
            0 => String::new(),
            1 => "1 failed attempt.".to_owned(),
            n if n >= ERRORS_KEPT as usize => format!(
                "The {n} most recent failed attempts, newest first: a job keeps no more than \
                 {ERRORS_KEPT}, so any older ones are gone."
            ),
            n => format!("{n} failed attempts, newest first."),
        };
        JobView {
            id: job.id.to_string(),
            queue: job.queue.clone(),
            queue_href: jobs_href(Some(&job.queue), None),
            state: job.state.as_str(),
            attempts: format!("{} of {}", job.attempts, job.max_attempts),
            priority: job.priority,
            run_at: with_relative(job.run_at, now),
            created: with_relative(job.created_at, now),
            updated: with_relative(job.updated_at, now),
            finished: job
                .finished_at
                .map(|t| with_relative(t, now))
                .unwrap_or_else(|| "-".to_owned()),
            worker: job.worker.clone().unwrap_or_else(|| "-".to_owned()),
            lease_expires: job
                .lease_expires_at
                .map(|t| with_relative(t, now))
                .unwrap_or_else(|| "-".to_owned()),
            dedup: job.dedup_key.clone().unwrap_or_else(|| "-".to_owned()),
            kind: job.kind.clone().unwrap_or_else(|| "-".to_owned()),
            kind_href: job
                .kind
                .as_deref()
                .map(|k| list_href(Some(&job.queue), None, Some(k), None)),
            snoozes: job.snoozes,
            timeout: job.timeout.map(duration_text),
            last_error: job.last_error.clone(),
            errors: job
                .errors
                .iter()
                .rev()
                .map(|e| ErrorRow::new(e, now))
                .collect(),
            errors_note,
            payload,
            payload_note,
            meta,
            meta_note,
            output,
            output_note,
            can_retry: matches!(job.state, JobState::Dead | JobState::Cancelled),
            can_cancel: matches!(
                job.state,
                JobState::Waiting | JobState::Pending | JobState::Running
            ),
            can_reschedule: job.state == JobState::Pending,
            workflow: job.workflow.map(|w| WorkflowLink {
                id: w.to_string(),
                href: format!("/workflows/{w}"),
                step: job.step.clone().unwrap_or_else(|| "-".to_owned()),
            }),
            dependencies: job
                .depends_on
                .iter()
                .map(|d| DependencyRow {
                    step: d.step.clone(),
                    id: d.id.to_string(),
                    href: d.state.map(|_| format!("/jobs/{}", d.id)),
                    needs: crate::workflows::policy_words(d.policy),
                    state: d.state.map_or("deleted", |s| s.as_str()),
                })
                .collect(),
            blocked: job.blocked_by.map(|b| BlockedView::new(job, b)),
        }
    }
}

/// One workflow of the list of workflows.
#[derive(Debug)]
pub(crate) struct WorkflowRow {
    pub(crate) id: String,
    pub(crate) href: String,
    /// Its name, or `-`.
    pub(crate) name: String,
    pub(crate) created: String,
    pub(crate) created_ago: String,
    /// `active`, `finished` or `open`.
    pub(crate) status: &'static str,
    pub(crate) jobs: String,
    /// The count of each state, in lifecycle order.
    pub(crate) counts: Vec<StateCount>,
}

/// How many jobs of a workflow are in one state.
#[derive(Debug)]
pub(crate) struct StateCount {
    pub(crate) state: &'static str,
    pub(crate) count: String,
    pub(crate) zero: bool,
}

fn state_counts(counts: &[(JobState, u64)]) -> Vec<StateCount> {
    crate::workflows::every_count(counts)
        .iter()
        .map(|(s, n)| StateCount {
            state: s.as_str(),
            count: count(*n),
            zero: *n == 0,
        })
        .collect()
}

impl WorkflowRow {
    pub(crate) fn new(w: &WorkflowSummary, now: DateTime<Utc>) -> Self {
        WorkflowRow {
            id: w.id.to_string(),
            href: format!("/workflows/{}", w.id),
            name: w.name.clone().unwrap_or_else(|| "-".to_owned()),
            created: time(w.created_at),
            created_ago: relative(w.created_at, now),
            status: crate::workflows::status_words(w.open, w.is_finished()),
            jobs: count(w.total()),
            counts: state_counts(&w.counts),
        }
    }
}

#[derive(Template)]
#[template(path = "workflows.html")]
pub(crate) struct WorkflowsPage {
    pub(crate) layout: Layout,
    pub(crate) rows: Vec<WorkflowRow>,
    /// The state names, for the table's head.
    pub(crate) states: Vec<&'static str>,
    pub(crate) newest_href: Option<String>,
    pub(crate) older_href: Option<String>,
    pub(crate) empty_text: String,
}

/// A step a job waits for, linking to its job (unless it was deleted: then its id, unlinked).
#[derive(Debug)]
pub(crate) struct WaitsFor {
    pub(crate) label: String,
    pub(crate) href: Option<String>,
    /// It runs whatever this dependency's outcome.
    pub(crate) any_outcome: bool,
}

/// One job of a workflow's page.
#[derive(Debug)]
pub(crate) struct StepRow {
    pub(crate) step: String,
    pub(crate) id: String,
    pub(crate) href: String,
    pub(crate) state: &'static str,
    pub(crate) queue: String,
    pub(crate) queue_href: String,
    /// Its kind, or empty.
    pub(crate) kind: String,
    pub(crate) kind_href: String,
    pub(crate) attempts: String,
    pub(crate) waits_for: Vec<WaitsFor>,
    /// `and 996 more` past the dependencies named, or empty.
    pub(crate) more: String,
    /// The dependency whose failure cancelled it.
    pub(crate) blocked_by: Option<BlockedView>,
    pub(crate) error: String,
}

/// The most dependencies a row of a workflow's page names (a batch's callback waits for
/// every member).
const DEPS_SHOWN: usize = 10;

fn waits_for(id: JobId, policy: DepPolicy, steps: &HashMap<JobId, &str>) -> WaitsFor {
    match steps.get(&id) {
        Some(step) => WaitsFor {
            label: clip(step, 60),
            href: Some(format!("/jobs/{id}")),
            any_outcome: policy == DepPolicy::AnyOutcome,
        },
        None => WaitsFor {
            label: id.to_string(),
            href: None,
            any_outcome: policy == DepPolicy::AnyOutcome,
        },
    }
}

#[derive(Template)]
#[template(path = "workflow.html")]
pub(crate) struct WorkflowPage {
    pub(crate) layout: Layout,
    pub(crate) id: String,
    /// Its name, or `-`.
    pub(crate) name: String,
    pub(crate) status: &'static str,
    pub(crate) open: bool,
    pub(crate) created: String,
    /// `4 jobs: 1 waiting, 1 pending, 1 dead, 1 cancelled`.
    pub(crate) summary: String,
    /// A batch's callback job.
    pub(crate) callback: Option<WaitsFor>,
    pub(crate) rows: Vec<StepRow>,
}

impl WorkflowPage {
    pub(crate) fn new(layout: Layout, info: &WorkflowInfo, now: DateTime<Utc>) -> Self {
        let steps = crate::workflows::steps_of(info);
        let states: HashMap<JobId, JobState> =
            info.jobs.iter().map(|j| (j.job.id, j.job.state)).collect();
        let rows = info
            .jobs
            .iter()
            .map(|j| {
                let job = &j.job;
                StepRow {
                    step: j.step.clone(),
                    id: job.id.to_string(),
                    href: format!("/jobs/{}", job.id),
                    state: job.state.as_str(),
                    queue: job.queue.clone(),
                    queue_href: jobs_href(Some(&job.queue), None),
                    kind: job.kind.clone().unwrap_or_default(),
                    kind_href: job
                        .kind
                        .as_deref()
                        .map(|k| list_href(Some(&job.queue), None, Some(k), None))
                        .unwrap_or_default(),
                    attempts: format!("{}/{}", job.attempts, job.max_attempts),
                    waits_for: j
                        .depends_on
                        .iter()
                        .take(DEPS_SHOWN)
                        .map(|(id, policy)| waits_for(*id, *policy, &steps))
                        .collect(),
                    more: if j.depends_on.len() > DEPS_SHOWN {
                        format!(
                            "and {} more",
                            count((j.depends_on.len() - DEPS_SHOWN) as u64)
                        )
                    } else {
                        String::new()
                    },
                    blocked_by: job.blocked_by.map(|b| {
                        let dep = waits_for(b, DepPolicy::Completed, &steps);
                        BlockedView {
                            label: dep.label,
                            href: dep.href,
                            ended: crate::workflows::ended_state_words(states.get(&b).copied()),
                        }
                    }),
                    error: job
                        .last_error
                        .as_deref()
                        .map(|e| clip(e, 80))
                        .unwrap_or_default(),
                }
            })
            .collect();
        WorkflowPage {
            layout,
            id: info.id.to_string(),
            name: info.name.clone().unwrap_or_else(|| "-".to_owned()),
            status: crate::workflows::status_words(info.open, info.is_finished()),
            open: info.open,
            created: with_relative(info.created_at, now),
            summary: format!(
                "{} {}: {}",
                count(info.jobs.len() as u64),
                if info.jobs.len() == 1 { "job" } else { "jobs" },
                crate::workflows::counts_words(&info.counts())
            ),
            callback: info
                .callback
                .map(|c| waits_for(c, DepPolicy::Completed, &steps)),
            rows,
        }
    }
}

#[derive(Template)]
#[template(path = "job.html")]
pub(crate) struct JobPage {
    pub(crate) layout: Layout,
    pub(crate) job: JobView,
    pub(crate) notice: Option<Notice>,
}

#[derive(Template)]
#[template(path = "search.html")]
pub(crate) struct SearchPage {
    pub(crate) layout: Layout,
    pub(crate) query: String,
    pub(crate) queue: String,
    pub(crate) rows: Vec<JobRow>,
    pub(crate) note: String,
    pub(crate) notice: Option<Notice>,
}

/// A link under the outcome of an action.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) label: String,
    pub(crate) href: String,
}

#[derive(Template)]
#[template(path = "result.html")]
pub(crate) struct ResultPage {
    pub(crate) layout: Layout,
    pub(crate) notice: Notice,
    pub(crate) links: Vec<Link>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
    }

    #[test]
    fn capped_counts_read_as_at_least() {
        assert_eq!(count_at_least(100_000, true), "100,000+");
        assert_eq!(count_at_least(99_999, false), "99,999");
        let big = QueueStats {
            queue: "big".into(),
            available: 2,
            scheduled: 1,
            completed: 100_000,
            dead: 3,
            count_cap: Some(100_000),
            ..QueueStats::default()
        };
        let small = QueueStats {
            queue: "small".into(),
            completed: 5,
            dead: 4,
            count_cap: Some(100_000),
            ..QueueStats::default()
        };
        let one = Counts::of(&big);
        assert_eq!(one.text(JobState::Completed), "100,000+");
        assert_eq!(one.text(JobState::Pending), "3");
        assert_eq!(one.text(JobState::Dead), "3");
        let sum = Counts::sum(&[big, small]);
        assert_eq!(sum.text(JobState::Completed), "100,005+");
        assert_eq!(sum.text(JobState::Dead), "7");
        assert_eq!(sum.all_text(), "100,015+");
        let cells = cells(Some("big"), &one);
        let shown: Vec<&str> = cells.iter().map(|c| c.value.as_str()).collect();
        assert_eq!(shown, ["0", "2", "1", "0", "100,000+", "3", "0"]);
        assert_eq!(Counts::default().all_text(), "0");
    }

    #[test]
    fn relative_times_read_well() {
        let now: DateTime<Utc> = "2026-01-01T12:00:00Z".parse().unwrap();
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        assert_eq!(relative(at("2026-01-01T11:59:30Z"), now), "30 s ago");
        assert_eq!(relative(at("2026-01-01T11:57:00Z"), now), "3 min ago");
        assert_eq!(relative(at("2026-01-01T12:00:05Z"), now), "in 5 s");
        assert_eq!(relative(at("2025-12-30T12:00:00Z"), now), "2 d ago");
    }

    #[test]
    fn payloads_are_indented_in_their_own_order() {
        assert_eq!(
            pretty_json(r#"{"z":1,"a":[1, 2],"e":{},"s":"x,{\"y\":[]}"}"#),
            "{\n  \"z\": 1,\n  \"a\": [\n    1,\n    2\n  ],\n  \"e\": {},\n  \"s\": \"x,{\\\"y\\\":[]}\"\n}"
        );
        assert_eq!(pretty_json("[]"), "[]");
        assert_eq!(pretty_json("17"), "17");
        assert_eq!(pretty_json(r#"{"cut":"#), "{\n  \"cut\": ");
    }

    #[test]
    fn durations_read_as_they_are_typed() {
        use std::time::Duration;
        assert_eq!(duration_text(Duration::from_secs(30)), "30s");
        assert_eq!(duration_text(Duration::from_secs(90)), "1m 30s");
        assert_eq!(duration_text(Duration::from_millis(250)), "250ms");
        assert_eq!(duration_text(Duration::from_millis(1500)), "1s 500ms");
        assert_eq!(duration_text(Duration::from_secs(86_400 + 3600)), "1d 1h");
        assert_eq!(duration_text(Duration::from_micros(5)), "5µs");
        assert_eq!(duration_text(Duration::ZERO), "0s");
    }

    #[test]
    fn links_encode_their_values() {
        assert_eq!(
            jobs_href(Some("a:b.c"), Some(JobState::Dead)),
            "/jobs?queue=a%3Ab.c&state=dead"
        );
        assert_eq!(jobs_href(None, None), "/jobs");
        let id: JobId = "0190f0e4-1c2b-7d3e-8f00-123456789abc".parse().unwrap();
        assert_eq!(
            list_href(None, Some(JobState::Dead), Some("mail.send"), Some(id)),
            "/jobs?state=dead&kind=mail.send&before=0190f0e4-1c2b-7d3e-8f00-123456789abc"
        );
        assert_eq!(query(&[("q", "a&b=<c>")]), "q=a%26b%3D%3Cc%3E");
    }
}
