//! What a scenario's end state must satisfy, checked in the database and in the run logs.

use std::collections::HashMap;
use std::sync::Arc;

use dbqueue::{JobId, JobState, Queue};
use futures::StreamExt;
use serde::Serialize;
use uuid::Uuid;

use crate::child::Plan;
use crate::db::Db;
use crate::runlog::{Ended, Event, What};

/// The message the rescuer records on a job whose lease expired.
const LEASE_EXPIRED: &str = "lease expired";

/// A pushed job and what it was told to do.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pushed {
    pub(crate) id: JobId,
    pub(crate) plan: Plan,
    pub(crate) max_attempts: u32,
}

/// The counts a scenario reports; every field named as a violation must be 0.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Verdict {
    pub(crate) jobs: u64,
    pub(crate) completed: u64,
    pub(crate) dead: u64,
    /// Executions started (handler starts in the run logs).
    pub(crate) executions: u64,
    /// Claims that followed an attempt which ended without an outcome its handler decided
    /// (holder killed, paused, cut off, or its completion refused).
    pub(crate) redeliveries: u64,
    /// Jobs that went dead because every attempt was cut short (none are expected).
    pub(crate) exhausted: u64,
    /// Executions whose handler started after its lease had expired.
    pub(crate) started_expired: u64,
    /// Violation: effects beyond one per completed job, or effects of jobs that did not
    /// complete.
    pub(crate) duplicate_effects: u64,
    /// Violation: pushed jobs missing from the table, or completed without their effect.
    pub(crate) lost: u64,
    /// Violation: jobs not finished at the end, or running with a lease expired for longer
    /// than the rescue bound while the scenario ran.
    pub(crate) stuck: u64,
    /// Violation: two executions of one job overlapping while both leases were live, or one
    /// lease token delivered twice.
    pub(crate) overlaps: u64,
    /// Violation: a final state the plan does not explain (e.g. a job meant to succeed dead
    /// for a reason other than expired leases, or a cancelled job).
    pub(crate) unexplained: u64,
    /// The first few violations, in words.
    pub(crate) details: Vec<String>,
}

impl Verdict {
    pub(crate) fn violations(&self) -> u64 {
        self.duplicate_effects + self.lost + self.stuck + self.overlaps + self.unexplained
    }

    pub(crate) fn note(&mut self, detail: String) {
        if self.details.len() < 10 {
            self.details.push(detail);
        }
    }
}

/// One execution, assembled from its run-log lines.
#[derive(Debug)]
struct Execution {
    start: i64,
    /// The latest lease expiry the handler knew.
    exp: i64,
    end: Option<(i64, Option<Ended>)>,
    starts: u32,
}

impl Execution {
    /// Until when this execution held a live lease (as far as its log shows).
    fn live_until(&self) -> i64 {
        match self.end {
            Some((t, _)) => t.min(self.exp),
            None => self.exp,
        }
    }
}

