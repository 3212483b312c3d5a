//! The statements, loaded from `queries/*.sql` once per queue value with the validated schema
//! name spliced in, and the expansion of their row lists (`{rows}`, `{leases}`, ...) into
//! numbered placeholders. Only placeholders are ever expanded: values are bound.
//!
//! tiberius sends every parameterised statement through `sp_executesql` with placeholders
//! `@P1..@Pn`, at most [`MAX_PARAMETERS`] per request (SQL Server's limit, error 8003).

use std::sync::Arc;
use std::time::Duration;

use queue_core::engine::micros;
use queue_core::engine::statements::{load, placeholders, splice, Placeholder};

/// Most parameters one request may carry.
pub(crate) const MAX_PARAMETERS: usize = 2_100;
/// Values each job binds in `job_insert`.
pub(crate) const INSERT_VALUES: usize = 14;
/// Jobs per INSERT (14 parameters each, 2,086 in all: 150 would be exactly the limit, with no
/// room left).
pub(crate) const INSERT_ROWS: usize = 149;
/// `(id, token)` or `(id, version)` pairs per statement (2 parameters each, plus the fixed
/// ones), and at most this many rows locked by one statement, far below the 5,000 locks at
/// which SQL Server escalates to a table lock.
pub(crate) const PAIR_ROWS: usize = 500;
/// Values per `IN (...)` list of `job_dedup_live`.
pub(crate) const IN_LIST: usize = 1_000;
/// Most rows one claim or prune statement touches (lock escalation starts at 5,000 locks).
pub(crate) const MAX_ROWS_PER_STATEMENT: usize = 1_000;
/// Ids per statement of the bulk operations (`job_cancel_many`, `job_retry_many`,
/// `job_delete_many`): the engine's whole batch of 1,000 in one statement, one parameter each
/// (plus at most the three finished states), and no more rows than any other statement locks.
pub(crate) const BULK_IDS: usize = MAX_ROWS_PER_STATEMENT;
/// Rows of `workflow_jobs` (2 parameters each, plus the workflow) or `job_deps` (3 each) per
/// INSERT of a workflow's push.
pub(crate) const WORKFLOW_ROWS: usize = 500;

// Every chunk fits one request, and no statement locks enough rows to escalate to a table lock
// (5,000 locks by one statement).
const _: () = {
    assert!(INSERT_VALUES * INSERT_ROWS <= MAX_PARAMETERS);
    assert!(4 + 2 * PAIR_ROWS <= MAX_PARAMETERS);
    assert!(2 * IN_LIST <= MAX_PARAMETERS);
    assert!(BULK_IDS + 5 <= MAX_PARAMETERS);
    assert!(BULK_IDS <= MAX_ROWS_PER_STATEMENT);
    // The steps bind one more value than two per row, the dependencies three per row.
    assert!(3 * WORKFLOW_ROWS < MAX_PARAMETERS && WORKFLOW_ROWS <= MAX_ROWS_PER_STATEMENT);
    assert!(PAIR_ROWS <= MAX_ROWS_PER_STATEMENT && INSERT_ROWS <= MAX_ROWS_PER_STATEMENT);
    assert!(MAX_ROWS_PER_STATEMENT < 5_000);
};

macro_rules! queries {
    ($dir:literal; $($name:ident),* $(,)?) => {
        /// Every statement of the dialect, as sent (comments dropped, schema spliced in).
        #[derive(Debug)]
        pub(crate) struct Statements {
            $(pub(crate) $name: Arc<str>,)*
        }

        impl Statements {
            /// All statements, with `splices` (validated identifiers only) replaced.
            pub(crate) fn new(splices: &[(&str, &str)]) -> Self {
                Statements {
                    $($name: Arc::from(load(
                        include_str!(concat!($dir, "/", stringify!($name), ".sql")),
                        splices,
                    )),)*
                }
            }

            /// Every statement with its name, for checks.
            #[cfg(test)]
            pub(crate) fn all(&self) -> Vec<(&'static str, &str)> {
                vec![$((stringify!($name), &*self.$name),)*]
            }
        }
    };
}

// The statements are the files of `queries/`, listed by `build.rs`: `queries!(dir; names)`.
include!(concat!(env!("OUT_DIR"), "/queries.rs"));

/// `count` tuples made from `template`, whose `{}` become consecutive placeholders from
/// `@P{first}`: `tuples("({}, {})", 3, 2)` is `(@P3, @P4), (@P5, @P6)`.
fn tuples(template: &str, first: usize, count: usize) -> String {
    let style = Placeholder::Numbered {
        prefix: "@P",
        first,
    };
    placeholders(style, template, count, ", ")
}

impl Statements {
    /// An INSERT of `rows` jobs ([`INSERT_VALUES`] each, from `@P1`).
    pub(crate) fn job_insert_rows(&self, rows: usize) -> String {
        let row = "({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})";
        splice(&self.job_insert, &[("{rows}", tuples(row, 1, rows))])
    }

    /// `job_dedup_live` for `queues` queues and `keys` keys (queues first, from `@P1`).
    pub(crate) fn job_dedup_live_for(&self, queues: usize, keys: usize) -> String {
        splice(
            &self.job_dedup_live,
            &[
                ("{queues}", tuples("{}", 1, queues)),
                ("{keys}", tuples("{}", 1 + queues, keys)),
            ],
        )
    }

    /// `job_claim_candidates` for `n` candidates (after the 4 fixed values).
    pub(crate) fn job_claim_candidates_for(&self, n: usize) -> String {
        let row = "(CAST({} AS BINARY(16)), CAST({} AS BINARY(8)))";
        splice(
            &self.job_claim_candidates,
            &[("{candidates}", tuples(row, 5, n))],
        )
    }

    /// `job_complete_many` (or, with `delete`, `job_complete_many_delete`) for `n` leases
    /// (from `@P1`).
    pub(crate) fn job_complete_many_for(&self, n: usize, delete: bool) -> String {
        let row = "(CAST({} AS BINARY(16)), {})";
        let statement = if delete {
            &self.job_complete_many_delete
        } else {
            &self.job_complete_many
        };
        splice(statement, &[("{leases}", tuples(row, 1, n))])
    }

    /// `job_rescue` for `n` jobs (after the 3 fixed values).
    pub(crate) fn job_rescue_for(&self, n: usize) -> String {
        let row = "(CAST({} AS BINARY(16)), {})";
        splice(&self.job_rescue, &[("{jobs}", tuples(row, 4, n))])
    }

    /// `job_prune` for `n` states (after the 4 fixed values).
    pub(crate) fn job_prune_for(&self, n: usize) -> String {
        splice(&self.job_prune, &[("{states}", tuples("{}", 5, n))])
    }

    /// `job_ids` for `n` states (after the 6 fixed values).
    pub(crate) fn job_ids_for(&self, n: usize) -> String {
        splice(&self.job_ids, &[("{states}", tuples("{}", 7, n))])
    }

    /// `job_count` for `n` states (after the 4 fixed values).
    pub(crate) fn job_count_for(&self, n: usize) -> String {
        splice(&self.job_count, &[("{states}", tuples("{}", 5, n))])
    }

    /// `job_cancel_many` for `n` ids (from `@P1`).
    pub(crate) fn job_cancel_many_for(&self, n: usize) -> String {
        splice(&self.job_cancel_many, &[("{ids}", ids(n))])
    }

    /// `job_retry_many` for `n` ids (from `@P1`).
    pub(crate) fn job_retry_many_for(&self, n: usize) -> String {
        splice(&self.job_retry_many, &[("{ids}", ids(n))])
    }

    /// `job_delete_many` for `n` ids (from `@P1`), then `states` states.
    pub(crate) fn job_delete_many_for(&self, n: usize, states: usize) -> String {
        splice(
            &self.job_delete_many,
            &[("{ids}", ids(n)), ("{states}", tuples("{}", 1 + n, states))],
        )
    }

    /// `workflow_steps_insert` for `n` jobs (after the workflow, `@P1`).
    pub(crate) fn workflow_steps_insert_for(&self, n: usize) -> String {
        splice(
            &self.workflow_steps_insert,
            &[("{steps}", tuples("({}, {})", 2, n))],
        )
    }

    /// `workflow_deps_insert` for `n` dependencies (from `@P1`).
    pub(crate) fn workflow_deps_insert_for(&self, n: usize) -> String {
        splice(
            &self.workflow_deps_insert,
            &[("{edges}", tuples("({}, {}, {})", 1, n))],
        )
    }

    /// `workflow_dependents` for `n` finished jobs (from `@P1`).
    pub(crate) fn workflow_dependents_for(&self, n: usize) -> String {
        splice(&self.workflow_dependents, &[("{ids}", ids(n))])
    }

    /// `workflow_block` for `n` waiting jobs (from `@P1`).
    pub(crate) fn workflow_block_for(&self, n: usize) -> String {
        splice(&self.workflow_block, &[("{ids}", ids(n))])
    }

    /// `workflow_promote` for `n` waiting jobs (from `@P1`).
    pub(crate) fn workflow_promote_for(&self, n: usize) -> String {
        splice(&self.workflow_promote, &[("{ids}", ids(n))])
    }

    /// `workflow_reopen` for `n` retried jobs (from `@P1`).
    pub(crate) fn workflow_reopen_for(&self, n: usize) -> String {
        splice(&self.workflow_reopen, &[("{ids}", ids(n))])
    }

    /// `workflow_blocked` for `n` jobs (from `@P1`).
    pub(crate) fn workflow_blocked_for(&self, n: usize) -> String {
        splice(&self.workflow_blocked, &[("{ids}", ids(n))])
    }

    /// `job_workflows` for `n` jobs (from `@P1`).
    pub(crate) fn job_workflows_for(&self, n: usize) -> String {
        splice(&self.job_workflows, &[("{ids}", ids(n))])
    }

    /// `job_dependents_count` for `n` states (after the 4 fixed values).
    pub(crate) fn job_dependents_count_for(&self, n: usize) -> String {
        splice(
            &self.job_dependents_count,
            &[("{states}", tuples("{}", 5, n))],
        )
    }

    /// `workflow_prune` for `n` workflows (after the 6 ages' values, from `@P7`).
    pub(crate) fn workflow_prune_for(&self, n: usize) -> String {
        splice(
            &self.workflow_prune,
            &[("{ids}", tuples("CAST({} AS BINARY(16))", 7, n))],
        )
    }
}

/// `n` ids from `@P1`, each compared as the jobs table stores it.
fn ids(n: usize) -> String {
    tuples("CAST({} AS BINARY(16))", 1, n)
}

