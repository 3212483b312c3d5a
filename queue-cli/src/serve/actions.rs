//! The actions (POST): retry, cancel, reschedule, bulk retry, prune, the queue controls
//! (pause, resume, concurrency limit, rate limit, key limit and fair shares), login, logout
//! (the bulk actions by filter are in [`super::bulk`]). Each needs the form's CSRF token (see
//! [`Posted`]), is refused in read-only mode by the guard, and answers with a page that says
//! what it changed or why it failed.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use queue_core::{validate, Error, JobId, JobState, PruneRequest, Reschedule, Schedule};
use serde::Deserialize;

use super::app::Dashboard;
use super::jobs;
use super::pages::{job_page, jobs_page, overview_page, JobsQuery};
use super::security::{cookie, local_path, same_secret, set_cookie, Csrf, CsrfForm, Posted};
use super::views::{
    self, count, error_page, error_status, error_text, html, jobs_href, Layout, Link, Notice,
    ResultPage,
};
use crate::duration;
use crate::LOG_TARGET;

/// A form that carries nothing but its CSRF token.
#[derive(Debug, Deserialize)]
pub(crate) struct Confirm {
    #[serde(default)]
    csrf: String,
}

/// The forms below carry their CSRF token in the field `csrf`.
macro_rules! csrf_field {
    ($($form:ty),*) => {
        $(impl CsrfForm for $form {
            fn csrf(&self) -> &str {
                &self.csrf
            }
        })*
    };
}

csrf_field!(
    Confirm,
    RescheduleForm,
    QueueForm,
    ControlForm,
    PruneForm,
    LoginForm
);

/// Shows the job page after an action on job `id`, with what happened; a refusal is told
/// after `refused` (e.g. `Nothing was changed: `).
async fn after_job_action(
    app: &Dashboard,
    csrf: &str,
    id: JobId,
    refused: &str,
    outcome: Result<String, Error>,
) -> Response {
    let (status, notice) = match outcome {
        Ok(text) => {
            app.forget_chart().await;
            (StatusCode::OK, Notice::ok(text))
        }
        Err(e) => (
            error_status(&e),
            Notice::error(format!("{refused}{}", error_text(&e))),
        ),
    };
    match job_page(app, csrf, id, Some(notice.clone())).await {
        Ok(Some(page)) => html(status, &page),
        Ok(None) => views::message_page(app, csrf, status, notice.text),
        Err(e) => error_page(app, csrf, &e),
    }
}

/// `POST /jobs/{id}/retry`: a dead or cancelled job back to pending.
pub(crate) async fn retry(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Path(id): Path<String>,
    Posted(_): Posted<Confirm>,
) -> Response {
    let id = match id.parse::<JobId>() {
        Ok(id) => id,
        Err(e) => return error_page(&app, &csrf, &e),
    };
    let outcome = app.queue.retry(id).await.map(|()| {
        tracing::info!(target: LOG_TARGET, job = %id, "dashboard: retried");
        "Retried: the job is pending again, due now, with its attempts reset.".to_owned()
    });
    after_job_action(
        &app,
        &csrf,
        id,
        "",
        outcome.map_err(|e| in_words("retry", e)),
    )
    .await
}

/// `POST /jobs/{id}/cancel`: a waiting, pending or running job to cancelled.
pub(crate) async fn cancel(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Path(id): Path<String>,
    Posted(_): Posted<Confirm>,
) -> Response {
    let id = match id.parse::<JobId>() {
        Ok(id) => id,
        Err(e) => return error_page(&app, &csrf, &e),
    };
    let outcome = app.queue.cancel(id).await.map(|()| {
        tracing::info!(target: LOG_TARGET, job = %id, "dashboard: cancelled");
        "Cancelled: the job will not run again; a worker still running it learns so at its next \
         step."
            .to_owned()
    });
    after_job_action(
        &app,
        &csrf,
        id,
        "",
        outcome.map_err(|e| in_words("cancel", e)),
    )
    .await
}

/// The form of a reschedule: when the job runs (`run`: `keep` its run time, `now`, or after
/// `delay`, e.g. `30m`) and its new `priority` (empty: kept). Without `run`, a `delay` given
/// means after it.
#[derive(Debug, Deserialize)]
pub(crate) struct RescheduleForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    run: String,
    #[serde(default)]
    delay: String,
    #[serde(default)]
    priority: String,
}

