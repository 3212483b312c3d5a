//! The statements, loaded from `queries/*.sql` once per queue value with the validated table
//! prefix spliced in, and the expansion of their placeholder lists (`{ids}`, `{token_cases}`,
//! ...) for statements over several rows. Only placeholders are ever expanded: values are bound.

use queue_core::engine::statements::{self, Placeholder};
use sqlx::{AssertSqlSafe, SqlSafeStr, SqlStr};

// The statements are the files of `queries/`, listed by `build.rs`: `queries!(dir; names)`.
macro_rules! queries {
    ($dir:literal; $($name:ident),* $(,)?) => {
        queue_core::statements!(sqlx = sqlx, dir = $dir; $($name),*);
    };
}
include!(concat!(env!("OUT_DIR"), "/queries.rs"));

/// `n` copies of the statement text `item` joined by `sep`.
fn repeat(item: &str, n: usize, sep: &str) -> String {
    vec![item; n].join(sep)
}

/// `?, ?, ?` (placeholders only).
fn placeholders(n: usize) -> String {
    statements::placeholders(Placeholder::Question, "{}", n, ", ")
}

/// `WHEN ? THEN ?` per row, for `CASE id ... END`.
fn cases(n: usize) -> String {
    statements::placeholders(Placeholder::Question, "WHEN {} THEN {}", n, " ")
}

/// A locking SELECT (`... FOR UPDATE` at its end) as a plain read.
fn unlocked(statement: &SqlStr) -> SqlStr {
    let text = statement.as_str().trim_end();
    let plain = text.strip_suffix("FOR UPDATE").unwrap_or(text).trim_end();
    AssertSqlSafe(plain.to_owned()).into_sql_str()
}

/// `text` with its placeholder lists put in.
fn expand(text: &SqlStr, markers: &[(&str, String)]) -> SqlStr {
    AssertSqlSafe(statements::splice(text.as_str(), markers)).into_sql_str()
}

/// A one-row INSERT (`... VALUES (...)`) made into one of `rows` rows, its VALUES tuple repeated.
fn values_rows(statement: &SqlStr, rows: usize) -> SqlStr {
    if rows == 1 {
        return statement.clone();
    }
    let text = statement.as_str();
    let (head, row) = text.rsplit_once("VALUES").unwrap_or((text, ""));
    let row = row.trim();
    let mut sql = String::with_capacity(head.len() + 8 + rows * (row.len() + 2));
    sql.push_str(head);
    sql.push_str("VALUES ");
    sql.push_str(&repeat(row, rows, ", "));
    AssertSqlSafe(sql).into_sql_str()
}

impl Statements {
    /// A multi-row INSERT of `rows` rows: `job_insert`, or `job_insert_meta` (with each job's
    /// metadata, timeout and concurrency key) when `meta`.
    pub(crate) fn job_insert_rows(&self, rows: usize, meta: bool) -> SqlStr {
        let statement = if meta {
            &self.job_insert_meta
        } else {
            &self.job_insert
        };
        values_rows(statement, rows)
    }

    /// `workflow_steps_insert` of `rows` rows.
    pub(crate) fn workflow_steps_insert(&self, rows: usize) -> SqlStr {
        values_rows(&self.workflow_steps_insert, rows)
    }

    /// `workflow_deps_insert` of `rows` rows.
    pub(crate) fn workflow_deps_insert(&self, rows: usize) -> SqlStr {
        values_rows(&self.workflow_deps_insert, rows)
    }

    pub(crate) fn workflow_dependents(&self, ids: usize) -> SqlStr {
        expand(&self.workflow_dependents, &[("{ids}", placeholders(ids))])
    }

    pub(crate) fn workflow_block(&self, ids: usize) -> SqlStr {
        expand(&self.workflow_block, &[("{ids}", placeholders(ids))])
    }

