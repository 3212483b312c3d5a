//! The pages (GET): overview, job lists, a job, search, login.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use chrono::Utc;
use queue_core::{validate, Error, JobId, JobState, WorkflowId, WorkflowListRequest};
use serde::Deserialize;

use super::app::Dashboard;
use super::chart;
use super::jobs::{self, Filter};
use super::security::{local_path, Csrf};
use super::views::{
    self, count, error_page, html, jobs_href, list_href, message_page, BulkPanel, ControlView,
    Counts, JobPage, JobRow, JobView, JobsPage, KindFilter, Layout, Notice, OverviewBody,
    OverviewFragment, OverviewPage, QueueActions, ScheduleRow, SchedulesPage, SearchPage, Tab,
    WorkflowPage, WorkflowRow, WorkflowsPage,
};

/// The counts, controls and charts of every queue; the rows carry the forms of the queue
/// controls unless the dashboard is read-only.
async fn overview_body(app: &Dashboard, csrf: &str) -> Result<OverviewBody, Error> {
    let stats = app.queue.stats(None).await?;
    let throughput = app.throughput().await;
    let throughput = match &throughput {
        Ok(t) => Ok(t.as_ref()),
        Err(e) => Err(views::error_text(e)),
    };
    let forms = (!app.config.read_only).then(|| csrf.to_owned());
    Ok(OverviewBody::new(&stats, throughput, Utc::now(), forms))
}

/// Builds the overview (also shown after a queue control changed, with its `notice`).
pub(crate) async fn overview_page(
    app: &Dashboard,
    csrf: &str,
    notice: Option<Notice>,
) -> Result<OverviewPage, Error> {
    Ok(OverviewPage {
        layout: Layout::new(app, "Queues", csrf),
        body: overview_body(app, csrf).await?,
        refresh_ms: app.config.refresh.as_millis() as u64,
        notice,
    })
}

/// `/`: every queue with its counts, controls and last hour, refreshing itself.
pub(crate) async fn overview(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
) -> Response {
    match overview_page(&app, &csrf, None).await {
        Ok(page) => html(StatusCode::OK, &page),
        Err(e) => error_page(&app, &csrf, &e),
    }
}

/// `/fragment/overview`: the part of the overview that refreshes, for the page's script.
pub(crate) async fn overview_fragment(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
) -> Response {
    match overview_body(&app, &csrf).await {
        Ok(body) => html(StatusCode::OK, &OverviewFragment { body }),
        Err(e) => {
            let body = OverviewBody {
                rows: Vec::new(),
                totals: Vec::new(),
                updated: Utc::now().format("%H:%M:%S UTC").to_string(),
                chart_note: String::new(),
                error: Some(views::error_text(&e)),
                csrf: None,
            };
            html(views::error_status(&e), &OverviewFragment { body })
        }
    }
}

/// `/schedules`: every periodic schedule with its next and last slot and how the last slot's
/// job ended (read only: schedules change in code or with `queue schedules`).
pub(crate) async fn schedules(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
) -> Response {
    let read = async {
        let now = app.queue.now().await?;
        Ok::<_, Error>((now, app.queue.schedules().await?))
    };
    match read.await {
        Ok((now, all)) => html(
            StatusCode::OK,
            &SchedulesPage {
                layout: Layout::new(&app, "Schedules", &csrf),
                rows: all.iter().map(|s| ScheduleRow::new(s, now)).collect(),
                updated: now.format("%H:%M:%S UTC").to_string(),
            },
        ),
        Err(e) => error_page(&app, &csrf, &e),
    }
}

/// The query of the list of workflows.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WorkflowsQuery {
    before: Option<String>,
}

/// `/workflows?before=`: a page of workflows, newest first, with their jobs per state.
pub(crate) async fn workflows(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Query(wq): Query<WorkflowsQuery>,
) -> Response {
    let read = async {
        let before = non_empty(&wq.before)
            .map(|t| {
                t.parse::<WorkflowId>()
                    .map_err(|_| Error::invalid("before", "must be a workflow id (a UUID)"))
            })
            .transpose()?;
        let size = app.config.page_size;
        let mut found = app
            .queue
            .workflows(WorkflowListRequest {
                before,
                limit: size + 1,
            })
            .await?;
        let more = found.len() > size;
        found.truncate(size);
        Ok::<_, Error>((before, more, found))
    };
    match read.await {
        Ok((before, more, found)) => {
            let now = Utc::now();
            let older_href = if more {
                found.last().map(|w| {
                    format!(
                        "/workflows?{}",
                        views::query(&[("before", &w.id.to_string())])
                    )
                })
            } else {
                None
            };
            let page = WorkflowsPage {
                layout: Layout::new(&app, "Workflows", &csrf),
                rows: found.iter().map(|w| WorkflowRow::new(w, now)).collect(),
                states: JobState::ALL.iter().map(JobState::as_str).collect(),
                newest_href: before.map(|_| "/workflows".to_owned()),
                older_href,
                empty_text: if before.is_some() {
                    "No older workflows.".to_owned()
                } else {
                    "No workflows yet. A program pushes one with Queue::push_workflow.".to_owned()
                },
            };
            html(StatusCode::OK, &page)
        }
        Err(e) => error_page(&app, &csrf, &e),
    }
}