fn reschedule_request(form: &RescheduleForm) -> Result<Reschedule, Error> {
    let delay = form.delay.trim();
    let unused_delay = |instead: &str| {
        Error::invalid(
            "delay",
            format!(
                "is used only when the job runs after a delay (run=delay); leave it empty \
                 {instead}"
            ),
        )
    };
    let mut change = Reschedule::new();
    match (form.run.trim(), delay.is_empty()) {
        ("keep", true) | ("", true) => {}
        ("keep", false) => return Err(unused_delay("to keep the run time")),
        ("now", true) => change = change.now(),
        ("now", false) => return Err(unused_delay("to run the job now")),
        ("delay", _) | ("", false) => change = change.delay(duration::parse("delay", delay)?),
        _ => {
            return Err(Error::invalid(
                "run",
                "must be keep (its run time), now, or delay (after the delay given)",
            ))
        }
    }
    let priority = form.priority.trim();
    if !priority.is_empty() {
        let p = priority.parse::<i32>().map_err(|_| {
            Error::invalid(
                "priority",
                format!(
                    "must be a whole number from {} to {} (got {:?})",
                    i32::MIN,
                    i32::MAX,
                    crate::table::clip(priority, 24)
                ),
            )
        })?;
        change = change.priority(p);
    }
    change.validate()?;
    Ok(change)
}

/// What a reschedule changed, in words; `delay` is the delay as it was typed.
fn rescheduled_words(change: &Reschedule, delay: &str) -> String {
    let when = match change.run_at {
        None => None,
        Some(Schedule::Now) => Some("due now".to_owned()),
        Some(Schedule::After(d)) if d.is_zero() => Some("due now".to_owned()),
        Some(Schedule::After(_)) => Some(format!("due in {delay}")),
        Some(Schedule::At(t)) => Some(format!("due at {} UTC", views::time(t))),
    };
    match (when, change.priority) {
        (Some(when), Some(p)) => format!("Rescheduled: the job is {when}, with priority {p}."),
        (Some(when), None) => {
            format!("Rescheduled: the job is {when}; its priority is unchanged.")
        }
        (None, Some(p)) => {
            format!("Rescheduled: the job's priority is now {p}; its run time is unchanged.")
        }
        (None, None) => "Nothing was changed.".to_owned(),
    }
}

/// `POST /jobs/{id}/reschedule`: a pending job's run time (now, or after a delay) and/or its
/// priority. A job that is no longer pending is left as it is, and the page says so.
pub(crate) async fn reschedule(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Path(id): Path<String>,
    Posted(form): Posted<RescheduleForm>,
) -> Response {
    let id = match id.parse::<JobId>() {
        Ok(id) => id,
        Err(e) => return error_page(&app, &csrf, &e),
    };
    let outcome = match reschedule_request(&form) {
        Ok(change) => app.queue.reschedule(id, change).await.map(|()| {
            tracing::info!(
                target: LOG_TARGET,
                job = %id,
                run = ?change.run_at,
                priority = ?change.priority,
                "dashboard: rescheduled"
            );
            rescheduled_words(&change, form.delay.trim())
        }),
        Err(e) => Err(e),
    };
    after_job_action(
        &app,
        &csrf,
        id,
        "Nothing was changed: ",
        outcome.map_err(|e| in_words("reschedule", e)),
    )
    .await
}

/// Logs a failed action; the error goes back to the page as it is.
fn in_words(action: &str, e: Error) -> Error {
    tracing::info!(target: LOG_TARGET, action, error = %e, "dashboard: action refused");
    e
}

/// The form of a bulk retry.
#[derive(Debug, Deserialize)]
pub(crate) struct QueueForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    queue: String,
}

