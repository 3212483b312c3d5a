//! Retry policy: exponential backoff with jitter and a cap. Core decides what a failure does;
//! backends only persist the decision.

use std::time::Duration;

use crate::job::{Failure, FailureKind, Lease};

/// Exponential backoff: attempt `n` waits `base * factor^(n-1)`, capped at `max`, then spread by
/// up to `jitter` of itself either way so that jobs failing together do not retry together.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Wait after the first failed attempt.
    pub base: Duration,
    /// Growth per attempt (at least 1).
    pub factor: f64,
    /// Longest wait.
    pub max: Duration,
    /// Fraction of the wait (0.0..=1.0) by which it is randomly shortened or lengthened.
    pub jitter: f64,
}

impl Default for RetryPolicy {
    /// 1 s, doubling, capped at 1 hour, ±20 %.
    fn default() -> Self {
        RetryPolicy {
            base: Duration::from_secs(1),
            factor: 2.0,
            max: Duration::from_secs(3600),
            jitter: 0.2,
        }
    }
}

/// What a failure does to a job, decided in core and persisted by the backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailDecision {
    /// Back to pending, due after this delay from the database's now.
    Retry(Duration),
    /// Dead: permanent failure or attempts used up.
    Dead,
}

impl RetryPolicy {
    /// Checks the policy: a finite `factor` of at least 1, a `jitter` within 0..=1, and a `max`
    /// of at most ten years.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) naming `retry_policy.<field>`.
    pub fn validate(&self) -> crate::Result<()> {
        if !self.factor.is_finite() || self.factor < 1.0 {
            return Err(crate::Error::invalid(
                "retry_policy.factor",
                "must be a finite number of at least 1",
            ));
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err(crate::Error::invalid(
                "retry_policy.jitter",
                "must be between 0 and 1",
            ));
        }
        if self.max > crate::validate::MAX_DELAY {
            return Err(crate::Error::invalid(
                "retry_policy.max",
                "must be at most 10 years",
            ));
        }
        Ok(())
    }

    /// The wait before attempt `attempt + 1`, without jitter.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exp = attempt.saturating_sub(1).min(64) as i32;
        let secs = self.base.as_secs_f64() * self.factor.max(1.0).powi(exp);
        if !secs.is_finite() || secs >= self.max.as_secs_f64() {
            self.max
        } else {
            Duration::from_secs_f64(secs)
        }
    }

    /// The wait before attempt `attempt + 1`, with jitter applied; never above `max`.
    pub fn backoff_jittered(&self, attempt: u32) -> Duration {
        let d = self.backoff(attempt).as_secs_f64();
        let j = self.jitter.clamp(0.0, 1.0);
        let spread = d * j * (fastrand::f64() * 2.0 - 1.0);
        Duration::from_secs_f64((d + spread).clamp(0.0, self.max.as_secs_f64()))
    }

    /// Decides what `failure` does to the job held by `lease`.
    pub fn decide(&self, lease: &Lease, failure: &Failure) -> FailDecision {
        let attempts_left = lease.attempt < lease.max_attempts;
        match failure.kind {
            FailureKind::Permanent => FailDecision::Dead,
            _ if !attempts_left => FailDecision::Dead,
            FailureKind::RetryAfter(d) => FailDecision::Retry(d.min(crate::validate::MAX_DELAY)),
            FailureKind::Retryable => FailDecision::Retry(self.backoff_jittered(lease.attempt)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobId;

    fn lease(attempt: u32, max: u32) -> Lease {
        Lease {
            job_id: JobId::new(),
            queue: "q".into(),
            token: uuid::Uuid::new_v4(),
            expires_at: chrono::Utc::now(),
            attempt,
            max_attempts: max,
            workflow: None,
        }
    }

    #[test]
    fn grows_exponentially_and_caps() {
        let p = RetryPolicy {
            base: Duration::from_secs(1),
            factor: 2.0,
            max: Duration::from_secs(10),
            jitter: 0.0,
        };
        assert_eq!(p.backoff(1), Duration::from_secs(1));
        assert_eq!(p.backoff(2), Duration::from_secs(2));
        assert_eq!(p.backoff(4), Duration::from_secs(8));
        assert_eq!(p.backoff(5), Duration::from_secs(10));
        assert_eq!(p.backoff(1000), Duration::from_secs(10));
    }

    #[test]
    fn jitter_stays_within_bounds() {
        let p = RetryPolicy::default();
        for _ in 0..1000 {
            let d = p.backoff_jittered(3).as_secs_f64();
            assert!((3.2..=4.8).contains(&d), "{d}");
        }
    }

    #[test]
    fn decisions() {
        let p = RetryPolicy::default();
        assert!(matches!(
            p.decide(&lease(1, 3), &Failure::retryable("x")),
            FailDecision::Retry(_)
        ));
        assert_eq!(
            p.decide(&lease(3, 3), &Failure::retryable("x")),
            FailDecision::Dead
        );
        assert_eq!(
            p.decide(&lease(1, 3), &Failure::permanent("x")),
            FailDecision::Dead
        );
        assert_eq!(
            p.decide(
                &lease(1, 3),
                &Failure::retry_after("x", Duration::from_secs(7))
            ),
            FailDecision::Retry(Duration::from_secs(7))
        );
    }
}