    pub(crate) fn workflow_block_update(&self, rows: usize) -> SqlStr {
        expand(
            &self.workflow_block_update,
            &[
                ("{blocked_cases}", cases(rows)),
                ("{ids}", placeholders(rows)),
            ],
        )
    }

    pub(crate) fn workflow_promote(&self, ids: usize) -> SqlStr {
        expand(&self.workflow_promote, &[("{ids}", placeholders(ids))])
    }

    /// `workflow_promote`'s SELECT without its locks (a plain read that picks the candidates
    /// the locking read then confirms).
    pub(crate) fn workflow_promote_read(&self, ids: usize) -> SqlStr {
        unlocked(&self.workflow_promote(ids))
    }

    /// `workflow_block`'s SELECT without its locks.
    pub(crate) fn workflow_block_read(&self, ids: usize) -> SqlStr {
        unlocked(&self.workflow_block(ids))
    }

    pub(crate) fn workflow_promote_update(&self, ids: usize) -> SqlStr {
        expand(
            &self.workflow_promote_update,
            &[("{ids}", placeholders(ids))],
        )
    }

    pub(crate) fn workflow_reopen(&self, ids: usize) -> SqlStr {
        expand(&self.workflow_reopen, &[("{ids}", placeholders(ids))])
    }

    pub(crate) fn workflow_reopen_update(&self, ids: usize) -> SqlStr {
        expand(
            &self.workflow_reopen_update,
            &[("{ids}", placeholders(ids))],
        )
    }

    pub(crate) fn workflow_blocked(&self, ids: usize) -> SqlStr {
        expand(&self.workflow_blocked, &[("{ids}", placeholders(ids))])
    }

    pub(crate) fn job_workflows(&self, ids: usize) -> SqlStr {
        expand(&self.job_workflows, &[("{ids}", placeholders(ids))])
    }

    pub(crate) fn job_dependents_count(&self, states: usize) -> SqlStr {
        expand(
            &self.job_dependents_count,
            &[("{states}", placeholders(states))],
        )
    }

    /// `workflow_prune_lock`, without `SKIP LOCKED` for a server that lacks it.
    pub(crate) fn workflow_prune_lock(&self, skip_locked: bool) -> SqlStr {
        if skip_locked {
            self.workflow_prune_lock.clone()
        } else {
            let text = self.workflow_prune_lock.as_str().trim_end();
            let plain = text.strip_suffix("SKIP LOCKED").unwrap_or(text).trim_end();
            AssertSqlSafe(plain.to_owned()).into_sql_str()
        }
    }

    pub(crate) fn workflow_prune(&self, ids: usize) -> SqlStr {
        expand(&self.workflow_prune, &[("{ids}", placeholders(ids))])
    }

    pub(crate) fn workflow_prune_jobs(&self, ids: usize) -> SqlStr {
        expand(&self.workflow_prune_jobs, &[("{ids}", placeholders(ids))])
    }

    pub(crate) fn workflow_prune_deps(&self, ids: usize) -> SqlStr {
        expand(&self.workflow_prune_deps, &[("{ids}", placeholders(ids))])
    }

    pub(crate) fn workflow_prune_steps(&self, ids: usize) -> SqlStr {
        expand(&self.workflow_prune_steps, &[("{ids}", placeholders(ids))])
    }

    pub(crate) fn workflow_prune_rows(&self, ids: usize) -> SqlStr {
        expand(&self.workflow_prune_rows, &[("{ids}", placeholders(ids))])
    }

    pub(crate) fn job_dedup_live(&self, queues: usize, keys: usize) -> SqlStr {
        expand(
            &self.job_dedup_live,
            &[
                ("{queues}", placeholders(queues)),
                ("{keys}", placeholders(keys)),
            ],
        )
    }

    pub(crate) fn job_claim_update(&self, rows: usize) -> SqlStr {
        expand(
            &self.job_claim_update,
            &[
                ("{token_cases}", cases(rows)),
                ("{ids}", placeholders(rows)),
            ],
        )
    }