/// `POST /actions/retry-dead`: every dead job of a queue back to pending, in chunks.
pub(crate) async fn retry_dead(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Posted(form): Posted<QueueForm>,
) -> Response {
    let name = form.queue.trim().to_owned();
    if let Err(e) = validate::queue_name(&name) {
        return error_page(&app, &csrf, &e);
    }
    let run = jobs::retry_dead(
        app.queue.as_ref(),
        &name,
        app.config.bulk_chunk,
        app.config.bulk_limit,
    )
    .await;
    app.forget_chart().await;
    tracing::info!(
        target: LOG_TARGET,
        queue = %name,
        retried = run.retried,
        refused = run.refused.len(),
        "dashboard: retried dead jobs"
    );
    let mut text = format!(
        "Retried {} dead job{} of queue {name}: pending again, due now.",
        count(run.retried),
        if run.retried == 1 { "" } else { "s" }
    );
    if !run.refused.is_empty() {
        let _ = write!(
            text,
            " {} could not be retried:",
            count(run.refused.len() as u64)
        );
        for (id, e) in run.refused.iter().take(5) {
            let _ = write!(text, " {id}: {e};");
        }
        if run.refused.len() > 5 {
            text.push_str(" ...");
        }
    }
    if run.stopped_at_limit {
        let _ = write!(
            text,
            " This run stopped after {} jobs; press the button again for the rest.",
            count(app.config.bulk_limit as u64)
        );
    }
    let (status, notice) = match &run.error {
        None if run.refused.is_empty() => (StatusCode::OK, Notice::ok(text)),
        None => (StatusCode::OK, Notice::error(text)),
        Some(e) => (
            error_status(e),
            Notice::error(format!("{text} Then it stopped: {}", error_text(e))),
        ),
    };
    let q = JobsQuery::for_queue(&name, Some(JobState::Dead));
    match jobs_page(&app, &csrf, &q, Some(notice)).await {
        Ok(page) => html(status, &page),
        Err(e) => error_page(&app, &csrf, &e),
    }
}

/// The form of a queue control: pause, resume, or set (`limit`, `rate`, `key_limit`) or remove
/// (`clear`) the concurrency, rate or key limit, or turn fair shares on or off (`fair`). `back`
/// is the page it was sent from: `queue` (the queue's job list) or the overview.
#[derive(Debug, Deserialize)]
pub(crate) struct ControlForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    queue: String,
    #[serde(default)]
    limit: String,
    #[serde(default)]
    rate: String,
    /// The key limit (a number, or `none`); absent: left as it is.
    key_limit: Option<String>,
    /// Fair shares, `on` or `off`; absent: left as they are.
    fair: Option<String>,
    /// The key rate limit (`N/PERIOD`, or `none`); absent: left as it is.
    key_rate: Option<String>,
    /// Removes the key rate limit.
    clear_key_rate: Option<String>,
    clear: Option<String>,
    #[serde(default)]
    back: String,
}

/// Which control a form asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Control {
    Pause,
    Resume,
    Limit,
    Rate,
    Keys,
}

/// Applies `control` as `form` asks and shows the page the form came from, with what is now
/// true or why nothing changed.
async fn control(app: &Dashboard, csrf: &str, control: Control, form: ControlForm) -> Response {
    let name = form.queue.trim().to_owned();
    let outcome = match control {
        Control::Pause => app.queue.pause(&name).await.map(|()| {
            format!(
                "Paused queue {name}: no job of it is given out until it is resumed; jobs \
                 already running finish."
            )
        }),
        Control::Resume => app
            .queue
            .resume(&name)
            .await
            .map(|()| format!("Resumed queue {name}: its jobs are given out again.")),
        Control::Limit => {
            let limit = if form.clear.is_some() {
                Ok(None)
            } else {
                crate::admin::parse_limit(&form.limit)
            };
            match limit {
                Ok(limit) => app
                    .queue
                    .set_concurrency_limit(&name, limit)
                    .await
                    .map(|()| format!("Queue {name}: {}.", crate::admin::limit_words(limit))),
                Err(e) => Err(e),
            }
        }
        Control::Rate => {
            let rate = if form.clear.is_some() {
                Ok(None)
            } else {
                crate::admin::parse_rate(&form.rate)
            };
            match rate {
                Ok(rate) => app
                    .queue
                    .set_rate_limit(&name, rate)
                    .await
                    .map(|()| format!("Queue {name}: {}.", crate::admin::rate_words(rate))),
                Err(e) => Err(e),
            }
        }
        Control::Keys => set_keys(app, &name, &form).await,
    };
    let (status, notice) = match outcome {
        Ok(text) => {
            tracing::info!(
                target: LOG_TARGET,
                queue = %name,
                action = ?control,
                limit = %form.limit.trim(),
                rate = %form.rate.trim(),
                key_limit = %form.key_limit.as_deref().unwrap_or_default().trim(),
                fair = %form.fair.as_deref().unwrap_or_default().trim(),
                key_rate = %form.key_rate.as_deref().unwrap_or_default().trim(),
                "dashboard: queue control changed"
            );
            (StatusCode::OK, Notice::ok(text))
        }
        Err(e) => {
            let e = in_words("queue control", e);
            (
                error_status(&e),
                Notice::error(format!("Nothing was changed: {}", error_text(&e))),
            )
        }
    };
    let page = if form.back == "queue" && validate::queue_name(&name).is_ok() {
        let q = JobsQuery::for_queue(&name, None);
        jobs_page(app, csrf, &q, Some(notice))
            .await
            .map(|p| html(status, &p))
    } else {
        overview_page(app, csrf, Some(notice))
            .await
            .map(|p| html(status, &p))
    };
    page.unwrap_or_else(|e| error_page(app, csrf, &e))
}

