//! The scenarios. Each pushes a batch of jobs whose payloads say how they behave, starts worker
//! processes, injects its fault while they drain the queue, and then checks the end state in the
//! database and the run logs (see `verify`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use dbqueue::{ClaimStrategy, Dep, DepPolicy, JobState, ListRequest, NewJob, Queue, Workflow};
use rustix::process::Signal;
use serde::Serialize;

use crate::child::{HolderResult, Plan, WorkerReport};
use crate::db::{kill_connections, Db, Kind, Target};
use crate::operator::Signals;
use crate::procs::Proc;
use crate::runlog;
use crate::server::{Binaries, Private};
use crate::verify::{
    verify, verify_workflows, FlowStats, OperatorLog, Pushed, PushedFlow, Verdict,
};

/// The scenarios, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Scenario {
    /// Many processes x many slots drain a batch with random retryable and permanent failures.
    Drain,
    /// Random worker processes are killed with SIGKILL and replaced, about every second.
    Kill,
    /// A holder is paused (SIGSTOP) past its lease, another worker takes its jobs, then it is
    /// continued (SIGCONT): every transition it attempts must be refused and change nothing.
    Pause,
    /// The database server is restarted mid-drain (alternately a clean stop and a crash).
    Restart,
    /// Every connection of the workers is closed by the server mid-drain.
    Disconnect,
    /// The server turns read-only for seconds without closing a connection (a primary demoted
    /// in place): no job may fail because of it, and the workers must go on without a restart.
    Demote,
    /// The primary of a PostgreSQL pair with asynchronous streaming replication is killed
    /// mid-drain and its standby promoted; the workers, on a host-list URL, must follow without
    /// a restart. Acknowledged pushes lost and claims lost are counted, not failed: they are
    /// what asynchronous replication loses.
    Promote,
    /// The same with a synchronous standby and `synchronous_commit = on`: nothing acknowledged
    /// may be lost.
    PromoteSync,
    /// The same with `synchronous_commit = remote_apply`.
    PromoteApply,
    /// Another transaction holds locks on the queue's rows (SQLite: the write lock) for seconds.
    Slow,
    /// Each worker has two pooled connections for eight handlers that hold theirs.
    Pool,
    /// Processes are killed while inside their completion transaction (on SQLite: while
    /// holding the database's write lock).
    LockHolder,
    /// Workflows (diamonds, fan-ins of 20 into 1, batches, chains) drain while random worker
    /// processes are killed with SIGKILL and replaced, and an operator cancels random steps,
    /// retries them, and runs retention rounds with short ages: every workflow must finish
    /// completed (or be deleted by retention only once it had), nothing may stay cancelled,
    /// and no job may start, on the database's clock, before its dependencies finished as it
    /// needs them.
    Workflows,
}

impl Scenario {
    pub(crate) const ALL: [Scenario; 13] = [
        Scenario::Drain,
        Scenario::Kill,
        Scenario::Pause,
        Scenario::Restart,
        Scenario::Disconnect,
        Scenario::Demote,
        Scenario::Promote,
        Scenario::PromoteSync,
        Scenario::PromoteApply,
        Scenario::Slow,
        Scenario::Pool,
        Scenario::LockHolder,
        Scenario::Workflows,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Scenario::Drain => "drain",
            Scenario::Kill => "kill",
            Scenario::Pause => "pause",
            Scenario::Restart => "restart",
            Scenario::Disconnect => "disconnect",
            Scenario::Demote => "demote",
            Scenario::Promote => "promote",
            Scenario::PromoteSync => "promote-sync",
            Scenario::PromoteApply => "promote-apply",
            Scenario::Slow => "slow",
            Scenario::Pool => "pool",
            Scenario::LockHolder => "lock-holder",
            Scenario::Workflows => "workflows",
        }
    }
}

/// How large the scenarios are.
#[derive(Clone, Debug)]
pub(crate) struct Sizes {
    /// Jobs per scenario (the fault scenarios use a fraction).
    pub(crate) jobs: u32,
    /// Worker processes.
    pub(crate) procs: usize,
    /// Handler slots per process.
    pub(crate) slots: usize,
    /// Lease of the workers.
    pub(crate) lease: Duration,
    /// Rescue interval of the workers.
    pub(crate) rescue: Duration,
    /// Mean pause between kills.
    pub(crate) kill_every: Duration,
    /// Faults per fault scenario (restarts, disconnect rounds, lock holds).
    pub(crate) faults: u32,
    /// How long each lock hold of the slow scenario lasts.
    pub(crate) lock_hold: Duration,
    /// Jobs the paused holder claims.
    pub(crate) paused_jobs: usize,
    /// Longest time a scenario may take to drain before its jobs count as stuck.
    pub(crate) deadline: Duration,
}

impl Sizes {
    pub(crate) fn short() -> Sizes {
        Sizes {
            jobs: 240,
            procs: 3,
            slots: 4,
            lease: Duration::from_millis(1000),
            rescue: Duration::from_millis(200),
            kill_every: Duration::from_millis(600),
            faults: 2,
            lock_hold: Duration::from_millis(1000),
            paused_jobs: 3,
            deadline: Duration::from_secs(60),
        }
    }

    pub(crate) fn full() -> Sizes {
        Sizes {
            jobs: 5_000,
            procs: 6,
            slots: 8,
            lease: Duration::from_secs(2),
            rescue: Duration::from_millis(500),
            kill_every: Duration::from_secs(1),
            faults: 6,
            lock_hold: Duration::from_secs(3),
            paused_jobs: 16,
            deadline: Duration::from_secs(900),
        }
    }
}

/// One backend (and server) the scenarios run on.
#[derive(Clone)]
pub(crate) struct Env {
    pub(crate) kind: Kind,
    /// The shared server's URL (unused for SQLite).
    pub(crate) url: String,
    /// What to call the server in the report (e.g. `PostgreSQL 15.14`).
    pub(crate) server: String,
    /// Where run logs, child logs and SQLite files go.
    pub(crate) work: PathBuf,
    pub(crate) sizes: Sizes,
    pub(crate) bins: Binaries,
    /// Keep the tables and files of each run.
    pub(crate) keep: bool,
    /// The private server instance of the restart and disconnect scenarios, once started.
    pub(crate) private: Arc<tokio::sync::Mutex<Option<Private>>>,
}

