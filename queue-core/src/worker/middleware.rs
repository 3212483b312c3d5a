//! Code around every handler run: [`Middleware`] sees the job's [`JobContext`] before the run
//! and the handler's result after it, may add values to the context ([`Extensions`]) and may
//! replace the result (e.g. turn an error into a snooze).
//!
//! Order: the middleware added first is the outermost. The worker's own
//! ([`super::WorkerBuilder::middleware`]) wrap those of a kind
//! ([`super::WorkerBuilder::kind_middleware`]), which wrap the handler; so with `a` then `b`
//! on the worker and `k` on the kind, a run is `a` before, `b` before, `k` before, the handler,
//! `k` after, `b` after, `a` after.
//!
//! A worker without middleware calls its handlers directly, as if this module did not exist.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;

use super::handler::{Handler, JobContext, JobError};

/// Wraps every handler run of a worker, or of one kind. Write one with [`middleware_fn`] or
/// implement it for a type that carries state.
///
/// `call` gets the run's context and the rest of the chain; it runs the rest with
/// [`Next::run`] (or does not, to answer for the handler) and returns the result the worker
/// records. A panic in the handler, a timeout, a lost lease and the shutdown deadline stop the
/// whole chain and are recorded by the worker as they are without middleware: the code after
/// [`Next::run`] does not run then (the worker's events report them,
/// [`super::Worker::events`]).
pub trait Middleware: Send + Sync + 'static {
    /// Runs around the rest of the chain.
    fn call(&self, ctx: JobContext, next: Next) -> BoxFuture<'static, Result<(), JobError>>;
}

/// A middleware made from a closure taking the context and the rest of the chain:
///
/// ```
/// use std::time::Duration;
/// use dbqueue::worker::{middleware_fn, JobError};
///
/// // Busy upstream: try again in a minute, without spending the attempt.
/// let busy_is_a_snooze = middleware_fn(|ctx, next| async move {
///     match next.run(ctx).await {
///         Err(e) if e.message().contains("429") => Err(JobError::snooze(Duration::from_secs(60))),
///         other => other,
///     }
/// });
/// # let _ = busy_is_a_snooze;
/// ```
pub fn middleware_fn<F, Fut>(f: F) -> impl Middleware
where
    F: Fn(JobContext, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), JobError>> + Send + 'static,
{
    FnMiddleware(f)
}

struct FnMiddleware<F>(F);

impl<F, Fut> Middleware for FnMiddleware<F>
where
    F: Fn(JobContext, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), JobError>> + Send + 'static,
{
    fn call(&self, ctx: JobContext, next: Next) -> BoxFuture<'static, Result<(), JobError>> {
        (self.0)(ctx, next).boxed()
    }
}

/// The rest of a middleware chain, down to the handler.
pub struct Next {
    chain: Arc<[Arc<dyn Middleware>]>,
    at: usize,
    handler: Arc<dyn Handler>,
}

impl fmt::Debug for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Next")
            .field("middleware_left", &(self.chain.len() - self.at))
            .finish_non_exhaustive()
    }
}

impl Next {
    pub(crate) fn new(chain: Arc<[Arc<dyn Middleware>]>, handler: Arc<dyn Handler>) -> Self {
        Next {
            chain,
            at: 0,
            handler,
        }
    }

    /// Runs the next middleware, or the handler after the last one.
    pub fn run(self, ctx: JobContext) -> BoxFuture<'static, Result<(), JobError>> {
        match self.chain.get(self.at).cloned() {
            Some(middleware) => middleware.call(
                ctx,
                Next {
                    at: self.at + 1,
                    ..self
                },
            ),
            None => self.handler.call(ctx),
        }
    }
}

/// Values a middleware adds to one run's [`JobContext`] for the handler (and the middleware
/// inside it) to read, one per type: `ctx.extensions_mut().insert(RequestId(..))`, then
/// `ctx.extensions().get::<RequestId>()`. Nothing is allocated until the first insert.
#[derive(Default)]
pub struct Extensions {
    map: Option<HashMap<TypeId, Box<dyn Any + Send + Sync>>>,
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.map.as_ref().map_or(0, |m| m.len()))
            .finish()
    }
}

impl Extensions {
    /// Adds `value`, returning the value of its type that was there before.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        self.map
            .get_or_insert_with(HashMap::new)
            .insert(TypeId::of::<T>(), Box::new(value))
            .and_then(|old| old.downcast::<T>().ok().map(|b| *b))
    }

    /// The value of type `T`, if one was added.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map
            .as_ref()?
            .get(&TypeId::of::<T>())
            .and_then(|b| b.downcast_ref::<T>())
    }

    /// The value of type `T`, mutably.
    pub fn get_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        self.map
            .as_mut()?
            .get_mut(&TypeId::of::<T>())
            .and_then(|b| b.downcast_mut::<T>())
    }

    /// Takes the value of type `T` out.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        self.map
            .as_mut()?
            .remove(&TypeId::of::<T>())
            .and_then(|b| b.downcast::<T>().ok().map(|b| *b))
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.map.as_ref().is_none_or(|m| m.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct RequestId(u32);

    #[test]
    fn extensions_keep_one_value_per_type() {
        let mut ext = Extensions::default();
        assert!(ext.is_empty() && ext.map.is_none());
        assert_eq!(ext.insert(RequestId(1)), None);
        assert_eq!(ext.insert(RequestId(2)), Some(RequestId(1)));
        ext.insert("text");
        assert_eq!(ext.get::<RequestId>(), Some(&RequestId(2)));
        assert_eq!(ext.get::<&str>(), Some(&"text"));
        ext.get_mut::<RequestId>().unwrap().0 = 3;
        assert_eq!(ext.remove::<RequestId>(), Some(RequestId(3)));
        assert_eq!(ext.get::<RequestId>(), None);
        assert!(!ext.is_empty());
    }
}
