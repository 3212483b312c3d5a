//! Work on many jobs at once: `bulk` (cancel, retry or delete every job a filter matches,
//! after a confirmation) and `retention` (one round of the retention task that workers run,
//! now).

use std::io::{BufRead, IsTerminal as _, Write};
use std::time::Duration;

use clap::Args;
use queue_core::{BulkAction, BulkOutcome, Error, JobFilter, JobState, Retention, RetentionReport};

use crate::admin::Target;
use crate::duration;
use crate::failure::CliError;

/// `bulk`.
#[derive(Debug, Args)]
pub(crate) struct BulkArgs {
    #[command(flatten)]
    target: Target,
    /// What to do with every matching job: cancel (waiting, pending and running jobs), retry
    /// (dead and cancelled jobs) or delete (waiting, pending and finished jobs; cancel running
    /// jobs first).
    #[arg(value_name = "ACTION", value_parser = action_arg)]
    action: BulkAction,
    /// Only this queue.
    #[arg(long)]
    queue: Option<String>,
    /// Only jobs in this state (one the action applies to).
    #[arg(long)]
    state: Option<String>,
    /// Only jobs of this kind.
    #[arg(long)]
    kind: Option<String>,
    /// Only jobs created longer ago than this, e.g. 7d, 12h.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    older_than: Option<String>,
    /// Do it without asking. Without a terminal to ask on, the command changes nothing unless
    /// this is given.
    #[arg(long, short = 'y')]
    yes: bool,
}

/// The clap parser of `bulk`'s ACTION: the library's rule, in its words.
fn action_arg(text: &str) -> Result<BulkAction, String> {
    text.trim().parse().map_err(|e| match e {
        Error::InvalidInput { field, rule } => format!("{field} {rule}"),
        other => other.to_string(),
    })
}

/// `the pending and running jobs of queue emails of kind send, created more than 7d ago`: what
/// a bulk operation applies to, in words; `age` is the age as it was typed.
pub(crate) fn scope_words(states: &[JobState], filter: &JobFilter, age: Option<&str>) -> String {
    let names: Vec<&str> = states.iter().map(JobState::as_str).collect();
    let states = match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    };
    let mut words = format!("the {states} jobs");
    match &filter.queue {
        Some(q) => words.push_str(&format!(" of queue {q}")),
        None => words.push_str(" of every queue"),
    }
    if let Some(k) = &filter.kind {
        words.push_str(&format!(" of kind {k}"));
    }
    if let Some(age) = age {
        words.push_str(&format!(", created more than {age} ago"));
    }
    words
}

/// `1 job`, `12 jobs`.
fn jobs(n: u64) -> String {
    if n == 1 {
        "1 job".to_owned()
    } else {
        format!("{n} jobs")
    }
}

/// `this job`, `these 12 jobs`.
fn these(n: u64) -> String {
    if n == 1 {
        "this job".to_owned()
    } else {
        format!("these {n} jobs")
    }
}

/// `cancelled`, `retried`, `deleted`.
fn done_word(action: BulkAction) -> &'static str {
    match action {
        BulkAction::Cancel => "cancelled",
        BulkAction::Retry => "retried",
        BulkAction::Delete => "deleted",
    }
}

/// Why matching jobs were skipped, for a message that reports some.
pub(crate) fn skipped_reason(action: BulkAction) -> &'static str {
    match action {
        BulkAction::Retry => {
            "they changed state meanwhile, or a live job holds their dedup or unique key"
        }
        BulkAction::Cancel | BulkAction::Delete => "they changed state meanwhile",
    }
}

/// `cancelled 12 jobs, skipped 0`, with the reason when some were skipped.
fn outcome_line(action: BulkAction, outcome: &BulkOutcome) -> String {
    let mut line = format!(
        "{} {}, skipped {}",
        done_word(action),
        jobs(outcome.changed),
        outcome.skipped
    );
    if outcome.skipped > 0 {
        line.push_str(&format!(" ({})", skipped_reason(action)));
    }
    line
}