/// `POST /actions/pause`: no job of the queue is given out until it is resumed.
pub(crate) async fn pause(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Posted(form): Posted<ControlForm>,
) -> Response {
    control(&app, &csrf, Control::Pause, form).await
}

/// `POST /actions/resume`: the queue's jobs are given out again.
pub(crate) async fn resume(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Posted(form): Posted<ControlForm>,
) -> Response {
    control(&app, &csrf, Control::Resume, form).await
}

/// `POST /actions/limit`: sets (`limit`) or removes (`clear`, or `limit=none`) the queue's
/// concurrency limit.
pub(crate) async fn limit(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Posted(form): Posted<ControlForm>,
) -> Response {
    control(&app, &csrf, Control::Limit, form).await
}

/// `POST /actions/rate`: sets (`rate`, as `N/PERIOD`) or removes (`clear`, or `rate=none`)
/// the queue's rate limit.
pub(crate) async fn rate(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Posted(form): Posted<ControlForm>,
) -> Response {
    control(&app, &csrf, Control::Rate, form).await
}

/// `POST /actions/keys`: sets (`key_limit`) or removes (`clear`, or `key_limit=none`) the
/// queue's key limit, and turns its fair shares on or off (`fair=on|off`). Either field may be
/// left out; both are read before anything is stored, so bad text in one stores neither.
pub(crate) async fn keys(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Posted(form): Posted<ControlForm>,
) -> Response {
    control(&app, &csrf, Control::Keys, form).await
}

/// Applies the key controls of `form` to queue `name`, and says what is now true.
async fn set_keys(app: &Dashboard, name: &str, form: &ControlForm) -> Result<String, Error> {
    let key_limit = if form.clear.is_some() {
        Some(None)
    } else {
        form.key_limit
            .as_deref()
            .map(|text| {
                // The concurrency limit's reading, with this field's name in its errors.
                crate::admin::parse_limit(text).map_err(|e| match e {
                    Error::InvalidInput { rule, .. } => Error::invalid("key_limit", rule),
                    other => other,
                })
            })
            .transpose()?
    };
    let fair = form
        .fair
        .as_deref()
        .map(|text| crate::admin::on_off(text).map_err(|rule| Error::invalid("fair", rule)))
        .transpose()?;
    let key_rate = if form.clear_key_rate.is_some() {
        Some(None)
    } else {
        form.key_rate
            .as_deref()
            .map(|text| {
                crate::admin::parse_rate(text).map_err(|e| match e {
                    Error::InvalidInput { field, rule } => {
                        Error::invalid(format!("key_{field}"), rule)
                    }
                    other => other,
                })
            })
            .transpose()?
    };
    if key_limit.is_none() && fair.is_none() && key_rate.is_none() {
        return Err(Error::invalid(
            "key_limit",
            "give a key limit (a whole number, or none to remove it), a key rate (N/PERIOD or \
             none) or fair=on|off",
        ));
    }
    let mut said = Vec::new();
    if let Some(limit) = key_limit {
        app.queue.set_key_limit(name, limit).await?;
        said.push(crate::admin::key_limit_words(limit));
    }
    if let Some(rate) = key_rate {
        app.queue.set_key_rate_limit(name, rate).await?;
        said.push(crate::admin::key_rate_words(rate));
    }
    if let Some(on) = fair {
        app.queue.set_fair_shares(name, on).await?;
        said.push(crate::admin::fair_words(on).to_owned());
    }
    Ok(format!("Queue {name}: {}.", said.join("; ")))
}

