//! `workflows` and `workflow`: the workflows stored in the database (jobs pushed together, some
//! of which wait for others), newest first, and one workflow's jobs with what each waits for.
//! Also the words `get` and the dashboard use for a job's dependencies.

use std::collections::HashMap;

use clap::Args;
use queue_core::{
    DepPolicy, Dependency, Error, Job, JobId, JobState, WorkflowId, WorkflowInfo,
    WorkflowListRequest, WorkflowSummary,
};

use crate::admin::{job_json, Target, TIME_FORMAT};
use crate::failure::CliError;
use crate::table;

/// `workflows`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    target: Target,
    /// Most workflows to show (1..=1000).
    #[arg(long, default_value_t = 20, allow_negative_numbers = true)]
    limit: i64,
    /// Only workflows older than this one: the next page after a page that ended with this id.
    #[arg(long, value_name = "ID")]
    before: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// `workflow`.
#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    #[command(flatten)]
    target: Target,
    /// The workflow's id (a UUID, as `queue workflows` and `queue get` print it).
    id: String,
    /// Print JSON (each job as `list --json` prints it, with its step and dependencies)
    /// instead of text.
    #[arg(long)]
    json: bool,
}

/// What a step needs of a dependency, in words: `completed` or `any outcome`.
pub(crate) fn policy_words(policy: DepPolicy) -> &'static str {
    match policy {
        DepPolicy::Completed => "completed",
        DepPolicy::AnyOutcome => "any outcome",
    }
}

/// How the dependency that cancelled a job ended: `dead`, `cancelled`, or `dead or cancelled`
/// when that can no longer be read (it was deleted, or has changed since).
pub(crate) fn ended_words(dep: Option<&Dependency>) -> &'static str {
    ended_state_words(dep.and_then(|d| d.state))
}

/// [`ended_words`] of a dependency in `state` (`None`: deleted).
pub(crate) fn ended_state_words(state: Option<JobState>) -> &'static str {
    match state {
        Some(JobState::Dead) => "dead",
        Some(JobState::Cancelled) => "cancelled",
        _ => "dead or cancelled",
    }
}

/// Why `job` was cancelled by its dependency `blocked_by`, as `get` says it: `cancelled because
/// its dependency fetch (ID) ended dead`.
pub(crate) fn blocked_words(job: &Job, blocked_by: JobId) -> String {
    let dep = job.depends_on.iter().find(|d| d.id == blocked_by);
    let name = match dep {
        Some(d) => format!("{} ({blocked_by})", table::clip(&d.step, STEP_SHOWN)),
        None => blocked_by.to_string(),
    };
    format!(
        "cancelled because its dependency {name} ended {}",
        ended_words(dep)
    )
}

/// `open` (a batch that takes more jobs until it is sealed), `finished` (every job is), or
/// `active`.
pub(crate) fn status_words(open: bool, finished: bool) -> &'static str {
    if open {
        "open"
    } else if finished {
        "finished"
    } else {
        "active"
    }
}

/// The count of each state, in lifecycle order, zero where `counts` has none.
pub(crate) fn every_count(counts: &[(JobState, u64)]) -> [(JobState, u64); 6] {
    JobState::ALL.map(|s| {
        let n = counts.iter().find(|(c, _)| *c == s).map_or(0, |(_, n)| *n);
        (s, n)
    })
}

/// `2 waiting, 1 dead`: the states that have jobs.
pub(crate) fn counts_words(counts: &[(JobState, u64)]) -> String {
    let words: Vec<String> = counts
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| format!("{n} {s}"))
        .collect();
    if words.is_empty() {
        "none".to_owned()
    } else {
        words.join(", ")
    }
}

