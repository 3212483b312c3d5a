//! The catalogue: the one list of cases every backend and claim strategy runs.

use crate::harness::Ctx;
use crate::runner::TestFuture;

/// One case of the catalogue.
#[derive(Clone, Copy)]
pub struct Case {
    /// Its name (the test is called `<backend>::<claim strategy>::<name>`).
    pub name: &'static str,
    /// The case.
    pub run: fn(Ctx) -> TestFuture,
}

macro_rules! catalogue {
    ($($module:ident :: $case:ident),* $(,)?) => {
        vec![$(Case {
            name: stringify!($case),
            run: |ctx| Box::pin(crate::cases::$module::$case(ctx)),
        }),*]
    };
}

/// Every case, in the order they are listed (and reported).
pub fn catalogue() -> Vec<Case> {
    catalogue![
        basic::round_trip_payloads,
        basic::empty_pop_returns_at_once,
        basic::fifo_within_priority,
        basic::higher_priority_first,
        basic::delayed_job_invisible_until_due,
        basic::run_at_schedules,
        basic::queues_are_isolated,
        basic::pop_limit_respected,
        basic::pop_records_the_claim,
        basic::get_unknown_is_none,
        basic::push_batch_returns_ids_in_order,
        basic::payload_text_round_trips_exactly,
        basic::extreme_priorities_keep_their_order,
        concurrency::concurrent_poppers_exactly_once,
        concurrency::expiring_leases_under_a_busy_rescuer,
        lifecycle::ack_completes_and_never_returns,
        lifecycle::ack_batch_skips_lost_leases,
        lifecycle::ack_batch_and_pop_completes_then_claims,
        lifecycle::fail_reschedules_by_backoff,
        lifecycle::fail_after_max_attempts_goes_dead,
        lifecycle::permanent_failure_goes_dead,
        lifecycle::retry_brings_dead_back,
        lifecycle::release_does_not_consume_attempt,
        lifecycle::cancel_pending,
        lifecycle::cancel_running_reports_cancelled,
        lifecycle::cancel_finished_is_invalid_state,
        lifecycle::unknown_id_not_found,
        lifecycle::worker_is_cleared_when_back_to_pending,
        lifecycle::failure_message_is_always_stored,
        leases::expired_lease_rescued_and_redelivered,
        leases::rescue_after_last_attempt_goes_dead,
        leases::stale_holder_gets_lease_lost,
        leases::extend_prevents_rescue,
        dedup::dedup_rejected_while_live,
        dedup::dedup_reusable_after_finish,
        dedup::batch_with_invalid_job_stores_nothing,
        dedup::batch_with_dedup_clash_stores_nothing,
        dedup::dedup_keys_compare_byte_for_byte,
        dedup::id_clash_is_not_a_dedup_clash,
        admin::stats_per_state,
        admin::prune_removes_only_old_finished,
        admin::list_filters_by_queue_and_state,
        admin::list_pages_by_id,
        admin::migrate_twice,
        admin::concurrent_migrate,
        admin::concurrent_first_migrate,
        admin::unreachable_is_unavailable,
        validation::bad_input_rejected,
        worker::worker_graceful_shutdown_loses_nothing,
        worker::worker_panic_recorded_as_failure,
        worker::worker_heartbeat_keeps_long_job,
        worker::worker_drains_with_retries,
        worker::worker_wakes_on_push,
        worker::worker_counts_a_job_completed_in_the_handlers_transaction,
        transactions::tx_push_rolled_back_is_invisible,
        transactions::tx_push_committed_is_visible,
        transactions::tx_complete_exactly_once,
        transactions::tx_push_duplicate_is_named,
        wakeups::push_wakes_waiter_in_process,
        wakeups::a_push_reaches_a_waiter_in_another_process,
        wakeups::every_transition_to_due_wakes_waiters,
        // Job kinds, snooze, metadata, output, attempt history, reschedule.
        kinds::kinds_typed_push_takes_the_kinds_defaults,
        kinds::kinds_list_filters_by_kind,
        kinds::kinds_one_worker_routes_kinds_over_queues,
        kinds::kinds_unknown_kind_fails_by_the_retry_policy,
        kinds::kinds_timeout_per_kind_and_per_job,
        kinds::kinds_snooze_keeps_attempts_and_counts,
        kinds::kinds_meta_merged_under_the_lease,
        kinds::kinds_output_stored_and_bounded,
        kinds::kinds_attempt_history_in_order_and_bounded,
        kinds::kinds_reschedule_pending_only,
        kinds::kinds_bad_input_stores_nothing,
        kinds::kinds_previous_release_migrates_and_its_jobs_run,
        // Unique jobs.
        unique::unique_concurrent_pushers_store_one_job,
        unique::unique_args_are_canonical,
        unique::unique_states_decide_how_long_a_key_is_held,
        unique::unique_periods_are_windows,
        unique::unique_batch_outcomes_per_job,
        unique::unique_replace_updates_a_pending_job,
        unique::unique_retry_of_a_job_whose_key_is_taken,
        unique::unique_rule_of_a_kind,
        unique::unique_push_inside_a_transaction,
        unique::unique_bad_rules_store_nothing,
        // Retention, bulk operations and capped counts.
        maintenance::retention_deletes_only_what_its_rules_say,
        maintenance::retention_runs_once_across_processes,
        maintenance::retention_by_the_worker,
        maintenance::retention_bad_rules_store_nothing,
        maintenance::gauge_lease_has_one_holder_at_a_time,
        maintenance::bulk_cancel_touches_exactly_the_filtered_jobs,
        maintenance::bulk_retry_by_age_skips_held_keys,
        maintenance::bulk_delete_in_batches,
        maintenance::bulk_bad_filters_touch_nothing,
        maintenance::stats_count_finished_jobs_up_to_the_cap,
        // Queue controls.
        controls::controls_pause_and_resume,
        controls::controls_pause_while_draining,
        controls::controls_limit_holds_under_64_claimers,
        controls::controls_limit_frees_expired_leases,
        controls::controls_limit_changes_take_effect,
        controls::controls_bad_input_stores_nothing,
        controls::controls_worker_honours_the_limit,
        controls::controls_rate_limit_holds_over_windows,
        controls::controls_rate_limited_worker_wakes_at_the_window,
        // Concurrency keys and fair shares.
        keys::keys_limit_1_holds_under_64_claimers,
        keys::keys_limit_3_holds_under_64_claimers,
        keys::keys_expired_lease_frees_its_key,
        keys::keys_fair_shares_serve_a_new_key_within_rounds,
        keys::keys_rate_limit_holds_per_key,
        keys::keys_retention_prunes_ended_rate_windows,
        keys::keys_bad_input_stores_nothing,
        // Periodic jobs (schedules).
        schedules::schedules_two_schedulers_one_job_per_slot,
        schedules::schedules_eight_schedulers_one_job_per_slot,
        schedules::schedules_concurrent_ticks_enqueue_once,
        schedules::schedules_misfire_skip_enqueues_only_the_latest,
        schedules::schedules_misfire_catch_up_is_bounded,
        schedules::schedules_removed_schedule_stops_firing,
        schedules::schedules_changed_expression_takes_effect,
        schedules::schedules_of_a_kind_push_jobs_of_that_kind,
        schedules::schedules_bad_input_stores_nothing,
        schedules::schedules_worker_runs_the_slot_jobs,
    ]
}
