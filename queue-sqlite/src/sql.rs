//! The statements, loaded from `queries/*.sql` once per queue value.

queue_core::statements!(sqlx = sqlx, dir = "../queries";
    server_version,
    migration_table,
    migration_applied,
    migration_record,
    job_insert,
    job_dedup_live,
    job_insert_unique,
    job_insert_unique_holder,
    job_unique_replace,
    job_unique_holder,
    job_claim,
    job_candidates,
    job_claim_candidates,
    job_complete,
    job_complete_many,
    job_fail_retry,
    job_fail_dead,
    job_snooze,
    job_meta_get,
    job_meta_set,
    job_release,
    job_extend,
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
    job_live_leases,
    job_key_leases,
    job_key_next,
    job_claim_key,
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
    queue_set_key_rate_forget,
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
);

#[cfg(test)]
mod tests {
    #[test]
    fn the_query_files_follow_the_catalogue() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("queries");
        // See the README for why each is lacking: SQLite's clock is the host's (now), it has
        // no notifications (notify), BEGIN IMMEDIATE is the migration lock, and a file has no
        // primary or standby to tell apart (server_role), and a statement costs no round trip, so
        // job_claim_keys runs job_claim_key per key (the engine's default).
        queue_core::engine::statements::check_directory(
            &dir,
            &[
                "server_role",
                "now",
                "notify",
                "migration_lock",
                "migration_unlock",
                "job_complete_and_claim",
                "job_claim_keys",
            ],
            &[],
        )
        .unwrap();
    }
}
