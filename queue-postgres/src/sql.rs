//! The statements, loaded from `queries/*.sql` and bound to one schema once, at connect time.

/// Every statement the queue runs, with the schema spliced in. Built once per queue value and
/// never reformatted, so each text stays stable and sqlx prepares it once per connection.
#[derive(Debug)]
pub(crate) struct Statements {
    pub(crate) migration_lock: String,
    pub(crate) migration_schema: String,
    pub(crate) migration_table: String,
    pub(crate) migration_applied: String,
    pub(crate) migration_record: String,
    pub(crate) server_version: String,
    pub(crate) now: String,
    pub(crate) notify: String,
    pub(crate) job_insert: String,
    pub(crate) job_insert_notify: String,
    pub(crate) job_insert_batch: String,
    pub(crate) job_insert_batch_notify: String,
    pub(crate) job_claim: String,
    pub(crate) job_candidates: String,
    pub(crate) job_claim_versions: String,
    pub(crate) job_ack: String,
    pub(crate) job_ack_batch: String,
    pub(crate) job_fail_retry: String,
    pub(crate) job_fail_dead: String,
    pub(crate) job_extend: String,
    pub(crate) job_release: String,
    pub(crate) job_lease_state: String,
    pub(crate) job_rescue: String,
    pub(crate) job_cancel: String,
    pub(crate) job_retry: String,
    pub(crate) job_get: String,
    pub(crate) job_list: String,
    pub(crate) job_stats: String,
    pub(crate) job_prune: String,
}

/// The placeholder the SQL files use for the schema name.
const SCHEMA: &str = "{schema}";

/// Splices a schema name into a statement. `schema` must already have passed
/// `queue_core::validate::identifier`: identifiers cannot be bound, so only plain ones are allowed.
pub(crate) fn with_schema(text: &str, schema: &str) -> String {
    text.replace(SCHEMA, schema)
}

impl Statements {
    /// All statements for `schema` (a validated identifier).
    pub(crate) fn new(schema: &str) -> Self {
        let s = |text: &str| with_schema(text, schema);
        Statements {
            migration_lock: s(include_str!("../queries/migration_lock.sql")),
            migration_schema: s(include_str!("../queries/migration_schema.sql")),
            migration_table: s(include_str!("../queries/migration_table.sql")),
            migration_applied: s(include_str!("../queries/migration_applied.sql")),
            migration_record: s(include_str!("../queries/migration_record.sql")),
            server_version: s(include_str!("../queries/server_version.sql")),
            now: s(include_str!("../queries/now.sql")),
            notify: s(include_str!("../queries/notify.sql")),
            job_insert: s(include_str!("../queries/job_insert.sql")),
            job_insert_notify: s(include_str!("../queries/job_insert_notify.sql")),
            job_insert_batch: s(include_str!("../queries/job_insert_batch.sql")),
            job_insert_batch_notify: s(include_str!("../queries/job_insert_batch_notify.sql")),
            job_claim: s(include_str!("../queries/job_claim.sql")),
            job_candidates: s(include_str!("../queries/job_candidates.sql")),
            job_claim_versions: s(include_str!("../queries/job_claim_versions.sql")),
            job_ack: s(include_str!("../queries/job_ack.sql")),
            job_ack_batch: s(include_str!("../queries/job_ack_batch.sql")),
            job_fail_retry: s(include_str!("../queries/job_fail_retry.sql")),
            job_fail_dead: s(include_str!("../queries/job_fail_dead.sql")),
            job_extend: s(include_str!("../queries/job_extend.sql")),
            job_release: s(include_str!("../queries/job_release.sql")),
            job_lease_state: s(include_str!("../queries/job_lease_state.sql")),
            job_rescue: s(include_str!("../queries/job_rescue.sql")),
            job_cancel: s(include_str!("../queries/job_cancel.sql")),
            job_retry: s(include_str!("../queries/job_retry.sql")),
            job_get: s(include_str!("../queries/job_get.sql")),
            job_list: s(include_str!("../queries/job_list.sql")),
            job_stats: s(include_str!("../queries/job_stats.sql")),
            job_prune: s(include_str!("../queries/job_prune.sql")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_replaced() {
        let s = Statements::new("my_schema");
        let all = format!("{s:?}");
        assert!(!all.contains(SCHEMA));
        assert!(s.job_claim.contains("my_schema.jobs"));
    }
}