/// A duration as DATEADD takes it: whole seconds and the microseconds left over, each an `int`
/// (DATEADD's number is an int, so microseconds alone would overflow after about 35.8 minutes).
/// Saturates at `i32::MAX` seconds (68 years); every duration that reaches SQL is validated far
/// below that (leases at most a day, delays and prune ages at most ten years).
pub(crate) fn dateadd_parts(d: Duration) -> (i32, i32) {
    let us = micros(d);
    let secs = i32::try_from(us / 1_000_000).unwrap_or(i32::MAX);
    let rest = i32::try_from(us % 1_000_000).unwrap_or(0);
    (secs, rest)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use queue_core::validate::{MAX_DELAY, MAX_LEASE};
    use queue_core::JobState;

    use super::*;

    /// The placeholder numbers of `sql`, in order of appearance (repeats included).
    fn placeholders(sql: &str) -> Vec<usize> {
        let bytes = sql.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while let Some(at) = sql[i..].find("@P") {
            let start = i + at + 2;
            let end = start
                + bytes[start..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
            if end > start {
                out.push(sql[start..end].parse().unwrap());
            }
            i = end.max(start);
        }
        out
    }

    /// Asserts that `sql` uses exactly `@P1..@Pn` (each at least once, none missing, none
    /// beyond) and stays within the parameter limit; returns n.
    fn gapless(name: &str, sql: &str, n: usize) -> usize {
        let used: BTreeSet<usize> = placeholders(sql).into_iter().collect();
        let want: BTreeSet<usize> = (1..=n).collect();
        assert_eq!(
            used, want,
            "{name}: placeholders are not exactly @P1..@P{n}:\n{sql}"
        );
        assert!(n <= MAX_PARAMETERS, "{name}: {n} parameters");
        assert!(!has_marker(sql), "{name}: an unexpanded marker:\n{sql}");
        n
    }

    /// Whether `sql` still holds a `{marker}` (a word in braces) to expand.
    fn has_marker(sql: &str) -> bool {
        sql.split('{').skip(1).any(|rest| {
            rest.split_once('}').is_some_and(|(word, _)| {
                !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        })
    }

    fn sql() -> Statements {
        Statements::new(&[("{schema}", "jobs_s")])
    }

    #[test]
    fn every_statement_binds_gapless_placeholders() {
        let s = sql();
        // The fixed statements, with their parameter counts as the driver binds them.
        for (name, n) in [
            ("server_version", 0),
            ("now", 0),
            ("migration_lock", 2),
            ("migration_table", 0),
            ("migration_applied", 0),
            ("migration_record", 2),
            ("job_claim", 6),
            ("job_candidates", 2),
            ("job_insert_unique", 14),
            ("job_unique_replace", 5),
            ("job_unique_holder", 1),
            ("job_complete", 3),
            ("job_fail_retry", 6),
            ("job_fail_dead", 4),
            ("job_release", 2),
            ("job_extend", 4),
            ("job_state", 1),
            ("job_expired", 1),
            ("job_cancel", 1),
            ("job_retry", 1),
            ("job_reschedule", 4),
            ("job_snooze", 5),
            ("job_meta_get", 2),
            ("job_meta_set", 4),
            ("job_get", 1),
            ("job_list", 5),
            ("job_stats", 2),
            ("job_live_leases", 1),
            ("job_key_leases", 1),
            ("job_key_next", 3),
            ("job_claim_key", 6),
            ("job_claim_unkeyed", 5),
            ("job_key_waiting", 2),
            ("maintenance_claim", 4),
            ("maintenance_release", 4),
            ("queue_control_get", 1),
            ("queue_control_lock", 1),
            ("queue_control_list", 0),
            ("queue_set_paused", 2),
            ("queue_set_limit", 2),
            ("queue_set_rate", 3),
            ("queue_rate_state", 1),
            ("queue_rate_record", 3),
            ("queue_set_key_limit", 2),
            ("queue_set_fair", 2),
            ("queue_key_cursor", 2),
            ("queue_set_key_rate", 3),
            ("queue_key_rate_get", 2),
            ("queue_key_rate_put", 4),
            ("schedule_get", 1),
            ("schedule_list", 0),
            ("schedule_insert", 18),
            ("schedule_update", 18),
            ("schedule_touch", 2),
            ("schedule_advance", 5),
            ("schedule_delete", 2),
            ("workflow_insert", 4),
            ("workflow_lock", 1),
            ("workflow_seal", 1),
            ("workflow_waiting", 2),
            ("workflow_get", 1),
            ("workflow_jobs", 1),
            ("workflow_edges", 1),
            ("workflow_list", 2),
            ("workflow_prune_lock", 5),
            ("job_deps", 1),
        ] {
            let text = s.all().into_iter().find(|(n, _)| *n == name).unwrap().1;
            gapless(name, text, n);
        }
        // The expanded ones, at one row and at the largest chunk the driver sends.
        for rows in [1, 2, INSERT_ROWS] {
            gapless("job_insert", &s.job_insert_rows(rows), INSERT_VALUES * rows);
        }
        for (q, k) in [(1, 1), (3, 2), (IN_LIST, IN_LIST)] {
            gapless("job_dedup_live", &s.job_dedup_live_for(q, k), q + k);
        }
        for n in [1, 7, PAIR_ROWS] {
            gapless(
                "job_claim_candidates",
                &s.job_claim_candidates_for(n),
                4 + 2 * n,
            );
            gapless(
                "job_complete_many",
                &s.job_complete_many_for(n, false),
                2 * n,
            );
            gapless(
                "job_complete_many_delete",
                &s.job_complete_many_for(n, true),
                2 * n,
            );
            gapless("job_rescue", &s.job_rescue_for(n), 3 + 2 * n);
        }
        for n in 1..=3 {
            gapless("job_prune", &s.job_prune_for(n), 4 + n);
        }
        for n in 1..=5 {
            gapless("job_ids", &s.job_ids_for(n), 6 + n);
            gapless("job_count", &s.job_count_for(n), 4 + n);
            gapless(
                "job_dependents_count",
                &s.job_dependents_count_for(n),
                4 + n,
            );
        }
        for n in [1, 7, WORKFLOW_ROWS] {
            gapless(
                "workflow_steps_insert",
                &s.workflow_steps_insert_for(n),
                1 + 2 * n,
            );
            gapless(
                "workflow_deps_insert",
                &s.workflow_deps_insert_for(n),
                3 * n,
            );
        }
        for n in [1, 7, BULK_IDS] {
            gapless("workflow_dependents", &s.workflow_dependents_for(n), n);
            gapless("workflow_block", &s.workflow_block_for(n), n);
            gapless("workflow_promote", &s.workflow_promote_for(n), n);
            gapless("workflow_reopen", &s.workflow_reopen_for(n), n);
            gapless("workflow_blocked", &s.workflow_blocked_for(n), n);
            gapless("job_workflows", &s.job_workflows_for(n), n);
            gapless("workflow_prune", &s.workflow_prune_for(n), 6 + n);
            gapless("job_cancel_many", &s.job_cancel_many_for(n), n);
            gapless("job_retry_many", &s.job_retry_many_for(n), n);
            for states in 1..=3 {
                gapless(
                    "job_delete_many",
                    &s.job_delete_many_for(n, states),
                    n + states,
                );
            }
        }
    }

    #[test]
    fn bulk_statements_take_their_lists_as_placeholders() {
        let s = sql();
        let f = |sql: &str| flat(sql);
        // Ids are compared as the jobs table stores them, each by primary key.
        let cancel = f(&s.job_cancel_many_for(2));
        assert!(cancel.contains(
            "WHERE id IN (CAST(@P1 AS BINARY(16)), CAST(@P2 AS BINARY(16))) \
             AND state IN (N'pending', N'running', N'waiting')"
        ));
        // One job: the same states (a waiting step of a workflow is cancelled too).
        assert!(f(&s.job_cancel).ends_with(
            "WHERE id = CAST(@P1 AS BINARY(16)) AND state IN (N'pending', N'running', N'waiting')"
        ));
        let retry = f(&s.job_retry_many_for(1));
        assert!(retry.ends_with(
            "WHERE id IN (CAST(@P1 AS BINARY(16))) AND state IN (N'dead', N'cancelled')"
        ));
        assert!(retry
            .contains("attempts = 0, snoozes = 0, blocked_by = NULL, run_at = SYSUTCDATETIME()"));
        // Delete: the states after the ids, and never a running job.
        let delete = f(&s.job_delete_many_for(2, 2));
        assert!(delete.ends_with(
            "WHERE id IN (CAST(@P1 AS BINARY(16)), CAST(@P2 AS BINARY(16))) \
             AND state IN (@P3, @P4) AND state <> N'running'"
        ));
        // job_ids: job_list's cursor and order, the age as DATEADD's seconds plus
        // microseconds, the states last.
        let ids = f(&s.job_ids_for(2));
        assert!(ids.starts_with("SELECT TOP (@P6) id, queue FROM [jobs_s].[jobs] WHERE"));
        for part in [
            "(@P1 IS NULL OR queue = @P1) AND state IN (@P7, @P8)",
            "(@P2 IS NULL OR kind = @P2)",
            "(@P3 IS NULL OR created_at < DATEADD(MICROSECOND, -@P4, \
             DATEADD(SECOND, -@P3, SYSUTCDATETIME())))",
            "(@P5 IS NULL OR id < CAST(@P5 AS BINARY(16)))",
        ] {
            assert!(ids.contains(part), "job_ids lacks {part}: {ids}");
        }
        assert!(ids.ends_with("ORDER BY id DESC OPTION (RECOMPILE)"));
        assert!(f(&s.job_list).contains("ORDER BY id DESC"));
        // job_count: the same filter, without cursor and limit.
        let count = f(&s.job_count_for(1));
        let filter = |sql: &str| {
            sql.split_once("WHERE ")
                .unwrap()
                .1
                .split(" ORDER BY")
                .next()
                .unwrap()
                .replace(" OPTION (RECOMPILE)", "")
        };
        assert!(count.starts_with("SELECT COUNT_BIG(*) AS n FROM [jobs_s].[jobs] WHERE"));
        let one = f(&s.job_ids_for(1));
        assert!(filter(&one).starts_with(&filter(&count).replace("@P5", "@P7")));
    }

    #[test]
    fn stats_find_the_queues_by_seeks_and_count_finished_jobs_up_to_the_cap() {
        let s = sql();
        let text = flat(&s.job_stats);
        // One request: the queues go into a table variable, compared in the binary collation.
        assert!(text.contains(
            "DECLARE @queues TABLE ( queue NVARCHAR(128) COLLATE Latin1_General_100_BIN2 \
             NOT NULL PRIMARY KEY, running BIGINT NOT NULL );"
        ));
        // Running jobs: one pass over the lease index, counted per queue.
        assert!(text.contains(
            "SELECT queue, COUNT_BIG(*) FROM [jobs_s].[jobs] WHERE state = N'running' \
             AND (@P1 IS NULL OR queue = @P1) GROUP BY queue;"
        ));
        // Waiting jobs: the same, over the waiting index, into their own table variable; their
        // queues are listed too.
        assert!(text.contains(
            "SELECT queue, COUNT_BIG(*) FROM [jobs_s].[jobs] WHERE state = N'waiting' \
             AND (@P1 IS NULL OR queue = @P1) GROUP BY queue;"
        ));
        assert!(text.contains(
            "INSERT INTO @queues (queue, running) SELECT w.queue, 0 FROM @waiting AS w \
             WHERE NOT EXISTS (SELECT 1 FROM @queues AS q WHERE q.queue = w.queue);"
        ));
        // Before the look-up of the one queue asked for, so that it is not listed twice.
        assert!(
            text.find("FROM @waiting AS w").unwrap()
                < text.find("IF @P1 IS NOT NULL AND NOT EXISTS").unwrap()
        );
        assert!(text.contains("LEFT JOIN @waiting AS w ON w.queue = q.queue"));
        assert!(text.contains("WHERE COALESCE(w.waiting, 0) + p.available"));
        assert_eq!(text.matches("GROUP BY").count(), 2, "{text}");
        // The others: skipped to, one seek per index and queue, only without a queue filter.
        assert!(text.contains("WHILE @P1 IS NULL BEGIN"));
        for step in [
            "SELECT TOP (1) queue FROM [jobs_s].[jobs] WHERE state = N'pending' \
             AND queue > @after ORDER BY queue",
            "SELECT TOP (1) queue FROM [jobs_s].[jobs] WHERE state IN (N'completed', N'dead', \
             N'cancelled') AND queue > @after ORDER BY queue",
        ] {
            assert!(text.contains(step), "job_stats lacks `{step}`");
        }
        assert!(text.contains("SELECT @next = MIN(n.queue)"));
        assert!(text.contains("IF @next IS NULL BREAK;"));
        assert!(text.contains("SET @after = @next; END;"));
        // No recursive CTE, which could not take TOP.
        assert!(!text.contains("WITH"), "{text}");
        // Pending counted along the claim index; each finished state up to the cap, along its
        // own range of jobs_finished_queue_idx.
        assert!(text.contains("WHERE j.queue = q.queue AND j.state = N'pending') AS p"));
        // The oldest due job's run_at, in the same pass as the pending counts.
        assert!(text.contains(
            "MIN(CASE WHEN j.run_at <= @now THEN j.run_at END) AS oldest_due FROM [jobs_s].[jobs] AS j"
        ));
        assert!(text.contains(
            "SELECT q.queue, COALESCE(w.waiting, 0) AS waiting, p.available, p.scheduled, \
             q.running, p.oldest_due,"
        ));
        for state in ["completed", "dead", "cancelled"] {
            let want = format!(
                "SELECT COUNT_BIG(*) AS n FROM (SELECT TOP (@P2) j.id FROM [jobs_s].[jobs] AS j \
                 WHERE j.queue = q.queue AND j.state = N'{state}' \
                 AND j.state IN (N'completed', N'dead', N'cancelled')) AS t)"
            );
            assert!(text.contains(&want), "job_stats lacks `{want}`");
        }
        assert_eq!(text.matches("TOP (@P2)").count(), 3);
        assert!(text.ends_with("ORDER BY q.queue;"));
        // Only the result rows come back: nothing before them returns a result set.
        let before_result = text.rsplit_once("SELECT q.queue,").unwrap().0;
        for part in before_result.split(';') {
            let part = part.trim();
            assert!(
                !part.starts_with("SELECT") || part.starts_with("SELECT @next ="),
                "a result set before the counts: {part}"
            );
        }
    }

    #[test]
    fn a_retry_reads_what_would_block_it_and_brings_steps_back_waiting() {
        let s = sql();
        let ids2 = "(CAST(@P1 AS BINARY(16)), CAST(@P2 AS BINARY(16)))";
        // A step comes back waiting (the engine settles it), a job outside workflows pending.
        for text in [flat(&s.job_retry), flat(&s.job_retry_many_for(2))] {
            assert!(
                text.starts_with(
                    "UPDATE [jobs_s].[jobs] SET state = CASE WHEN workflow_id IS NULL \
                     THEN N'pending' ELSE N'waiting' END, attempts = 0"
                ),
                "{text}"
            );
        }
        // The workflows to lock first, each once, by the jobs' primary key.
        assert_eq!(
            flat(&s.job_workflows_for(2)),
            format!(
                "SELECT DISTINCT workflow_id FROM [jobs_s].[jobs] \
                 WHERE id IN {ids2} AND workflow_id IS NOT NULL ORDER BY workflow_id"
            )
        );
        // What blocks each: the least dependency that must complete and is dead, cancelled
        // or gone, by TOP (1) ... ORDER BY (never MIN() of a binary column).
        assert_eq!(
            flat(&s.workflow_blocked_for(2)),
            format!(
                "SELECT x.id, x.blocked_by FROM ( SELECT j.id, (SELECT TOP (1) d.dep_id \
                 FROM [jobs_s].[job_deps] AS d WITH (READCOMMITTEDLOCK) \
                 LEFT JOIN [jobs_s].[jobs] AS p WITH (READCOMMITTEDLOCK) ON p.id = d.dep_id \
                 WHERE d.job_id = j.id AND d.policy = 0 \
                 AND (p.id IS NULL OR p.state IN (N'dead', N'cancelled')) \
                 ORDER BY d.dep_id) AS blocked_by \
                 FROM [jobs_s].[jobs] AS j WITH (READCOMMITTEDLOCK) WHERE j.id IN {ids2} ) AS x \
                 WHERE x.blocked_by IS NOT NULL"
            )
        );
        // The confirmation's count: waiting jobs that need a matching job to complete, the
        // filter bound as job_count binds it.
        let count = flat(&s.job_dependents_count_for(2));
        assert!(
            count.starts_with(
                "SELECT COUNT_BIG(*) AS n FROM [jobs_s].[jobs] AS c WHERE c.state = N'waiting' \
                 AND EXISTS ( SELECT 1 FROM [jobs_s].[job_deps] AS d \
                 INNER JOIN [jobs_s].[jobs] AS a ON a.id = d.dep_id \
                 WHERE d.job_id = c.id AND d.policy = 0 AND (@P1 IS NULL OR a.queue = @P1) \
                 AND a.state IN (@P5, @P6) AND (@P2 IS NULL OR a.kind = @P2)"
            ),
            "{count}"
        );
        assert!(count.ends_with("OPTION (RECOMPILE)"), "{count}");
        // Retention leaves the jobs of workflows to the whole workflow's deletion.
        assert!(flat(&s.job_prune_for(1)).ends_with("AND workflow_id IS NULL"));
    }

    #[test]
    fn workflow_prune_locks_a_page_by_age_then_deletes_whole_workflows() {
        let s = sql();
        // The page: workflows created before the age, after the cursor, in (created_at, id)
        // order along their index, with update locks that skip the rows a retry or a batch_add
        // holds.
        assert_eq!(
            flat(&s.workflow_prune_lock),
            "SELECT TOP (@P5) w.id, w.created_at FROM [jobs_s].[workflows] AS w \
             WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK, FORCESEEK) \
             WHERE w.created_at < DATEADD(MICROSECOND, -@P2, DATEADD(SECOND, -@P1, SYSUTCDATETIME())) \
             AND (w.created_at > @P3 OR (w.created_at = @P3 AND w.id > CAST(@P4 AS BINARY(16)))) \
             ORDER BY w.created_at, w.id"
        );
        let text = flat(&s.workflow_prune_for(2));
        // The workflows of the page (by primary key) none of whose jobs keeps it.
        assert!(
            text.starts_with(
                "DECLARE @doomed TABLE (id BINARY(16) NOT NULL PRIMARY KEY); DECLARE @rows INT; \
             DECLARE @jobs BIGINT; DECLARE @deleted INT; INSERT INTO @doomed (id) SELECT w.id \
             FROM [jobs_s].[workflows] AS w \
             WHERE w.id IN (CAST(@P7 AS BINARY(16)), CAST(@P8 AS BINARY(16))) AND NOT EXISTS ("
            ),
            "{text}"
        );
        // A job keeps it unless finished longer ago than its state's age (a state whose age is
        // NULL keeps it): its steps by their primary key, each job looked up by the jobs
        // table's (a seek, never a scan), with a locking read of the latest committed rows.
        assert!(
            text.contains(
                "SELECT 1 FROM [jobs_s].[workflow_jobs] AS n WITH (READCOMMITTEDLOCK) \
             INNER JOIN [jobs_s].[jobs] AS j WITH (FORCESEEK, READCOMMITTEDLOCK) \
             ON j.id = n.job_id WHERE n.workflow_id = w.id AND (CASE \
             WHEN j.state = N'completed' AND @P1 IS NOT NULL AND j.finished_at < \
             DATEADD(MICROSECOND, -@P2, DATEADD(SECOND, -@P1, SYSUTCDATETIME())) THEN 1 \
             WHEN j.state = N'dead' AND @P3 IS NOT NULL AND j.finished_at < \
             DATEADD(MICROSECOND, -@P4, DATEADD(SECOND, -@P3, SYSUTCDATETIME())) THEN 1 \
             WHEN j.state = N'cancelled' AND @P5 IS NOT NULL AND j.finished_at < \
             DATEADD(MICROSECOND, -@P6, DATEADD(SECOND, -@P5, SYSUTCDATETIME())) THEN 1 \
             ELSE 0 END) = 0);"
            ),
            "{text}"
        );
        // The dependencies of their jobs, their jobs (finished ones, counted), their steps,
        // each in statements of at most 1,000 rows until none is left, then the workflows.
        let deps = text
            .find(
                "DELETE TOP (1000) d FROM [jobs_s].[job_deps] AS d WHERE d.job_id IN \
                   (SELECT n.job_id FROM [jobs_s].[workflow_jobs] AS n \
                   INNER JOIN @doomed AS x ON x.id = n.workflow_id); SET @rows = @@ROWCOUNT;",
            )
            .expect("the dependencies' delete");
        let jobs = text
            .find(
                "DELETE TOP (1000) j FROM [jobs_s].[jobs] AS j WHERE j.id IN \
                   (SELECT n.job_id FROM [jobs_s].[workflow_jobs] AS n \
                   INNER JOIN @doomed AS x ON x.id = n.workflow_id) \
                   AND j.state IN (N'completed', N'dead', N'cancelled'); \
                   SET @rows = @@ROWCOUNT; SET @jobs = @jobs + @rows;",
            )
            .expect("the jobs' delete");
        let steps = text
            .find(
                "DELETE TOP (1000) n FROM [jobs_s].[workflow_jobs] AS n \
                   INNER JOIN @doomed AS x ON x.id = n.workflow_id; SET @rows = @@ROWCOUNT;",
            )
            .expect("the steps' delete");
        let rows = text
            .find(
                "DELETE w FROM [jobs_s].[workflows] AS w INNER JOIN @doomed AS x ON x.id = w.id; \
                   SET @deleted = @@ROWCOUNT;",
            )
            .expect("the workflows' delete");
        assert!(deps < jobs && jobs < steps && steps < rows, "{text}");
        assert_eq!(text.matches("WHILE @rows > 0 BEGIN").count(), 3, "{text}");
        assert_eq!(text.matches("SET @rows = 1;").count(), 3, "{text}");
        // One result set, the counts, at the end; no transaction verb inside the request.
        assert!(text.ends_with("SELECT CAST(@deleted AS BIGINT) AS workflows, @jobs AS jobs;"));
        assert_eq!(
            text.split(';')
                .filter(|part| part.trim_start().starts_with("SELECT"))
                .count(),
            1,
            "{text}"
        );
        assert!(!text.contains("TRANSACTION"), "{text}");
    }

    #[test]
    fn maintenance_leases_are_compare_and_sets_on_the_row() {
        let s = sql();
        let claim = flat(&s.maintenance_claim);
        assert!(claim.starts_with(
            "UPDATE [jobs_s].[maintenance] SET token = @P2, next_at = \
             DATEADD(MICROSECOND, @P4, DATEADD(SECOND, @P3, SYSUTCDATETIME()))"
        ));
        // Due, or already held by the same token (which renews it).
        assert!(
            claim.ends_with("WHERE task = @P1 AND (next_at <= SYSUTCDATETIME() OR token = @P2)")
        );
        let release = flat(&s.maintenance_release);
        assert!(release.starts_with(
            "UPDATE [jobs_s].[maintenance] SET token = NULL, next_at = \
             DATEADD(MICROSECOND, @P4, DATEADD(SECOND, @P3, SYSUTCDATETIME()))"
        ));
        assert!(release.ends_with("WHERE task = @P1 AND token = @P2"));
    }

    #[test]
    fn every_claim_skips_locked_rows_with_a_locking_read() {
        let s = sql();
        for claim in [&*s.job_claim, &*s.job_claim_candidates, &*s.job_claim_key] {
            let hints = claim
                .split_once("WITH (UPDLOCK")
                .map(|(_, rest)| rest.split_once(')').map_or(rest, |(h, _)| h))
                .expect("a claim carries a table hint list");
            for hint in ["READPAST", "READCOMMITTEDLOCK", "ROWLOCK"] {
                assert!(hints.contains(hint), "job_claim lacks {hint}: {claim}");
            }
            // The join form (never `UPDATE c`), with the state restated on the updated table.
            assert!(claim.contains("UPDATE j\n") && claim.contains("INNER JOIN"));
            assert!(claim.trim_end().ends_with("j.state = N'pending'"));
            assert!(!claim.contains("UPDATE c"));
        }
        for claim in [&*s.job_claim, &*s.job_claim_key, &*s.job_claim_unkeyed] {
            assert!(
                claim.contains("ORDER BY priority DESC, run_at, id"),
                "{claim}"
            );
            assert!(claim.contains("TOP (@P2)"), "{claim}");
            assert!(claim.contains("FORCESEEK"), "{claim}");
        }
        // The optimistic claim is guarded by the row version.
        assert!(s
            .job_claim_candidates
            .contains("AND j.version = c.version AND j.state = N'pending'"));
    }

    #[test]
    fn every_claim_gives_out_nothing_of_a_paused_or_limited_queue() {
        let s = sql();
        // Whitespace-insensitive: the statements' line breaks and indentation are free.
        let flat = |sql: &str| sql.split_whitespace().collect::<Vec<_>>().join(" ");
        // Paused, limited by concurrency, by rate, by key or by key rate, or taking fair
        // shares: each takes the controlled path.
        let want = |queue: &str| {
            format!(
                "NOT EXISTS ( SELECT 1 FROM [jobs_s].[queues] AS q WHERE q.name = {queue} \
                 AND (q.paused = 1 OR q.concurrency_limit IS NOT NULL \
                 OR q.rate_limit IS NOT NULL OR q.key_limit IS NOT NULL \
                 OR q.key_rate_limit IS NOT NULL OR q.fair_shares = 1))"
            )
        };
        // The claims are the statements that start jobs (set them running); each ordinary one
        // carries the guard once, so a new claim statement cannot forget a control. The keyed
        // claims run only under the queue row's lock, in a queue whose row always says keyed:
        // they read no `queues` row (the guard would refuse every job they are meant to claim).
        let starts: BTreeSet<&str> = s
            .all()
            .into_iter()
            .filter(|(_, text)| flat(text).contains("SET state = N'running'"))
            .map(|(name, _)| name)
            .collect();
        let keyed = BTreeSet::from(["job_claim_key", "job_claim_unkeyed"]);
        assert_eq!(
            starts,
            BTreeSet::from([
                "job_claim",
                "job_claim_candidates",
                "job_claim_key",
                "job_claim_unkeyed"
            ]),
            "the statements that start jobs"
        );
        for name in &keyed {
            let text = s.all().into_iter().find(|(n, _)| n == name).unwrap().1;
            assert!(!text.contains("[queues]"), "{name}: {text}");
        }
        let claims: BTreeSet<&str> = starts.difference(&keyed).copied().collect();
        for name in &claims {
            let text = flat(s.all().into_iter().find(|(n, _)| n == name).unwrap().1);
            assert_eq!(
                text.matches("FROM [jobs_s].[queues] AS q").count(),
                1,
                "{name}"
            );
            for control in [
                "q.paused = 1",
                "q.concurrency_limit IS NOT NULL",
                "q.rate_limit IS NOT NULL",
                "q.key_limit IS NOT NULL",
                "q.key_rate_limit IS NOT NULL",
                "q.fair_shares = 1",
            ] {
                assert!(text.contains(control), "{name} lacks {control}: {text}");
            }
        }
        // job_claim: in the CTE (before any row is locked), waived only by the bound flag.
        let claim = flat(&s.job_claim);
        let cte = claim.split_once("ORDER BY").unwrap().0;
        assert!(
            cte.contains(&format!("AND (@P6 = 1 OR {})", want("@P1"))),
            "{claim}"
        );
        // The optimistic write, always, for the queue bound after the fixed values.
        let candidates = flat(&s.job_claim_candidates_for(1));
        assert!(
            candidates.contains(&format!("WHERE {} AND", want("@P4"))),
            "{candidates}"
        );
        // The guard reads `queues` without the claim's locking hints.
        for text in [&*s.job_claim, &*s.job_claim_candidates] {
            assert!(text.contains("FROM [jobs_s].[queues] AS q\n"), "{text}");
        }
    }

    #[test]
    fn queue_controls_lock_and_upsert_atomically() {
        let s = sql();
        assert!(s.queue_control_lock.contains(
            "FROM [jobs_s].[queues] WITH (UPDLOCK, HOLDLOCK, ROWLOCK)\nWHERE name = @P1"
        ));
        assert!(!s.queue_control_get.contains("WITH ("));
        assert!(s.queue_control_list.ends_with("ORDER BY name"));
        // Every read of the controls returns every control, as `control` decodes them.
        for (name, text) in [
            ("queue_control_get", &*s.queue_control_get),
            ("queue_control_lock", &*s.queue_control_lock),
            ("queue_control_list", &*s.queue_control_list),
        ] {
            assert!(
                flat(text).starts_with(
                    "SELECT name, paused, concurrency_limit, rate_limit, rate_period_us, \
                     key_limit, fair_shares, key_cursor, key_rate_limit, key_rate_period_us \
                     FROM [jobs_s].[queues]"
                ),
                "{name}: {text}"
            );
        }
        // Each write of one control: an UPDATE of the queue's row holding its key's update
        // lock to the end of the driver's transaction (a key-range lock when the row is
        // missing), then an INSERT only when it changed no row; no MERGE.
        for (name, text, column) in [
            ("queue_set_paused", &*s.queue_set_paused, "paused"),
            ("queue_set_limit", &*s.queue_set_limit, "concurrency_limit"),
            ("queue_set_key_limit", &*s.queue_set_key_limit, "key_limit"),
            ("queue_set_fair", &*s.queue_set_fair, "fair_shares"),
        ] {
            assert_eq!(
                flat(text),
                format!(
                    "UPDATE [jobs_s].[queues] WITH (UPDLOCK, HOLDLOCK) \
                     SET {column} = @P2, updated_at = SYSUTCDATETIME() WHERE name = @P1; \
                     IF @@ROWCOUNT = 0 INSERT INTO [jobs_s].[queues] (name, {column}, updated_at) \
                     VALUES (@P1, @P2, SYSUTCDATETIME());"
                ),
                "{name}"
            );
        }
        // Live leases: the literal filter of jobs_lease_idx, the clock at the statement.
        assert!(s.job_live_leases.contains(
            "WHERE queue = @P1 AND state = N'running' AND lease_expires_at > SYSUTCDATETIME()"
        ));
    }

    #[test]
    fn a_rate_limit_is_set_afresh_and_counted_in_its_row() {
        let s = sql();
        // Set or removed in one upsert (in the driver's transaction, under the key's update
        // lock), the count starting afresh on both branches.
        assert_eq!(
            flat(&s.queue_set_rate),
            "UPDATE [jobs_s].[queues] WITH (UPDLOCK, HOLDLOCK) \
             SET rate_limit = @P2, rate_period_us = @P3, rate_window = NULL, rate_count = 0, \
             updated_at = SYSUTCDATETIME() WHERE name = @P1; \
             IF @@ROWCOUNT = 0 INSERT INTO [jobs_s].[queues] (name, rate_limit, rate_period_us, \
             rate_window, rate_count, updated_at) \
             VALUES (@P1, @P2, @P3, NULL, 0, SYSUTCDATETIME());"
        );
        // The state: one row of the locked queue, with the clock; a plain read (the row's
        // update lock is queue_control_lock's, in the same transaction).
        let state = flat(&s.queue_rate_state);
        assert!(
            state.starts_with("SELECT rate_window, rate_count, "),
            "{state}"
        );
        assert!(
            state.ends_with("FROM [jobs_s].[queues] WHERE name = @P1"),
            "{state}"
        );
        assert!(!state.contains("WITH ("), "{state}");
        // The record: the window and its count of the one queue, nothing else.
        assert_eq!(
            flat(&s.queue_rate_record),
            "UPDATE [jobs_s].[queues] SET rate_window = @P2, rate_count = @P3 WHERE name = @P1"
        );
    }

    #[test]
    fn a_key_rate_limit_is_set_with_its_counts_forgotten_and_counted_per_key() {
        let s = sql();
        // Set or removed in the queue's row by queue_set_rate's upsert, then every count of
        // the queue's keys dropped, in one request (the driver's transaction holds the row's
        // lock from the UPDATE or INSERT to the commit): the row first, as the claim locks it.
        let set = flat(&s.queue_set_key_rate);
        let steps: Vec<&str> = set.split("; ").collect();
        assert_eq!(
            steps,
            [
                "UPDATE [jobs_s].[queues] WITH (UPDLOCK, HOLDLOCK) \
                 SET key_rate_limit = @P2, key_rate_period_us = @P3, \
                 updated_at = SYSUTCDATETIME() WHERE name = @P1",
                "IF @@ROWCOUNT = 0 INSERT INTO [jobs_s].[queues] \
                 (name, key_rate_limit, key_rate_period_us, updated_at) \
                 VALUES (@P1, @P2, @P3, SYSUTCDATETIME())",
                "DELETE FROM [jobs_s].[queue_key_rates] WHERE queue = @P1;",
            ]
        );
        // Nothing else in the request, and no transaction verb (the driver sends those as
        // batches of their own).
        assert_eq!(set.matches(';').count(), 3, "{set}");
        // Never the queue's own rate limit or count.
        assert!(
            !set.contains(" rate_limit") && !set.contains("rate_count"),
            "{set}"
        );
        // The count of one key: a plain read in the claim's transaction (the queue row's update
        // lock is queue_control_lock's), the key compared as the column's type.
        assert_eq!(
            flat(&s.queue_key_rate_get),
            "SELECT rate_window, rate_count FROM [jobs_s].[queue_key_rates] \
             WHERE queue = @P1 AND concurrency_key = CAST(@P2 AS VARBINARY(800))"
        );
        // The record: one key's row, updated, or inserted when the update changed none; no
        // lock hint (the queue row's update lock already serializes the queue's writers;
        // range locks would hold back the claims of the next queue in key order), the key
        // compared and stored as the column's type.
        assert_eq!(
            flat(&s.queue_key_rate_put),
            "UPDATE [jobs_s].[queue_key_rates] SET rate_window = @P3, rate_count = @P4 \
             WHERE queue = @P1 AND concurrency_key = CAST(@P2 AS VARBINARY(800)); \
             IF @@ROWCOUNT = 0 INSERT INTO [jobs_s].[queue_key_rates] \
             (queue, concurrency_key, rate_window, rate_count) \
             VALUES (@P1, CAST(@P2 AS VARBINARY(800)), @P3, @P4);"
        );
        // The table's columns, as the statements bind and read them.
        let m = crate::migrate::MIGRATIONS
            .iter()
            .find(|m| m.name == "concurrency_keys")
            .unwrap();
        let migration = flat(&load(m.sql, &[("{schema}", "jobs_s")]));
        for column in [
            "queue NVARCHAR(128) COLLATE Latin1_General_100_BIN2 NOT NULL,",
            "concurrency_key VARBINARY(800) NOT NULL,",
            "rate_window BIGINT NOT NULL,",
            "rate_count INT NOT NULL,",
            "key_rate_limit INT NULL",
            "key_rate_period_us BIGINT NULL",
        ] {
            assert!(migration.contains(column), "{column}: {migration}");
        }
    }

    #[test]
    fn the_rate_clock_is_the_clock_of_the_claims_leases() {
        let s = sql();
        // The claims set the lease from SYSUTCDATETIME() at the statement; the lease's expiry
        // is stored as DATETIME2(6), and the engine reckons each start from it.
        for (name, text, secs, us) in [
            ("job_claim", &*s.job_claim, "@P3", "@P4"),
            ("job_claim_key", &*s.job_claim_key, "@P3", "@P4"),
            ("job_claim_unkeyed", &*s.job_claim_unkeyed, "@P3", "@P4"),
            (
                "job_claim_candidates",
                &*s.job_claim_candidates,
                "@P1",
                "@P2",
            ),
        ] {
            let lease = format!(
                "lease_expires_at = DATEADD(MICROSECOND, {us}, DATEADD(SECOND, {secs}, \
                 SYSUTCDATETIME()))"
            );
            assert!(flat(text).contains(&lease), "{name} lacks {lease}");
        }
        let jobs = flat(&load(crate::migrate::MIGRATIONS[0].sql, &[]));
        assert!(
            jobs.contains("lease_expires_at DATETIME2(6) NULL,"),
            "{jobs}"
        );
        // queue_rate_state reads that clock at that precision (as `now` does), in
        // microseconds since the Unix epoch, as a BIGINT.
        let now = "CAST(SYSUTCDATETIME() AS DATETIME2(6))";
        assert!(s.now.contains(now));
        let want = format!(
            "DATEDIFF_BIG(MICROSECOND, CAST('1970-01-01T00:00:00' AS DATETIME2(6)), {now}) \
             AS now_us"
        );
        assert!(
            flat(&s.queue_rate_state).contains(&want),
            "queue_rate_state lacks {want}"
        );
        // No statement or migration reads another clock (local time, or another precision's
        // function): every time compared or stored is SYSUTCDATETIME()'s.
        let migrations = crate::migrate::MIGRATIONS
            .iter()
            .map(|m| (m.name, load(m.sql, &[])));
        let statements = s.all().into_iter().map(|(n, t)| (n, t.to_owned()));
        for (name, text) in statements.chain(migrations) {
            let w = words(&text);
            for clock in [
                "GETDATE",
                "GETUTCDATE",
                "SYSDATETIME",
                "SYSDATETIMEOFFSET",
                "CURRENT_TIMESTAMP",
            ] {
                assert!(!w.iter().any(|x| x == clock), "{name} reads {clock}");
            }
        }
    }

    #[test]
    fn keyed_claims_lease_one_key_at_a_time_in_claim_order() {
        let s = sql();
        // The lease part is job_claim's, word for word: the same transition, token, lease
        // clock, worker and returned columns (the rows decode with `leased`).
        let lease = |text: &str| {
            let f = flat(text);
            let from = f.find("UPDATE j SET").unwrap();
            let to = f
                .find(" FROM [jobs_s].[jobs] AS j INNER JOIN c ON j.id = c.id")
                .unwrap();
            f[from..to].to_owned()
        };
        let ordinary = lease(&s.job_claim);
        assert!(ordinary.contains("OUTPUT inserted.id,"), "{ordinary}");
        for (name, text) in [
            ("job_claim_key", &*s.job_claim_key),
            ("job_claim_unkeyed", &*s.job_claim_unkeyed),
        ] {
            assert_eq!(lease(text), ordinary, "{name}");
        }
        // One key: a seek of jobs_key_idx in claim order, rows U-locked and skipped as
        // job_claim's are; the state restated on the updated table.
        let key = flat(&s.job_claim_key);
        assert!(
            key.starts_with(
                "WITH c AS ( SELECT TOP (@P2) id FROM [jobs_s].[jobs] \
                 WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK, FORCESEEK) \
                 WHERE queue = @P1 AND state = N'pending' \
                 AND concurrency_key = CAST(@P6 AS VARBINARY(800)) \
                 AND concurrency_key IS NOT NULL AND run_at <= SYSUTCDATETIME() \
                 ORDER BY priority DESC, run_at, id )"
            ),
            "{key}"
        );
        assert!(key.ends_with("INNER JOIN c ON j.id = c.id WHERE j.state = N'pending'"));
        // The jobs without a key: the claim index walked without UPDLOCK (no U lock is held
        // on the keyed rows passed), everything that chose a row restated on the update.
        let unkeyed = flat(&s.job_claim_unkeyed);
        assert!(
            unkeyed.starts_with(
                "WITH c AS ( SELECT TOP (@P2) id FROM [jobs_s].[jobs] \
                 WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK, FORCESEEK) \
                 WHERE queue = @P1 AND state = N'pending' AND concurrency_key IS NULL \
                 AND run_at <= SYSUTCDATETIME() ORDER BY priority DESC, run_at, id )"
            ),
            "{unkeyed}"
        );
        assert!(!unkeyed.contains("UPDLOCK"), "{unkeyed}");
        assert!(unkeyed.ends_with(
            "INNER JOIN c ON j.id = c.id WHERE j.state = N'pending' \
             AND j.concurrency_key IS NULL AND j.run_at <= SYSUTCDATETIME()"
        ));
        // The next key: one seek past the last (TOP (1) in key order, never MIN() of the
        // binary key), skipping rows held by other transactions (a locking read, also under
        // READ_COMMITTED_SNAPSHOT, as READPAST needs).
        assert_eq!(
            flat(&s.job_key_next),
            "DECLARE @after VARBINARY(800) = CAST(@P2 AS VARBINARY(800)), @next VARBINARY(800), \
             @n INT = 0; \
             DECLARE @keys TABLE (n INT NOT NULL PRIMARY KEY, next_key VARBINARY(800) NOT NULL); \
             WHILE @n < @P3 BEGIN \
             SET @next = ( SELECT TOP (1) concurrency_key \
             FROM [jobs_s].[jobs] WITH (READPAST, READCOMMITTEDLOCK) \
             WHERE queue = @P1 AND state = N'pending' \
             AND concurrency_key > @after AND concurrency_key IS NOT NULL \
             ORDER BY concurrency_key); \
             IF @next IS NULL BREAK; SET @n = @n + 1; \
             INSERT INTO @keys (n, next_key) VALUES (@n, @next); SET @after = @next; END; \
             SELECT next_key FROM @keys ORDER BY n;"
        );
        // Live leases per key, the most first: a plain read that waits for rows being
        // changed (never READPAST: a lease skipped would be a place given out twice), by the
        // clock at the statement, as job_live_leases.
        let leases = flat(&s.job_key_leases);
        assert_eq!(
            leases,
            "SELECT concurrency_key, COUNT_BIG(*) AS running FROM [jobs_s].[jobs] \
             WHERE queue = @P1 AND state = N'running' AND lease_expires_at > SYSUTCDATETIME() \
             AND concurrency_key IS NOT NULL \
             GROUP BY concurrency_key ORDER BY running DESC, concurrency_key"
        );
        assert!(s.job_live_leases.contains(
            "WHERE queue = @P1 AND state = N'running' AND lease_expires_at > SYSUTCDATETIME()"
        ));
        // Due jobs of one key (stats): a plain count.
        assert_eq!(
            flat(&s.job_key_waiting),
            "SELECT COUNT_BIG(*) AS waiting FROM [jobs_s].[jobs] \
             WHERE queue = @P1 AND state = N'pending' \
             AND concurrency_key = CAST(@P2 AS VARBINARY(800)) AND concurrency_key IS NOT NULL \
             AND run_at <= SYSUTCDATETIME()"
        );
        // The cursor: the queue's one column, in the claim's transaction (no hint: the row's
        // update lock is queue_control_lock's).
        assert_eq!(
            flat(&s.queue_key_cursor),
            "UPDATE [jobs_s].[queues] SET key_cursor = @P2 WHERE name = @P1"
        );
        for (name, text) in [
            ("queue_set_key_limit", &*s.queue_set_key_limit),
            ("queue_set_fair", &*s.queue_set_fair),
        ] {
            assert!(
                flat(text).starts_with("UPDATE [jobs_s].[queues] WITH (UPDLOCK, HOLDLOCK) SET"),
                "{name}: {text}"
            );
        }
    }

    #[test]
    fn concurrency_keys_are_stored_and_compared_as_their_column() {
        let s = sql();
        let m = crate::migrate::MIGRATIONS
            .iter()
            .find(|m| m.name == "concurrency_keys")
            .unwrap();
        let migration = flat(&load(m.sql, &[]));
        assert!(migration.contains("concurrency_key VARBINARY(800) NULL"));
        assert!(migration.contains("key_cursor VARBINARY(800) NULL"));
        // Every push stores the key, as bound (too long a value fails, never cut by a CAST).
        let insert = flat(&s.job_insert_rows(1));
        assert!(insert
            .contains("timeout_us, concurrency_key, workflow_id, created_at, updated_at) SELECT"));
        assert!(insert.contains(
            "v.timeout_us, v.concurrency_key, CAST(v.workflow_id AS BINARY(16)), SYSUTCDATETIME()"
        ));
        assert!(insert.ends_with(
            "AS v (id, queue, payload, priority, max_attempts, delay_s, delay_us, dedup_key, \
             kind, meta, timeout_us, concurrency_key, state, workflow_id)"
        ));
        assert!(insert.contains("@P11, @P12, @P13, @P14)"), "{insert}");
        // The state is bound (pending, or waiting for a workflow's step), never a literal.
        assert!(
            insert.contains("v.priority, v.state, 0, v.max_attempts"),
            "{insert}"
        );
        assert!(!insert.contains("N'pending'"), "{insert}");
        assert!(!insert.contains("CAST(v.concurrency_key"), "{insert}");
        // Every comparison with a bound key compares the column's type (the bytes as bound:
        // a key has at most 800), never a `max` value.
        for (name, text) in s.all() {
            let f = flat(text);
            let mut rest = f.as_str();
            while let Some(at) = rest.find("concurrency_key ") {
                let after = &rest[at + "concurrency_key ".len()..];
                if let Some(op) = ["= @P", "> @P", "< @P"]
                    .iter()
                    .find(|op| after.starts_with(**op))
                {
                    panic!("{name} compares the key with a bare parameter ({op}): {f}");
                }
                rest = after;
            }
            if f.contains("concurrency_key = CAST(") || f.contains("concurrency_key > CAST(") {
                assert!(f.contains("AS VARBINARY(800))"), "{name}: {f}");
            }
        }
    }

    /// The words of `sql`, upper-cased (identifiers, keywords, `@P1`).
    fn words(sql: &str) -> Vec<String> {
        sql.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '@'))
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_uppercase)
            .collect()
    }

    #[test]
    fn no_statement_changes_session_or_transaction_state() {
        let s = sql();
        let migrations: Vec<(&str, String)> = crate::migrate::MIGRATIONS
            .iter()
            .map(|m| (m.name, load(m.sql, &[])))
            .collect();
        let statements = s.all().into_iter().map(|(n, t)| (n, t.to_owned()));
        for (name, text) in statements.chain(migrations) {
            let w = words(&text);
            for word in [
                "NOCOUNT",
                "COMMIT",
                "ROLLBACK",
                "XACT_ABORT",
                "IMPLICIT_TRANSACTIONS",
            ] {
                assert!(!w.iter().any(|x| x == word), "{name} contains {word}");
            }
            for pair in w.windows(2) {
                let (a, b) = (pair[0].as_str(), pair[1].as_str());
                let tran = matches!(b, "TRAN" | "TRANSACTION");
                assert!(
                    !(tran && matches!(a, "BEGIN" | "SAVE" | "SET")),
                    "{name} contains {a} {b}"
                );
            }
        }
        // The words check does see them.
        assert!(words("SET NOCOUNT ON; BEGIN TRAN").contains(&"NOCOUNT".to_owned()));
        assert!(!words("is_read_committed_snapshot_on").contains(&"COMMIT".to_owned()));
    }

    /// Every statement in the T-SQL that SQL Server and the other TDS servers both take: no
    /// MERGE, no UPDATE or DELETE of a CTE, nothing else `crate::subset::refused` finds; and no
    /// MIN() or MAX() of a binary column (ids, keys), which such a server answers with a
    /// number: a statement that wants one row's id or key takes it with TOP (1) ... ORDER BY.
    /// The binary columns are those the migrations create.
    #[test]
    fn every_statement_is_in_the_t_sql_other_servers_take() {
        let binary =
            crate::subset::binary_columns(crate::migrate::MIGRATIONS.iter().map(|m| m.sql));
        for column in [
            "ID",
            "DEDUP_KEY",
            "CONCURRENCY_KEY",
            "KEY_CURSOR",
            "BLOCKED_BY",
            "DEP_ID",
        ] {
            assert!(binary.iter().any(|c| c == column), "{column}: {binary:?}");
        }
        for (name, text) in sql().all() {
            assert_eq!(
                crate::subset::refused(text),
                Vec::<String>::new(),
                "{name}: {text}"
            );
            let aggregates = crate::subset::min_max_of_binary(text, &binary);
            assert_eq!(aggregates, Vec::<String>::new(), "{name}: {text}");
        }
        // The multi-row forms too, as sent.
        let s = sql();
        for text in [
            s.job_insert_rows(2),
            s.job_dedup_live_for(2, 2),
            s.job_claim_candidates_for(2),
            s.job_complete_many_for(2, true),
            s.job_complete_many_for(2, false),
            s.job_rescue_for(2),
            s.job_prune_for(2),
            s.job_ids_for(2),
            s.job_count_for(2),
            s.job_delete_many_for(2, 2),
            s.workflow_steps_insert_for(2),
            s.workflow_deps_insert_for(2),
        ] {
            assert_eq!(
                crate::subset::refused(&text),
                Vec::<String>::new(),
                "{text}"
            );
            assert_eq!(
                crate::subset::min_max_of_binary(&text, &binary),
                Vec::<String>::new(),
                "{text}"
            );
        }
    }

    #[test]
    fn filtered_indexes_are_matched_by_literal_predicates() {
        let s = sql();
        for (name, text, literal) in [
            ("job_claim", &*s.job_claim, "state = N'pending'"),
            ("job_candidates", &*s.job_candidates, "state = N'pending'"),
            ("job_expired", &*s.job_expired, "state = N'running'"),
            (
                "job_dedup_live",
                &*s.job_dedup_live,
                "state IN (N'pending', N'running')",
            ),
            (
                "job_prune",
                &*s.job_prune,
                "state IN (N'completed', N'dead', N'cancelled')",
            ),
            (
                "job_insert_unique",
                &*s.job_insert_unique,
                "unique_live IS NOT NULL",
            ),
            (
                "job_claim_unkeyed",
                &*s.job_claim_unkeyed,
                "state = N'pending'",
            ),
            ("job_key_leases", &*s.job_key_leases, "state = N'running'"),
            ("job_stats", &*s.job_stats, "state = N'pending'"),
            ("job_stats", &*s.job_stats, "state = N'running'"),
            ("job_stats", &*s.job_stats, "state = N'waiting'"),
            (
                "workflow_waiting",
                &*s.workflow_waiting,
                "state = N'waiting'",
            ),
            (
                "job_stats",
                &*s.job_stats,
                "state IN (N'completed', N'dead', N'cancelled')",
            ),
            (
                "job_unique_holder",
                &*s.job_unique_holder,
                "h.unique_live IS NOT NULL",
            ),
        ] {
            assert!(text.contains(literal), "{name} lacks {literal}");
        }
        // jobs_key_idx: both parts of its filter, beside the bound comparison of the key.
        for (name, text, compared) in [
            (
                "job_key_next",
                &*s.job_key_next,
                // @after: a VARBINARY(800) variable, from CAST(@P2 AS VARBINARY(800)).
                "concurrency_key > @after",
            ),
            (
                "job_claim_key",
                &*s.job_claim_key,
                "concurrency_key = CAST(@P6 AS VARBINARY(800))",
            ),
            (
                "job_key_waiting",
                &*s.job_key_waiting,
                "concurrency_key = CAST(@P2 AS VARBINARY(800))",
            ),
        ] {
            let want = format!(
                "WHERE queue = @P1 AND state = N'pending' AND {compared} \
                 AND concurrency_key IS NOT NULL"
            );
            assert!(flat(text).contains(&want), "{name} lacks `{want}`: {text}");
        }
    }

    /// How a statement that writes `state` keeps `unique_live` (see migration 0005): the key
    /// while the row's state bit is in `unique_states`, else NULL.
    #[derive(Debug)]
    enum KeyRule {
        /// Moves among pending and running only (in every rule's states): never touches it.
        Keeps,
        /// Into a state whose bit it checks: kept under that bit, else NULL (`j.` when the
        /// statement aliases the table).
        ClearsUnless(JobState, &'static str),
        /// Back to pending: the key again.
        Restores,
    }

    /// The texts of `sql` with runs of whitespace made one space.
    fn flat(sql: &str) -> String {
        sql.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn every_state_change_keeps_the_unique_key_invariant() {
        use queue_core::unique::state_bit;

        let s = sql();
        let rules: &[(&str, KeyRule)] = &[
            ("job_claim", KeyRule::Keeps),
            ("job_claim_candidates", KeyRule::Keeps),
            ("job_claim_key", KeyRule::Keeps),
            ("job_claim_unkeyed", KeyRule::Keeps),
            ("job_fail_retry", KeyRule::Keeps),
            ("job_snooze", KeyRule::Keeps),
            ("job_release", KeyRule::Keeps),
            (
                "job_complete",
                KeyRule::ClearsUnless(JobState::Completed, ""),
            ),
            (
                "job_complete_many",
                KeyRule::ClearsUnless(JobState::Completed, "j."),
            ),
            ("job_fail_dead", KeyRule::ClearsUnless(JobState::Dead, "j.")),
            ("job_cancel", KeyRule::ClearsUnless(JobState::Cancelled, "")),
            (
                "job_cancel_many",
                KeyRule::ClearsUnless(JobState::Cancelled, ""),
            ),
            ("job_retry", KeyRule::Restores),
            ("job_retry_many", KeyRule::Restores),
            // Steps of workflows (the only jobs that wait) are never unique: their unique_live
            // is NULL in every state, so moving them leaves it alone.
            ("workflow_block", KeyRule::Keeps),
            ("workflow_promote", KeyRule::Keeps),
            ("workflow_reopen", KeyRule::Keeps),
        ];
        // Every statement that writes a state is in the table (or is job_rescue, below), so a
        // new one cannot forget the key.
        let writers: BTreeSet<&str> = s
            .all()
            .into_iter()
            .filter(|(_, text)| flat(text).contains("SET state ="))
            .map(|(name, _)| name)
            .collect();
        let known: BTreeSet<&str> = rules
            .iter()
            .map(|(name, _)| *name)
            .chain(["job_rescue"])
            .collect();
        assert_eq!(writers, known, "the statements that write a state");
        for (name, rule) in rules {
            let text = flat(s.all().into_iter().find(|(n, _)| n == name).unwrap().1);
            match rule {
                KeyRule::Keeps => assert!(!text.contains("unique_"), "{name}: {text}"),
                KeyRule::ClearsUnless(state, p) => {
                    let want = format!(
                        "unique_live = CASE WHEN ({p}unique_states & {}) <> 0 \
                         THEN {p}unique_live ELSE NULL END",
                        state_bit(*state)
                    );
                    assert!(text.contains(&want), "{name} lacks `{want}`: {text}");
                    assert_eq!(text.matches("unique_live =").count(), 1, "{name}");
                }
                KeyRule::Restores => {
                    assert!(
                        text.contains(", unique_live = unique_key"),
                        "{name}: {text}"
                    );
                }
            }
        }
        // Rescue: back to pending keeps the key; to dead (@P1 = 1) only under the dead bit.
        let rescue = flat(&s.job_rescue);
        let want = format!(
            "unique_live = CASE WHEN @P1 = 0 OR (j.unique_states & {}) <> 0 THEN j.unique_live \
             ELSE NULL END",
            state_bit(JobState::Dead)
        );
        assert!(
            rescue.contains(&want),
            "job_rescue lacks `{want}`: {rescue}"
        );
        assert!(rescue.contains("WHEN @P1 = 1 THEN N'dead'"));
        // Statements that change a row without changing its state leave the key alone; only
        // the unique push writes the unique columns otherwise.
        for (name, text) in s.all() {
            if known.contains(name) || matches!(name, "job_insert_unique" | "job_unique_holder") {
                continue;
            }
            // The completions that delete instead (completed jobs not kept) write no column:
            // they keep, and leave to job_complete(_many), a job whose key the completed
            // state holds.
            if matches!(name, "job_complete_delete" | "job_complete_many_delete") {
                let text = flat(text);
                assert!(text.starts_with("DELETE"), "{name}: {text}");
                assert!(
                    text.contains("unique_key IS NULL OR (")
                        && text.contains("unique_states & 4) = 0"),
                    "{name} deletes a job whose key the completed state holds: {text}"
                );
                continue;
            }
            assert!(
                !text.contains("unique_"),
                "{name} touches the unique columns"
            );
        }
    }

    #[test]
    fn a_unique_push_reads_the_latest_committed_holder() {
        let s = sql();
        let text = &*s.job_insert_unique;
        let f = flat(text);
        // The key is stored with its states, and held from the start (pending is in every set).
        assert!(f.contains(
            "unique_key, unique_states, unique_live, concurrency_key, created_at, updated_at) \
             SELECT"
        ));
        assert!(f.contains(
            "CAST(@P12 AS VARBINARY(32)), @P13, CAST(@P12 AS VARBINARY(32)), @P14, \
             SYSUTCDATETIME()"
        ));
        assert!(f.contains("N'pending', 0, @P5"));
        // Every read of jobs is a locking read of the latest committed rows (also inside a
        // caller's SNAPSHOT transaction); the INSERT's own target takes no hint (error 4140).
        let reads = text.matches("FROM [jobs_s].[jobs]").count();
        assert_eq!(reads, 5, "{text}");
        assert_eq!(
            text.matches("FROM [jobs_s].[jobs] WITH (READCOMMITTEDLOCK)")
                .count(),
            reads,
            "{text}"
        );
        assert!(f.contains("INSERT INTO [jobs_s].[jobs] (id,"));
        // Every lookup of the key carries the filtered index's literal.
        assert_eq!(
            f.matches(
                "WHERE unique_live = CAST(@P12 AS VARBINARY(32)) AND unique_live IS NOT NULL"
            )
            .count(),
            3,
            "{f}"
        );
        // A duplicate is taken, never left to doom a caller's transaction; any other error, and
        // a duplicate of the id or of a live dedup key with no holder, goes through unchanged.
        assert!(f.contains("BEGIN TRY INSERT INTO"));
        assert!(f.contains("SET @inserted = @@ROWCOUNT; END TRY BEGIN CATCH"));
        assert!(f.contains("IF ERROR_NUMBER() NOT IN (2601, 2627) THROW;"));
        assert!(f.contains("WHERE id = CAST(@P1 AS BINARY(16))"));
        assert!(f.contains(
            "WHERE queue = @P2 AND dedup_key = @P8 AND dedup_key IS NOT NULL \
             AND state IN (N'pending', N'running')"
        ));
        assert_eq!(f.matches("THROW;").count(), 2);
        // One row back: inserted, or the holder (or none: released).
        assert!(f.contains(
            "IF @inserted = 1 SELECT 1 AS inserted, CAST(NULL AS BINARY(16)) AS holder;"
        ));
        assert!(f.contains("ELSE SELECT 0 AS inserted, id AS holder"));

        // Replace: a pending job only; rowversion changes by itself, the key stays.
        let replace = flat(&s.job_unique_replace);
        assert!(replace.ends_with("WHERE id = CAST(@P1 AS BINARY(16)) AND state = N'pending'"));
        assert!(replace.contains("SET payload = @P2, priority = @P3,"));
        assert!(replace.contains(
            "run_at = DATEADD(MICROSECOND, @P5, DATEADD(SECOND, @P4, SYSUTCDATETIME()))"
        ));
        assert!(!replace.contains("version") && !replace.contains("unique_"));

        // Holder: another job with the key of @P1, by the filtered index.
        let holder = flat(&s.job_unique_holder);
        assert!(holder.contains("ON h.unique_live = j.unique_key AND h.id <> j.id"));
        assert!(holder.contains("WHERE j.id = CAST(@P1 AS BINARY(16))"));
        assert!(holder.starts_with("SELECT TOP (1) h.id"));

        // The look-up after a duplicate of a plain push reads the latest committed keys too.
        assert!(s
            .job_dedup_live
            .contains("FROM [jobs_s].[jobs] WITH (READCOMMITTEDLOCK)"));
    }

    #[test]
    fn the_schema_is_spliced_and_comments_are_dropped() {
        let s = sql();
        for (name, text) in s.all() {
            assert!(!text.contains("{schema}"), "{name}");
            assert!(!text.contains("--"), "{name}: comments are not sent");
        }
        assert!(s.job_claim.contains("FROM [jobs_s].[jobs] WITH"));
        assert!(s.migration_table.contains("CREATE SCHEMA [jobs_s]"));
        assert!(s.migration_table.contains("SCHEMA_ID(N'jobs_s')"));
    }

    #[test]
    fn the_query_files_follow_the_catalogue() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("queries");
        // server_role: the URL names one server; notify: SQL Server has no notifications;
        // migration_unlock: the application lock is owned by the migration transaction and ends
        // with it; job_complete_and_claim: atomic only inside a transaction, which no statement
        // opens (see README); job_claim_keys: job_claim_key per key (the engine's default; see
        // README).
        queue_core::engine::statements::check_directory(
            &dir,
            &[
                "server_role",
                "notify",
                "migration_unlock",
                "job_complete_and_claim",
                "job_claim_keys",
            ],
            &[],
        )
        .unwrap();
        // Every file is loaded by `Statements`, under its own name.
        let loaded: Vec<&str> = sql().all().into_iter().map(|(n, _)| n).collect();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
            assert!(loaded.contains(&stem.as_str()), "{stem}.sql is not loaded");
        }
    }

    #[test]
    fn schedule_compare_and_sets_are_locking_reads_of_the_version() {
        let s = sql();
        for (name, text) in [
            ("schedule_advance", &*s.schedule_advance),
            ("schedule_update", &*s.schedule_update),
            ("schedule_delete", &*s.schedule_delete),
        ] {
            assert!(
                text.contains("[jobs_s].[schedules] WITH (READCOMMITTEDLOCK)"),
                "{name}: {text}"
            );
            assert!(text.contains("WHERE name = @P1 AND version = @P"), "{name}");
        }
        assert!(s.schedule_advance.contains("version = version + 1"));
        // A renewal never changes the version, and never shortens a lease.
        assert!(!s.schedule_touch.contains("version"));
        assert!(s.schedule_touch.contains("expires_at < @P2 THEN @P2"));
        assert!(s.schedule_touch.contains("origin = N'code'"));
        // Ids are bound as bytes and compared as the jobs table stores them.
        assert!(s.schedule_insert.contains("CAST(@P13 AS BINARY(16))"));
        assert!(s
            .schedule_list
            .contains("LEFT JOIN [jobs_s].[jobs] AS j ON j.id = s.last_job"));
    }

    #[test]
    fn every_job_row_carries_its_workflow() {
        let s = sql();
        // The claims return the rows as stored, through OUTPUT, with the columns job_from_row
        // decodes: the workflow (which the lease carries) and the blocking dependency last.
        for (name, text) in [
            ("job_claim", &*s.job_claim),
            ("job_claim_candidates", &*s.job_claim_candidates),
            ("job_claim_key", &*s.job_claim_key),
            ("job_claim_unkeyed", &*s.job_claim_unkeyed),
        ] {
            assert!(
                text.contains(
                    "inserted.timeout_us, inserted.snoozes, inserted.workflow_id, \
                     inserted.blocked_by\n"
                ),
                "{name}: {text}"
            );
        }
        // The reads: job_list's columns; job_get's and workflow_jobs's with them (workflow_jobs
        // and job_get add the step, job_get the history and output).
        let list = flat(&s.job_list);
        let columns = list
            .split_once("SELECT TOP (@P4) ")
            .unwrap()
            .1
            .split_once(" FROM")
            .unwrap()
            .0;
        assert!(
            columns.ends_with("snoozes, workflow_id, blocked_by"),
            "{columns}"
        );
        let aliased = columns
            .split(", ")
            .map(|c| format!("j.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        assert_eq!(
            flat(&s.workflow_jobs).split_once(" FROM").unwrap().0,
            format!("SELECT {aliased}, n.step")
        );
        let get = flat(&s.job_get);
        assert!(get.contains(", j.errors, j.output, j.workflow_id, j.blocked_by, n.step FROM"));
        assert!(get.contains(
            "LEFT JOIN [jobs_s].[workflow_jobs] AS n \
             ON n.workflow_id = j.workflow_id AND n.job_id = j.id \
             WHERE j.id = CAST(@P1 AS BINARY(16))"
        ));
    }

    #[test]
    fn workflow_statements_bind_their_values_and_decide_from_committed_rows() {
        let s = sql();
        // The row: every value bound, the clock the database's; `open` is reserved: bracketed.
        assert_eq!(
            flat(&s.workflow_insert),
            "INSERT INTO [jobs_s].[workflows] (id, name, [open], callback, created_at) \
             VALUES (CAST(@P1 AS BINARY(16)), @P2, @P3, CAST(@P4 AS BINARY(16)), \
             SYSUTCDATETIME())"
        );
        assert_eq!(
            flat(&s.workflow_steps_insert_for(2)),
            "INSERT INTO [jobs_s].[workflow_jobs] (workflow_id, job_id, step) \
             SELECT CAST(@P1 AS BINARY(16)), CAST(v.job_id AS BINARY(16)), v.step \
             FROM (VALUES (@P2, @P3), (@P4, @P5)) AS v (job_id, step)"
        );
        assert_eq!(
            flat(&s.workflow_deps_insert_for(2)),
            "INSERT INTO [jobs_s].[job_deps] (dep_id, job_id, policy) \
             SELECT CAST(v.dep_id AS BINARY(16)), CAST(v.job_id AS BINARY(16)), \
             CAST(v.policy AS SMALLINT) \
             FROM (VALUES (@P1, @P2, @P3), (@P4, @P5, @P6)) AS v (dep_id, job_id, policy)"
        );
        // The lock: an update lock on the row, held to the end of the transaction.
        assert_eq!(
            flat(&s.workflow_lock),
            "SELECT id, name, [open], callback, created_at \
             FROM [jobs_s].[workflows] WITH (UPDLOCK, ROWLOCK) \
             WHERE id = CAST(@P1 AS BINARY(16))"
        );
        assert_eq!(
            flat(&s.workflow_get),
            flat(&s.workflow_lock).replace(" WITH (UPDLOCK, ROWLOCK)", "")
        );
        assert_eq!(
            flat(&s.workflow_seal),
            "UPDATE [jobs_s].[workflows] SET [open] = 0 \
             WHERE id = CAST(@P1 AS BINARY(16)) AND [open] = 1"
        );
        // `open` appears nowhere unbracketed.
        for (name, text) in s.all() {
            let w = words(text);
            let bare = w.iter().filter(|x| *x == "OPEN").count();
            assert_eq!(bare, text.matches("[open]").count(), "{name}: {text}");
        }

        let ids2 = "(CAST(@P1 AS BINARY(16)), CAST(@P2 AS BINARY(16)))";
        // Dependents: by job_deps' primary key, waiting jobs only, each listed once.
        let dependents = flat(&s.workflow_dependents_for(2));
        assert_eq!(
            dependents,
            format!(
                "SELECT DISTINCT d.job_id FROM [jobs_s].[job_deps] AS d WITH (READCOMMITTEDLOCK) \
                 INNER JOIN [jobs_s].[jobs] AS j WITH (READCOMMITTEDLOCK) ON j.id = d.job_id \
                 WHERE d.dep_id IN {ids2} AND j.state = N'waiting'"
            )
        );
        // What cancels a job: a dependency that must complete and is dead, cancelled or gone,
        // found by a read of committed rows without held locks, then read again by the update
        // with shared locks held to the statement's end, which covers only the dependencies
        // found failed (a retry of one waits for the cancellation, or is waited for).
        let block = flat(&s.workflow_block_for(2));
        assert!(
            block.starts_with(&format!(
                "DECLARE @blocked TABLE (id BINARY(16) NOT NULL PRIMARY KEY, dep BINARY(16) NOT NULL); \
                 INSERT INTO @blocked (id, dep) SELECT x.id, x.dep FROM ( SELECT j.id, \
                 (SELECT TOP (1) d.dep_id FROM [jobs_s].[job_deps] AS d WITH (READCOMMITTEDLOCK) \
                 LEFT JOIN [jobs_s].[jobs] AS p WITH (READCOMMITTEDLOCK) ON p.id = d.dep_id \
                 WHERE d.job_id = j.id AND d.policy = 0 \
                 AND (p.id IS NULL OR p.state IN (N'dead', N'cancelled')) ORDER BY d.dep_id) AS dep \
                 FROM [jobs_s].[jobs] AS j WITH (READCOMMITTEDLOCK) \
                 WHERE j.id IN {ids2} AND j.state = N'waiting' ) AS x WHERE x.dep IS NOT NULL;"
            )),
            "{block}"
        );
        assert!(
            block.ends_with(
                "UPDATE j SET state = N'cancelled', blocked_by = b.dep, \
                 finished_at = SYSUTCDATETIME(), updated_at = SYSUTCDATETIME() \
                 OUTPUT inserted.id FROM [jobs_s].[jobs] AS j INNER JOIN @blocked AS b ON b.id = j.id \
                 WHERE j.state = N'waiting' AND (EXISTS (SELECT 1 FROM [jobs_s].[jobs] AS p \
                 WITH (REPEATABLEREAD, ROWLOCK) WHERE p.id = b.dep AND p.state IN (N'dead', N'cancelled')) \
                 OR NOT EXISTS (SELECT 1 FROM [jobs_s].[jobs] AS g WITH (READCOMMITTEDLOCK) \
                 WHERE g.id = b.dep));"
            ),
            "{block}"
        );
        // The only result set is the update's OUTPUT.
        assert_eq!(block.matches("OUTPUT").count(), 1);
        // What holds a job back: every read besides the updated rows is a locking read of the
        // latest committed rows; a deleted dependency holds back one that must complete.
        let promote = flat(&s.workflow_promote_for(2));
        assert!(
            promote.starts_with(
                "UPDATE j SET state = N'pending', \
             run_at = CASE WHEN j.run_at > SYSUTCDATETIME() THEN j.run_at \
             ELSE SYSUTCDATETIME() END, updated_at = SYSUTCDATETIME() \
             OUTPUT inserted.id, inserted.queue FROM [jobs_s].[jobs] AS j"
            ),
            "{promote}"
        );
        assert!(
            promote.contains(&format!(
                "WHERE j.id IN {ids2} AND j.state = N'waiting' AND NOT EXISTS ( SELECT 1 \
             FROM [jobs_s].[job_deps] AS d WITH (READCOMMITTEDLOCK) \
             LEFT JOIN [jobs_s].[jobs] AS p WITH (READCOMMITTEDLOCK) ON p.id = d.dep_id \
             WHERE d.job_id = j.id AND NOT (ISNULL(p.state, N'') = N'completed' \
             OR (d.policy = 1 AND (p.id IS NULL OR p.state IN (N'dead', N'cancelled')))))"
            )),
            "{promote}"
        );
        assert!(promote.ends_with(
            "AND NOT EXISTS ( SELECT 1 FROM [jobs_s].[workflows] AS w WITH (READCOMMITTEDLOCK) \
             WHERE w.id = j.workflow_id AND w.callback = j.id AND w.[open] = 1)"
        ), "{promote}");
        // The row version is a ROWVERSION: it changes by itself, and cannot be assigned.
        for (name, text) in [("workflow_block", &block), ("workflow_promote", &promote)] {
            assert!(!text.contains("version"), "{name}: {text}");
        }
        // Reopen: the cancelled dependents of the retried jobs, found through job_deps' primary
        // key (blocked_by has no index), that those jobs blocked.
        assert_eq!(
            flat(&s.workflow_reopen_for(2)),
            format!(
                "UPDATE j SET state = N'waiting', blocked_by = NULL, finished_at = NULL, \
                 updated_at = SYSUTCDATETIME() OUTPUT inserted.id FROM [jobs_s].[jobs] AS j \
                 WHERE j.id IN (SELECT d.job_id FROM [jobs_s].[job_deps] AS d \
                 WHERE d.dep_id IN {ids2}) AND j.state = N'cancelled' AND j.blocked_by IN {ids2}"
            )
        );
        // The sweep: a range of jobs_waiting_idx in id order.
        assert_eq!(
            flat(&s.workflow_waiting),
            "SELECT TOP (@P2) id FROM [jobs_s].[jobs] WHERE state = N'waiting' \
             AND (@P1 IS NULL OR id > CAST(@P1 AS BINARY(16))) ORDER BY id OPTION (RECOMPILE)"
        );
        // The reads of a workflow.
        assert_eq!(
            flat(&s.workflow_edges),
            "SELECT d.job_id, d.dep_id, d.policy FROM [jobs_s].[job_deps] AS d \
             INNER JOIN [jobs_s].[workflow_jobs] AS n \
             ON n.job_id = d.job_id AND n.workflow_id = CAST(@P1 AS BINARY(16)) \
             ORDER BY d.job_id, d.dep_id"
        );
        assert!(flat(&s.workflow_jobs).ends_with(
            "FROM [jobs_s].[jobs] AS j INNER JOIN [jobs_s].[workflow_jobs] AS n \
             ON n.job_id = j.id AND n.workflow_id = CAST(@P1 AS BINARY(16)) ORDER BY j.id"
        ));
        let list = flat(&s.workflow_list);
        assert!(
            list.starts_with(
                "WITH w AS ( SELECT TOP (@P2) id, name, [open], callback, created_at \
             FROM [jobs_s].[workflows] WHERE @P1 IS NULL OR id < CAST(@P1 AS BINARY(16)) \
             ORDER BY id DESC )"
            ),
            "{list}"
        );
        assert!(
            list.contains(
                "SELECT w.id, w.name, w.[open], w.callback, w.created_at, j.state, \
             COUNT_BIG(j.id) AS jobs FROM w \
             LEFT JOIN [jobs_s].[workflow_jobs] AS n ON n.workflow_id = w.id \
             LEFT JOIN [jobs_s].[jobs] AS j ON j.id = n.job_id \
             GROUP BY w.id, w.name, w.[open], w.callback, w.created_at, j.state \
             ORDER BY w.id DESC"
            ),
            "{list}"
        );
        assert_eq!(
            flat(&s.job_deps),
            "SELECT d.dep_id, COALESCE(n.step, N'') AS step, d.policy, p.state, p.output \
             FROM [jobs_s].[job_deps] AS d \
             LEFT JOIN [jobs_s].[jobs] AS p ON p.id = d.dep_id \
             LEFT JOIN [jobs_s].[jobs] AS me ON me.id = d.job_id \
             LEFT JOIN [jobs_s].[workflow_jobs] AS n \
             ON n.workflow_id = me.workflow_id AND n.job_id = d.dep_id \
             WHERE d.job_id = CAST(@P1 AS BINARY(16)) ORDER BY d.dep_id"
        );
        // T-SQL of SQL Server 2016: no GREATEST or LEAST (2022), no STRING_AGG (2017).
        for (name, text) in s.all() {
            let w = words(text);
            for f in ["GREATEST", "LEAST", "STRING_AGG", "LIMIT"] {
                assert!(!w.iter().any(|x| x == f), "{name} uses {f}");
            }
        }
    }

    #[test]
    fn tuples_number_consecutively() {
        assert_eq!(tuples("({}, {})", 3, 2), "(@P3, @P4), (@P5, @P6)");
        assert_eq!(tuples("{}", 1, 3), "@P1, @P2, @P3");
        assert_eq!(tuples("{}", 1, 0), "");
        assert_eq!(placeholders("a = @P1 AND b = @P12 OR @P1"), vec![1, 12, 1]);
    }

    #[test]
    fn dateadd_parts_split_at_the_limits() {
        let us = |secs: i32, rest: i32| i64::from(secs) * 1_000_000 + i64::from(rest);
        assert_eq!(dateadd_parts(Duration::ZERO), (0, 0));
        assert_eq!(dateadd_parts(Duration::from_micros(999_999)), (0, 999_999));
        assert_eq!(dateadd_parts(Duration::from_micros(1_000_000)), (1, 0));
        assert_eq!(dateadd_parts(Duration::from_nanos(1_999)), (0, 1));
        // Past 2^31 microseconds (35.8 minutes) a single DATEADD(MICROSECOND, ...) overflows.
        let past_int = Duration::from_micros(i32::MAX as u64 + 1);
        let (s, r) = dateadd_parts(past_int);
        assert_eq!(us(s, r), i32::MAX as i64 + 1);
        assert!(r < 1_000_000);
        // The longest lease and the longest delay fit, exactly.
        assert_eq!(dateadd_parts(MAX_LEASE), (86_400, 0));
        assert_eq!(dateadd_parts(MAX_DELAY), (315_360_000, 0));
        let odd = MAX_DELAY - Duration::from_micros(1);
        assert_eq!(dateadd_parts(odd), (315_359_999, 999_999));
        // Beyond any validated value: saturated, never wrapped to a negative number.
        assert_eq!(dateadd_parts(Duration::MAX).0, i32::MAX);
        assert_eq!(
            dateadd_parts(Duration::from_secs(i32::MAX as u64 + 10)),
            (i32::MAX, 0)
        );
    }
}