/// The result of one scenario on one backend and claim strategy: one row of the report.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) scenario: &'static str,
    pub(crate) backend: &'static str,
    pub(crate) server: String,
    pub(crate) strategy: &'static str,
    /// `pass`, `FAIL` or `skipped`.
    pub(crate) status: &'static str,
    /// Why it failed or was skipped.
    pub(crate) reason: Option<String>,
    pub(crate) seconds: f64,
    /// Worker processes started, replacements included.
    pub(crate) processes: u64,
    /// Processes killed with SIGKILL (each replaced by a new one).
    pub(crate) killed: u64,
    /// Of those, killed while inside their completion transaction.
    pub(crate) killed_in_tx: u64,
    /// Processes paused past their lease.
    pub(crate) paused: u64,
    /// Database server restarts.
    pub(crate) db_restarts: u64,
    /// Connections closed by the server.
    pub(crate) disconnects: u64,
    /// Times the server turned read-only (and back).
    pub(crate) demotions: u64,
    /// The longest time from the server taking writes again to the next finished job.
    pub(crate) max_recovery_ms: u64,
    /// Promotions of a standby (the promote scenarios).
    pub(crate) promotions: u64,
    /// How long killing the primary and promoting the standby took.
    pub(crate) promoted_in_ms: u64,
    /// Pushes acknowledged by the old primary and missing on the new one.
    pub(crate) pushes_lost: u64,
    /// Claims acknowledged by the old primary that the new one gave out again while their
    /// first holder still ran (seen as two executions with live leases).
    pub(crate) claims_lost: u64,
    /// Lock-holding transactions run against the queue's rows.
    pub(crate) lock_holds: u64,
    /// Stale transitions attempted by paused holders (each must be refused).
    pub(crate) stale_attempts: u64,
    /// The longest a running job's lease was seen expired before it was rescued.
    pub(crate) max_overdue_ms: u64,
    /// The most warning and error lines one worker process logged in one second.
    pub(crate) max_log_lines_per_s: u64,
    /// What the surviving workers counted.
    pub(crate) workers: WorkerReport,
    /// The workflows scenario's workflows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) flows: Option<FlowStats>,
    #[serde(flatten)]
    pub(crate) verdict: Verdict,
}

/// Warning and error lines one process may log in one second before it counts as an error
/// storm: a worker that backs off stays far below; a retry loop without backoff far above.
pub(crate) const STORM_LINES_PER_S: u64 = 50;

impl Row {
    fn new(scenario: Scenario, env: &Env, strategy: ClaimStrategy) -> Row {
        Row {
            scenario: scenario.name(),
            backend: env.kind.as_str(),
            server: env.server.clone(),
            strategy: strategy.as_str(),
            status: "pass",
            reason: None,
            seconds: 0.0,
            processes: 0,
            killed: 0,
            killed_in_tx: 0,
            paused: 0,
            db_restarts: 0,
            disconnects: 0,
            demotions: 0,
            max_recovery_ms: 0,
            promotions: 0,
            promoted_in_ms: 0,
            pushes_lost: 0,
            claims_lost: 0,
            lock_holds: 0,
            stale_attempts: 0,
            max_overdue_ms: 0,
            max_log_lines_per_s: 0,
            workers: WorkerReport::default(),
            flows: None,
            verdict: Verdict::default(),
        }
    }

    pub(crate) fn failed(&self) -> bool {
        self.status == "FAIL"
    }

    /// The row as one line.
    pub(crate) fn line(&self) -> String {
        if self.status == "skipped" {
            return format!(
                "{:<7} {:<11} {}/{}: {}",
                self.status,
                self.scenario,
                self.backend,
                self.strategy,
                self.reason.as_deref().unwrap_or_default()
            );
        }
        let v = &self.verdict;
        let mut s = format!(
            "{:<7} {:<11} {}/{:<11} jobs={} completed={} dead={} procs={} killed={} (in tx {}) \
             paused={} restarts={} disconnects={} redeliveries={} dup_effects={} lost={} stuck={} \
             overlaps={} unexplained={} overdue={}ms max_log/s={} ({:.1} s)",
            self.status,
            self.scenario,
            self.backend,
            self.strategy,
            v.jobs,
            v.completed,
            v.dead,
            self.processes,
            self.killed,
            self.killed_in_tx,
            self.paused,
            self.db_restarts,
            self.disconnects,
            v.redeliveries,
            v.duplicate_effects,
            v.lost,
            v.stuck,
            v.overlaps,
            v.unexplained,
            self.max_overdue_ms,
            self.max_log_lines_per_s,
            self.seconds
        );
        if self.promotions > 0 {
            s.push_str(&format!(
                "\n        promotions={} kill and promotion={} ms from the kill to the next job \
                 finished on the new primary={} ms acknowledged pushes lost={} acknowledged \
                 claims lost={} (re-runs: redeliveries)",
                self.promotions,
                self.promoted_in_ms,
                self.max_recovery_ms,
                self.pushes_lost,
                self.claims_lost
            ));
        }
        if let Some(f) = &self.flows {
            s.push_str(&format!(
                "\n        workflows={} ({} diamonds, {} fan-ins and {} batches of {FAN_IN} into 1, \
                 {} chains of {CHAIN}) unfinished={} dependents={} starts checked={} \
                 early_starts={} left_cancelled={} early_deletions={} settled by the sweep={} \
                 completion errors={} wait from the last dependency's finish to the first start: \
                 median {} ms, max {} ms",
                f.workflows,
                f.diamonds,
                f.fan_ins,
                f.batches,
                f.chains,
                f.unfinished,
                f.dependents,
                f.starts_checked,
                v.early_starts,
                v.left_cancelled,
                v.early_deletions,
                f.swept,
                f.completion_errors,
                f.median_wait_ms,
                f.max_wait_ms
            ));
            let o = &f.operator;
            s.push_str(&format!(
                "\n        operator: cancels={} ({} pending, {} waiting, {} running; {} refused, \
                 finished) retries={} (refused for a cancelled dependency {}) bulk retries={} \
                 ({} jobs back, {} skipped) retention rounds={} (refused {}) workflows \
                 deleted={} ({} jobs; {} not read before, starts unchecked) longest round={} ms \
                 callback starts beside a retried member={} errors={}",
                o.cancels,
                o.cancelled_pending,
                o.cancelled_waiting,
                o.cancelled_running,
                o.cancels_refused,
                o.retries,
                o.retries_refused,
                o.bulk_retries,
                o.bulk_retried,
                o.bulk_skipped,
                o.retention_rounds,
                o.retention_refused,
                o.workflows_deleted,
                o.workflow_jobs_deleted,
                f.deleted_unread,
                o.longest_round_ms,
                f.callback_starts_beside_a_retried_member,
                o.errors
            ));
        }
        if self.demotions > 0 {
            s.push_str(&format!(
                "\n        read-only periods={} longest recovery after writes returned={} ms",
                self.demotions, self.max_recovery_ms
            ));
        }
        if let Some(r) = &self.reason {
            s.push_str(&format!("\n        {r}"));
        }
        for d in &v.details {
            s.push_str(&format!("\n        {d}"));
        }
        s
    }
}

