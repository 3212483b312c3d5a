//! The statements, loaded from `queries/*.sql` and bound to one schema once, at connect time.

queue_core::statements!(sqlx = sqlx, dir = "../queries";
    server_version,
    server_role,
    now,
    session_setup,
    notify,
    migration_lock,
    migration_lock_row,
    migration_table,
    migration_applied,
    migration_record,
    job_insert,
    job_insert_plain,
    job_insert_copy,
    job_insert_copy_workflow,
    job_dedup_live,
    job_insert_unique,
    job_unique_replace,
    job_unique_holder,
    job_claim,
    job_claim_versioned,
    job_candidates,
    job_claim_candidates,
    job_complete,
    job_complete_many,
    job_complete_and_claim,
    job_fail_retry,
    job_fail_dead,
    job_snooze,
    job_meta_get,
    job_meta_set,
    job_release,
    job_extend,
    job_extend_lock,
    job_extend_locked,
    job_state,
    job_expired,
    job_rescue,
    job_cancel,
    job_retry,
    job_reschedule,
    job_get,
    job_list,
    job_stats,
    job_prune,
    job_ids,
    job_count,
    job_cancel_many,
    job_retry_many,
    job_delete_many,
    job_workflows,
    job_dependents_count,
    job_live_leases,
    job_key_leases,
    job_key_next,
    job_claim_key,
    job_claim_keys,
    job_claim_unkeyed,
    job_key_waiting,
    maintenance_claim,
    maintenance_release,
    queue_control_get,
    queue_control_lock,
    queue_control_list,
    queue_set_paused,
    queue_set_limit,
    queue_set_rate,
    queue_rate_state,
    queue_rate_record,
    queue_set_key_limit,
    queue_set_fair,
    queue_key_cursor,
    queue_set_key_rate,
    queue_key_rate_get,
    queue_key_rate_put,
    queue_key_rate_prune,
    schedule_get,
    schedule_list,
    schedule_insert,
    schedule_update,
    schedule_touch,
    schedule_advance,
    schedule_delete,
    workflow_insert,
    workflow_steps_insert,
    workflow_deps_insert,
    workflow_lock,
    workflow_seal,
    workflow_dependents,
    workflow_block,
    workflow_promote,
    workflow_reopen,
    workflow_blocked,
    workflow_waiting,
    workflow_get,
    workflow_jobs,
    workflow_edges,
    workflow_list,
    workflow_prune_lock,
    workflow_prune,
    job_deps,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_replaced() {
        let s = Statements::new(&[("{schema}", "my_schema")]);
        let all = format!("{s:?}");
        assert!(!all.contains("{schema}"));
        assert!(s.job_claim.as_str().contains("my_schema.jobs"));
        assert!(
            !s.job_claim.as_str().contains("--"),
            "comments are not sent"
        );
    }

    #[test]
    fn the_query_files_follow_the_catalogue() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("queries");
        // migration_unlock: the advisory lock is transaction-scoped and ends with the migration
        // transaction (see README). session_setup: run on each new connection of the pool, not a
        // statement of the catalogue.
        queue_core::engine::statements::check_directory(
            &dir,
            &["migration_unlock"],
            &["session_setup"],
        )
        .unwrap();
    }
}