fn counts_json(counts: &[(JobState, u64)]) -> serde_json::Value {
    every_count(counts)
        .iter()
        .map(|(s, n)| (s.as_str().to_owned(), serde_json::Value::from(*n)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// The step names of a workflow's jobs, by job id.
pub(crate) fn steps_of(info: &WorkflowInfo) -> HashMap<JobId, &str> {
    info.jobs
        .iter()
        .map(|j| (j.job.id, j.step.as_str()))
        .collect()
}

/// The most dependencies [`waits_for_words`] names (a batch's callback waits for every member).
const DEPS_NAMED: usize = 4;

/// What a step waits for, in words: `resize (any outcome), cleanup`; `-` for nothing; past
/// [`DEPS_NAMED`] dependencies, `and 996 more`. A dependency that is no longer in the workflow
/// (deleted) shows as its id.
pub(crate) fn waits_for_words(
    depends_on: &[(JobId, DepPolicy)],
    steps: &HashMap<JobId, &str>,
) -> String {
    if depends_on.is_empty() {
        return "-".to_owned();
    }
    let mut words: Vec<String> = depends_on
        .iter()
        .take(DEPS_NAMED)
        .map(|(id, policy)| {
            let name = steps
                .get(id)
                .map_or_else(|| id.to_string(), |s| table::clip(s, STEP_SHOWN));
            match policy {
                DepPolicy::Completed => name,
                DepPolicy::AnyOutcome => format!("{name} (any outcome)"),
            }
        })
        .collect();
    if depends_on.len() > DEPS_NAMED {
        words.push(format!("and {} more", depends_on.len() - DEPS_NAMED));
    }
    words.join(", ")
}

/// The most characters of a step name a table shows (a batch member's name is its job id).
pub(crate) const STEP_SHOWN: usize = 40;

fn list_limit(limit: i64) -> Result<usize, Error> {
    usize::try_from(limit)
        .ok()
        .filter(|n| (1..=1000).contains(n))
        .ok_or_else(|| Error::invalid("limit", "must be between 1 and 1000"))
}

pub(crate) async fn list(args: ListArgs) -> Result<(), CliError> {
    let req = WorkflowListRequest {
        limit: list_limit(args.limit)?,
        before: args
            .before
            .as_deref()
            .map(|id| {
                id.trim()
                    .parse::<WorkflowId>()
                    .map_err(|_| Error::invalid("before", "must be a workflow id (a UUID)"))
            })
            .transpose()?,
    };
    let queue = args.target.connect().await?;
    let found = queue.workflows(req).await?;
    if args.json {
        let rows: Vec<_> = found.iter().map(summary_json).collect();
        println!("{}", serde_json::Value::Array(rows));
    } else if found.is_empty() {
        println!("no workflows");
    } else {
        print!("{}", summary_table(&found));
    }
    Ok(())
}

/// The `workflows` table: one line per workflow, with its jobs per state.
pub(crate) fn summary_table(found: &[WorkflowSummary]) -> String {
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|w| {
            let mut row = vec![
                w.id.to_string(),
                w.name
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), |n| table::clip(n, 32)),
                w.created_at.format(TIME_FORMAT).to_string(),
                status_words(w.open, w.is_finished()).to_owned(),
                w.total().to_string(),
            ];
            row.extend(every_count(&w.counts).iter().map(|(_, n)| n.to_string()));
            row
        })
        .collect();
    let header: Vec<&str> = ["id", "name", "created_at", "status", "jobs"]
        .into_iter()
        .chain(JobState::ALL.iter().map(JobState::as_str))
        .collect();
    table::render(&header, &rows)
}

fn summary_json(w: &WorkflowSummary) -> serde_json::Value {
    serde_json::json!({
        "id": w.id,
        "name": w.name,
        "open": w.open,
        "finished": w.is_finished(),
        "created_at": w.created_at,
        "jobs": w.total(),
        "counts": counts_json(&w.counts),
    })
}

pub(crate) async fn show(args: ShowArgs) -> Result<(), CliError> {
    let id: WorkflowId = args.id.trim().parse()?;
    let queue = args.target.connect().await?;
    let Some(info) = queue.workflow(id).await? else {
        return Err(Error::UnknownWorkflow { workflow: id }.into());
    };
    if args.json {
        println!("{}", workflow_json(&info));
    } else {
        print!("{}", workflow_text(&info));
    }
    Ok(())
}

