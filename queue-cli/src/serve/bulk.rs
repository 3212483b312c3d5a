//! Bulk actions by filter: cancel, retry or delete every job a job list's filter matches (its
//! queue, state and kind, and optionally an age). A button on the list opens a confirmation
//! page (`GET /bulk`) that says how many jobs the action would change now; its form (`POST
//! /actions/bulk`, with the CSRF token) runs the engine's bulk operation and shows the list
//! again with what changed. Read-only dashboards show neither and refuse both.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;
use queue_core::{BulkAction, Error, JobFilter, JobState};
use serde::Deserialize;

use super::app::Dashboard;
use super::pages::{heading, jobs_page, JobsQuery};
use super::security::{Csrf, CsrfForm, Posted};
use super::views::{
    count, error_page, error_status, error_text, html, list_href, message_page, BulkPage, Layout,
    Notice,
};
use crate::duration;
use crate::maintenance::{scope_words, skipped_reason};
use crate::LOG_TARGET;

/// The query of the confirmation page and the form it posts: the action and the list's
/// filter (`older_than` as typed, e.g. `7d`; empty for any age).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct BulkForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    action: String,
    queue: Option<String>,
    state: Option<String>,
    kind: Option<String>,
    older_than: Option<String>,
}

impl CsrfForm for BulkForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

fn non_empty(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// A checked bulk request.
#[derive(Debug)]
pub(crate) struct BulkRequest {
    pub(crate) action: BulkAction,
    pub(crate) filter: JobFilter,
    /// The age as it was typed.
    pub(crate) age: Option<String>,
    /// What the action applies to, in words.
    pub(crate) scope: String,
}

/// Checks `form`: a known action, a valid filter, and a state the action applies to.
///
/// # Errors
/// [`Error::InvalidInput`] naming the field.
pub(crate) fn request(form: &BulkForm) -> Result<BulkRequest, Error> {
    let action: BulkAction = form.action.trim().parse()?;
    let state = match non_empty(&form.state) {
        None | Some("all") => None,
        Some(s) => Some(s.parse::<JobState>()?),
    };
    let age = non_empty(&form.older_than).map(str::to_owned);
    let filter = JobFilter {
        queue: non_empty(&form.queue).map(str::to_owned),
        state,
        kind: non_empty(&form.kind).map(str::to_owned),
        older_than: age
            .as_deref()
            .map(|a| duration::parse("older_than", a))
            .transpose()?,
    };
    let states = filter.states_for(action)?;
    let scope = scope_words(&states, &filter, age.as_deref());
    Ok(BulkRequest {
        action,
        filter,
        age,
        scope,
    })
}

/// The actions that apply to a list of jobs in `state` (every action for a list of every
/// state), in the order the buttons show them.
pub(crate) fn actions_for(state: Option<JobState>) -> Vec<BulkAction> {
    BulkAction::ALL
        .into_iter()
        .filter(|a| state.is_none_or(|s| a.states().contains(&s)))
        .collect()
}

/// `Cancel`, `Retry`, `Delete`.
pub(crate) fn verb(action: BulkAction) -> &'static str {
    match action {
        BulkAction::Cancel => "Cancel",
        BulkAction::Retry => "Retry",
        BulkAction::Delete => "Delete",
    }
}

/// `Cancelled`, `Retried`, `Deleted`.
fn done(action: BulkAction) -> &'static str {
    match action {
        BulkAction::Cancel => "Cancelled",
        BulkAction::Retry => "Retried",
        BulkAction::Delete => "Deleted",
    }
}

/// `1 job`, `1,234 jobs`.
fn jobs(n: u64) -> String {
    if n == 1 {
        "1 job".to_owned()
    } else {
        format!("{} jobs", count(n))
    }
}

/// What a cancel or delete also does to the workflow steps that need the jobs it touches.
fn dependents_words(n: u64) -> String {
    match n {
        0 => String::new(),
        1 => " It also cancels 1 waiting workflow step that needs one of them to complete \
              (and the steps that wait for it)."
            .to_owned(),
        n => format!(
            " It also cancels {} waiting workflow steps that need one of them to complete \
             (and the steps that wait for those).",
            count(n)
        ),
    }
}

/// The list the request was made from.
fn back_href(req: &BulkRequest) -> String {
    list_href(
        req.filter.queue.as_deref(),
        req.filter.state,
        req.filter.kind.as_deref(),
        None,
    )
}

/// `GET /bulk?action=&queue=&state=&kind=&older_than=`: how many jobs the action would change
/// now, and the form that does it.
pub(crate) async fn confirm(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Query(form): Query<BulkForm>,
) -> Response {
    if app.config.read_only {
        return message_page(
            &app,
            &csrf,
            StatusCode::FORBIDDEN,
            "The dashboard is read-only (started with --read-only): it changes no jobs.".to_owned(),
        );
    }
    let req = match request(&form) {
        Ok(req) => req,
        Err(e) => return error_page(&app, &csrf, &e),
    };
    let matching = match app.queue.count_matching(req.action, &req.filter).await {
        Ok(n) => n,
        Err(e) => return error_page(&app, &csrf, &e),
    };
    let dependents = if matching == 0 {
        0
    } else {
        match app.queue.count_dependents(req.action, &req.filter).await {
            Ok(n) => n,
            Err(e) => return error_page(&app, &csrf, &e),
        }
    };
    let verb = verb(req.action);
    let action = req.action.as_str();
    let text = if matching == 0 {
        format!(
            "No job matches: there is nothing to {action} among {}.",
            req.scope
        )
    } else {
        format!(
            "This will {action} {}: {}.{}",
            jobs(matching),
            req.scope,
            dependents_words(dependents)
        )
    };
    let page = BulkPage {
        layout: Layout::new(&app, format!("{verb} matching jobs"), &csrf),
        text,
        matching,
        button: format!("{verb} {}", jobs(matching)),
        danger: req.action != BulkAction::Retry,
        undoable: req.action != BulkAction::Delete,
        action: action.to_owned(),
        queue: req.filter.queue.clone().unwrap_or_default(),
        state: req.filter.state.map(|s| s.as_str()).unwrap_or_default(),
        kind: req.filter.kind.clone().unwrap_or_default(),
        older_than: req.age.clone().unwrap_or_default(),
        back_href: back_href(&req),
        back_label: heading(
            req.filter.queue.as_deref(),
            req.filter.state,
            req.filter.kind.as_deref(),
        ),
    };
    html(StatusCode::OK, &page)
}

