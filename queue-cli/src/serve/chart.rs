//! Throughput over the last hour: jobs completed and jobs that went dead, per queue and minute,
//! counted from the jobs' own `finished_at` timestamps, and drawn as server-rendered SVG.

use std::collections::BTreeMap;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use queue_core::{Job, JobState, Queue, Result};

use super::jobs::{self, Filter};

/// Minutes in the window.
pub(crate) const MINUTES: usize = 60;

/// Per-minute counts of one queue; index 0 is the oldest minute, the last is the current one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Series {
    pub(crate) completed: [u32; MINUTES],
    pub(crate) dead: [u32; MINUTES],
}

impl Default for Series {
    fn default() -> Self {
        Series {
            completed: [0; MINUTES],
            dead: [0; MINUTES],
        }
    }
}

impl Series {
    /// Completed jobs in the window.
    pub(crate) fn completed_total(&self) -> u64 {
        self.completed.iter().map(|&n| u64::from(n)).sum()
    }

    /// Dead jobs in the window.
    pub(crate) fn dead_total(&self) -> u64 {
        self.dead.iter().map(|&n| u64::from(n)).sum()
    }
}

/// The throughput of every queue that finished a job in the window.
#[derive(Clone, Debug)]
pub(crate) struct Throughput {
    /// The start of the window (the start of the oldest minute).
    pub(crate) start: DateTime<Utc>,
    /// Per queue.
    pub(crate) queues: BTreeMap<String, Series>,
    /// How many finished jobs were read.
    pub(crate) scanned: usize,
    /// Whether the scan stopped at its budget, so older finishes may be missing.
    pub(crate) truncated: bool,
}

impl Throughput {
    /// An empty window ending with the minute of `now`.
    pub(crate) fn empty(now: DateTime<Utc>) -> Self {
        let minute = now.duration_trunc(TimeDelta::minutes(1)).unwrap_or(now);
        Throughput {
            start: minute - TimeDelta::minutes(MINUTES as i64 - 1),
            queues: BTreeMap::new(),
            scanned: 0,
            truncated: false,
        }
    }

    /// The minute `at` falls in, if it is inside the window.
    pub(crate) fn bucket(&self, at: DateTime<Utc>) -> Option<usize> {
        let offset = (at - self.start).num_seconds();
        if offset < 0 {
            return None;
        }
        let i = (offset / 60) as usize;
        (i < MINUTES).then_some(i)
    }

    /// Counts one finished job.
    pub(crate) fn add(&mut self, job: &Job) {
        let Some(finished) = job.finished_at else {
            return;
        };
        let Some(i) = self.bucket(finished) else {
            return;
        };
        let series = self.queues.entry(job.queue.clone()).or_default();
        match job.state {
            JobState::Completed => series.completed[i] = series.completed[i].saturating_add(1),
            JobState::Dead => series.dead[i] = series.dead[i].saturating_add(1),
            _ => {}
        }
    }

    /// The series of `queue` (all zeros when it finished nothing in the window).
    pub(crate) fn series(&self, queue: &str) -> Series {
        self.queues.get(queue).cloned().unwrap_or_default()
    }
}

/// How much a computation of the chart may read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    /// Jobs per `list` call (at most 1000).
    pub(crate) page: usize,
    /// Most `list` calls per finished state.
    pub(crate) pages: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            page: 1000,
            pages: 5,
        }
    }
}

/// Reads the newest completed and dead jobs of every queue, newest id first, and counts those
/// that finished in the hour ending at `now`.
///
/// Ids are creation-ordered, so a state's scan ends at the end of its jobs, at a page in which
/// every job finished before the window (older jobs finished earlier still, except the rare job
/// that waited longer than a whole page of younger ones), or at the budget, which is then
/// reported as `truncated`.
pub(crate) async fn compute(
    queue: &dyn Queue,
    now: DateTime<Utc>,
    budget: Budget,
) -> Result<Throughput> {
    let mut out = Throughput::empty(now);
    for state in [JobState::Completed, JobState::Dead] {
        let filter = Filter {
            queue: None,
            state: Some(state),
            kind: None,
        };
        let mut before = None;
        let mut pages = 0;
        loop {
            if pages == budget.pages {
                out.truncated = true;
                break;
            }
            let page = jobs::page(queue, &filter, budget.page, before).await?;
            pages += 1;
            out.scanned += page.len();
            let mut any_in_window = false;
            for job in &page {
                if job.finished_at.is_some_and(|f| f >= out.start) {
                    any_in_window = true;
                }
                out.add(job);
            }
            if page.len() < budget.page || !any_in_window {
                break;
            }
            before = page.last().map(|j| j.id);
        }
    }
    Ok(out)
}

/// One bar of a chart: a minute's completed part at the bottom, its dead part stacked on top.
#[derive(Clone, Debug)]
pub(crate) struct Bar {
    pub(crate) x: u32,
    pub(crate) width: u32,
    pub(crate) completed_y: u32,
    pub(crate) completed_height: u32,
    pub(crate) dead_y: u32,
    pub(crate) dead_height: u32,
    /// What the bar shows, in words (the bar's tooltip).
    pub(crate) label: String,
}

