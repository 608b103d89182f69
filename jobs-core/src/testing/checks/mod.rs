//! The checks of the suite, one `pub async fn` per guarantee, and the table
//! ([`__conformance_checks!`](crate::__conformance_checks)) that lists them once:
//! [`conformance!`](crate::conformance) stamps a `#[test]` out of each row, and the re-exports
//! below come from it too, so a check missing from the table is dead code (a warning) and a row
//! without its check does not compile.
//!
//! Each check is named for the operation it exercises first (`fetch_…`, `list_…`, `manage_…`,
//! `worker_…`), so `cargo test fetch_` runs one family.

mod store;
mod worker;

/// The table of checks: each row is a module of `checks` and the checks it defines. Calls
/// `$callback! { $args… rows }`, where `$callback` is a path in brackets.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_checks {
    ([$($callback:tt)*] $($args:tt)*) => {
        $($callback)*! { $($args)*
            store::enqueue {
                enqueue_reads_back_every_field,
                enqueue_dedupes_unique_keys_of_active_jobs,
                enqueue_batches_of_hundreds_fetched_and_completed_in_one_call,
                enqueue_cron_stores_each_tick_once,
            }
            store::fetch {
                fetch_by_priority_then_run_at_then_fifo,
                fetch_waits_for_run_at,
                fetch_racing_never_hands_out_a_job_twice,
                fetch_takes_only_the_names_given,
            }
            store::lease {
                lease_of_a_stale_holder_is_fenced,
                lease_complete_repeated_after_it_applied_is_accepted,
                renew_extends_only_live_leases,
                release_gives_the_attempt_back_and_keeps_run_at,
                release_with_run_at_snoozes_the_job,
                rescue_records_lease_expired_and_keeps_the_job_place,
                rescue_without_attempts_left_is_dead,
            }
            store::liveness {
                liveness_ends_when_its_holder_lets_go,
                rescue_takes_the_jobs_of_gone_workers_at_once,
            }
            store::fail {
                fail_retries_then_dies_with_every_error,
                fail_stores_each_error_kind_and_chain,
                fail_dead_reason_tells_fatal_from_out_of_attempts,
            }
            store::list {
                list_pages_in_id_order,
                list_filters_by_queue,
                list_filters_by_status,
                list_by_status_follows_a_job_through_its_statuses,
                list_filters_by_name,
                list_filters_by_tag_across_queues,
                list_filters_by_creation_time,
                list_filters_by_finish_time,
                list_matches_every_filter_field_at_once,
                list_pages_through_operations_with_a_cursor,
            }
            store::manage {
                manage_retry_revives_dead_and_cancelled_jobs,
                manage_cancel_revokes_active_jobs_only,
                manage_delete_removes_a_job_with_its_indexes,
                manage_retry_reports_a_held_unique_key,
                manage_one_reports_not_found_and_wrong_status,
                manage_by_filter_examines_a_bounded_batch,
            }
            store::bulk {
                manage_retry_by_filter_in_batches,
                manage_cancel_by_filter_in_batches,
                manage_delete_by_filter_in_batches,
                manage_bulk_touches_only_matching_jobs,
                manage_purge_by_status_and_finish_time,
            }
            store::flow {
                flow_stores_limits_per_queue,
                fetch_holds_a_queues_concurrency,
                fetch_holds_a_queues_rate,
                fetch_holds_each_keys_limits,
                fetch_leaves_ended_leases_out_of_a_queues_concurrency,
                fetch_leaves_ended_leases_out_of_a_keys_concurrency,
                fetch_reserves_beyond_a_queues_concurrency,
                fetch_racing_holds_the_limits,
                enqueue_refuses_beyond_max_depth,
                enqueue_racing_never_overfills,
                enqueue_throttles_to_the_first_job_of_a_window,
                enqueue_debounces_into_the_waiting_job,
            }
            store::tags {
                tags_read_back_as_enqueued,
                tags_forget_deleted_and_pruned_jobs,
            }
            store::pause {
                pause_marks_queues_until_resumed,
                finished_since_counts_recent_finishes,
            }
            store::prune {
                prune_keeps_by_count_and_age,
            }
            store::presence {
                queues_list_every_queue_with_its_counts,
                schedules_saved_by_name_with_their_last_tick,
                schedules_show_their_next_ticks,
                workers_heartbeat_records_live_workers,
                workers_expire_without_heartbeats,
                workers_deregister_forgets_a_worker,
                workers_show_the_jobs_they_run,
            }
            store::versions {
                versions_are_stored_with_each_job,
                versions_newer_than_known_stay_waiting,
                versions_stored_are_counted_for_waiting_and_running_jobs,
                versions_published_are_listed_by_name_and_version,
            }
            store::workflow {
                workflow_steps_wait_for_the_results_before_them,
                workflow_group_follow_up_waits_for_every_result,
                workflow_dead_step_runs_the_compensation_and_cancels_the_rest,
                workflow_rescued_dead_step_runs_the_compensation,
                workflow_compensations_run_latest_first,
                workflow_last_step_cancels_the_compensations,
                workflow_steps_span_queues,
                workflow_results_reach_the_next_step_as_written,
                workflow_retried_step_waits_for_its_inputs,
            }
            worker::outcomes {
                worker_runs_jobs_and_returns_typed_results,
                worker_retries_follow_backoff,
                worker_retry_in_replaces_the_backoff,
                worker_snooze_runs_again_without_spending_an_attempt,
                worker_dead_after_max_attempts,
                worker_fatal_error_goes_dead_at_once,
                worker_survives_a_panicking_handler,
                worker_survives_a_panicking_decode,
                worker_survives_a_panicking_hook,
                worker_fails_an_undeserializable_payload,
                worker_leaves_a_job_of_an_unknown_name_waiting,
                worker_times_out_slow_attempts,
            }
            worker::events {
                events_reach_the_subscribers_of_their_queue,
                worker_publishes_each_jobs_events,
            }
            worker::flow {
                worker_holds_a_queues_concurrency_across_workers,
                worker_hands_places_under_a_queues_concurrency_on,
                worker_waits_out_a_limit_another_fills,
                worker_holds_each_keys_concurrency,
                worker_counts_a_committing_job_until_it_is_completed,
                worker_holds_a_queues_rate,
                worker_starts_a_rated_backlog_as_each_window_opens,
                enqueue_within_waits_for_room,
            }
            worker::leases {
                worker_reruns_jobs_of_a_dead_worker,
                worker_reruns_jobs_of_a_gone_worker_at_once,
                worker_dropped_mid_run_runs_nothing_more,
                worker_never_runs_a_job_twice_across_two_workers,
                worker_stops_a_cancelled_job,
            }
            worker::prefetch {
                worker_leases_ahead_by_how_fast_its_jobs_end,
            }
            worker::lifecycle {
                worker_refuses_to_start_listing_every_problem,
                worker_shutdown_finishes_within_grace,
                worker_shutdown_hands_back_unfinished_jobs,
                worker_records_its_heartbeat,
                worker_listing_lapses_when_the_worker_dies,
                worker_records_its_cron_schedules,
                worker_takes_nothing_from_a_paused_queue,
                worker_takes_jobs_enqueued_while_idle_until_it_stops,
            }
            worker::versions {
                worker_upgrades_a_job_stored_at_an_older_version,
                worker_refuses_to_start_without_an_upgrade_path,
                worker_publishes_its_types_for_enqueues_by_name,
            }
            worker::workflow {
                worker_runs_a_workflow_to_its_end,
                worker_compensates_a_workflow_whose_step_dies,
            }
            worker::maintenance {
                worker_prunes_by_retention,
                worker_cron_enqueues_each_tick_once_across_workers,
            }
        }
    };
}

/// Re-exports each check of the table at `checks::`.
macro_rules! reexport {
    ($($($module:ident)::+ { $($check:ident),* $(,)? })*) => {
        $(pub use self::$($module)::+::{$($check),*};)*
    };
}

crate::__conformance_checks!([reexport]);