/// `/workflows/{id}`: one workflow, its jobs and what each waits for.
pub(crate) async fn workflow(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Path(id): Path<String>,
) -> Response {
    let id = match id.parse::<WorkflowId>() {
        Ok(id) => id,
        Err(e) => return error_page(&app, &csrf, &e),
    };
    match app.queue.workflow(id).await {
        Ok(Some(info)) => {
            let layout = Layout::new(&app, format!("Workflow {id}"), &csrf);
            html(
                StatusCode::OK,
                &WorkflowPage::new(layout, &info, Utc::now()),
            )
        }
        Ok(None) => error_page(&app, &csrf, &Error::UnknownWorkflow { workflow: id }),
        Err(e) => error_page(&app, &csrf, &e),
    }
}

/// The query of a job list.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct JobsQuery {
    queue: Option<String>,
    state: Option<String>,
    kind: Option<String>,
    before: Option<String>,
}

impl JobsQuery {
    /// The first page of the jobs of `queue`, `state` and `kind` (each optional).
    pub(crate) fn new(queue: Option<&str>, state: Option<JobState>, kind: Option<&str>) -> Self {
        JobsQuery {
            queue: queue.map(str::to_owned),
            state: state.map(|s| s.as_str().to_owned()),
            kind: kind.map(str::to_owned),
            before: None,
        }
    }

    /// The first page of `queue` (in `state`), of every kind.
    pub(crate) fn for_queue(queue: &str, state: Option<JobState>) -> Self {
        JobsQuery {
            queue: Some(queue.to_owned()),
            state: state.map(|s| s.as_str().to_owned()),
            kind: None,
            before: None,
        }
    }
}

