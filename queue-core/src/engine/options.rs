//! [`CommonOptions`]: the settings every backend's builder shares, validated in one place.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::queue::ClaimStrategy;
use crate::retry::RetryPolicy;
use crate::validate::Limits;

/// Settings every backend shares. Each backend's builder embeds one (and offers the same
/// setters, made by [`common_builder_methods!`](crate::common_builder_methods)); settings that
/// only one backend has stay on that backend's builder.
#[derive(Clone, Debug, PartialEq)]
pub struct CommonOptions {
    /// How `pop` claims; `None` keeps the backend's native strategy.
    pub claim_strategy: Option<ClaimStrategy>,
    /// How failures are retried.
    pub retry_policy: RetryPolicy,
    /// Size limits.
    pub limits: Limits,
    /// Most pooled connections; `None` keeps the backend's default.
    pub max_connections: Option<u32>,
    /// How long to wait for a connection before [`Error::Unavailable`].
    pub connect_timeout: Duration,
    /// How many times an operation that hit a deadlock, lock wait timeout or serialization
    /// failure is tried again (with jittered backoff) before the error surfaces. Operations
    /// inside a caller's transaction are never retried: the caller owns that transaction.
    pub lock_retries: u32,
    /// Whether a completed job stays in the table (until retention deletes it) or is deleted by
    /// its completion; see [`keep_completed_jobs`](crate::common_builder_methods).
    pub keep_completed: bool,
}

impl Default for CommonOptions {
    fn default() -> Self {
        CommonOptions {
            claim_strategy: None,
            retry_policy: RetryPolicy::default(),
            limits: Limits::default(),
            max_connections: None,
            connect_timeout: Duration::from_secs(5),
            lock_retries: 5,
            keep_completed: true,
        }
    }
}

/// Most lock-conflict retries; past this an operation is stuck behind something else.
pub const MAX_LOCK_RETRIES: u32 = 20;

/// A statement that runs longer than this is reported by the database driver's own logging at
/// debug level, not as a warning: a queue's claims and completions wait on row locks and on the
/// write lock by design, and under load every such wait would otherwise reach the service's logs
/// as a warning of its own (drivers also report slow pool checkouts at debug level). The queue
/// reports what matters itself: failed calls, backoffs and lost leases.
pub const SLOW_STATEMENT: Duration = Duration::from_secs(1);

impl CommonOptions {
    /// Checks every setting, and that the claim strategy is one of `supported` (the first is
    /// the default); returns the strategy to use. `backend` names the backend in messages.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the setting.
    pub fn validate(&self, backend: &str, supported: &[ClaimStrategy]) -> Result<ClaimStrategy> {
        let claim = match (self.claim_strategy, supported.first()) {
            (Some(c), _) if supported.contains(&c) => c,
            (Some(c), _) => {
                let names: Vec<&str> = supported.iter().map(ClaimStrategy::as_str).collect();
                return Err(Error::invalid(
                    "claim_strategy",
                    format!(
                        "{backend} supports {}, not {}",
                        names.join(" and "),
                        c.as_str()
                    ),
                ));
            }
            (None, Some(&c)) => c,
            (None, None) => {
                return Err(Error::invalid("claim_strategy", "no strategy is supported"))
            }
        };
        if self.max_connections == Some(0) {
            return Err(Error::invalid("max_connections", "must be at least 1"));
        }
        if self.connect_timeout.is_zero() {
            return Err(Error::invalid("connect_timeout", "must be more than zero"));
        }
        if self.connect_timeout > Duration::from_secs(600) {
            return Err(Error::invalid(
                "connect_timeout",
                "must be at most 10 minutes",
            ));
        }
        if self.limits.max_batch == 0 {
            return Err(Error::invalid("limits.max_batch", "must be at least 1"));
        }
        if self.limits.max_pop == 0 {
            return Err(Error::invalid("limits.max_pop", "must be at least 1"));
        }
        if self.limits.max_payload_bytes == 0 {
            return Err(Error::invalid(
                "limits.max_payload_bytes",
                "must be at least 1",
            ));
        }
        // The smallest metadata object and output: `{}` and a one-digit number.
        if self.limits.max_meta_bytes < 2 {
            return Err(Error::invalid(
                "limits.max_meta_bytes",
                "must be at least 2 (the empty object, {})",
            ));
        }
        if self.limits.max_output_bytes == 0 {
            return Err(Error::invalid(
                "limits.max_output_bytes",
                "must be at least 1",
            ));
        }
        if self.lock_retries > MAX_LOCK_RETRIES {
            return Err(Error::invalid(
                "lock_retries",
                format!("must be at most {MAX_LOCK_RETRIES}"),
            ));
        }
        self.retry_policy.validate()?;
        Ok(claim)
    }
}

/// Expands, inside a builder's `impl` block, into the setters of [`CommonOptions`]. The
/// builder must have a field `common: CommonOptions`.
#[macro_export]
macro_rules! common_builder_methods {
    () => {
        /// How `pop` claims (see the crate's README for the strategies this backend supports and
        /// its default). A strategy the backend cannot do is refused by `connect`.
        pub fn claim_strategy(mut self, strategy: $crate::ClaimStrategy) -> Self {
            self.common.claim_strategy = Some(strategy);
            self
        }

        /// How failures are retried (default [`RetryPolicy::default`]($crate::RetryPolicy)).
        pub fn retry_policy(mut self, policy: $crate::RetryPolicy) -> Self {
            self.common.retry_policy = policy;
            self
        }

        /// Size limits (default [`Limits::default`]($crate::Limits)).
        pub fn limits(mut self, limits: $crate::Limits) -> Self {
            self.common.limits = limits;
            self
        }

        /// Most pooled connections (the default depends on the backend; see its README).
        pub fn max_connections(mut self, n: u32) -> Self {
            self.common.max_connections = Some(n);
            self
        }

        /// How long to wait for a connection before `Error::Unavailable` (default 5 s).
        pub fn connect_timeout(mut self, timeout: ::std::time::Duration) -> Self {
            self.common.connect_timeout = timeout;
            self
        }

        /// How many times an operation that hit a deadlock, lock wait timeout or serialization
        /// failure is tried again, with jittered backoff, before the error surfaces (default 5;
        /// never inside the caller's own transactions).
        pub fn lock_retries(mut self, n: u32) -> Self {
            self.common.lock_retries = n;
            self
        }

        /// Whether a job that completes stays in the table as `completed` until
        /// [retention](crate::Retention) deletes it (`true`, the default), or is deleted by
        /// the statement that completes it (`false`), as Graphile Worker does and Solid
        /// Queue's `preserve_finished_jobs = false`: no history of completed jobs, and on
        /// PostgreSQL a completion that writes no index entry (see BENCHMARKS.md for what it
        /// buys on each backend). Kept as `completed` all the same: a job of a workflow (its
        /// dependents read its state), a job whose uniqueness covers the completed state (the
        /// rule holds until retention deletes it), and a job completed with an output (the
        /// output is there to be read). Dead and cancelled jobs are always kept.
        pub fn keep_completed_jobs(mut self, keep: bool) -> Self {
            self.common.keep_completed = keep;
            self
        }

        /// Every shared setting at once (what `dbqueue::connect_with` uses).
        pub fn common_options(mut self, options: $crate::engine::CommonOptions) -> Self {
            self.common = options;
            self
        }
    };
}