/// Checks the final state of `pushed` in the database and the overlaps in `events`.
pub(crate) async fn verify(
    db: &Db,
    queue: &Arc<dyn Queue>,
    ns: &str,
    pushed: &[Pushed],
    events: &[Event],
    overdue_stuck: u64,
) -> anyhow::Result<Verdict> {
    let mut v = Verdict {
        jobs: pushed.len() as u64,
        stuck: overdue_stuck,
        ..Verdict::default()
    };
    if overdue_stuck > 0 {
        v.note(format!(
            "{overdue_stuck} job(s) stayed running past their lease plus the rescue bound"
        ));
    }
    let rows: Vec<(JobId, dbqueue::Result<Option<dbqueue::Job>>)> =
        futures::stream::iter(pushed.iter().map(|p| p.id))
            .map(|id| {
                let q = queue.clone();
                async move { (id, q.get(id).await) }
            })
            .buffer_unordered(16)
            .collect()
            .await;
    let mut jobs = HashMap::new();
    for (id, row) in rows {
        jobs.insert(id, row?);
    }
    let effects = db.effect_counts(ns).await?;

    // Executions per job, keyed by lease token.
    let mut runs: HashMap<Uuid, HashMap<Uuid, Execution>> = HashMap::new();
    for e in events {
        let x = runs
            .entry(e.job)
            .or_default()
            .entry(e.token)
            .or_insert(Execution {
                start: e.t,
                exp: e.exp,
                end: None,
                starts: 0,
            });
        match e.what {
            What::Start => {
                x.starts += 1;
                x.start = x.start.min(e.t);
                x.exp = x.exp.max(e.exp);
            }
            What::Extend => x.exp = x.exp.max(e.exp),
            What::End => {
                x.exp = x.exp.max(e.exp);
                x.end = Some((e.t, e.outcome));
            }
        }
    }

    let mut pushed_ids = std::collections::HashSet::new();
    for p in pushed {
        pushed_ids.insert(p.id.to_string());
        let n_effects = effects.get(&p.id.to_string()).copied().unwrap_or(0);
        let Some(job) = jobs.get(&p.id).cloned().flatten() else {
            v.lost += 1;
            v.note(format!("job {} is missing from the table", p.id));
            continue;
        };
        let execs = runs.get(&p.id.0);
        let decided = execs.map_or(0, |m| {
            m.values()
                .filter(|x| matches!(x.end, Some((_, Some(Ended::Completed | Ended::Failed)))))
                .count() as u64
        });
        let dead_of_leases =
            job.state == JobState::Dead && job.last_error.as_deref() == Some(LEASE_EXPIRED);
        let interrupted = u64::from(job.attempts).saturating_sub(decided);
        v.redeliveries += interrupted.saturating_sub(u64::from(dead_of_leases));
        match job.state {
            JobState::Completed => {
                v.completed += 1;
                if n_effects == 0 {
                    v.lost += 1;
                    v.note(format!("job {} completed without its effect", p.id));
                } else if n_effects > 1 {
                    v.duplicate_effects += (n_effects - 1) as u64;
                    v.note(format!("job {} has {n_effects} effects", p.id));
                }
                if p.plan.permanent || p.plan.fail >= p.max_attempts {
                    v.unexplained += 1;
                    v.note(format!(
                        "job {} completed although every attempt fails",
                        p.id
                    ));
                }
            }
            JobState::Dead => {
                v.dead += 1;
                if n_effects > 0 {
                    v.duplicate_effects += n_effects as u64;
                    v.note(format!("dead job {} has {n_effects} effect(s)", p.id));
                }
                let planned = p.plan.permanent || p.plan.fail >= p.max_attempts;
                if !planned {
                    if dead_of_leases {
                        v.exhausted += 1;
                    } else {
                        v.unexplained += 1;
                        v.note(format!(
                            "job {} is dead ({:?}) although its plan succeeds",
                            p.id, job.last_error
                        ));
                    }
                }
            }
            JobState::Waiting | JobState::Pending | JobState::Running => {
                v.stuck += 1;
                v.note(format!("job {} is still {} at the end", p.id, job.state));
            }
            JobState::Cancelled => {
                v.unexplained += 1;
                v.note(format!("job {} was cancelled", p.id));
            }
        }
        if let Some(execs) = execs {
            v.executions += execs.values().map(|x| u64::from(x.starts)).sum::<u64>();
            if let Some((token, _)) = execs.iter().find(|(_, x)| x.starts > 1) {
                v.overlaps += 1;
                v.note(format!("job {}: lease token {token} started twice", p.id));
            }
            // Two executions overlap when both ran while holding a live lease at one moment.
            let mut sorted: Vec<&Execution> = execs.values().collect();
            sorted.sort_by_key(|x| x.start);
            for (i, later) in sorted.iter().enumerate().skip(1) {
                if let Some(earlier) = sorted[..i].iter().find(|earlier| {
                    later.start < earlier.live_until() && later.start < later.live_until()
                }) {
                    v.overlaps += 1;
                    v.note(format!(
                        "job {}: two executions held a live lease at once, for {} µs",
                        p.id,
                        earlier.live_until().min(later.live_until()) - later.start
                    ));
                }
            }
            // Handlers that started on a lease that had already expired (no overlap: the
            // lease was dead; the work was wasted and its completion refused).
            v.started_expired += execs.values().filter(|x| x.exp <= x.start).count() as u64;
        }
    }
    for (job, n) in &effects {
        if !pushed_ids.contains(job) {
            v.duplicate_effects += *n as u64;
            v.note(format!("effect of a job that was never pushed: {job}"));
        }
    }
    Ok(v)
}