/// Runs `scenario` on `env` with `strategy`; never panics, a failure is a row.
pub(crate) async fn run(scenario: Scenario, env: &Env, strategy: ClaimStrategy) -> Row {
    let started = Instant::now();
    let mut row = Row::new(scenario, env, strategy);
    let result = match scenario {
        Scenario::Pause => pause(env, strategy, &mut row).await,
        Scenario::Restart | Scenario::Disconnect | Scenario::Demote if env.kind == Kind::Sqlite => {
            row.status = "skipped";
            row.reason = Some("SQLite has no server to restart or connections to close".into());
            Ok(())
        }
        Scenario::Promote | Scenario::PromoteSync | Scenario::PromoteApply
            if env.kind != Kind::Postgres =>
        {
            row.status = "skipped";
            row.reason = Some(format!(
                "{}: this program sets up replication for PostgreSQL only",
                env.kind.as_str()
            ));
            Ok(())
        }
        Scenario::Promote | Scenario::PromoteSync | Scenario::PromoteApply
            if env.bins.pg_basebackup().is_none() =>
        {
            row.status = "skipped";
            row.reason = Some(
                "the PostgreSQL binaries have no pg_basebackup to make the standby with".into(),
            );
            Ok(())
        }
        Scenario::Promote | Scenario::PromoteSync | Scenario::PromoteApply => {
            promote(scenario, env, strategy, &mut row).await
        }
        _ => drain(scenario, env, strategy, &mut row).await,
    };
    if let Err(e) = result {
        row.status = "FAIL";
        row.reason = Some(format!("{e:#}"));
    } else if row.verdict.violations() > 0 {
        row.status = "FAIL";
    } else if row.max_log_lines_per_s > STORM_LINES_PER_S {
        row.status = "FAIL";
        row.reason = Some(format!(
            "error storm: a worker logged {} warnings/errors in one second (bound {STORM_LINES_PER_S})",
            row.max_log_lines_per_s
        ));
    }
    row.seconds = started.elapsed().as_secs_f64();
    row
}

