//! What the dashboard asks of a queue beyond single calls, written once over the `Queue` trait
//! so it works on every backend: keyset pages of jobs, the dedup-key search, and the bulk retry
//! of dead jobs in bounded chunks.

use queue_core::{Error, Job, JobId, JobState, ListRequest, Queue, Result};

/// Which jobs a list shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    /// Only this queue.
    pub(crate) queue: Option<String>,
    /// Only this state.
    pub(crate) state: Option<JobState>,
    /// Only jobs of this kind.
    pub(crate) kind: Option<String>,
}

/// Up to `limit` jobs matching `filter`, newest first; with `before`, only jobs older than that
/// one (the page after a page that ended with it). Each page is one indexed range read, however
/// deep the paging goes: no rows are skipped with OFFSET.
pub(crate) async fn page(
    queue: &dyn Queue,
    filter: &Filter,
    limit: usize,
    before: Option<JobId>,
) -> Result<Vec<Job>> {
    let req = ListRequest {
        queue: filter.queue.clone(),
        state: filter.state,
        limit,
        before,
        kind: filter.kind.clone(),
    };
    req.validate()?;
    queue.list(req).await
}

/// What a dedup-key search found.
#[derive(Debug)]
pub(crate) struct DedupSearch {
    /// The jobs whose dedup key is the one searched, newest first.
    pub(crate) found: Vec<Job>,
    /// How many jobs were read.
    pub(crate) scanned: usize,
    /// Whether older jobs were left unread (the budget ran out).
    pub(crate) truncated: bool,
}

/// Jobs with the dedup key `key`, reading at most `pages` pages of `page_size` jobs of `filter`,
/// newest first. The `Queue` trait has no lookup by dedup key, so this reads jobs and compares;
/// the budget bounds what one search costs the database.
pub(crate) async fn search_dedup(
    queue: &dyn Queue,
    filter: &Filter,
    key: &str,
    page_size: usize,
    pages: usize,
) -> Result<DedupSearch> {
    let mut out = DedupSearch {
        found: Vec::new(),
        scanned: 0,
        truncated: false,
    };
    let mut before = None;
    for n in 0.. {
        if n == pages {
            out.truncated = true;
            break;
        }
        let jobs = page(queue, filter, page_size, before).await?;
        out.scanned += jobs.len();
        out.found.extend(
            jobs.iter()
                .filter(|j| j.dedup_key.as_deref() == Some(key))
                .cloned(),
        );
        if jobs.len() < page_size {
            break;
        }
        before = jobs.last().map(|j| j.id);
    }
    Ok(out)
}

/// What a bulk retry did.
#[derive(Debug, Default)]
pub(crate) struct BulkRetry {
    /// Jobs brought back to pending.
    pub(crate) retried: u64,
    /// Jobs that could not be retried, with the reason (e.g. a live job holds the dedup key).
    pub(crate) refused: Vec<(JobId, Error)>,
    /// Whether the run stopped at its limit.
    pub(crate) stopped_at_limit: bool,
    /// The database error that stopped the run early, after `retried` jobs.
    pub(crate) error: Option<Error>,
}

/// Retries the dead jobs of `queue`, newest first, reading `chunk` of them at a time and
/// touching at most `limit` in this call. The cursor moves past every job it saw, so a job that
/// dies again while the run goes on is not retried twice, and a job that cannot be retried does
/// not stop the run. A database error stops it, and is reported with what was done before.
pub(crate) async fn retry_dead(
    queue: &dyn Queue,
    name: &str,
    chunk: usize,
    limit: usize,
) -> BulkRetry {
    let filter = Filter {
        queue: Some(name.to_owned()),
        state: Some(JobState::Dead),
        kind: None,
    };
    let mut out = BulkRetry::default();
    let mut seen = 0usize;
    let mut before = None;
    loop {
        let take = chunk.min(limit - seen);
        if take == 0 {
            out.stopped_at_limit = true;
            break;
        }
        let jobs = match page(queue, &filter, take, before).await {
            Ok(jobs) => jobs,
            Err(e) => {
                out.error = Some(e);
                break;
            }
        };
        for job in &jobs {
            match queue.retry(job.id).await {
                Ok(()) => out.retried += 1,
                // Changed by someone else since it was read (retried, pruned): nothing to do.
                Err(Error::InvalidState { .. } | Error::NotFound { .. }) => {}
                Err(e @ (Error::Duplicate { .. } | Error::InvalidInput { .. })) => {
                    out.refused.push((job.id, e))
                }
                Err(e) => {
                    out.error = Some(e);
                    return out;
                }
            }
        }
        seen += jobs.len();
        if jobs.len() < take {
            break;
        }
        before = jobs.last().map(|j| j.id);
    }
    out
}
