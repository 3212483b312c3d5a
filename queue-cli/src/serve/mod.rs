//! `serve`: the web dashboard, an operator's view of every queue in the database, through the
//! `Queue` trait only, so it works on every backend.
//!
//! Pages are rendered on the server from compile-time checked templates; one small script of
//! the project's own refreshes the overview and asks before destructive actions. See
//! [`security`] for who may do what.

use std::io::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;
use queue_core::validate::redact_url;

use crate::admin::Target;
use crate::duration;
use crate::failure::CliError;

mod actions;
mod app;
mod bulk;
mod chart;
mod jobs;
mod pages;
mod prometheus;
pub mod security;
mod views;

pub use app::{router, Dashboard, DashboardConfig};
pub use security::HostPolicy;

/// Shortest token accepted, so that guessing it is hopeless.
const MIN_TOKEN_CHARS: usize = 16;

/// `serve`.
#[derive(Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    target: Target,
    /// Address and port to listen on. Any address other than loopback needs a token.
    #[arg(long, default_value = "127.0.0.1:8787")]
    listen: String,
    /// Show the queues and jobs but hide every action, and refuse every request that would
    /// change a job.
    #[arg(long)]
    read_only: bool,
    /// Require this token (at least 16 characters) to see any page: typed once at /login, or
    /// sent as `Authorization: Bearer <token>`. Prefer the environment variable, which other
    /// users of the machine cannot see in the process list.
    #[arg(long, env = "QUEUE_DASHBOARD_TOKEN", hide_env_values = true)]
    auth_token: Option<String>,
    /// How often the overview refreshes itself, e.g. 5s.
    #[arg(long, default_value = "5s")]
    refresh: String,
}

impl std::fmt::Debug for ServeArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeArgs")
            .field("url", &redact_url(&self.target.url))
            .field("listen", &self.listen)
            .field("read_only", &self.read_only)
            .field("auth_token", &self.auth_token.as_ref().map(|_| "(set)"))
            .field("refresh", &self.refresh)
            .finish()
    }
}

/// The checked settings of `serve`.
#[derive(Debug)]
struct Settings {
    listen: SocketAddr,
    token: Option<String>,
    refresh: Duration,
}

fn settings(args: &ServeArgs) -> Result<Settings, CliError> {
    let listen: SocketAddr = args.listen.trim().parse().map_err(|_| {
        CliError::usage(format!(
            "invalid listen: {:?} is not an address and port such as 127.0.0.1:8787",
            crate::table::clip(&args.listen, 64)
        ))
    })?;
    let token = args
        .auth_token
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned);
    if let Some(t) = &token {
        if t.chars().count() < MIN_TOKEN_CHARS {
            return Err(CliError::usage(format!(
                "invalid auth_token: must be at least {MIN_TOKEN_CHARS} characters \
                 (e.g. the output of `openssl rand -hex 16`)"
            )));
        }
    }
    if !listen.ip().is_loopback() && token.is_none() {
        return Err(CliError::usage(format!(
            "invalid listen: {listen} is not a loopback address, so others could read payloads \
             and change jobs; set a token with --auth-token or QUEUE_DASHBOARD_TOKEN"
        )));
    }
    let refresh = duration::parse("refresh", &args.refresh)?;
    if !(Duration::from_secs(1)..=Duration::from_secs(3600)).contains(&refresh) {
        return Err(CliError::usage(
            "invalid refresh: must be between 1s and 1h",
        ));
    }
    Ok(Settings {
        listen,
        token,
        refresh,
    })
}

pub(crate) async fn run(args: ServeArgs) -> Result<(), CliError> {
    let s = settings(&args)?;
    let queue = args.target.connect().await?;
    // A missing schema or an unreachable server is reported now, once, rather than on every
    // page.
    queue.stats(None).await?;
    let listener = tokio::net::TcpListener::bind(s.listen)
        .await
        .map_err(|e| CliError::other(format!("cannot listen on {}: {e}", s.listen)))?;
    let local = listener
        .local_addr()
        .map_err(|e| CliError::other(format!("cannot read the listening address: {e}")))?;
    let database = redact_url(&args.target.url);
    let config = DashboardConfig {
        read_only: args.read_only,
        auth_token: s.token.clone(),
        hosts: if local.ip().is_loopback() {
            HostPolicy::Loopback
        } else {
            HostPolicy::Any
        },
        refresh: s.refresh,
        cookie_scope: format!("_{}", local.port()),
        database: database.clone(),
        ..DashboardConfig::default()
    };
    // The recorder goes in before the first queue value registers its metric handles.
    if let Err(e) = prometheus::recorder() {
        eprintln!("warning: /metrics is off: {e}");
    }
    let dashboard = Dashboard::new(queue, config);
    println!("dashboard: http://{local}/");
    let _ = std::io::stdout().flush();
    eprintln!(
        "serving {database} ({}){}{}; press Ctrl-C to stop",
        dashboard.backend,
        if args.read_only { ", read-only" } else { "" },
        if s.token.is_some() {
            ", token required"
        } else {
            ", no token (loopback only)"
        },
    );
    axum::serve(listener, router(dashboard))
        .with_graceful_shutdown(crate::signal::stop_requested())
        .await
        .map_err(|e| CliError::other(format!("the dashboard stopped: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ServeArgs,
    }

    fn check(argv: &[&str]) -> Result<Settings, String> {
        let cli = Cli::try_parse_from(std::iter::once("serve").chain(argv.iter().copied()))
            .map_err(|e| e.to_string())?;
        settings(&cli.args).map_err(|e| e.message().to_owned())
    }

    #[test]
    fn loopback_by_default() {
        let s = check(&[]).unwrap();
        assert_eq!(s.listen.to_string(), "127.0.0.1:8787");
        assert_eq!(s.refresh, Duration::from_secs(5));
    }

    #[test]
    fn another_address_needs_a_token() {
        let e = check(&["--listen", "0.0.0.0:8787"]).unwrap_err();
        assert!(e.starts_with("invalid listen:"), "{e}");
        assert!(e.contains("--auth-token"), "{e}");
        let s = check(&[
            "--listen",
            "0.0.0.0:8787",
            "--auth-token",
            "0123456789abcdef",
        ])
        .unwrap();
        assert!(s.token.is_some());
    }

    #[test]
    fn bad_settings_name_their_field() {
        assert!(check(&["--listen", "localhost"])
            .unwrap_err()
            .starts_with("invalid listen:"));
        let e = check(&["--auth-token", "short"]).unwrap_err();
        assert!(
            e.starts_with("invalid auth_token: must be at least 16"),
            "{e}"
        );
        assert!(!e.contains("short"), "the token is never echoed: {e}");
        assert!(check(&["--refresh", "0s"])
            .unwrap_err()
            .starts_with("invalid refresh:"));
    }

    #[test]
    fn debug_output_hides_the_token_and_password() {
        let cli = Cli::try_parse_from([
            "serve",
            "--url",
            "postgres://u:hunter2@db/x",
            "--auth-token",
            "0123456789abcdef-secret",
        ])
        .unwrap();
        let shown = format!("{:?}", cli.args);
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(!shown.contains("secret"), "{shown}");
    }
}
