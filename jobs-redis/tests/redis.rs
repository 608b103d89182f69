//! Integration tests of the Redis backend: the conformance suite on one server and on a
//! three-node cluster that the tests start themselves, worker processes, and bad input.
//!
//! One server is expected at redis://127.0.0.1:6379 (or `JOBS_TEST_REDIS_URL`); each test works
//! under its own key prefix, and the keys of this process's tests are removed when it exits.

#[path = "redis/support.rs"]
mod support;

#[path = "redis/bad_input.rs"]
mod bad_input;
#[path = "redis/deliveries.rs"]
mod deliveries;
#[path = "redis/finished.rs"]
mod finished;
#[path = "redis/flow.rs"]
mod flow;
#[path = "redis/functions.rs"]
mod functions;
#[path = "redis/layout.rs"]
mod layout;
#[path = "redis/marker.rs"]
mod marker;
#[path = "redis/memory.rs"]
mod memory;
#[path = "redis/payloads.rs"]
mod payloads;
#[path = "redis/poison.rs"]
mod poison;
#[path = "redis/presence.rs"]
mod presence;
#[path = "redis/restart.rs"]
mod restart;
#[path = "redis/streams.rs"]
mod streams;
#[path = "redis/streams_apart.rs"]
mod streams_apart;
#[path = "redis/streams_fetch.rs"]
mod streams_fetch;
#[path = "redis/streams_manage.rs"]
mod streams_manage;
#[path = "redis/streams_pickup.rs"]
mod streams_pickup;
#[path = "redis/streams_versions.rs"]
mod streams_versions;
#[path = "redis/tags.rs"]
mod tags;
#[path = "redis/urls.rs"]
mod urls;
#[path = "redis/versions.rs"]
mod versions;
#[path = "redis/wakeups.rs"]
mod wakeups;
#[path = "redis/workflow.rs"]
mod workflow;

/// The conformance suite on one server.
mod single {
    jobs_core::conformance!(crate::support::single_backend);
}

/// The conformance suite on a three-master Redis Cluster.
mod cluster {
    jobs_core::conformance!(crate::support::cluster_backend);
}