/// `POST /actions/bulk`: runs the action on every job the filter matches now, and shows the
/// list again with what changed.
pub(crate) async fn run(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Posted(form): Posted<BulkForm>,
) -> Response {
    let req = match request(&form) {
        Ok(req) => req,
        Err(e) => return error_page(&app, &csrf, &e),
    };
    let (status, notice) = match app.queue.bulk(req.action, &req.filter).await {
        Ok(outcome) => {
            app.forget_chart().await;
            tracing::info!(
                target: LOG_TARGET,
                action = %req.action,
                queue = req.filter.queue.as_deref().unwrap_or("*"),
                state = req.filter.state.map_or("*", |s| s.as_str()),
                kind = req.filter.kind.as_deref().unwrap_or("*"),
                older_than = req.age.as_deref().unwrap_or("-"),
                changed = outcome.changed,
                skipped = outcome.skipped,
                "dashboard: bulk action"
            );
            let mut text = format!(
                "{} {} of {}; skipped {}",
                done(req.action),
                count(outcome.changed),
                req.scope,
                count(outcome.skipped),
            );
            if outcome.skipped > 0 {
                text.push_str(&format!(" ({})", skipped_reason(req.action)));
            }
            text.push('.');
            (StatusCode::OK, Notice::ok(text))
        }
        Err(e) => {
            tracing::info!(target: LOG_TARGET, action = %req.action, error = %e, "dashboard: bulk action failed");
            (
                error_status(&e),
                Notice::error(format!(
                    "The {} stopped: {} (jobs of the batches before the error were changed).",
                    req.action,
                    error_text(&e)
                )),
            )
        }
    };
    let q = JobsQuery::new(
        req.filter.queue.as_deref(),
        req.filter.state,
        req.filter.kind.as_deref(),
    );
    match jobs_page(&app, &csrf, &q, Some(notice)).await {
        Ok(page) => html(status, &page),
        Err(e) => error_page(&app, &csrf, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn form(action: &str, state: &str, older_than: &str) -> BulkForm {
        BulkForm {
            action: action.into(),
            queue: Some(" emails ".into()),
            state: Some(state.into()),
            kind: Some(String::new()),
            older_than: Some(older_than.into()),
            ..BulkForm::default()
        }
    }

    #[test]
    fn forms_become_checked_requests() {
        let req = request(&form("cancel", "", "")).unwrap();
        assert_eq!(req.action, BulkAction::Cancel);
        assert_eq!(req.filter.queue.as_deref(), Some("emails"));
        assert_eq!((req.filter.state, req.filter.kind.clone()), (None, None));
        assert_eq!(req.filter.older_than, None);
        assert_eq!(
            req.scope,
            "the waiting, pending and running jobs of queue emails"
        );
        let req = request(&form("delete", "dead", " 7d ")).unwrap();
        assert_eq!(req.filter.state, Some(JobState::Dead));
        assert_eq!(req.filter.older_than, Some(Duration::from_secs(7 * 86_400)));
        assert_eq!(
            req.scope,
            "the dead jobs of queue emails, created more than 7d ago"
        );
        assert_eq!(
            request(&form("retry", "all", "")).unwrap().filter.state,
            None
        );
    }

    #[test]
    fn bad_forms_name_the_field() {
        let field = |f: BulkForm| match request(&f).unwrap_err() {
            Error::InvalidInput { field, .. } => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(form("purge", "", "")), "action");
        assert_eq!(field(form("", "", "")), "action");
        assert_eq!(field(form("cancel", "completed", "")), "state");
        assert_eq!(field(form("delete", "running", "")), "state");
        assert_eq!(field(form("delete", "lost", "")), "state");
        assert_eq!(field(form("delete", "", "soon")), "older_than");
        let mut bad_queue = form("cancel", "", "");
        bad_queue.queue = Some("bad queue".into());
        assert_eq!(field(bad_queue), "queue");
    }

    #[test]
    fn each_list_offers_the_actions_that_apply() {
        use BulkAction::*;
        assert_eq!(actions_for(None), [Cancel, Retry, Delete]);
        assert_eq!(actions_for(Some(JobState::Waiting)), [Cancel, Delete]);
        assert_eq!(actions_for(Some(JobState::Pending)), [Cancel, Delete]);
        assert_eq!(actions_for(Some(JobState::Running)), [Cancel]);
        assert_eq!(actions_for(Some(JobState::Completed)), [Delete]);
        assert_eq!(actions_for(Some(JobState::Dead)), [Retry, Delete]);
        assert_eq!(actions_for(Some(JobState::Cancelled)), [Retry, Delete]);
    }
}