/// The form of a prune.
#[derive(Debug, Deserialize)]
pub(crate) struct PruneForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    older_than: String,
    #[serde(default)]
    queue: String,
    completed: Option<String>,
    dead: Option<String>,
    cancelled: Option<String>,
}

fn prune_request(form: &PruneForm) -> Result<PruneRequest, Error> {
    let older_than = duration::parse("older_than", &form.older_than)?;
    let mut req = PruneRequest::older_than(older_than);
    req.states = [
        (form.completed.is_some(), JobState::Completed),
        (form.dead.is_some(), JobState::Dead),
        (form.cancelled.is_some(), JobState::Cancelled),
    ]
    .into_iter()
    .filter_map(|(on, s)| on.then_some(s))
    .collect();
    let queue = form.queue.trim();
    req.queue = (!queue.is_empty()).then(|| queue.to_owned());
    req.validate()?;
    Ok(req)
}

/// `POST /actions/prune`: deletes finished jobs older than an age.
pub(crate) async fn prune(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Posted(form): Posted<PruneForm>,
) -> Response {
    let mut links = vec![Link {
        label: "All queues".to_owned(),
        href: "/".to_owned(),
    }];
    let req = prune_request(&form);
    if let Ok(PruneRequest { queue: Some(q), .. }) = &req {
        links.push(Link {
            label: format!("Queue {q}"),
            href: jobs_href(Some(q), None),
        });
    }
    let outcome = match req {
        Ok(req) => app.queue.prune(req.clone()).await.map(|n| (n, req)),
        Err(e) => Err(e),
    };
    let (status, notice) = match outcome {
        Ok((n, req)) => {
            app.forget_chart().await;
            let states: Vec<&str> = req.states.iter().map(JobState::as_str).collect();
            tracing::info!(target: LOG_TARGET, pruned = n, "dashboard: pruned");
            (
                StatusCode::OK,
                Notice::ok(format!(
                    "Pruned {} {} job{} that finished more than {} ago, from {}.",
                    count(n),
                    states.join(", "),
                    if n == 1 { "" } else { "s" },
                    form.older_than.trim(),
                    match &req.queue {
                        Some(q) => format!("queue {q}"),
                        None => "every queue".to_owned(),
                    }
                )),
            )
        }
        Err(e) => (
            error_status(&e),
            Notice::error(format!("Nothing was pruned: {}", error_text(&e))),
        ),
    };
    let page = ResultPage {
        layout: Layout::new(&app, "Prune", &csrf),
        notice,
        links,
    };
    html(status, &page)
}

/// The login form.
#[derive(Debug, Deserialize)]
pub(crate) struct LoginForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    token: String,
    #[serde(default)]
    next: String,
}

/// `POST /login`: checks the token and opens a session.
pub(crate) async fn login(
    State(app): State<Arc<Dashboard>>,
    Extension(Csrf(csrf)): Extension<Csrf>,
    Posted(form): Posted<LoginForm>,
) -> Response {
    let next = local_path(form.next.trim());
    let Some(token) = app.config.auth_token.as_deref() else {
        return Redirect::to(&next).into_response();
    };
    if !same_secret(form.token.trim(), token) {
        tracing::warn!(target: LOG_TARGET, "dashboard: a login with a wrong token");
        // Slows down guessing; the token's length makes guessing hopeless anyway.
        tokio::time::sleep(Duration::from_millis(250)).await;
        return views::login_page(
            &app,
            &csrf,
            &next,
            "The token is wrong.",
            StatusCode::UNAUTHORIZED,
        );
    }
    let session = app.sessions.open();
    let mut response = Redirect::to(&next).into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&app.session_cookie(), &session, Some(12 * 3600)),
    );
    response
}