/// A namespace of its own for one scenario run.
fn namespace(scenario: Scenario) -> String {
    let tag: String = scenario
        .name()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    format!(
        "chaos_{tag}_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

fn target(env: &Env, url: &str, ns: &str, strategy: ClaimStrategy) -> Target {
    let url = match env.kind {
        Kind::Sqlite => env.work.join(format!("{ns}.db")).display().to_string(),
        _ => url.to_owned(),
    };
    Target {
        kind: env.kind,
        url,
        ns: ns.to_owned(),
        strategy: strategy.as_str().to_owned(),
        // Small pools: the shared servers serve other clients too.
        max_connections: 4,
        connect_timeout_ms: 5_000,
    }
}

/// Builds the plans of `n` jobs: most succeed, some fail once or twice, some fail for good.
fn plans(n: u32, work_ms: (u32, u32), with_failures: bool) -> Vec<Plan> {
    (0..n)
        .map(|seq| {
            let roll = fastrand::u32(0..100);
            let (fail, permanent) = match roll {
                _ if !with_failures => (0, false),
                0..=2 => (0, true),
                3..=4 => (u32::MAX, false),
                5..=14 => (fastrand::u32(1..=2), false),
                _ => (0, false),
            };
            Plan {
                seq,
                fail,
                permanent,
                work_ms: fastrand::u32(work_ms.0..=work_ms.1),
            }
        })
        .collect()
}

async fn push_all(
    queue: &Arc<dyn Queue>,
    name: &str,
    plans: &[Plan],
    max_attempts: u32,
) -> anyhow::Result<Vec<Pushed>> {
    let mut pushed = Vec::with_capacity(plans.len());
    for chunk in plans.chunks(500) {
        let jobs = chunk
            .iter()
            .map(|p| Ok(NewJob::new(name, p)?.max_attempts(max_attempts)))
            .collect::<dbqueue::Result<Vec<_>>>()?;
        let ids = queue.push_batch(jobs).await?;
        pushed.extend(ids.into_iter().zip(chunk).map(|(id, plan)| Pushed {
            id,
            plan: *plan,
            max_attempts,
        }));
    }
    Ok(pushed)
}

/// Members of each fan-in and batch of the workflows scenario.
const FAN_IN: usize = 20;
/// Links of each chain of the workflows scenario.
const CHAIN: usize = 6;

/// A step of a workflow to push: its name and the steps it depends on.
type Step = (String, Vec<String>);

/// Pushes workflows of about `jobs` jobs in all, each job with a plan of `work` (and,
/// sometimes, a retryable failure or two, never a permanent one): a fan-in of [`FAN_IN`] into
/// 1 (its sink needs every member completed) and a batch of as many (its callback runs once all
/// have finished) per 240 jobs, a chain of [`CHAIN`] per 60, and diamonds (a; b and c after a;
/// d after b and c) for the rest.
async fn push_workflows(
    queue: &Arc<dyn Queue>,
    name: &str,
    jobs: u32,
    work: (u32, u32),
    max_attempts: u32,
) -> anyhow::Result<(Vec<Pushed>, Vec<PushedFlow>)> {
    let jobs = jobs as usize;
    let fan_ins = (jobs / 240).max(1);
    let chains = (jobs / 60).max(2);
    let diamonds = jobs.saturating_sub(2 * fan_ins * (FAN_IN + 1) + chains * CHAIN) / 4;
    let mut shapes: Vec<(&'static str, Vec<Step>)> = Vec::new();
    let members = || (1..=FAN_IN).map(|i| (i.to_string(), Vec::new()));
    let all = || (1..=FAN_IN).map(|i| i.to_string()).collect::<Vec<_>>();
    for _ in 0..fan_ins {
        shapes.push((
            "fan-in",
            members().chain([("sink".into(), all())]).collect(),
        ));
        shapes.push((
            "batch",
            members().chain([("callback".into(), all())]).collect(),
        ));
    }
    for _ in 0..chains {
        let links = (1..=CHAIN).map(|i| {
            let before = if i == 1 {
                Vec::new()
            } else {
                vec![(i - 1).to_string()]
            };
            (i.to_string(), before)
        });
        shapes.push(("chain", links.collect()));
    }
    for _ in 0..diamonds {
        let a = || vec!["a".to_owned()];
        shapes.push((
            "diamond",
            vec![
                ("a".into(), Vec::new()),
                ("b".into(), a()),
                ("c".into(), a()),
                ("d".into(), vec!["b".into(), "c".into()]),
            ],
        ));
    }
    // Diamonds, chains and fan-ins mixed, so that the claims interleave them.
    fastrand::shuffle(&mut shapes);
    let mut seq = 0u32;
    let mut pushed = Vec::with_capacity(jobs);
    let mut flows = Vec::with_capacity(shapes.len());
    for (shape, steps) in shapes {
        let mut plans = Vec::with_capacity(steps.len());
        let mut wf = match shape {
            "batch" => {
                let mut members = Vec::with_capacity(FAN_IN + 1);
                for _ in 0..=FAN_IN {
                    let plan = flow_plan(seq, work);
                    seq += 1;
                    members.push(NewJob::new(name, &plan)?.max_attempts(max_attempts));
                    plans.push(plan);
                }
                let callback = members.pop().context("a batch without its callback")?;
                Workflow::batch(members, callback)
            }
            _ => {
                let mut wf = Workflow::new();
                for (step, deps) in &steps {
                    let plan = flow_plan(seq, work);
                    seq += 1;
                    let job = NewJob::new(name, &plan)?.max_attempts(max_attempts);
                    wf = wf.add_after(step.clone(), job, deps.iter().map(Dep::on));
                    plans.push(plan);
                }
                wf
            }
        };
        wf = wf.name(shape);
        let stored = queue.push_workflow(wf).await?;
        let id_of = |step: &str| {
            stored
                .job(step)
                .with_context(|| format!("{shape} workflow {} has no step {step}", stored.id))
        };
        // A batch's callback runs after its members whatever their outcome; every other step
        // needs its dependencies completed.
        let policy = if shape == "batch" {
            DepPolicy::AnyOutcome
        } else {
            DepPolicy::Completed
        };
        let mut edges = Vec::new();
        for (step, deps) in &steps {
            let job = id_of(step)?;
            for d in deps {
                edges.push((job, id_of(d)?, policy));
            }
        }
        pushed.extend(
            stored
                .jobs
                .iter()
                .zip(&plans)
                .map(|((_, id), plan)| Pushed {
                    id: *id,
                    plan: *plan,
                    max_attempts,
                }),
        );
        flows.push(PushedFlow {
            id: stored.id,
            shape,
            jobs: stored.jobs.clone(),
            edges,
        });
    }
    Ok((pushed, flows))
}

/// The plan of one workflow job: most succeed at once, about 10 % fail once or twice with a
/// retryable error first; none fails for good, so every workflow must finish completed.
fn flow_plan(seq: u32, work_ms: (u32, u32)) -> Plan {
    Plan {
        seq,
        fail: if fastrand::u32(0..100) < 10 {
            fastrand::u32(1..=2)
        } else {
            0
        },
        permanent: false,
        work_ms: fastrand::u32(work_ms.0..=work_ms.1),
    }
}

/// Waiting jobs that the workers' sweep settled, summed from the `settled=N` of their logs'
/// "the sweep settled waiting workflow jobs" lines.
fn swept(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut total = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "log") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for line in text.lines() {
            if !line.contains("the sweep settled waiting workflow jobs") {
                continue;
            }
            total += line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("settled="))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    total
}

/// The worker processes of one scenario run.
struct Fleet {
    args: Vec<String>,
    dir: PathBuf,
    procs: Vec<Proc>,
    incarnations: Vec<u32>,
    started: u64,
    reports: Vec<WorkerReport>,
}

impl Fleet {
    fn new(
        t: &Target,
        queue: &str,
        slots: usize,
        sizes: &Sizes,
        hold_ms: u64,
        dir: &Path,
    ) -> anyhow::Result<Fleet> {
        let args = vec![
            "worker".to_owned(),
            "--target".to_owned(),
            serde_json::to_string(t)?,
            "--queue".to_owned(),
            queue.to_owned(),
            "--slots".to_owned(),
            slots.to_string(),
            "--lease-ms".to_owned(),
            sizes.lease.as_millis().to_string(),
            "--rescue-ms".to_owned(),
            sizes.rescue.as_millis().to_string(),
            "--hold-ms".to_owned(),
            hold_ms.to_string(),
        ];
        Ok(Fleet {
            args,
            dir: dir.to_owned(),
            procs: Vec::new(),
            incarnations: Vec::new(),
            started: 0,
            reports: Vec::new(),
        })
    }

    fn spawn_one(&mut self, slot: usize) -> anyhow::Result<Proc> {
        if self.incarnations.len() <= slot {
            self.incarnations.resize(slot + 1, 0);
        }
        self.incarnations[slot] += 1;
        let name = format!("w{slot}.{}", self.incarnations[slot]);
        let mut args = self.args.clone();
        args.extend([
            "--process".to_owned(),
            name.clone(),
            "--log".to_owned(),
            self.dir.join(format!("{name}.jsonl")).display().to_string(),
        ]);
        self.started += 1;
        Proc::spawn(&name, &args, &self.dir.join(format!("{name}.log")))
    }

    async fn start(&mut self, n: usize) -> anyhow::Result<()> {
        for slot in 0..n {
            let p = self.spawn_one(slot)?;
            self.procs.push(p);
        }
        for p in &mut self.procs {
            p.wait_ready(Duration::from_secs(30)).await?;
        }
        Ok(())
    }

    /// Kills process `i` with SIGKILL and starts its replacement.
    async fn kill_and_replace(&mut self, i: usize) -> anyhow::Result<()> {
        self.procs[i].kill9();
        let mut p = self.spawn_one(i)?;
        p.wait_ready(Duration::from_secs(30)).await?;
        self.procs[i] = p;
        Ok(())
    }

    async fn stop_all(&mut self) -> anyhow::Result<()> {
        for p in &self.procs {
            p.signal(Signal::TERM)?;
        }
        let mut errors = Vec::new();
        for p in &mut self.procs {
            match p.stop(Duration::from_secs(20)).await {
                Ok(r) => self.reports.push(r),
                Err(e) => errors.push(format!("{e:#}")),
            }
        }
        if !errors.is_empty() {
            bail!(
                "worker processes did not stop cleanly: {}",
                errors.join("; ")
            );
        }
        Ok(())
    }

    fn totals(&self) -> WorkerReport {
        let mut t = WorkerReport::default();
        for r in &self.reports {
            t.claimed += r.claimed;
            t.completed_in_tx += r.completed_in_tx;
            t.retried += r.retried;
            t.dead += r.dead;
            t.lease_lost += r.lease_lost;
            t.released += r.released;
            t.abandoned += r.abandoned;
            t.pop_errors += r.pop_errors;
            t.rescued += r.rescued;
        }
        t
    }
}

/// Watches the queue while a scenario runs: whether it drained, and which jobs stayed running
/// with an expired lease for longer than the rescue bound.
struct Monitor {
    bound: Duration,
    overdue: HashSet<dbqueue::JobId>,
    /// The longest a running job's lease was seen expired.
    worst: Duration,
}

/// How long a running job's lease may stay expired before the job counts as stuck: the rescue
/// interval (jittered by up to 20 %), plus 2 s for the rescue and the next claim to run on a
/// loaded machine, plus, on SQLite, the busy timeout (every write, the rescuer's included, may
/// wait that long for the one write lock that all processes share).
pub(crate) fn stuck_bound(kind: Kind, sizes: &Sizes) -> Duration {
    let busy = if kind == Kind::Sqlite {
        Duration::from_secs(5)
    } else {
        Duration::ZERO
    };
    sizes.rescue.mul_f64(1.2) + Duration::from_secs(2) + busy
}

impl Monitor {
    /// Returns whether every job finished (`None` when the database did not answer).
    /// A monitor with the stuck bound of `kind` and `sizes`, nothing seen yet.
    fn new(kind: Kind, sizes: &Sizes) -> Monitor {
        Monitor {
            bound: stuck_bound(kind, sizes),
            overdue: HashSet::new(),
            worst: Duration::ZERO,
        }
    }

    async fn sample(
        &mut self,
        queue: &Arc<dyn Queue>,
        name: &str,
        allowance: Duration,
    ) -> Option<bool> {
        // The update keeps any field the request gains (e.g. a paging cursor) at its default.
        #[allow(clippy::needless_update)]
        let req = ListRequest {
            queue: Some(name.to_owned()),
            state: Some(JobState::Running),
            limit: 1000,
            ..ListRequest::default()
        };
        let running = queue.list(req).await.ok()?;
        let now = queue.now().await.ok()?;
        for job in &running {
            if let Some(exp) = job.lease_expires_at {
                if let Ok(late) = (now - exp).to_std() {
                    self.worst = self.worst.max(late);
                    if late > self.bound + allowance {
                        self.overdue.insert(job.id);
                    }
                }
            }
        }
        let stats = queue.stats(Some(name)).await.ok()?;
        Some(
            stats
                .iter()
                .all(|s| s.count(JobState::Waiting) + s.count(JobState::Pending) + s.running == 0),
        )
    }
}

/// The most warning/error lines any one process logged in one second.
fn log_storm(dir: &Path) -> u64 {
    let mut worst = 0;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "log") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let mut per_second = std::collections::HashMap::new();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let (Some(ts), Some(level)) = (words.next(), words.next()) else {
                continue;
            };
            // Failures the plans asked for are the handlers' business, not the runtime's.
            if (level == "WARN" || level == "ERROR") && !line.contains("planned") {
                // `2026-01-01T00:00:00.123456Z`: the second is everything before the dot.
                let second = ts.split('.').next().unwrap_or(ts).to_owned();
                *per_second.entry(second).or_insert(0u64) += 1;
            }
        }
        worst = worst.max(per_second.values().copied().max().unwrap_or(0));
    }
    worst
}

