//! The test runner: a custom harness (on `libtest-mimic`) that decides at start-up which cases
//! can run, so that the closing line of each test binary says how many cases ran on which
//! backend. A case that cannot run (no server, a server the backend could not prepare, a missing
//! capability) is reported as ignored with its reason, never as passed.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

use crate::backend::{SqlBackend, SqlHarness};
use crate::harness::{case_limit, required, run_on, Discovery, Harness, Server, Skipped};
use crate::suite::{catalogue, Case};

/// A boxed future of a test.
pub type TestFuture = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;

/// A test of one backend that is not a case of the catalogue because it checks something of its
/// dialect only (a query plan, a server limit, a driver detail). It runs once per server.
#[derive(Clone, Copy)]
pub struct DialectTest {
    /// Its name; the test is called `<backend>::dialect::<name>`.
    pub name: &'static str,
    /// The test, given the server.
    pub run: fn(Server) -> TestFuture,
}

/// The [`DialectTest`]s named by these `async fn(Server) -> anyhow::Result<()>`.
#[macro_export]
macro_rules! dialect_tests {
    ($($test:ident),* $(,)?) => {
        vec![$($crate::DialectTest {
            name: stringify!($test),
            run: |server| Box::pin($test(server)),
        }),*]
    };
}

/// A test of one backend that needs no server: a check of the test binary's own setup (such as
/// the tables its teardown drops). It runs whether a server was found or not, and passes or
/// fails as any test does; it is called `<backend>::local::<name>`.
#[derive(Clone, Copy)]
pub struct LocalTest {
    /// Its name.
    pub name: &'static str,
    /// The test.
    pub run: fn() -> anyhow::Result<()>,
}

/// The [`LocalTest`]s named by these `fn() -> anyhow::Result<()>`.
#[macro_export]
macro_rules! local_tests {
    ($($test:ident),* $(,)?) => {
        vec![$($crate::LocalTest {
            name: stringify!($test),
            run: $test,
        }),*]
    };
}

/// Runs the whole catalogue on every claim strategy of the backend `B`, and `dialect`.
pub fn main<B: SqlBackend>(dialect: Vec<DialectTest>) -> ExitCode {
    main_with::<B>(B::CLAIMS, dialect)
}

/// Runs the whole catalogue on the claim strategies `claims` of the backend `B` (what a
/// profile that lacks some of them has), and `dialect`.
pub fn main_with<B: SqlBackend>(
    claims: &[queue_core::ClaimStrategy],
    dialect: Vec<DialectTest>,
) -> ExitCode {
    let harnesses: Vec<Arc<dyn Harness>> = claims
        .iter()
        .map(|c| Arc::new(SqlHarness::<B>::new(*c)) as Arc<dyn Harness>)
        .collect();
    run_suite(B::NAME, harnesses, dialect)
}

