//! The statement catalogue every dialect follows, loading statement files, and the placeholder
//! lists of statements over several rows.
//!
//! Each dialect keeps its SQL in `queries/<name>.sql`, one statement per file, headed
//! `-- name: <name>`. The names are the same in every dialect and are the names of the driver
//! methods that run them (the capability traits of [`driver`](super::driver)), so a reader who
//! knows one dialect knows where everything is in the others. A dialect that lacks a statement
//! says why in its README; a dialect that needs a second step for one method names the file
//! `<method>_<step>.sql`.
//!
//! [`CATALOGUE`] is the one list of names. A dialect keeps none: its build script lists its
//! `queries/` files and hands them to [`statements!`](crate::statements), and its unit tests
//! check the files against the catalogue with [`check_directory`].

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

/// Every statement name of the catalogue.
pub const CATALOGUE: &[&str] = &[
    "server_version",
    "server_role",
    "now",
    "notify",
    "migration_lock",
    "migration_table",
    "migration_applied",
    "migration_record",
    "migration_unlock",
    "job_insert",
    "job_dedup_live",
    "job_insert_unique",
    "job_unique_replace",
    "job_unique_holder",
    "job_claim",
    "job_candidates",
    "job_claim_candidates",
    "job_complete",
    "job_complete_many",
    "job_complete_and_claim",
    "job_fail_retry",
    "job_fail_dead",
    "job_snooze",
    "job_meta_get",
    "job_meta_set",
    "job_release",
    "job_extend",
    "job_state",
    "job_expired",
    "job_rescue",
    "job_cancel",
    "job_retry",
    "job_reschedule",
    "job_get",
    "job_list",
    "job_stats",
    "job_prune",
    "job_ids",
    "job_count",
    "job_cancel_many",
    "job_retry_many",
    "job_delete_many",
    "job_workflows",
    "job_dependents_count",
    "job_live_leases",
    "job_key_leases",
    "job_key_next",
    "job_claim_key",
    "job_claim_keys",
    "job_claim_unkeyed",
    "job_key_waiting",
    // Maintenance tasks' lease rows (retention).
    "maintenance_claim",
    "maintenance_release",
    "queue_control_get",
    "queue_control_lock",
    "queue_control_list",
    "queue_set_paused",
    "queue_set_limit",
    "queue_set_rate",
    "queue_rate_state",
    "queue_rate_record",
    "queue_set_key_limit",
    "queue_set_fair",
    "queue_key_cursor",
    "queue_set_key_rate",
    "queue_key_rate_get",
    "queue_key_rate_put",
    "queue_key_rate_prune",
    // Periodic jobs (schedules).
    "schedule_get",
    "schedule_list",
    "schedule_insert",
    "schedule_update",
    "schedule_touch",
    "schedule_advance",
    "schedule_delete",
    // Workflows.
    "workflow_insert",
    "workflow_steps_insert",
    "workflow_deps_insert",
    "workflow_lock",
    "workflow_seal",
    "workflow_dependents",
    "workflow_block",
    "workflow_promote",
    "workflow_reopen",
    "workflow_blocked",
    "workflow_waiting",
    "workflow_get",
    "workflow_jobs",
    "workflow_edges",
    "workflow_list",
    "workflow_prune_lock",
    "workflow_prune",
    "job_deps",
];

/// A statement file as it is sent: its comment lines (header and notes) dropped, and each
/// `(marker, value)` of `splices` replaced. Only identifiers that were validated as plain
/// (`queue_core::validate::identifier`) and placeholder lists may be spliced: values are bound.
pub fn load(text: &str, splices: &[(&str, &str)]) -> String {
    let text = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    splice(text.trim(), splices)
}

/// `text` with each `(marker, value)` of `splices` replaced, in order: a loaded statement with
/// its placeholder lists ([`placeholders`]) put in, for a statement over several rows. As for
/// [`load`], only validated identifiers and placeholder lists may be spliced.
pub fn splice<S: AsRef<str>>(text: &str, splices: &[(&str, S)]) -> String {
    let mut out = text.to_owned();
    for (marker, value) in splices {
        out = out.replace(marker, value.as_ref());
    }
    out
}

/// How a dialect writes the placeholder of a bound value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placeholder {
    /// `?`: values bind in the order of their placeholders (MySQL, SQLite).
    Question,
    /// `prefix` and the value's position, counted on from `first` through a list (SQL Server's
    /// `@P1`, `@P2`, ... through tiberius).
    Numbered {
        /// What comes before the number (`@P`).
        prefix: &'static str,
        /// The number of the list's first placeholder.
        first: usize,
    },
}

/// A list of placeholders for a statement over several values or rows: `count` copies of
/// `item` joined by `sep`, each `{}` in them a placeholder written as `style` says (numbered
/// ones counting on from copy to copy). It writes placeholders only: the values are bound.
///
/// ```
/// use dbqueue_core::engine::statements::{placeholders, Placeholder};
///
/// assert_eq!(placeholders(Placeholder::Question, "{}", 3, ", "), "?, ?, ?");
/// assert_eq!(
///     placeholders(Placeholder::Question, "WHEN {} THEN {}", 2, " "),
///     "WHEN ? THEN ? WHEN ? THEN ?"
/// );
/// let at = Placeholder::Numbered { prefix: "@P", first: 3 };
/// assert_eq!(placeholders(at, "({}, {})", 2, ", "), "(@P3, @P4), (@P5, @P6)");
/// ```
pub fn placeholders(style: Placeholder, item: &str, count: usize, sep: &str) -> String {
    let per = item.matches("{}").count();
    let mut out = String::with_capacity(count * (item.len() + sep.len() + 4 * per));
    let mut n = match style {
        Placeholder::Question => 0,
        Placeholder::Numbered { first, .. } => first,
    };
    for i in 0..count {
        if i > 0 {
            out.push_str(sep);
        }
        let mut parts = item.split("{}");
        out.push_str(parts.next().unwrap_or_default());
        for part in parts {
            match style {
                Placeholder::Question => out.push('?'),
                Placeholder::Numbered { prefix, .. } => {
                    let _ = write!(out, "{prefix}{n}");
                    n += 1;
                }
            }
            out.push_str(part);
        }
    }
    out
}