    pub(crate) fn job_claim_candidates_batch(&self, rows: usize) -> SqlStr {
        expand(
            &self.job_claim_candidates_batch,
            &[
                ("{token_cases}", cases(rows)),
                ("{version_cases}", cases(rows)),
                ("{ids}", placeholders(rows)),
            ],
        )
    }

    pub(crate) fn job_claim_candidates_tokens(&self, rows: usize) -> SqlStr {
        expand(
            &self.job_claim_candidates_tokens,
            &[("{ids}", placeholders(rows))],
        )
    }

    pub(crate) fn job_complete_many(&self, rows: usize, delete: bool) -> SqlStr {
        let statement = if delete {
            &self.job_complete_many_delete
        } else {
            &self.job_complete_many
        };
        expand(
            statement,
            &[
                ("{ids}", placeholders(rows)),
                ("{token_cases}", cases(rows)),
            ],
        )
    }

    pub(crate) fn job_rescue(&self, rows: usize) -> SqlStr {
        expand(
            &self.job_rescue,
            &[
                ("{ids}", placeholders(rows)),
                ("{token_cases}", cases(rows)),
            ],
        )
    }

    /// `job_stats` for `queues` queues: one copy of the per-queue SELECT each, joined with
    /// UNION ALL.
    pub(crate) fn job_stats(&self, queues: usize) -> SqlStr {
        AssertSqlSafe(repeat(self.job_stats.as_str(), queues, "\nUNION ALL\n")).into_sql_str()
    }

    pub(crate) fn job_ids(&self, states: usize) -> SqlStr {
        expand(&self.job_ids, &[("{states}", placeholders(states))])
    }

    pub(crate) fn job_count(&self, states: usize) -> SqlStr {
        expand(&self.job_count, &[("{states}", placeholders(states))])
    }

    pub(crate) fn job_cancel_many(&self, ids: usize) -> SqlStr {
        expand(&self.job_cancel_many, &[("{ids}", placeholders(ids))])
    }

    pub(crate) fn job_retry_many(&self, ids: usize) -> SqlStr {
        expand(&self.job_retry_many, &[("{ids}", placeholders(ids))])
    }

    pub(crate) fn job_delete_many(&self, ids: usize, states: usize) -> SqlStr {
        expand(
            &self.job_delete_many,
            &[
                ("{ids}", placeholders(ids)),
                ("{states}", placeholders(states)),
            ],
        )
    }