/// The engine profile the suite forces, from `QUEUE_TEST_PROFILE` (`distributed`, or an
/// engine's name such as `cockroachdb`); `None` when unset or `detect`.
///
/// # Panics
/// When the variable names no profile: a misspelt profile must not quietly test the default.
pub fn test_profile() -> Option<queue_core::Profile> {
    let value = std::env::var("QUEUE_TEST_PROFILE").ok()?;
    match value.parse::<queue_core::Profile>() {
        Ok(queue_core::Profile::Detect) => None,
        Ok(p) => Some(p),
        Err(e) => panic!("QUEUE_TEST_PROFILE: {e}"),
    }
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

/// Runs the catalogue against each of `harnesses` (one per claim strategy of `backend`), and
/// the `dialect` tests, as one test binary.
pub fn run_suite(
    backend: &'static str,
    harnesses: Vec<Arc<dyn Harness>>,
    dialect: Vec<DialectTest>,
) -> ExitCode {
    run_suite_with(backend, harnesses, dialect, Vec::new())
}

/// [`run_suite`], and the `local` tests, which run without a server.
pub fn run_suite_with(
    backend: &'static str,
    harnesses: Vec<Arc<dyn Harness>>,
    dialect: Vec<DialectTest>,
    local: Vec<LocalTest>,
) -> ExitCode {
    let args = Arguments::from_args();
    let Some(first) = harnesses.first() else {
        eprintln!("{backend}: no harness to run");
        return ExitCode::FAILURE;
    };
    let discovery = match runtime() {
        Ok(rt) => rt.block_on(first.servers()),
        Err(e) => Discovery::Missing(format!("cannot start a runtime: {e}")),
    };
    let cases = catalogue();
    let mut trials: Vec<Trial> = local.iter().map(|t| local_trial(backend, *t)).collect();
    match discovery {
        Discovery::Servers(servers) => {
            let servers = Arc::new(servers);
            for harness in &harnesses {
                for case in &cases {
                    trials.push(case_trial(backend, harness.clone(), servers.clone(), *case));
                }
            }
            for test in &dialect {
                trials.push(dialect_trial(backend, servers.clone(), *test));
            }
        }
        Discovery::Missing(why) => {
            let names = harnesses
                .iter()
                .flat_map(|h| {
                    cases
                        .iter()
                        .map(move |c| format!("{backend}::{}::{}", h.claim().as_str(), c.name))
                })
                .chain(
                    dialect
                        .iter()
                        .map(|t| format!("{backend}::dialect::{}", t.name)),
                );
            if required(backend) {
                println!("{backend} is required by QUEUE_TEST_REQUIRE but missing: {why}; every case fails");
                let message =
                    format!("{backend} is required by QUEUE_TEST_REQUIRE but missing: {why}");
                trials.extend(names.map(|name| {
                    let message = message.clone();
                    Trial::test(name, move || Err(Failed::from(message)))
                }));
            } else {
                let n = harnesses.len() * cases.len() + dialect.len();
                println!("{backend}: {n} tests ignored: {why}");
                trials.extend(names.map(|name| {
                    let why = why.clone();
                    Trial::ignorable_test(name, move || Ok(Completion::ignored_with(why)))
                }));
            }
        }
    }
    libtest_mimic::run(&args, trials).exit_code()
}

/// What a test's result means to the runner.
fn outcome(result: anyhow::Result<()>) -> Result<Completion, Failed> {
    match result {
        Ok(()) => Ok(Completion::Completed),
        Err(e) => match e.downcast_ref::<Skipped>() {
            Some(Skipped(why)) => Ok(Completion::ignored_with(why)),
            None => Err(Failed::from(format!("{e:?}"))),
        },
    }
}

/// Runs a test on each of `servers` with `run`: failed as soon as it fails on one, ignored as
/// soon as one run is ignored; ignored too, with the reason, when a server is unusable (it still
/// runs on the others, and the reason says where it passed). Passed only when it passed on every
/// server.
fn on_each(
    servers: &[Server],
    mut run: impl FnMut(&Server) -> anyhow::Result<()>,
) -> Result<Completion, Failed> {
    let mut passed = Vec::new();
    let mut unusable = Vec::new();
    for server in servers {
        if let Some(why) = &server.unusable {
            unusable.push(format!("not run on {}: {why}", server.label));
            continue;
        }
        let done = outcome(run(server).map_err(|e| e.context(format!("on {}", server.label))))?;
        if let Completion::Ignored { .. } = done {
            return Ok(done);
        }
        passed.push(server.label.as_str());
    }
    if unusable.is_empty() {
        return Ok(Completion::Completed);
    }
    let mut why = unusable.join("; ");
    if !passed.is_empty() {
        why.push_str(&format!(" (passed on {})", passed.join(", ")));
    }
    Ok(Completion::ignored_with(why))
}

fn case_trial(
    backend: &'static str,
    harness: Arc<dyn Harness>,
    servers: Arc<Vec<Server>>,
    case: Case,
) -> Trial {
    let name = format!("{backend}::{}::{}", harness.claim().as_str(), case.name);
    Trial::ignorable_test(name.clone(), move || {
        let rt = runtime().map_err(|e| Failed::from(e.to_string()))?;
        let started = std::time::Instant::now();
        let done = on_each(&servers, |server| {
            rt.block_on(run_on(harness.clone(), server, case.name, &case.run))
        });
        report_slow(&name, started.elapsed());
        done
    })
}

/// A case slower than this is named on stderr with its time, so that a test run that grows
/// slower shows where.
const SLOW: std::time::Duration = std::time::Duration::from_secs(20);

fn report_slow(name: &str, took: std::time::Duration) {
    if took >= SLOW {
        eprintln!("slow: {name} took {:.1} s", took.as_secs_f64());
    }
}

fn local_trial(backend: &'static str, test: LocalTest) -> Trial {
    Trial::test(format!("{backend}::local::{}", test.name), move || {
        (test.run)().map_err(|e| Failed::from(format!("{e:?}")))
    })
}

fn dialect_trial(backend: &'static str, servers: Arc<Vec<Server>>, test: DialectTest) -> Trial {
    Trial::ignorable_test(format!("{backend}::dialect::{}", test.name), move || {
        let rt = runtime().map_err(|e| Failed::from(e.to_string()))?;
        on_each(&servers, |server| {
            rt.block_on(async {
                let limit = case_limit();
                let mut task = tokio::spawn((test.run)(server.clone()));
                match tokio::time::timeout(limit, &mut task).await {
                    Ok(joined) => {
                        joined.map_err(|e| anyhow::anyhow!("{} did not finish: {e}", test.name))?
                    }
                    Err(_) => {
                        task.abort();
                        Err(anyhow::anyhow!(
                            "{} did not finish within {} s (QUEUE_TEST_CASE_TIMEOUT sets the limit)",
                            test.name,
                            limit.as_secs()
                        ))
                    }
                }
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(unusable: &[Option<&str>]) -> Vec<Server> {
        unusable
            .iter()
            .enumerate()
            .map(|(i, why)| Server {
                unusable: why.map(str::to_owned),
                ..Server::new(format!("s{i}"), "")
            })
            .collect()
    }

    fn ignored(c: Result<Completion, Failed>) -> Option<String> {
        match c {
            Ok(Completion::Ignored { reason }) => Some(reason.unwrap_or_default()),
            _ => None,
        }
    }

    #[test]
    fn an_unusable_server_makes_the_test_ignored_never_passed() {
        let mut ran = Vec::new();
        let done = on_each(&servers(&[None, Some("refused: 5058")]), |s| {
            ran.push(s.label.clone());
            Ok(())
        });
        assert_eq!(ran, ["s0"], "the ready server still runs");
        assert_eq!(
            ignored(done).as_deref(),
            Some("not run on s1: refused: 5058 (passed on s0)")
        );
        // A failure on the ready server is a failure.
        let done = on_each(&servers(&[None, Some("refused")]), |_| {
            Err(anyhow::anyhow!("broken"))
        });
        assert!(done.is_err());
        // Every server unusable: ignored, and nothing runs.
        let done = on_each(&servers(&[Some("a"), Some("b")]), |_| panic!("ran"));
        assert_eq!(
            ignored(done).as_deref(),
            Some("not run on s0: a; not run on s1: b")
        );
        // All ready and passing: passed.
        let done = on_each(&servers(&[None, None]), |_| Ok(()));
        assert!(matches!(done, Ok(Completion::Completed)));
    }
}