/// Reads a yes or no from `input` after writing `question` to `output`; anything but `y` or
/// `yes` (an empty line, the end of the input) is no.
fn confirm(question: &str, input: &mut impl BufRead, output: &mut impl Write) -> bool {
    let _ = write!(output, "{question} [y/N] ");
    let _ = output.flush();
    let mut answer = String::new();
    if input.read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

pub(crate) async fn bulk(args: BulkArgs) -> Result<(), CliError> {
    let action = args.action;
    let age = args.older_than.as_deref().map(str::trim);
    let filter = JobFilter {
        queue: args.queue.clone(),
        state: args
            .state
            .as_deref()
            .map(|s| s.trim().parse::<JobState>())
            .transpose()?,
        kind: args.kind.clone(),
        older_than: age.map(|a| duration::parse("older_than", a)).transpose()?,
    };
    // Every field is checked before the database is touched.
    let states = filter.states_for(action)?;
    let scope = scope_words(&states, &filter, age);
    let queue = args.target.connect().await?;
    let matching = queue.count_matching(action, &filter).await?;
    if matching == 0 {
        println!("no job to {action} among {scope}");
        return Ok(());
    }
    println!("{} to {action}: {scope}", jobs(matching));
    let dependents = queue.count_dependents(action, &filter).await?;
    if dependents > 0 {
        println!(
            "and {dependents} waiting workflow step{} that need{} one of them to complete, \
             cancelled with them",
            if dependents == 1 { "" } else { "s" },
            if dependents == 1 { "s" } else { "" },
        );
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(CliError::usage(format!(
                "refused: standard input is not a terminal, so the command cannot ask; pass \
                 --yes to {action} {} (nothing was changed)",
                these(matching)
            )));
        }
        let question = format!("{action} {}?", these(matching));
        if !confirm(
            &question,
            &mut std::io::stdin().lock(),
            &mut std::io::stderr(),
        ) {
            return Err(CliError::other("not confirmed: nothing was changed"));
        }
    }
    let outcome = queue.bulk(action, &filter).await?;
    println!("{}", outcome_line(action, &outcome));
    Ok(())
}

/// `retention`.
#[derive(Debug, Args)]
pub(crate) struct RetentionArgs {
    #[command(flatten)]
    target: Target,
    /// Delete completed jobs that finished longer ago than this, e.g. 24h; `keep` keeps them.
    #[arg(long, value_name = "DURATION|keep", default_value = "24h")]
    completed: String,
    /// Delete cancelled jobs that finished longer ago than this; `keep` keeps them.
    #[arg(long, value_name = "DURATION|keep", default_value = "24h")]
    cancelled: String,
    /// Delete dead jobs that finished longer ago than this; `keep` keeps them.
    #[arg(long, value_name = "DURATION|keep", default_value = "7d")]
    dead: String,
}

/// The age after which jobs in `state` are deleted, from `text` (`keep`: never).
fn rule(state: JobState, text: &str) -> Result<Option<Duration>, Error> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("keep") {
        return Ok(None);
    }
    duration::parse(state.as_str(), text).map(Some)
}

/// The rules `args` ask for, checked.
fn rules(args: &RetentionArgs) -> Result<Retention, CliError> {
    let mut rules = Retention::default();
    for (state, text) in [
        (JobState::Completed, &args.completed),
        (JobState::Cancelled, &args.cancelled),
        (JobState::Dead, &args.dead),
    ] {
        rules = match rule(state, text)? {
            Some(after) => rules.delete_after(state, after),
            None => rules.keep(state),
        };
    }
    if rules.is_off() {
        return Err(CliError::usage(
            "invalid retention: every state is kept, so there is nothing to delete",
        ));
    }
    rules.validate()?;
    Ok(rules)
}

/// `completed after 24h, cancelled after 24h, dead kept`: the rules as given.
fn rules_words(args: &RetentionArgs) -> String {
    [
        ("completed", &args.completed),
        ("cancelled", &args.cancelled),
        ("dead", &args.dead),
    ]
    .iter()
    .map(|(state, text)| {
        let text = text.trim();
        if text.eq_ignore_ascii_case("keep") {
            format!("{state} kept")
        } else {
            format!("{state} after {text}")
        }
    })
    .collect::<Vec<_>>()
    .join(", ")
}