/// One workflow as text: its fields, then a line per job in push order.
pub(crate) fn workflow_text(info: &WorkflowInfo) -> String {
    use std::fmt::Write as _;
    let steps = steps_of(info);
    let mut out = String::new();
    let mut fields = vec![
        ("workflow", info.id.to_string()),
        ("name", info.name.clone().unwrap_or_else(|| "-".to_owned())),
        (
            "status",
            status_words(info.open, info.is_finished()).to_owned(),
        ),
        (
            "created_at",
            info.created_at.format(TIME_FORMAT).to_string(),
        ),
        (
            "jobs",
            format!("{}: {}", info.jobs.len(), counts_words(&info.counts())),
        ),
    ];
    if let Some(callback) = info.callback {
        fields.push(("callback", callback.to_string()));
    }
    for (name, value) in fields {
        let _ = writeln!(out, "{name:<17}{value}");
    }
    if info.open {
        let _ = writeln!(
            out,
            "(an open batch: it takes more jobs until it is sealed; its callback waits until then)"
        );
    }
    let rows: Vec<Vec<String>> = info
        .jobs
        .iter()
        .map(|j| {
            vec![
                table::clip(&j.step, STEP_SHOWN),
                j.job.id.to_string(),
                j.job.state.to_string(),
                table::clip(&j.job.queue, 24),
                j.job
                    .kind
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), |k| table::clip(k, 24)),
                waits_for_words(&j.depends_on, &steps),
                j.job.blocked_by.map_or_else(String::new, |b| {
                    steps
                        .get(&b)
                        .map_or_else(|| b.to_string(), |s| table::clip(s, STEP_SHOWN))
                }),
            ]
        })
        .collect();
    out.push_str(&table::render(
        &[
            "step",
            "id",
            "state",
            "queue",
            "kind",
            "waits_for",
            "blocked_by",
        ],
        &rows,
    ));
    out
}

fn workflow_json(info: &WorkflowInfo) -> serde_json::Value {
    let steps = steps_of(info);
    let jobs: Vec<serde_json::Value> = info
        .jobs
        .iter()
        .map(|j| {
            let mut value = job_json(&j.job, false);
            value["step"] = j.step.clone().into();
            value["depends_on"] = j
                .depends_on
                .iter()
                .map(|(id, policy)| {
                    serde_json::json!({
                        "id": id,
                        "step": steps.get(id),
                        "policy": policy,
                    })
                })
                .collect();
            value
        })
        .collect();
    serde_json::json!({
        "id": info.id,
        "name": info.name,
        "open": info.open,
        "finished": info.is_finished(),
        "callback": info.callback,
        "created_at": info.created_at,
        "counts": counts_json(&info.counts()),
        "jobs": jobs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> JobId {
        format!("0190f0e4-1c2b-7d3e-8f00-1234567890{n:02x}")
            .parse()
            .unwrap()
    }

    #[test]
    fn what_a_step_waits_for_reads_well() {
        let steps: HashMap<JobId, &str> = [(id(1), "fetch"), (id(2), "resize")].into();
        assert_eq!(waits_for_words(&[], &steps), "-");
        assert_eq!(
            waits_for_words(
                &[
                    (id(1), DepPolicy::AnyOutcome),
                    (id(2), DepPolicy::Completed)
                ],
                &steps
            ),
            "fetch (any outcome), resize"
        );
        // A dependency deleted from the workflow shows as its id.
        assert_eq!(
            waits_for_words(&[(id(3), DepPolicy::Completed)], &steps),
            id(3).to_string()
        );
        let many: Vec<(JobId, DepPolicy)> =
            (0..10).map(|n| (id(n), DepPolicy::AnyOutcome)).collect();
        let words = waits_for_words(&many, &steps);
        assert!(words.ends_with(", and 6 more"), "{words}");
        assert!(
            words.starts_with(&format!("{} (any outcome), fetch (any outcome)", id(0))),
            "{words}"
        );
    }

    #[test]
    fn counts_and_status_read_well() {
        let counts = [(JobState::Waiting, 2), (JobState::Dead, 1)];
        assert_eq!(counts_words(&counts), "2 waiting, 1 dead");
        assert_eq!(counts_words(&[]), "none");
        let all = every_count(&counts);
        assert_eq!(all[0], (JobState::Waiting, 2));
        assert_eq!(all[1], (JobState::Pending, 0));
        assert_eq!(all[4], (JobState::Dead, 1));
        let json = counts_json(&counts);
        assert_eq!(json["waiting"], 2);
        assert_eq!(json["cancelled"], 0);
        assert_eq!(status_words(true, true), "open");
        assert_eq!(status_words(false, true), "finished");
        assert_eq!(status_words(false, false), "active");
        assert_eq!(policy_words(DepPolicy::AnyOutcome), "any outcome");
        assert!(list_limit(0).is_err() && list_limit(1001).is_err());
        assert_eq!(list_limit(1000).unwrap(), 1000);
    }
}