/// `POST /logout`: ends the session.
pub(crate) async fn logout(
    State(app): State<Arc<Dashboard>>,
    headers: axum::http::HeaderMap,
    Posted(_): Posted<Confirm>,
) -> Response {
    if let Some(id) = cookie(&headers, &app.session_cookie()) {
        app.sessions.close(id);
    }
    let mut response = Redirect::to("/login").into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&app.session_cookie(), "", Some(0)),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(older_than: &str, states: [bool; 3], queue: &str) -> PruneForm {
        let on = |b: bool| b.then(|| "on".to_owned());
        PruneForm {
            csrf: String::new(),
            older_than: older_than.into(),
            queue: queue.into(),
            completed: on(states[0]),
            dead: on(states[1]),
            cancelled: on(states[2]),
        }
    }

    fn moved(run: &str, delay: &str, priority: &str) -> Result<Reschedule, Error> {
        reschedule_request(&RescheduleForm {
            csrf: String::new(),
            run: run.into(),
            delay: delay.into(),
            priority: priority.into(),
        })
    }

    #[test]
    fn reschedule_forms_become_checked_changes() {
        let now = moved("now", "", "").unwrap();
        assert_eq!(now, Reschedule::new().now());
        let later = moved("delay", " 12h ", " -3 ").unwrap();
        assert_eq!(
            later,
            Reschedule::new()
                .delay(Duration::from_secs(12 * 3600))
                .priority(-3)
        );
        assert_eq!(
            moved("keep", "", "7").unwrap(),
            Reschedule::new().priority(7)
        );
        // A delay alone, as a script might send it, means after it.
        assert_eq!(
            moved("", "30m", "").unwrap(),
            Reschedule::new().delay(Duration::from_secs(1800))
        );
        assert_eq!(
            rescheduled_words(&later, "12h"),
            "Rescheduled: the job is due in 12h, with priority -3."
        );
        assert_eq!(
            rescheduled_words(&now, ""),
            "Rescheduled: the job is due now; its priority is unchanged."
        );
        assert_eq!(
            rescheduled_words(&Reschedule::new().priority(7), ""),
            "Rescheduled: the job's priority is now 7; its run time is unchanged."
        );
    }

    #[test]
    fn bad_reschedule_forms_name_the_field() {
        let field = |r: Result<Reschedule, Error>| match r.unwrap_err() {
            Error::InvalidInput { field, .. } => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(moved("keep", "", "")), "reschedule");
        assert_eq!(field(moved("", "", "")), "reschedule");
        assert_eq!(field(moved("delay", "", "")), "delay");
        assert_eq!(field(moved("delay", "soon", "")), "delay");
        assert_eq!(field(moved("delay", "-5m", "")), "delay");
        assert_eq!(field(moved("delay", "4000d", "")), "delay");
        assert_eq!(field(moved("keep", "5m", "")), "delay");
        assert_eq!(field(moved("now", "5m", "")), "delay");
        assert_eq!(field(moved("later", "", "")), "run");
        assert_eq!(field(moved("now", "", "high")), "priority");
        assert_eq!(field(moved("now", "", "2147483648")), "priority");
    }

    #[test]
    fn prune_forms_become_checked_requests() {
        let req = prune_request(&form("7d", [true, false, true], " emails ")).unwrap();
        assert_eq!(req.older_than, Duration::from_secs(7 * 86_400));
        assert_eq!(req.states, vec![JobState::Completed, JobState::Cancelled]);
        assert_eq!(req.queue.as_deref(), Some("emails"));
        let all = prune_request(&form("1h", [true, true, true], "")).unwrap();
        assert_eq!(all.queue, None);
    }

    #[test]
    fn bad_prune_forms_name_the_field() {
        let field = |f: PruneForm| match prune_request(&f).unwrap_err() {
            Error::InvalidInput { field, .. } => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(form("", [true, true, true], "")), "older_than");
        assert_eq!(field(form("soon", [true, true, true], "")), "older_than");
        assert_eq!(field(form("1d", [false, false, false], "")), "states");
        assert_eq!(field(form("1d", [true, false, false], "bad name")), "queue");
    }
}