fn non_empty(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// Checks the filter of a list or search: a valid queue name, a known state, a valid kind.
fn parse_filter(
    queue: Option<&str>,
    state: Option<&str>,
    kind: Option<&str>,
) -> Result<Filter, Error> {
    if let Some(q) = queue {
        validate::queue_name(q)?;
    }
    let state = match state {
        None | Some("all") => None,
        Some(s) => Some(s.parse::<JobState>()?),
    };
    if let Some(k) = kind {
        validate::kind(k)?;
    }
    Ok(Filter {
        queue: queue.map(str::to_owned),
        state,
        kind: kind.map(str::to_owned),
    })
}

fn before_id(text: Option<&str>) -> Result<Option<JobId>, Error> {
    text.map(|t| {
        t.parse::<JobId>()
            .map_err(|_| Error::invalid("before", "must be a job id (a UUID)"))
    })
    .transpose()
}

/// `/jobs?queue=&state=&kind=&before=`: a page of jobs, newest first, with the queue's counts,
/// chart and bulk actions when one queue is shown.
pub(crate) async fn jobs(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Query(q): Query<JobsQuery>,
) -> Response {
    match jobs_page(&app, &csrf, &q, None).await {
        Ok(page) => html(StatusCode::OK, &page),
        Err(e) => error_page(&app, &csrf, &e),
    }
}

/// Builds a job list page (also shown after a bulk action, with its `notice`).
pub(crate) async fn jobs_page(
    app: &Dashboard,
    csrf: &str,
    q: &JobsQuery,
    notice: Option<Notice>,
) -> Result<JobsPage, Error> {
    let filter = parse_filter(non_empty(&q.queue), non_empty(&q.state), non_empty(&q.kind))?;
    let before = before_id(non_empty(&q.before))?;
    let stats = app.queue.stats(filter.queue.as_deref()).await?;
    // The sum of every queue's counts, or of the one asked for.
    let sum = Counts::sum(&stats);
    let size = app.config.page_size;
    let mut found = jobs::page(app.queue.as_ref(), &filter, size + 1, before).await?;
    let more = found.len() > size;
    found.truncate(size);
    let now = Utc::now();
    let queue = filter.queue.as_deref();
    let kind = filter.kind.as_deref();
    let rows: Vec<JobRow> = found
        .iter()
        .map(|j| JobRow::listed(j, now, queue, filter.state))
        .collect();

    // The counts are the queue's, of every kind (the statistics are not kept per kind), so a
    // list of one kind shows none rather than numbers that do not match it.
    let tab_count = |text: String| {
        if kind.is_some() {
            String::new()
        } else {
            text
        }
    };
    let mut tabs = vec![Tab {
        label: "all",
        count: tab_count(sum.all_text()),
        href: list_href(queue, None, kind, None),
        active: filter.state.is_none(),
    }];
    tabs.extend(JobState::ALL.iter().map(|&s| Tab {
        label: s.as_str(),
        count: tab_count(sum.text(s)),
        href: list_href(queue, Some(s), kind, None),
        active: filter.state == Some(s),
    }));

    let older_href = if more {
        found
            .last()
            .map(|last| list_href(queue, filter.state, kind, Some(last.id)))
    } else {
        None
    };
    let newest_href = before.map(|_| list_href(queue, filter.state, kind, None));

    let (chart, chart_caption) = match queue {
        Some(name) => match app.throughput().await {
            Ok(t) => {
                let series = t.series(name);
                let caption = format!(
                    "Last hour, per minute: {} completed, {} dead{}",
                    count(series.completed_total()),
                    count(series.dead_total()),
                    if t.truncated {
                        format!(
                            " (from the newest {} finished jobs)",
                            count(t.scanned as u64)
                        )
                    } else {
                        String::new()
                    }
                );
                (Some(chart::draw(&series, t.start, 600, 96)), caption)
            }
            Err(e) => (
                None,
                format!(
                    "The throughput chart could not be read: {}",
                    views::error_text(&e)
                ),
            ),
        },
        None => (None, String::new()),
    };

    let heading = heading(queue, filter.state, kind);
    let empty_text = match (before, kind) {
        (Some(_), _) => "No older jobs.".to_owned(),
        (None, Some(k)) => format!("No jobs of kind {k} here."),
        (None, None) => "No jobs here.".to_owned(),
    };
    let actions = match queue {
        Some(name) if !app.config.read_only => Some(QueueActions {
            queue: name.to_owned(),
            dead: sum.count(JobState::Dead),
            dead_text: sum.text(JobState::Dead),
            every_kind: kind.is_some(),
        }),
        _ => None,
    };
    let control =
        queue.and_then(|name| stats.iter().find(|s| s.queue == name).map(ControlView::new));
    // A first page without jobs has nothing for a bulk action to match.
    let nothing_listed = rows.is_empty() && before.is_none();
    let bulk = (!app.config.read_only && !nothing_listed).then(|| BulkPanel {
        queue: filter.queue.clone(),
        state: filter.state.map(|s| s.as_str()),
        kind: filter.kind.clone(),
        actions: super::bulk::actions_for(filter.state)
            .into_iter()
            .map(|a| {
                (
                    a.as_str(),
                    format!("{} matching jobs", super::bulk::verb(a)),
                )
            })
            .collect(),
    });
    Ok(JobsPage {
        layout: Layout::new(app, heading.clone(), csrf),
        heading,
        queue: filter.queue.clone(),
        queue_href: jobs_href(queue, None),
        tabs,
        filter: KindFilter {
            queue: filter.queue.clone(),
            state: filter.state.map(|s| s.as_str()),
            kind: kind.unwrap_or_default().to_owned(),
            every_kind_href: list_href(queue, filter.state, None, None),
        },
        rows,
        show_queue: queue.is_none(),
        newest_href,
        older_href,
        chart,
        chart_caption,
        actions,
        bulk,
        control,
        notice,
        empty_text,
    })
}

/// The heading of a job list: its queue, state and kind.
pub(crate) fn heading(queue: Option<&str>, state: Option<JobState>, kind: Option<&str>) -> String {
    let scope = match queue {
        Some(name) => format!("Queue {name}"),
        None => "All queues".to_owned(),
    };
    match (state, kind) {
        (Some(s), Some(k)) => format!("{scope}: {s} jobs of kind {k}"),
        (None, Some(k)) => format!("{scope}: jobs of kind {k}"),
        (Some(s), None) => format!("{scope}: {s} jobs"),
        (None, None) => scope,
    }
}

/// Builds the page of job `id` (also shown after an action on it, with its `notice`).
pub(crate) async fn job_page(
    app: &Dashboard,
    csrf: &str,
    id: JobId,
    notice: Option<Notice>,
) -> Result<Option<JobPage>, Error> {
    let Some(job) = app.queue.get(id).await? else {
        return Ok(None);
    };
    Ok(Some(JobPage {
        layout: Layout::new(app, format!("Job {id}"), csrf),
        job: JobView::new(&job, Utc::now()),
        notice,
    }))
}

/// `/jobs/{id}`: one job.
pub(crate) async fn job(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Path(id): Path<String>,
) -> Response {
    let id = match id.parse::<JobId>() {
        Ok(id) => id,
        Err(e) => return error_page(&app, &csrf, &e),
    };
    match job_page(&app, &csrf, id, None).await {
        Ok(Some(page)) => html(StatusCode::OK, &page),
        Ok(None) => error_page(&app, &csrf, &Error::NotFound { job: id }),
        Err(e) => error_page(&app, &csrf, &e),
    }
}

/// The query of a search.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct SearchQuery {
    q: Option<String>,
    queue: Option<String>,
}