/// Declares a dialect's `Statements`: one `sqlx::SqlStr` field per statement name, each loaded
/// from `<dir>/<name>.sql` at compile time and passed through [`load`] with the given splices.
/// `sqlx` is the path of the dialect's sqlx crate (core itself depends on no driver). The one
/// `AssertSqlSafe` of a dialect's statements is here: their text is the file's, with nothing
/// spliced in but validated identifiers.
///
/// `dir` is a path `include_str!` can read from the invoking file; a dialect passes the
/// absolute path of its `queries/` directory and every file in it, as its build script lists
/// them.
///
/// ```text
/// queue_core::statements!(sqlx = ::sqlx, dir = "/src/queue-x/queries"; now, job_get, job_list);
/// let sql = Statements::new(&[("{schema}", "queue")]);
/// ```
#[macro_export]
macro_rules! statements {
    (sqlx = $sqlx:ident, dir = $dir:literal; $($name:ident),* $(,)?) => {
        /// Every statement of the dialect, loaded from its `queries/` directory with the
        /// namespace spliced in. Built once per queue value and never reformatted, so each text
        /// stays stable and the driver prepares it once per connection; cheap to clone.
        #[derive(Debug)]
        pub(crate) struct Statements {
            $(pub(crate) $name: $sqlx::SqlStr,)*
        }

        impl Statements {
            /// All statements, with `splices` (validated identifiers only) replaced.
            pub(crate) fn new(splices: &[(&str, &str)]) -> Self {
                use $sqlx::SqlSafeStr as _;
                Statements {
                    $($name: $sqlx::AssertSqlSafe(::std::sync::Arc::<str>::from(
                        $crate::engine::statements::load(
                            include_str!(concat!($dir, "/", stringify!($name), ".sql")),
                            splices,
                        ),
                    ))
                    .into_sql_str(),)*
                }
            }
        }
    };
}

/// The name in a statement file's header (`-- name: <name>` on its first line).
pub fn header(text: &str) -> Option<&str> {
    text.lines()
        .next()?
        .trim()
        .strip_prefix("-- name:")
        .map(str::trim)
}

/// Checks a dialect's `queries/` directory against the catalogue: every file is headed with its
/// own name; every catalogue statement has a file unless named in `lacks`; every other file is
/// the second step of a catalogue statement (`<name>_<step>`) or named in `extras`. For the
/// dialects' unit tests.
///
/// # Errors
/// Every mismatch, one per line.
pub fn check_directory(dir: &Path, lacks: &[&str], extras: &[&str]) -> Result<(), String> {
    let mut problems = Vec::new();
    let mut names = BTreeSet::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("sql") {
            continue;
        }
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{stem}: {e}"))?;
        if header(&text) != Some(stem.as_str()) {
            problems.push(format!(
                "{stem}.sql: the first line must be `-- name: {stem}` (found {:?})",
                text.lines().next().unwrap_or_default()
            ));
        }
        let known = CATALOGUE.contains(&stem.as_str())
            || extras.contains(&stem.as_str())
            || CATALOGUE.iter().any(|c| {
                stem.strip_prefix(c)
                    .is_some_and(|rest| rest.starts_with('_'))
            });
        if !known {
            problems.push(format!(
                "{stem}.sql is not in the catalogue, not a step of a catalogue statement, and not a declared extra"
            ));
        }
        if lacks.contains(&stem.as_str()) {
            problems.push(format!("{stem}.sql exists but is declared as lacking"));
        }
        names.insert(stem);
    }
    for name in CATALOGUE {
        if !names.contains(*name) && !lacks.contains(name) {
            problems.push(format!(
                "{name}.sql is missing (or declare it as lacking, with the reason in the README)"
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_drops_comments_and_splices() {
        let text =
            "-- name: job_get\n-- a note\nSELECT *\nFROM {schema}.jobs -- kept\nWHERE id = $1\n";
        assert_eq!(
            load(text, &[("{schema}", "q")]),
            "SELECT *\nFROM q.jobs -- kept\nWHERE id = $1"
        );
        assert_eq!(header(text), Some("job_get"));
        assert_eq!(header("SELECT 1"), None);
    }

    #[test]
    fn placeholder_lists_number_on_from_copy_to_copy() {
        let at = |first| Placeholder::Numbered {
            prefix: "@P",
            first,
        };
        assert_eq!(placeholders(at(1), "{}", 3, ", "), "@P1, @P2, @P3");
        assert_eq!(
            placeholders(at(9), "(CAST({} AS BINARY(16)), {})", 2, ", "),
            "(CAST(@P9 AS BINARY(16)), @P10), (CAST(@P11 AS BINARY(16)), @P12)"
        );
        assert_eq!(placeholders(at(1), "{}", 0, ", "), "");
        assert_eq!(placeholders(Placeholder::Question, "{}", 0, ", "), "");
        assert_eq!(
            placeholders(Placeholder::Question, "({}, 0)", 2, ", "),
            "(?, 0), (?, 0)"
        );
        assert_eq!(
            splice(
                "IN ({ids}) AND s IN ({states})",
                &[("{ids}", "?, ?"), ("{states}", "?")]
            ),
            "IN (?, ?) AND s IN (?)"
        );
    }
}
