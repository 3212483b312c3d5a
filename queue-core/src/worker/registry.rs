//! Which handler runs a claimed job: the handler registered for its kind, else the worker's
//! default handler. A job that has neither is failed by the worker (by the retry policy), with
//! an error that names its kind and the kinds this worker runs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::handler::{Handler, JobContext, JobError};
use super::middleware::{Middleware, Next};
use crate::retry::RetryPolicy;

/// A handler and the options it runs jobs with.
pub(crate) struct Route {
    pub(crate) handler: Arc<dyn Handler>,
    /// The kind's timeout, for jobs pushed without one.
    pub(crate) timeout: Option<Duration>,
    /// The kind's backoff, instead of the queue's.
    pub(crate) retry_policy: Option<RetryPolicy>,
    /// Most snoozes per job.
    pub(crate) max_snoozes: u32,
    /// The middleware around the handler, outermost first (the worker's, then the kind's);
    /// `None`: the handler is called directly.
    pub(crate) chain: Option<Arc<[Arc<dyn Middleware>]>>,
}

impl Route {
    /// Starts the run of `ctx`: through the middleware when there is any.
    pub(crate) fn call(&self, ctx: JobContext) -> BoxFuture<'static, Result<(), JobError>> {
        match &self.chain {
            None => self.handler.call(ctx),
            Some(chain) => Next::new(chain.clone(), self.handler.clone()).run(ctx),
        }
    }
}

/// The handlers of one worker, by kind.
pub(crate) struct Registry {
    pub(crate) kinds: BTreeMap<String, Route>,
    pub(crate) default: Option<Route>,
}

impl Registry {
    /// The route of a job of `kind`, or why there is none.
    pub(crate) fn route(&self, kind: Option<&str>) -> Result<&Route, String> {
        if let Some(route) = kind.and_then(|k| self.kinds.get(k)) {
            return Ok(route);
        }
        self.default.as_ref().ok_or_else(|| {
            let known = self.kinds.keys().map(String::as_str).collect::<Vec<_>>();
            let known = if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            };
            match kind {
                Some(k) => format!(
                    "no handler for kind {k:?} in this worker (its kinds: {known}); retried by the retry policy, so a worker that has one can take it"
                ),
                None => format!(
                    "the job has no kind and this worker has no default handler (its kinds: {known})"
                ),
            }
        })
    }

    /// The kinds with a handler, by name.
    pub(crate) fn kinds(&self) -> impl Iterator<Item = &str> {
        self.kinds.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::handler::FnHandler;

    fn route() -> Route {
        Route {
            handler: Arc::new(FnHandler(|_ctx: JobContext| async {
                Ok::<(), JobError>(())
            })),
            timeout: None,
            retry_policy: None,
            max_snoozes: 1,
            chain: None,
        }
    }

    #[test]
    fn unknown_kinds_are_named_with_the_known_ones() {
        let mut kinds = BTreeMap::new();
        kinds.insert("b".to_owned(), route());
        kinds.insert("a".to_owned(), route());
        let r = Registry {
            kinds,
            default: None,
        };
        assert!(r.route(Some("a")).is_ok());
        let why = r.route(Some("zz")).err().unwrap();
        assert!(why.contains("\"zz\"") && why.contains("a, b"), "{why}");
        let why = r.route(None).err().unwrap();
        assert!(why.contains("no kind"), "{why}");
        let with_default = Registry {
            kinds: BTreeMap::new(),
            default: Some(route()),
        };
        assert!(with_default.route(Some("zz")).is_ok());
        assert!(with_default.route(None).is_ok());
    }
}