/// The drain-shaped scenarios: every one but `pause`.
async fn drain(
    scenario: Scenario,
    env: &Env,
    strategy: ClaimStrategy,
    row: &mut Row,
) -> anyhow::Result<()> {
    let sizes = &env.sizes;
    // The restart and disconnect scenarios share one private instance per backend.
    let mut private_slot = env.private.lock().await;
    let private_scenario = matches!(
        scenario,
        Scenario::Restart | Scenario::Disconnect | Scenario::Demote
    );
    if private_scenario && private_slot.is_none() {
        let p = Private::start(env.kind, &env.bins)
            .await
            .context("starting a private server instance")?;
        *private_slot = Some(p);
    }
    let mut private = if private_scenario {
        private_slot.as_mut()
    } else {
        None
    };
    if let Some(p) = &private {
        row.server = format!("{} (private instance)", short_version(&p.version));
    }
    let url = private.as_ref().map_or(env.url.clone(), |p| p.url.clone());
    let ns = namespace(scenario);
    let dir = env.work.join(&ns);
    std::fs::create_dir_all(&dir)?;
    let t = target(env, &url, &ns, strategy);
    let (db, queue) = crate::child::open(&t).await?;
    queue.migrate().await?;
    db.create_effects_table().await?;

    let (jobs, work, failures, max_attempts) = match scenario {
        Scenario::Drain => (sizes.jobs, (0, 10), true, 5),
        Scenario::Kill => (sizes.jobs, (50, 150), true, 25),
        // SQLite runs one completion transaction at a time, so it gets fewer jobs.
        Scenario::LockHolder if env.kind == Kind::Sqlite => (sizes.jobs / 4, (0, 10), false, 25),
        Scenario::LockHolder => (sizes.jobs / 2, (0, 10), false, 25),
        Scenario::Pool => (sizes.jobs / 2, (0, 10), false, 25),
        // Retryable failures only (see flow_plan): every workflow must finish.
        Scenario::Workflows => (sizes.jobs, (50, 150), false, 25),
        _ => {
            // Work long enough that the drain spans every fault with room between them.
            let slots = (sizes.procs * sizes.slots) as u64;
            let mean = (u64::from(sizes.faults + 1) * 1200 * slots / u64::from(sizes.jobs.max(1)))
                .clamp(2, 1000) as u32;
            (sizes.jobs, (mean / 2, mean * 3 / 2), false, 25)
        }
    };
    let name = "chaos";
    let (pushed, flows) = if scenario == Scenario::Workflows {
        push_workflows(&queue, name, jobs, work, max_attempts).await?
    } else {
        let plans = plans(jobs, work, failures);
        (
            push_all(&queue, name, &plans, max_attempts).await?,
            Vec::new(),
        )
    };

    let mut child_target = t.clone();
    let mut slots = sizes.slots;
    let mut hold_ms = 0;
    match scenario {
        Scenario::Pool => {
            child_target.max_connections = 2;
            child_target.connect_timeout_ms = 250;
            slots = 8;
            // SQLite's write lock is one for every process, so a shorter hold saturates it.
            hold_ms = if env.kind == Kind::Sqlite { 20 } else { 100 };
        }
        Scenario::LockHolder => hold_ms = if env.kind == Kind::Sqlite { 60 } else { 150 },
        Scenario::Demote => {
            if let Some(p) = &private {
                child_target.url = p.app_url().await?;
            }
        }
        _ => {}
    }
    let mut fleet = Fleet::new(&child_target, name, slots, sizes, hold_ms, &dir)?;
    if scenario == Scenario::Workflows {
        // The handlers record the database's clock at their start; the logs carry the sweep's
        // "settled" lines (info, of the engine). Retention is the operator's.
        fleet.args.extend([
            "--db-clock".to_owned(),
            "--log-filter".to_owned(),
            "warn,queue::engine=info".to_owned(),
            "--no-retention".to_owned(),
        ]);
    }
    fleet.start(sizes.procs).await?;
    // The workflows scenario's operator cancels, retries and runs retention while the workers
    // drain (see `operator`); the drain is over only once it has retried what it cancelled.
    let signals = Arc::new(Signals::default());
    let _stop_operator = crate::operator::StopOnDrop(signals.clone());
    let operator = (scenario == Scenario::Workflows).then(|| {
        tokio::spawn(crate::operator::run(
            queue.clone(),
            name.to_owned(),
            pushed.len() as u64,
            flows.clone(),
            signals.clone(),
        ))
    });

    let mut monitor = Monitor::new(env.kind, sizes);
    let mut allowance = Duration::ZERO;
    let began = Instant::now();
    let total = pushed.len() as f64;
    let mut faults_done = 0u32;
    // The lock-holder scenario kills the first process it finds inside its transaction.
    let mut next_kill = match scenario {
        Scenario::LockHolder => Instant::now(),
        _ => Instant::now() + jittered(sizes.kill_every),
    };
    let mut drained = false;
    while began.elapsed() < sizes.deadline {
        // Read before the sample: once the operator has retried its last job, the sample sees
        // that job again.
        let settled = operator.is_none() || signals.settled.load(Ordering::Relaxed);
        if let Some(done) = monitor.sample(&queue, name, allowance).await {
            if done && settled {
                drained = true;
                break;
            }
        }
        // Faults at evenly spaced points of the drain's progress (jobs retention deleted, all
        // completed, count as done).
        let deleted = signals.deleted_jobs.load(Ordering::Relaxed);
        let progress = match queue.stats(Some(name)).await {
            Ok(s) => (s.iter().map(|s| s.completed + s.dead).sum::<u64>() + deleted) as f64 / total,
            Err(_) => 0.0,
        };
        let due = faults_done < sizes.faults
            && progress >= f64::from(faults_done + 1) / f64::from(sizes.faults + 1);
        match scenario {
            // Kills stop at 80 % of the drain, so that the last jobs are not killed again and
            // again until their attempts run out.
            Scenario::Kill | Scenario::LockHolder | Scenario::Workflows
                if Instant::now() >= next_kill && progress < 0.8 =>
            {
                let victim = if scenario == Scenario::LockHolder {
                    fleet.procs.iter().position(Proc::in_tx)
                } else {
                    Some(fastrand::usize(0..fleet.procs.len()))
                };
                if let Some(i) = victim {
                    if fleet.procs[i].in_tx() {
                        row.killed_in_tx += 1;
                    }
                    fleet.kill_and_replace(i).await?;
                    row.killed += 1;
                    next_kill = Instant::now() + jittered(sizes.kill_every);
                }
            }
            Scenario::Restart if due => {
                if let Some(p) = private.as_mut() {
                    let crash = faults_done % 2 == 1;
                    let t0 = Instant::now();
                    p.restart(crash, Duration::from_millis(500)).await?;
                    allowance = allowance.max(t0.elapsed() * 2);
                    row.db_restarts += 1;
                }
                faults_done += 1;
            }
            Scenario::Disconnect if due => {
                row.disconnects += kill_connections(env.kind, &url).await?;
                faults_done += 1;
            }
            Scenario::Demote if due => {
                if let Some(p) = private.as_ref() {
                    let t0 = Instant::now();
                    p.read_only(true).await?;
                    tokio::time::sleep(DEMOTED_FOR).await;
                    let before = finished(&queue, name).await?;
                    p.read_only(false).await?;
                    let back = Instant::now();
                    // The next job that finishes shows the workers took up writing again.
                    while finished(&queue, name).await? <= before && before < pushed.len() as u64 {
                        if back.elapsed() > RECOVERY_BOUND {
                            bail!(
                                "no job finished within {RECOVERY_BOUND:?} after the server took writes again"
                            );
                        }
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    row.max_recovery_ms =
                        row.max_recovery_ms.max(back.elapsed().as_millis() as u64);
                    allowance = allowance.max(t0.elapsed() * 2);
                    row.demotions += 1;
                }
                faults_done += 1;
            }
            Scenario::Slow if due => {
                let t0 = Instant::now();
                db.hold_locks(&t, sizes.lock_hold).await?;
                allowance = allowance.max(t0.elapsed() * 2);
                row.lock_holds += 1;
                faults_done += 1;
            }
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(if scenario == Scenario::LockHolder {
            10
        } else {
            100
        }))
        .await;
    }
    signals.stop.store(true, Ordering::Relaxed);
    let ops = match operator {
        Some(task) => Some(OperatorLog {
            lease_us: sizes.lease.as_micros() as i64,
            ..task.await.context("the operator task")?
        }),
        None => None,
    };
    fleet.stop_all().await?;
    row.processes = fleet.started;
    row.workers = fleet.totals();
    row.max_log_lines_per_s = log_storm(&dir);
    if !drained {
        row.reason = Some(format!(
            "the queue did not drain within {:?}",
            sizes.deadline
        ));
    }
    let events = runlog::read_all(&dir)?;
    row.max_overdue_ms = monitor.worst.as_millis() as u64;
    // Under pool exhaustion and held locks the rescuer waits like every other statement; there
    // the claim is that the workers recover, and the overdue time is reported, not bounded.
    // So does SQLite's lock-holder scenario, where every completion holds the one write lock.
    let stuck = match scenario {
        Scenario::Pool | Scenario::Slow => 0,
        Scenario::LockHolder if env.kind == Kind::Sqlite => 0,
        _ => monitor.overdue.len() as u64,
    };
    row.verdict = verify(&db, &queue, &ns, &pushed, &events, stuck, ops.as_ref()).await?;
    if scenario == Scenario::Workflows {
        let ops = ops.unwrap_or_default();
        let effects = db.effect_counts(&ns).await?;
        let mut flows =
            verify_workflows(&queue, &flows, &events, &ops, &effects, &mut row.verdict).await?;
        flows.swept = swept(&dir);
        row.flows = Some(flows);
    }
    match scenario {
        Scenario::Restart if row.db_restarts < u64::from(sizes.faults) => {
            bail!(
                "the queue drained before every planned restart ran ({} of {})",
                row.db_restarts,
                sizes.faults
            )
        }
        Scenario::Slow if row.lock_holds == 0 => bail!("the queue drained before a lock was held"),
        Scenario::Demote if row.demotions < u64::from(sizes.faults) => {
            bail!(
                "the queue drained before every planned read-only period ran ({} of {})",
                row.demotions,
                sizes.faults
            )
        }
        Scenario::Kill | Scenario::LockHolder | Scenario::Workflows if row.killed == 0 => {
            bail!("the queue drained before a process was killed; use more jobs")
        }
        Scenario::Workflows
            if row
                .flows
                .as_ref()
                .is_none_or(|f| f.operator.cancels == 0 || f.operator.retention_rounds == 0) =>
        {
            bail!("the queue drained before the operator cancelled a job and ran a retention round; use more jobs")
        }
        _ => {}
    }
    if !keep_files(env, row) {
        cleanup(&db, &t, &dir).await?;
    }
    drop(private_slot);
    Ok(())
}

/// The most time from killing the primary to the next finished job on the promoted standby:
/// a call's connect to the dead host fails within the workers' connect timeout (2 s here), the
/// host list is walked again, and the workers back off at most 5 s between claims.
const FAILOVER_BOUND: Duration = Duration::from_secs(30);

/// The promote scenarios: a primary and a hot standby of this program's own, workers on the
/// URL `primary,standby?target_session_attrs=read-write`, and a pusher that keeps pushing
/// through the same URL. At 40 % of the drain the primary is killed (`pg_ctl stop -m
/// immediate`) and the standby promoted; the workers must finish the drain on it without a
/// restart, within [`FAILOVER_BOUND`].
async fn promote(
    scenario: Scenario,
    env: &Env,
    strategy: ClaimStrategy,
    row: &mut Row,
) -> anyhow::Result<()> {
    let sizes = &env.sizes;
    let mut primary = Private::start(env.kind, &env.bins)
        .await
        .context("starting the primary")?;
    let standby = Private::start_standby(&primary).await?;
    primary.wait_streaming().await?;
    let commit = match scenario {
        Scenario::PromoteSync => Some("on"),
        Scenario::PromoteApply => Some("remote_apply"),
        _ => None,
    };
    if let Some(level) = commit {
        let set = format!("ALTER SYSTEM SET synchronous_commit = '{level}'");
        primary
            .admin(&[
                "ALTER SYSTEM SET synchronous_standby_names = '*'",
                &set,
                "SELECT pg_reload_conf()",
            ])
            .await?;
    }
    row.server = format!(
        "{} (private primary and standby, {})",
        short_version(&primary.version),
        commit.map_or("asynchronous".to_owned(), |c| format!(
            "synchronous_commit = {c}"
        ))
    );
    let url = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/test?target_session_attrs=read-write",
        primary.port(),
        standby.port()
    );
    let ns = namespace(scenario);
    let dir = env.work.join(&ns);
    std::fs::create_dir_all(&dir)?;
    let mut t = target(env, &url, &ns, strategy);
    t.connect_timeout_ms = 2_000;
    let (db, queue) = crate::child::open(&t).await?;
    queue.migrate().await?;
    db.create_effects_table().await?;
    let name = "chaos";
    let slots = (sizes.procs * sizes.slots) as u64;
    let mean = (3 * 1200 * slots / u64::from(sizes.jobs.max(1))).clamp(2, 1000) as u32;
    let mut pushed = push_all(
        &queue,
        name,
        &plans(sizes.jobs, (mean / 2, mean * 3 / 2), false),
        25,
    )
    .await?;

    // Pushes go on through the failover: the acknowledged ones must exist at the end (or are
    // counted lost, with asynchronous replication); the unacknowledged ones may or may not.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pusher = {
        let (queue, stop) = (queue.clone(), stop.clone());
        let first = sizes.jobs;
        tokio::spawn(async move {
            let mut acked = Vec::new();
            let mut unsure = Vec::new();
            let mut seq = first;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let plan = Plan {
                    seq,
                    fail: 0,
                    permanent: false,
                    work_ms: mean,
                };
                seq += 1;
                let job = NewJob::new(name, &plan)?.max_attempts(25);
                let id = job.id();
                let p = Pushed {
                    id,
                    plan,
                    max_attempts: 25,
                };
                match queue.push(job).await {
                    Ok(_) => acked.push(p),
                    Err(_) => unsure.push(p),
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok::<_, anyhow::Error>((acked, unsure))
        })
    };

    let mut fleet = Fleet::new(&t, name, sizes.slots, sizes, 0, &dir)?;
    fleet.start(sizes.procs).await?;
    let mut monitor = Monitor::new(env.kind, sizes);
    let mut allowance = Duration::ZERO;
    let began = Instant::now();
    let total = pushed.len() as f64;
    let mut promoted_at: Option<Instant> = None;
    let mut drained = false;
    while began.elapsed() < sizes.deadline {
        let done = finished(&queue, name).await.unwrap_or(0);
        if promoted_at.is_none() && done as f64 >= total * 0.4 {
            let kill = Instant::now();
            primary.down(true).await?;
            standby.promote().await?;
            row.promoted_in_ms = kill.elapsed().as_millis() as u64;
            row.promotions += 1;
            // What the promoted standby holds first (jobs finished just before the kill are
            // there too), then the next job the workers finish on it.
            let mut base = None;
            loop {
                if let Ok(n) = finished(&queue, name).await {
                    match base {
                        None => base = Some(n),
                        Some(b) if n > b => break,
                        Some(_) => {}
                    }
                }
                if kill.elapsed() > FAILOVER_BOUND {
                    bail!("no job finished within {FAILOVER_BOUND:?} of the primary's death");
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            row.max_recovery_ms = kill.elapsed().as_millis() as u64;
            allowance = kill.elapsed() * 2 + sizes.lease;
            promoted_at = Some(Instant::now());
        }
        if promoted_at.is_some_and(|p| p.elapsed() > Duration::from_secs(2)) {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            if let Some(true) = monitor.sample(&queue, name, allowance).await {
                drained = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (acked, unsure) = pusher.await??;
    fleet.stop_all().await?;
    row.processes = fleet.started;
    row.workers = fleet.totals();
    row.max_log_lines_per_s = log_storm(&dir);
    if row.promotions == 0 {
        bail!("the queue drained before the primary was killed; use more jobs");
    }
    if !drained {
        row.reason = Some(format!(
            "the queue did not drain within {:?}",
            sizes.deadline
        ));
    }
    pushed.extend(acked);
    // A push whose answer was lost in the failover may have committed: it counts if it is there.
    for p in unsure {
        if queue.get(p.id).await?.is_some() {
            pushed.push(p);
        }
    }
    let events = runlog::read_all(&dir)?;
    row.max_overdue_ms = monitor.worst.as_millis() as u64;
    let mut verdict = verify(
        &db,
        &queue,
        &ns,
        &pushed,
        &events,
        monitor.overdue.len() as u64,
        None,
    )
    .await?;
    if commit.is_none() {
        // What asynchronous replication loses is reported, not failed.
        row.pushes_lost = std::mem::take(&mut verdict.lost);
        row.claims_lost = std::mem::take(&mut verdict.overlaps);
    }
    row.verdict = verdict;
    if !keep_files(env, row) {
        cleanup(&db, &t, &dir).await?;
    }
    drop(standby);
    drop(primary);
    Ok(())
}

/// How long each read-only period of the demote scenario lasts.
const DEMOTED_FOR: Duration = Duration::from_secs(2);
/// The most time from the server taking writes again to the next finished job: the workers'
/// backoff after failed claims (at most 5 s) plus a claim and a completion.
const RECOVERY_BOUND: Duration = Duration::from_secs(10);

/// Jobs of queue `name` completed or dead.
async fn finished(queue: &Arc<dyn Queue>, name: &str) -> anyhow::Result<u64> {
    Ok(queue
        .stats(Some(name))
        .await?
        .iter()
        .map(|s| s.completed + s.dead)
        .sum())
}

/// Removes a run's tables, logs and SQLite files.
async fn cleanup(db: &Db, t: &Target, dir: &Path) -> anyhow::Result<()> {
    db.cleanup(&t.ns).await?;
    let _ = std::fs::remove_dir_all(dir);
    if t.kind == Kind::Sqlite {
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", t.url));
        }
    }
    Ok(())
}

/// Whether a run's tables, files and logs stay for inspection: when asked, and when it failed.
fn keep_files(env: &Env, row: &Row) -> bool {
    env.keep || row.verdict.violations() > 0 || row.max_log_lines_per_s > STORM_LINES_PER_S
}

fn jittered(d: Duration) -> Duration {
    d.mul_f64(0.5 + fastrand::f64())
}

/// `PostgreSQL 15.14 (Debian ...) on x86_64...` -> `PostgreSQL 15.14`; MariaDB versions as is.
pub(crate) fn short_version(v: &str) -> String {
    let words: Vec<&str> = v.split_whitespace().collect();
    match words.as_slice() {
        [first, second, ..] if *first == "PostgreSQL" => format!("PostgreSQL {second}"),
        _ if v.contains("MariaDB") => format!("MariaDB {}", v.split('-').next().unwrap_or(v)),
        _ => v.to_owned(),
    }
}

/// The paused holder: once with the raw API (every transition tried with a stale lease), once
/// with the library's `Worker` as the holder.
async fn pause(env: &Env, strategy: ClaimStrategy, row: &mut Row) -> anyhow::Result<()> {
    let sizes = &env.sizes;
    let ns = namespace(Scenario::Pause);
    let dir = env.work.join(&ns);
    std::fs::create_dir_all(&dir)?;
    let t = target(env, &env.url, &ns, strategy);
    let (db, queue) = crate::child::open(&t).await?;
    queue.migrate().await?;
    db.create_effects_table().await?;
    let k = sizes.paused_jobs;
    let lease = Duration::from_millis(1000);
    let mut pushed = Vec::new();
    let mut bad = 0u64;
    let mut reports = Vec::new();
    let mut started = 0u64;

    // Part 1: a holder that claims with the raw API.
    let raw = push_all(&queue, "raw", &plans(k as u32, (0, 0), false), 25).await?;
    let mut holder = Proc::spawn(
        "holder",
        &[
            "holder".to_owned(),
            "--target".to_owned(),
            serde_json::to_string(&t)?,
            "--queue".to_owned(),
            "raw".to_owned(),
            "--count".to_owned(),
            k.to_string(),
            "--lease-ms".to_owned(),
            lease.as_millis().to_string(),
            "--process".to_owned(),
            "holder".to_owned(),
            "--log".to_owned(),
            dir.join("holder.jsonl").display().to_string(),
        ],
        &dir.join("holder.log"),
    )?;
    started += 1;
    holder.wait_ready(Duration::from_secs(30)).await?;
    let claimed = holder
        .heard
        .claimed
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .unwrap_or(0);
    if claimed != k {
        bail!("the holder claimed {claimed} of {k} jobs");
    }
    holder.signal(Signal::STOP)?;
    row.paused += 1;
    let mut takers = Fleet::new(
        &t,
        "raw",
        4,
        &Sizes {
            rescue: Duration::from_millis(100),
            ..sizes.clone()
        },
        0,
        &dir,
    )?;
    // Process names apart from part 2's.
    takers.incarnations = vec![200];
    takers.start(1).await?;
    wait_finished(&queue, "raw", Duration::from_secs(30)).await?;
    let before = snapshot(&queue, &raw).await?;
    holder.signal(Signal::CONT)?;
    holder.tell("go")?;
    holder.wait_exit(Duration::from_secs(30)).await?;
    let result: HolderResult = holder
        .heard
        .result
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .context("the holder reported nothing")?;
    let after = snapshot(&queue, &raw).await?;
    takers.stop_all().await?;
    started += takers.started;
    reports.extend(takers.reports.iter().copied());
    for (what, outcome) in &result.attempts {
        row.stale_attempts += 1;
        if outcome != "lease_lost" {
            bad += 1;
            row.verdict
                .note(format!("a stale {what} returned {outcome}"));
        }
    }
    if before != after {
        row.verdict
            .note("the stale holder's transitions changed the jobs' rows".into());
        row.verdict.unexplained += 1;
    }
    pushed.extend(raw);

    // Part 2: the library's Worker as the holder, with handlers longer than the lease.
    let slow = push_all(
        &queue,
        "worker",
        &plans(k as u32, (2_000, 2_000), false),
        25,
    )
    .await?;
    let mut holders = Fleet::new(
        &t,
        "worker",
        k,
        &Sizes {
            lease,
            ..sizes.clone()
        },
        0,
        &dir,
    )?;
    holders.start(1).await?;
    wait_running(&queue, "worker", k, Duration::from_secs(30)).await?;
    holders.procs[0].signal(Signal::STOP)?;
    row.paused += 1;
    let mut takers = Fleet::new(
        &t,
        "worker",
        k,
        &Sizes {
            rescue: Duration::from_millis(100),
            ..sizes.clone()
        },
        0,
        &dir,
    )?;
    // The takers do the work at once; their runs are named apart by process.
    takers
        .args
        .extend(["--work-cap-ms".to_owned(), "0".to_owned()]);
    takers.incarnations = vec![100];
    takers.start(1).await?;
    wait_finished(&queue, "worker", Duration::from_secs(60)).await?;
    let before = snapshot(&queue, &slow).await?;
    holders.procs[0].signal(Signal::CONT)?;
    // Give the continued holder time to try its transitions.
    tokio::time::sleep(lease + Duration::from_millis(500)).await;
    let after = snapshot(&queue, &slow).await?;
    holders.stop_all().await?;
    takers.stop_all().await?;
    started += holders.started + takers.started;
    let held = holders.totals();
    row.stale_attempts += held.lease_lost;
    if held.lease_lost != k as u64 {
        row.verdict.unexplained += 1;
        row.verdict.note(format!(
            "the continued Worker reported {} lost leases for its {k} jobs",
            held.lease_lost
        ));
    }
    if before != after {
        row.verdict.unexplained += 1;
        row.verdict
            .note("the continued Worker changed the jobs' rows".into());
    }
    reports.extend(holders.reports.iter().copied());
    reports.extend(takers.reports.iter().copied());
    pushed.extend(slow);

    let events = runlog::read_all(&dir)?;
    let mut v = verify(&db, &queue, &ns, &pushed, &events, 0, None).await?;
    v.unexplained += row.verdict.unexplained + bad;
    v.details.append(&mut row.verdict.details);
    row.verdict = v;
    row.processes = started;
    let mut totals = WorkerReport::default();
    for r in reports {
        totals.claimed += r.claimed;
        totals.completed_in_tx += r.completed_in_tx;
        totals.lease_lost += r.lease_lost;
        totals.pop_errors += r.pop_errors;
        totals.rescued += r.rescued;
    }
    row.workers = totals;
    row.max_log_lines_per_s = log_storm(&dir);
    if !keep_files(env, row) {
        cleanup(&db, &t, &dir).await?;
    }
    Ok(())
}

/// The rows of `jobs` as a comparable value (everything a transition could change).
async fn snapshot(queue: &Arc<dyn Queue>, jobs: &[Pushed]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for p in jobs {
        let j = queue.get(p.id).await?.context("a job vanished")?;
        out.push(format!(
            "{} {} {} {} {:?} {:?} {:?} {:?} {}",
            j.id,
            j.state,
            j.attempts,
            j.run_at,
            j.lease_expires_at,
            j.worker,
            j.last_error,
            j.finished_at,
            j.updated_at
        ));
    }
    Ok(out)
}

async fn wait_finished(queue: &Arc<dyn Queue>, name: &str, within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        let stats = queue.stats(Some(name)).await?;
        if stats
            .iter()
            .all(|s| s.count(JobState::Pending) + s.running == 0)
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("queue {name} did not finish within {within:?}: {stats:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_running(
    queue: &Arc<dyn Queue>,
    name: &str,
    n: usize,
    within: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        let stats = queue.stats(Some(name)).await?;
        if stats.iter().map(|s| s.running).sum::<u64>() >= n as u64 {
            // Let the handlers log their starts.
            tokio::time::sleep(Duration::from_millis(100)).await;
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the holder did not start its {n} jobs within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_lines_of_the_worker_logs_are_summed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("w0.1.log"),
            "2026-01-01T00:00:00.1Z  INFO queue::engine: the sweep settled waiting workflow jobs settled=3\n\
             2026-01-01T00:00:01.1Z  WARN queue::worker: job failed; it will be retried settled=9\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("w1.1.log"),
            "2026-01-01T00:00:00.2Z  INFO queue::engine: the sweep settled waiting workflow jobs settled=2\n",
        )
        .unwrap();
        assert_eq!(swept(dir.path()), 5);
    }
}