/// The geometry of one chart, for the template.
#[derive(Clone, Debug)]
pub(crate) struct Chart {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) bars: Vec<Bar>,
    /// The largest per-minute total, the top of the scale.
    pub(crate) peak: u32,
    /// The chart in words, for screen readers.
    pub(crate) summary: String,
}

/// Lays out `series` in a `width` x `height` box; minutes without jobs draw nothing.
pub(crate) fn draw(series: &Series, start: DateTime<Utc>, width: u32, height: u32) -> Chart {
    let slot = (width / MINUTES as u32).max(1);
    let bar_width = if slot > 2 { slot - 1 } else { slot };
    let peak = (0..MINUTES)
        .map(|i| series.completed[i].saturating_add(series.dead[i]))
        .max()
        .unwrap_or(0);
    let scale = |n: u32| -> u32 {
        if n == 0 || peak == 0 {
            0
        } else {
            // At least one pixel, so a single job in a busy hour still shows.
            ((u64::from(n) * u64::from(height)).div_ceil(u64::from(peak)) as u32).max(1)
        }
    };
    let mut bars = Vec::new();
    for i in 0..MINUTES {
        let (c, d) = (series.completed[i], series.dead[i]);
        if c == 0 && d == 0 {
            continue;
        }
        let completed_height = scale(c).min(height);
        let dead_height = scale(d).min(height - completed_height);
        let minute = start + TimeDelta::minutes(i as i64);
        bars.push(Bar {
            x: i as u32 * slot,
            width: bar_width,
            completed_y: height - completed_height,
            completed_height,
            dead_y: height - completed_height - dead_height,
            dead_height,
            label: format!("{} UTC: {c} completed, {d} dead", minute.format("%H:%M")),
        });
    }
    let summary = format!(
        "last hour: {} completed, {} dead; busiest minute {peak}",
        series.completed_total(),
        series.dead_total()
    );
    Chart {
        width: slot * MINUTES as u32,
        height,
        bars,
        peak,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use queue_core::JobId;

    fn job(queue: &str, state: JobState, finished: DateTime<Utc>) -> Job {
        Job {
            id: JobId::new(),
            queue: queue.into(),
            payload: serde_json::value::to_raw_value(&()).unwrap(),
            priority: 0,
            state,
            attempts: 1,
            max_attempts: 3,
            run_at: finished,
            lease_expires_at: None,
            worker: None,
            last_error: None,
            dedup_key: None,
            kind: None,
            meta: None,
            timeout: None,
            snoozes: 0,
            errors: Vec::new(),
            output: None,
            workflow: None,
            step: None,
            blocked_by: None,
            depends_on: Vec::new(),
            created_at: finished,
            updated_at: finished,
            finished_at: Some(finished),
        }
    }

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn the_window_is_the_hour_ending_with_the_current_minute() {
        let t = Throughput::empty(at("2026-01-01T12:30:45Z"));
        assert_eq!(t.start, at("2026-01-01T11:31:00Z"));
        assert_eq!(t.bucket(at("2026-01-01T11:30:59Z")), None);
        assert_eq!(t.bucket(at("2026-01-01T11:31:00Z")), Some(0));
        assert_eq!(t.bucket(at("2026-01-01T12:30:59Z")), Some(59));
        assert_eq!(t.bucket(at("2026-01-01T12:31:00Z")), None);
    }

    #[test]
    fn finished_jobs_are_counted_by_queue_state_and_minute() {
        let mut t = Throughput::empty(at("2026-01-01T12:30:45Z"));
        t.add(&job("a", JobState::Completed, at("2026-01-01T12:30:01Z")));
        t.add(&job("a", JobState::Completed, at("2026-01-01T12:30:02Z")));
        t.add(&job("a", JobState::Dead, at("2026-01-01T12:29:00Z")));
        t.add(&job("b", JobState::Completed, at("2026-01-01T11:00:00Z")));
        t.add(&job("b", JobState::Cancelled, at("2026-01-01T12:30:00Z")));
        let a = t.series("a");
        assert_eq!(a.completed[59], 2);
        assert_eq!(a.dead[58], 1);
        assert_eq!((a.completed_total(), a.dead_total()), (2, 1));
        assert_eq!(t.series("b"), Series::default());
    }

    #[test]
    fn bars_stack_dead_on_completed_and_scale_to_the_peak() {
        let mut s = Series::default();
        s.completed[0] = 10;
        s.dead[0] = 10;
        s.completed[59] = 1;
        let chart = draw(&s, at("2026-01-01T11:31:00Z"), 180, 40);
        assert_eq!(chart.peak, 20);
        assert_eq!(chart.width, 180);
        assert_eq!(chart.bars.len(), 2);
        let first = &chart.bars[0];
        assert_eq!((first.completed_height, first.dead_height), (20, 20));
        assert_eq!(first.dead_y, 0);
        assert_eq!(first.label, "11:31 UTC: 10 completed, 10 dead");
        let last = &chart.bars[1];
        assert_eq!(last.x, 59 * 3);
        assert_eq!(last.completed_height, 2, "small counts stay visible");
        assert_eq!(last.dead_height, 0);
    }
}