/// What a round deleted, in one line.
fn report_line(report: &RetentionReport, rules: &str) -> String {
    let mut line = format!(
        "deleted {} ({} completed, {} cancelled, {} dead; {rules})",
        jobs(report.total()),
        report.completed,
        report.cancelled,
        report.dead
    );
    if report.key_rate_counts > 0 {
        line.push_str(&format!(
            "; and {} key rate count(s) of ended windows",
            report.key_rate_counts
        ));
    }
    if report.unfinished {
        line.push_str(
            "; the round stopped at its time limit with jobs left to delete: the next round \
             goes on",
        );
    }
    line
}

pub(crate) async fn retention(args: RetentionArgs) -> Result<(), CliError> {
    let rules = rules(&args)?;
    let queue = args.target.connect().await?;
    match queue.run_retention(&rules).await? {
        Some(report) => println!("{}", report_line(&report, &rules_words(&args))),
        None => println!(
            "nothing was deleted: another process is running a retention round or finished one \
             less than its interval ago (workers run one a minute); try again later"
        ),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_parse_in_the_librarys_words() {
        assert_eq!(action_arg("cancel").unwrap(), BulkAction::Cancel);
        assert_eq!(action_arg(" delete ").unwrap(), BulkAction::Delete);
        assert_eq!(
            action_arg("purge").unwrap_err(),
            "action must be cancel, retry or delete"
        );
    }

    #[test]
    fn scopes_read_well() {
        let all = JobFilter::default();
        assert_eq!(
            scope_words(BulkAction::Cancel.states(), &all, None),
            "the waiting, pending and running jobs of every queue"
        );
        let narrow = JobFilter {
            queue: Some("emails".into()),
            kind: Some("send".into()),
            ..JobFilter::default()
        };
        assert_eq!(
            scope_words(BulkAction::Delete.states(), &narrow, Some("7d")),
            "the waiting, pending, completed, dead and cancelled jobs of queue emails of kind \
             send, created more than 7d ago"
        );
        assert_eq!(
            scope_words(&[JobState::Dead], &all, None),
            "the dead jobs of every queue"
        );
    }

    #[test]
    fn outcomes_say_what_changed_and_why_some_were_skipped() {
        let all = BulkOutcome {
            changed: 12,
            skipped: 0,
        };
        assert_eq!(
            outcome_line(BulkAction::Cancel, &all),
            "cancelled 12 jobs, skipped 0"
        );
        let some = BulkOutcome {
            changed: 1,
            skipped: 2,
        };
        assert_eq!(
            outcome_line(BulkAction::Retry, &some),
            "retried 1 job, skipped 2 (they changed state meanwhile, or a live job holds their \
             dedup or unique key)"
        );
    }

    #[test]
    fn only_yes_confirms() {
        let ask = |input: &str| {
            let mut out = Vec::new();
            let yes = confirm("delete these 3 jobs?", &mut input.as_bytes(), &mut out);
            assert_eq!(out, b"delete these 3 jobs? [y/N] ");
            yes
        };
        assert!(ask("y\n"));
        assert!(ask("YES\n"));
        assert!(ask(" yes "));
        assert!(!ask("\n"));
        assert!(!ask("n\n"));
        assert!(!ask("yesterday\n"));
        assert!(!ask(""));
    }

    #[test]
    fn retention_rules_from_the_command_line() {
        let args = |completed: &str, cancelled: &str, dead: &str| RetentionArgs {
            target: Target {
                url: String::new(),
                schema: None,
                table_prefix: None,
            },
            completed: completed.into(),
            cancelled: cancelled.into(),
            dead: dead.into(),
        };
        let r = rules(&args("1h", "keep", "7d")).unwrap();
        assert_eq!(
            r.rules(),
            vec![
                (JobState::Completed, Duration::from_secs(3600)),
                (JobState::Dead, Duration::from_secs(7 * 86_400)),
            ]
        );
        assert_eq!(
            rules_words(&args("1h", "KEEP", "7d")),
            "completed after 1h, cancelled kept, dead after 7d"
        );
        let e = rules(&args("keep", "keep", "keep")).unwrap_err();
        assert_eq!(e.code(), 2);
        assert!(
            e.message().starts_with("invalid retention:"),
            "{}",
            e.message()
        );
        let e = rules(&args("soon", "keep", "keep")).unwrap_err();
        assert!(
            e.message().starts_with("invalid completed:"),
            "{}",
            e.message()
        );
        let e = rules(&args("1h", "keep", "4000d")).unwrap_err();
        assert_eq!(e.message(), "invalid dead: must be at most 10 years");
    }
}
