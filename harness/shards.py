"""The order in which the shards of a pass take its test files (harness/claims.py; scripts/test runs each pass as
RECUR_TEST_SHARDS shards at once, four by default): the longest first, so that the last files taken are short ones
and the shards end together. A file's time is its seconds of a pass as measured; a file not listed here took under
a second in either pass when measured, and counts as half a second. `shards` places the files in advance instead
(RECUR_TEST_SHARD without RECUR_TEST_CLAIMS: each to the shard with the least time so far), which needs only their
names, so such a shard imports and collects its own files alone.

Measured with RECUR_TEST_CPU_REPORT (harness/cpu_report.py: the second column, wall seconds, summed per file and
pass) in a whole run of scripts/test; refresh the table when a file's time changes much:

    RECUR_TEST_CPU_REPORT=/tmp/cpu.tsv scripts/test -q
"""

from __future__ import annotations

import zlib

# File: (seconds on the SQLite pass, seconds on the PostgreSQL pass), 2026-12-02 (a whole run of scripts/test on a
# fresh clone of 489fc44, on a machine about twice as slow as the one of the table before), every file of 1 s or
# more in either pass. A file that uses no database, taken by either pass, is under the SQLite pass.
SECONDS = {
    "test_contract.py": (609, 573),
    "test_fuzz_endpoints.py": (296, 356),
    "test_bench.py": (284, 322),
    "test_multi_host.py": (0, 315),
    "test_fuzz_schedule_bodies.py": (258, 312),
    "test_rolling_upgrade.py": (210, 246),
    "test_bench_mixed.py": (198, 156),
    "test_slots.py": (177, 181),
    "test_bench_history.py": (141, 173),
    "test_collisions_e2e.py": (145, 154),
    "test_wheel.py": (141, 0),
    "test_readme.py": (115, 0),
    "test_integration.py": (92, 113),
    "test_api_limits.py": (86, 111),
    "test_metrics.py": (97, 104),
    "test_import_from_code.py": (99, 51),
    "test_rq_worker_command.py": (96, 97),
    "test_timing_cron_oracle.py": (95, 0),
    "test_timeouts.py": (81, 94),
    "test_bounded_lists.py": (70, 86),
    "test_console_browser.py": (85, 69),
    "test_db_faults.py": (77, 0),
    "test_pg_failover.py": (74, 0),
    "test_chaos.py": (69, 73),
    "test_finish_blip.py": (72, 0),
    "test_redis_stall.py": (64, 0),
    "test_chain.py": (48, 64),
    "test_trust_e2e.py": (56, 60),
    "test_timing_bounds.py": (43, 60),
    "test_worker.py": (55, 59),
    "test_two_machines.py": (0, 59),
    "test_isolation.py": (58, 54),
    "test_console_pages_browser.py": (56, 43),
    "test_migrations.py": (51, 34),
    "test_recur_cli.py": (49, 43),
    "test_request_deadline.py": (42, 47),
    "test_bench_estate.py": (32, 42),
    "test_notify_e2e.py": (40, 40),
    "test_clock_skew.py": (39, 29),
    "test_claims.py": (39, 0),
    "test_extra_runs_bounded.py": (26, 38),
    "test_api.py": (32, 38),
    "test_sentinel.py": (36, 22),
    "test_cursor_format.py": (36, 0),
    "test_redeliver_now_e2e.py": (36, 3),
    "test_console_run_browser.py": (27, 35),
    "test_on_exhausted.py": (33, 30),
    "test_console_pages.py": (26, 31),
    "test_recur_apply.py": (11, 29),
    "test_apply_bulk.py": (18, 28),
    "test_follows.py": (22, 28),
    "test_worker_liveness_e2e.py": (17, 25),
    "test_delivery_sending.py": (24, 23),
    "test_work_process_death.py": (16, 23),
    "test_run_alerts_e2e.py": (18, 22),
    "test_cron_seconds_e2e.py": (21, 20),
    "test_follows_e2e.py": (21, 21),
    "test_link_paths_e2e.py": (18, 21),
    "test_named_calendars.py": (19, 21),
    "test_calendar_api.py": (8, 21),
    "test_bad_rows.py": (21, 14),
    "test_timing_horizon.py": (21, 0),
    "test_bounded_pages.py": (18, 20),
    "test_run_output_e2e.py": (19, 19),
    "test_timing_rrule.py": (19, 0),
    "test_pruning_passes.py": (9, 18),
    "test_group_stop.py": (17, 14),
    "test_trust_redirects.py": (17, 13),
    "test_replan.py": (11, 17),
    "test_declarations_sync.py": (16, 17),
    "test_bounded_timing.py": (12, 16),
    "test_import_escaping.py": (16, 0),
    "test_link_log.py": (14, 15),
    "test_revive_e2e.py": (14, 15),
    "test_recur_client.py": (6, 14),
    "test_task_wait_e2e.py": (14, 11),
    "test_run_output.py": (14, 12),
    "test_api_reads.py": (6, 13),
    "test_console.py": (10, 13),
    "test_recur_cli_coverage.py": (13, 1),
    "test_declarations_e2e.py": (12, 12),
    "test_queues.py": (8, 12),
    "test_quotas.py": (12, 11),
    "test_starting.py": (12, 9),
    "test_write_lock.py": (12, 2),
    "test_owners.py": (5, 11),
    "test_timing_subdaily.py": (11, 0),
    "test_leases.py": (4, 11),
    "test_lock_order.py": (1, 11),
    "test_declarations.py": (10, 8),
    "test_redis_tls.py": (9, 7),
    "test_schedule_key_paths.py": (7, 9),
    "test_sparse_requests.py": (6, 9),
    "test_missed_detached.py": (3, 9),
    "test_background.py": (9, 4),
    "test_apply_file.py": (3, 9),
    "test_lean_finish.py": (9, 7),
    "test_clock.py": (8, 7),
    "test_identities.py": (5, 8),
    "test_retention.py": (8, 5),
    "test_lean_claim.py": (8, 7),
    "test_schedule_keys.py": (4, 7),
    "test_monitoring.py": (7, 7),
    "test_links.py": (7, 3),
    "test_api_document.py": (2, 7),
    "test_explain_api.py": (3, 7),
    "test_backfill_stranded.py": (6, 5),
    "test_horse.py": (6, 4),
    "test_execution_log.py": (6, 6),
    "test_console_follows.py": (3, 6),
    "test_horizon_api.py": (6, 4),
    "test_apply_whole.py": (3, 6),
    "test_idempotency.py": (4, 5),
    "test_timing_calendar_days.py": (5, 0),
    "test_stack_ready.py": (4, 5),
    "test_console_calendars.py": (4, 5),
    "test_declarations_lock.py": (5, 1),
    "test_recur_import.py": (4, 4),
    "test_recur_cli_calendars.py": (4, 3),
    "test_handoff_race.py": (3, 4),
    "test_egress.py": (3, 4),
    "test_trigger_keys.py": (3, 4),
    "test_bench_cpu.py": (4, 0),
    "test_run_alerts.py": (3, 4),
    "test_timing_constraints.py": (4, 0),
    "test_overdue_e2e.py": (2, 3),
    "test_recur_apply_calendars.py": (3, 3),
    "test_recur_cli_follows.py": (2, 3),
    "test_event_payloads.py": (3, 3),
    "test_copies.py": (1, 3),
    "test_guard_embedded.py": (3, 2),
    "test_worker_liveness.py": (3, 3),
    "test_reconcile_incremental.py": (2, 3),
    "test_recovery.py": (2, 3),
    "test_pool_check.py": (1, 3),
    "test_recur_cli_explain.py": (2, 2),
    "test_overdue.py": (1, 2),
    "test_redis_down.py": (2, 2),
    "test_driver.py": (2, 2),
    "test_metrics_files.py": (2, 0),
    "test_console_explain.py": (2, 2),
    "test_preloaded.py": (2, 0),
    "test_console_run_rows.py": (2, 2),
    "test_timing_build_and_describe.py": (2, 0),
    "test_declarations_whole.py": (1, 2),
    "test_webhook_edit.py": (2, 1),
    "test_link_jobs.py": (2, 2),
    "test_watch_once.py": (2, 2),
    "test_console_send_again.py": (2, 2),
    "test_redis_url.py": (2, 0),
    "test_architecture.py": (2, 0),
    "test_api_refusals.py": (1, 1),
    "test_trust_metrics.py": (1, 1),
    "test_databases.py": (0, 1),
    "test_timing_helpers.py": (1, 0),
    "test_cli.py": (1, 1),
    "test_route_builders.py": (1, 0),
    "test_timing_dst_tables.py": (1, 0),
    "test_systemd_units.py": (1, 0),
    "test_outbox.py": (0, 1),
    "test_dequeue.py": (1, 0),
}
UNLISTED = 0.5  # seconds: a file under a second in either pass when the table was measured


def longest_first(files: list[str], database: str) -> list[str]:
    """The test files (by name) of a pass, the longest first; ties (and the files of no known time) by a hash of
    the name, stable across runs."""
    column = 0 if database == "sqlite" else 1
    # A file that runs on the SQLite pass alone (0 s on the PostgreSQL one) may be taken by either pass
    # (harness/claims.py): its SQLite time places it in both.
    return sorted(set(files), key=lambda name: (-(seconds(name, column) or seconds(name, 0)),
                                                 zlib.crc32(name.encode())))


def seconds(name: str, column: int) -> float:
    known = SECONDS.get(name)
    return UNLISTED if known is None else float(known[column])


def shards(files: list[str], count: int, database: str) -> dict[str, int]:
    """The shard (0 to count - 1) of each test file (by name) of a pass."""
    column = 0 if database == "sqlite" else 1
    load = [0.0] * count
    placed = {}
    for name in longest_first(files, database):
        shard = min(range(count), key=lambda index: (load[index], index))
        placed[name] = shard
        load[shard] += seconds(name, column)
    return placed