/// The checks of the suite that the layout on Redis Streams passes so far (it is being built:
/// see `docs/redis-streams.md`).
mod streams_conformance {
    jobs_core::conformance_only!(crate::support::streams_backend;
        enqueue_batches_of_hundreds_fetched_and_completed_in_one_call,
        enqueue_cron_stores_each_tick_once,
        enqueue_debounces_into_the_waiting_job,
        enqueue_dedupes_unique_keys_of_active_jobs,
        enqueue_racing_never_overfills,
        enqueue_reads_back_every_field,
        enqueue_refuses_beyond_max_depth,
        enqueue_throttles_to_the_first_job_of_a_window,
        enqueue_within_waits_for_room,
        events_reach_the_subscribers_of_their_queue,
        fail_dead_reason_tells_fatal_from_out_of_attempts,
        fail_retries_then_dies_with_every_error,
        fail_stores_each_error_kind_and_chain,
        fetch_holds_a_queues_concurrency,
        fetch_holds_a_queues_rate,
        fetch_holds_each_keys_limits,
        fetch_leaves_ended_leases_out_of_a_keys_concurrency,
        fetch_leaves_ended_leases_out_of_a_queues_concurrency,
        fetch_racing_holds_the_limits,
        fetch_racing_never_hands_out_a_job_twice,
        fetch_reserves_beyond_a_queues_concurrency,
        fetch_waits_for_run_at,
        finished_since_counts_recent_finishes,
        flow_stores_limits_per_queue,
        lease_complete_repeated_after_it_applied_is_accepted,
        lease_of_a_stale_holder_is_fenced,
        list_by_status_follows_a_job_through_its_statuses,
        list_filters_by_creation_time,
        list_filters_by_finish_time,
        list_filters_by_name,
        list_filters_by_queue,
        list_filters_by_tag_across_queues,
        list_matches_every_filter_field_at_once,
        list_pages_in_id_order,
        list_pages_through_operations_with_a_cursor,
        liveness_ends_when_its_holder_lets_go,
        manage_by_filter_examines_a_bounded_batch,
        manage_cancel_by_filter_in_batches,
        manage_cancel_revokes_active_jobs_only,
        manage_delete_by_filter_in_batches,
        manage_delete_removes_a_job_with_its_indexes,
        manage_one_reports_not_found_and_wrong_status,
        manage_purge_by_status_and_finish_time,
        manage_retry_by_filter_in_batches,
        manage_retry_reports_a_held_unique_key,
        pause_marks_queues_until_resumed,
        prune_keeps_by_count_and_age,
        queues_list_every_queue_with_its_counts,
        release_gives_the_attempt_back_and_keeps_run_at,
        release_with_run_at_snoozes_the_job,
        renew_extends_only_live_leases,
        rescue_records_lease_expired_and_keeps_the_job_place,
        rescue_takes_the_jobs_of_gone_workers_at_once,
        rescue_without_attempts_left_is_dead,
        schedules_saved_by_name_with_their_last_tick,
        schedules_show_their_next_ticks,
        tags_forget_deleted_and_pruned_jobs,
        tags_read_back_as_enqueued,
        versions_are_stored_with_each_job,
        versions_newer_than_known_stay_waiting,
        versions_published_are_listed_by_name_and_version,
        versions_stored_are_counted_for_waiting_and_running_jobs,
        worker_counts_a_committing_job_until_it_is_completed,
        worker_cron_enqueues_each_tick_once_across_workers,
        worker_dead_after_max_attempts,
        worker_dropped_mid_run_runs_nothing_more,
        worker_fails_an_undeserializable_payload,
        worker_fatal_error_goes_dead_at_once,
        worker_hands_places_under_a_queues_concurrency_on,
        worker_holds_a_queues_concurrency_across_workers,
        worker_holds_a_queues_rate,
        worker_holds_each_keys_concurrency,
        worker_leaves_a_job_of_an_unknown_name_waiting,
        worker_listing_lapses_when_the_worker_dies,
        worker_never_runs_a_job_twice_across_two_workers,
        worker_prunes_by_retention,
        worker_publishes_each_jobs_events,
        worker_publishes_its_types_for_enqueues_by_name,
        worker_records_its_cron_schedules,
        worker_records_its_heartbeat,
        worker_refuses_to_start_listing_every_problem,
        worker_refuses_to_start_without_an_upgrade_path,
        worker_reruns_jobs_of_a_dead_worker,
        worker_reruns_jobs_of_a_gone_worker_at_once,
        worker_retries_follow_backoff,
        worker_retry_in_replaces_the_backoff,
        worker_runs_jobs_and_returns_typed_results,
        worker_shutdown_finishes_within_grace,
        worker_shutdown_hands_back_unfinished_jobs,
        worker_snooze_runs_again_without_spending_an_attempt,
        worker_starts_a_rated_backlog_as_each_window_opens,
        worker_stops_a_cancelled_job,
        worker_survives_a_panicking_decode,
        worker_survives_a_panicking_handler,
        worker_survives_a_panicking_hook,
        worker_takes_jobs_enqueued_while_idle_until_it_stops,
        worker_takes_nothing_from_a_paused_queue,
        worker_times_out_slow_attempts,
        worker_upgrades_a_job_stored_at_an_older_version,
        worker_waits_out_a_limit_another_fills,
        workers_deregister_forgets_a_worker,
        workers_expire_without_heartbeats,
        workers_heartbeat_records_live_workers,
        workers_show_the_jobs_they_run,
    );
}

/// Worker processes on one server: four drain 10,000 jobs exactly once, and a job of a worker
/// killed with SIGKILL runs again elsewhere once its lease lapses.
mod processes {
    jobs_core::conformance_processes!(crate::support::store_backend);
}

/// The core checks of the layout on Redis Streams on the three-master cluster: each queue's keys
/// share one slot.
mod streams_cluster {
    jobs_core::conformance_only!(crate::support::streams_cluster_backend;
        enqueue_batches_of_hundreds_fetched_and_completed_in_one_call,
        fetch_racing_never_hands_out_a_job_twice,
        fetch_waits_for_run_at,
        lease_of_a_stale_holder_is_fenced,
        rescue_records_lease_expired_and_keeps_the_job_place,
        fail_stores_each_error_kind_and_chain,
        worker_runs_jobs_and_returns_typed_results,
        worker_retries_follow_backoff,
    );
}

/// The process checks that the layout on Redis Streams passes so far.
mod streams_processes {
    jobs_core::conformance_processes_only!(crate::support::streams_store_backend;
        four_worker_processes_run_each_job_exactly_once: exactly_once,
        a_killed_worker_process_job_runs_again_elsewhere: killed_worker_job_runs_again,
        a_stopped_worker_process_is_fenced_not_taken_for_dead:
            stopped_worker_is_fenced_not_taken_for_dead,
        a_paused_queue_starts_nothing_across_processes:
            paused_queue_starts_nothing_across_processes,
    );
}