    pub(crate) fn job_prune(&self, states: usize) -> SqlStr {
        expand(&self.job_prune, &[("{states}", placeholders(states))])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_prune_locks_a_page_by_age_then_deletes_whole_workflows() {
        let s = Statements::new(&[("{prefix}", "t_")]);
        let flat = |sql: &str| sql.split_whitespace().collect::<Vec<_>>().join(" ");
        // The page: a range of the index by age from the cursor, locked, skipping held rows;
        // without SKIP LOCKED where the server lacks it.
        let lock = flat(s.workflow_prune_lock(true).as_str());
        assert_eq!(
            lock,
            "SELECT id, created_at FROM t_workflows FORCE INDEX (created) \
             WHERE created_at < TIMESTAMPADD(MICROSECOND, -?, UTC_TIMESTAMP(6)) \
             AND (created_at > ? OR (created_at = ? AND id > ?)) \
             ORDER BY created_at, id LIMIT ? FOR UPDATE SKIP LOCKED"
        );
        assert_eq!(
            flat(s.workflow_prune_lock(false).as_str()),
            lock.strip_suffix(" SKIP LOCKED").unwrap()
        );
        // The workflows of the page none of whose jobs keeps it (each looked up by the jobs
        // table's key); the ids first, then the ages.
        let prune = flat(s.workflow_prune(2).as_str());
        assert!(
            prune.starts_with(
                "SELECT w.id FROM t_workflows AS w FORCE INDEX (PRIMARY) WHERE w.id IN (?, ?) \
                 AND NOT EXISTS ( SELECT 1 FROM t_workflow_jobs AS n \
                 JOIN t_jobs AS j FORCE INDEX (PRIMARY) ON j.id = n.job_id \
                 WHERE n.workflow_id = w.id AND NOT COALESCE(CASE j.state"
            ),
            "{prune}"
        );
        // Then the dependencies of their jobs, their jobs, their steps and their rows.
        assert_eq!(
            flat(s.workflow_prune_deps(2).as_str()),
            "DELETE d FROM t_job_deps AS d JOIN t_workflow_jobs AS n ON n.job_id = d.job_id \
             WHERE n.workflow_id IN (?, ?)"
        );
        assert_eq!(
            flat(s.workflow_prune_jobs(2).as_str()),
            "DELETE j FROM t_jobs AS j JOIN t_workflow_jobs AS n ON n.job_id = j.id \
             WHERE n.workflow_id IN (?, ?) AND j.state IN ('completed', 'dead', 'cancelled')"
        );
        assert_eq!(
            s.workflow_prune_steps(3).as_str(),
            "DELETE FROM t_workflow_jobs WHERE workflow_id IN (?, ?, ?)"
        );
        assert_eq!(
            s.workflow_prune_rows(1).as_str(),
            "DELETE FROM t_workflows WHERE id IN (?)"
        );
    }

    #[test]
    fn statements_are_prefixed_and_placeholder_only() {
        let s = Statements::new(&[("{prefix}", "t_")]);
        assert!(s.job_claim.as_str().contains("FROM t_jobs"));
        assert!(!s.job_claim.as_str().contains("--"));
        let u = s.job_claim_update(2);
        assert!(u
            .as_str()
            .contains("CASE id WHEN ? THEN ? WHEN ? THEN ? END"));
        assert!(u.as_str().contains("id IN (?, ?)"));
        let ins = s.job_insert_rows(3, false);
        assert_eq!(ins.as_str().matches("UTC_TIMESTAMP(6)").count(), 9);
        assert_eq!(ins.as_str().matches('?').count(), 30);
        let ins = s.job_insert_rows(3, true);
        assert_eq!(ins.as_str().matches("UTC_TIMESTAMP(6)").count(), 9);
        assert_eq!(ins.as_str().matches('?').count(), 39);
        // The state and the workflow are bound in both forms (a workflow's jobs may wait).
        for rows in [1, 3] {
            for meta in [false, true] {
                let ins = s.job_insert_rows(rows, meta);
                assert!(
                    ins.as_str().contains("kind, workflow_id"),
                    "{}",
                    ins.as_str()
                );
                assert!(!ins.as_str().contains("'pending'"), "{}", ins.as_str());
            }
        }
        assert!(s
            .job_complete_many(2, false)
            .as_str()
            .contains("id IN (?, ?)"));
        assert!(s.job_prune(3).as_str().contains("state IN (?, ?, ?)"));
        assert!(s
            .job_dedup_live(1, 2)
            .as_str()
            .contains("queue IN (?) AND dedup_live IN (?, ?)"));
        let stats = s.job_stats(2);
        assert_eq!(stats.as_str().matches("UNION ALL").count(), 1);
        assert_eq!(stats.as_str().matches('?').count(), 24);
        assert_eq!(stats.as_str().matches("state = 'waiting'").count(), 2);
        assert!(s
            .job_delete_many(3, 2)
            .as_str()
            .contains("id IN (?, ?, ?) AND state IN (?, ?)"));
        assert!(s.job_ids(2).as_str().contains("state IN (?, ?)"));
        // Keyed claims: step 1 through index key_claim (or `claim` for jobs without a key),
        // in claim order, locking; every ordinary claim refuses a keyed queue.
        let key = s.job_claim_key.as_str();
        assert!(key.contains("FROM t_jobs FORCE INDEX (key_claim)"));
        assert!(key.contains("pending_key = ? AND state = 'pending'"));
        assert!(key.contains("ORDER BY claim_priority, run_at, id"));
        assert!(key.ends_with("FOR UPDATE SKIP LOCKED"));
        let unkeyed = s.job_claim_unkeyed.as_str();
        assert!(unkeyed.contains("concurrency_key IS NULL"));
        assert!(unkeyed.ends_with("FOR UPDATE SKIP LOCKED"));
        for claim in [
            &s.job_claim,
            &s.job_claim_candidates,
            &s.job_claim_candidates_batch,
        ] {
            assert!(
                claim.as_str().contains(
                    "OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares"
                ),
                "{}",
                claim.as_str()
            );
        }
        assert!(s.job_key_next.as_str().contains("MIN(pending_key)"));
        for control in [
            &s.queue_control_get,
            &s.queue_control_lock,
            &s.queue_control_list,
        ] {
            assert!(control
                .as_str()
                .contains("key_limit, fair_shares, key_cursor, key_rate_limit, key_rate_period_us FROM t_queues"));
        }
        for insert in [s.job_insert_rows(1, true), s.job_insert_unique.clone()] {
            assert!(insert.as_str().contains("concurrency_key, version"));
        }
        // Workflows: multi-row inserts, id lists expanded, the two-step statements locking
        // every row they read and updating by id with the state checked again.
        let steps = s.workflow_steps_insert(2);
        assert!(steps.as_str().ends_with("VALUES (?, ?, ?), (?, ?, ?)"));
        let deps = s.workflow_deps_insert(3);
        assert_eq!(deps.as_str().matches('?').count(), 9);
        assert!(s
            .workflow_dependents(2)
            .as_str()
            .contains("d.dep_id IN (?, ?) AND j.state = 'waiting'"));
        for select in [s.workflow_block(2), s.workflow_promote(2)] {
            assert!(select
                .as_str()
                .contains("j.id IN (?, ?) AND j.state = 'waiting'"));
            assert!(select.as_str().starts_with("SELECT STRAIGHT_JOIN"));
            assert!(select.as_str().ends_with("FOR UPDATE"));
        }
        assert!(s.workflow_reopen(1).as_str().ends_with("FOR UPDATE"));
        let block = s.workflow_block_update(2);
        assert!(block
            .as_str()
            .contains("CASE id WHEN ? THEN ? WHEN ? THEN ? END"));
        assert!(block
            .as_str()
            .contains("WHERE id IN (?, ?) AND state = 'waiting'"));
        assert!(s
            .workflow_promote_update(2)
            .as_str()
            .contains("WHERE id IN (?, ?) AND state = 'waiting'"));
        assert!(s
            .workflow_reopen_update(2)
            .as_str()
            .contains("WHERE id IN (?, ?) AND state = 'cancelled'"));
        for cancel in [&s.job_cancel, &s.job_cancel_many] {
            assert!(cancel
                .as_str()
                .contains("state IN ('waiting', 'pending', 'running')"));
        }
        for claim in [
            &s.job_claim,
            &s.job_candidates,
            &s.job_claim_key,
            &s.job_claim_unkeyed,
        ] {
            assert!(claim.as_str().contains("workflow_id, blocked_by"));
        }
        let all = format!("{s:?}");
        assert!(!all.contains("{prefix}"));
    }

    #[test]
    fn the_query_files_follow_the_catalogue() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("queries");
        // notify: MySQL and MariaDB have no notifications; drop_tables serves
        // MySqlQueue::drop_tables; job_claim_keys locks each key's jobs with job_claim_key and
        // leases them all with one job_claim_update.
        queue_core::engine::statements::check_directory(
            &dir,
            &["notify", "job_complete_and_claim", "job_claim_keys"],
            &["drop_tables"],
        )
        .unwrap();
    }
}