/// `/search?q=&queue=`: a job id opens the job; anything else is looked up as a dedup key.
pub(crate) async fn search(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Query(sq): Query<SearchQuery>,
) -> Response {
    let text = non_empty(&sq.q).unwrap_or_default().to_owned();
    let queue = non_empty(&sq.queue).map(str::to_owned);
    let mut layout = Layout::new(&app, "Search", &csrf);
    layout.search = text.clone();
    let mut page = SearchPage {
        layout,
        query: text.clone(),
        queue: queue.clone().unwrap_or_default(),
        rows: Vec::new(),
        note: String::new(),
        notice: None,
    };
    if text.is_empty() {
        page.note = "Type a job id, or a dedup key to find the jobs that carry it.".to_owned();
        return html(StatusCode::OK, &page);
    }
    if let Ok(id) = text.parse::<JobId>() {
        return match app.queue.get(id).await {
            Ok(Some(_)) => Redirect::to(&format!("/jobs/{id}")).into_response(),
            Ok(None) => {
                page.notice = Some(Notice::error(format!("No job has the id {id}.")));
                html(StatusCode::NOT_FOUND, &page)
            }
            Err(e) => error_page(&app, &csrf, &e),
        };
    }
    let filter = match parse_filter(queue.as_deref(), None, None) {
        Ok(f) => f,
        Err(e) => return error_page(&app, &csrf, &e),
    };
    let pages = app.config.search_pages;
    match jobs::search_dedup(app.queue.as_ref(), &filter, &text, 1000, pages).await {
        Ok(found) => {
            let now = Utc::now();
            page.rows = found.found.iter().map(|j| JobRow::new(j, now)).collect();
            let scope = match &queue {
                Some(q) => format!("of queue {q}"),
                None => "of all queues".to_owned(),
            };
            page.note = format!(
                "{} with this dedup key among the newest {} jobs {scope}{}",
                match page.rows.len() {
                    0 => "No job".to_owned(),
                    1 => "1 job".to_owned(),
                    n => format!("{n} jobs"),
                },
                count(found.scanned as u64),
                if found.truncated {
                    "; older jobs were not searched (narrow the search to a queue)."
                } else {
                    "."
                }
            );
            html(StatusCode::OK, &page)
        }
        Err(e) => error_page(&app, &csrf, &e),
    }
}

/// The query of the login page.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct LoginQuery {
    next: Option<String>,
}

/// `/login`: the token form (or the overview, when no token is needed).
pub(crate) async fn login(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Query(lq): Query<LoginQuery>,
) -> Response {
    let next = local_path(non_empty(&lq.next).unwrap_or("/"));
    if app.config.auth_token.is_none() {
        return Redirect::to(&next).into_response();
    }
    views::login_page(&app, &csrf, &next, "", StatusCode::OK)
}

/// Anything else.
pub(crate) async fn not_found(
    State(app): State<Arc<Dashboard>>,
    csrf: Option<Extension<Csrf>>,
) -> Response {
    let csrf = csrf.map(|Extension(Csrf(c))| c).unwrap_or_default();
    message_page(
        &app,
        &csrf,
        StatusCode::NOT_FOUND,
        "There is no such page.".to_owned(),
    )
}
