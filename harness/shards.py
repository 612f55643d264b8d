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

# File: (seconds on the SQLite pass, seconds on the PostgreSQL pass), 2026-11-29 (a whole run of scripts/test on a
# fresh clone of 8750ecf), every file of 1 s or more in either pass.
SECONDS = {
    "test_collisions_e2e.py": (163, 161),
    "test_slots.py": (137, 116),
    "test_contract.py": (118, 135),
    "test_bench.py": (123, 135),
    "test_multi_host.py": (0, 116),
    "test_integration.py": (101, 101),
    "test_bench_mixed.py": (95, 96),
    "test_isolation.py": (72, 69),
    "test_rolling_upgrade.py": (72, 71),
    "test_import_from_code.py": (26, 64),
    "test_chaos.py": (58, 62),
    "test_trust_e2e.py": (56, 52),
    "test_timeouts.py": (51, 47),
    "test_readme.py": (51, 0),
    "test_recur_cli.py": (30, 50),
    "test_metrics.py": (48, 45),
    "test_bench_history.py": (39, 44),
    "test_redis_stall.py": (42, 0),
    "test_notify_e2e.py": (41, 42),
    "test_fuzz_endpoints.py": (37, 41),
    "test_run_output_e2e.py": (38, 32),
    "test_fuzz_schedule_bodies.py": (24, 37),
    "test_console_browser.py": (34, 32),
    "test_clock_skew.py": (29, 32),
    "test_api_limits.py": (26, 30),
    "test_declarations_e2e.py": (21, 29),
    "test_finish_blip.py": (28, 0),
    "test_db_faults.py": (28, 0),
    "test_cron_seconds_e2e.py": (26, 24),
    "test_console_pages_browser.py": (26, 25),
    "test_link_log.py": (22, 25),
    "test_extra_runs_bounded.py": (24, 17),
    "test_console_run_browser.py": (22, 23),
    "test_sentinel.py": (23, 13),
    "test_work_process_death.py": (23, 19),
    "test_recur_apply.py": (22, 19),
    "test_follows_e2e.py": (20, 22),
    "test_chain.py": (21, 19),
    "test_rq_worker_command.py": (20, 17),
    "test_run_alerts_e2e.py": (19, 19),
    "test_pg_failover.py": (18, 0),
    "test_group_stop.py": (15, 18),
    "test_recur_client.py": (7, 18),
    "test_request_deadline.py": (15, 17),
    "test_worker_liveness_e2e.py": (16, 15),
    "test_link_paths_e2e.py": (16, 17),
    "test_task_wait_e2e.py": (14, 16),
    "test_queues.py": (15, 14),
    "test_bounded_lists.py": (12, 14),
    "test_revive_e2e.py": (10, 14),
    "test_two_machines.py": (0, 12),
    "test_wheel.py": (12, 0),
    "test_redis_tls.py": (9, 12),
    "test_delivery_sending.py": (11, 11),
    "test_on_exhausted.py": (10, 11),
    "test_timing_bounds.py": (6, 11),
    "test_api.py": (9, 10),
    "test_recur_import.py": (8, 10),
    "test_timing_cron_oracle.py": (9, 0),
    "test_recur_cli_calendars.py": (5, 8),
    "test_schedule_key_paths.py": (5, 8),
    "test_named_calendars.py": (7, 7),
    "test_recur_cli_explain.py": (4, 7),
    "test_replan.py": (4, 7),
    "test_apply_bulk.py": (5, 7),
    "test_worker.py": (7, 6),
    "test_cursor_format.py": (6, 0),
    "test_migrations.py": (4, 6),
    "test_redeliver_now_e2e.py": (5, 6),
    "test_trust_redirects.py": (6, 2),
    "test_bounded_timing.py": (2, 5),
    "test_console_pages.py": (4, 5),
    "test_bounded_pages.py": (3, 5),
    "test_bad_rows.py": (2, 5),
    "test_overdue_e2e.py": (5, 5),
    "test_calendar_api.py": (5, 2),
    "test_recur_cli_follows.py": (4, 5),
    "test_follows.py": (5, 3),
    "test_recur_apply_calendars.py": (4, 5),
    "test_clock.py": (4, 4),
    "test_backfill_stranded.py": (4, 3),
    "test_run_output.py": (3, 3),
    "test_schedule_keys.py": (2, 3),
    "test_declarations_sync.py": (3, 3),
    "test_overdue.py": (3, 0),
    "test_owners.py": (1, 3),
    "test_event_payloads.py": (2, 3),
    "test_import_escaping.py": (3, 0),
    "test_idempotency.py": (2, 2),
    "test_horse.py": (2, 1),
    "test_api_reads.py": (2, 2),
    "test_monitoring.py": (2, 0),
    "test_execution_log.py": (2, 2),
    "test_sparse_requests.py": (1, 2),
    "test_console.py": (2, 2),
    "test_timing_calendar_days.py": (2, 0),
    "test_pruning_passes.py": (1, 2),
    "test_handoff_race.py": (1, 2),
    "test_trigger_keys.py": (1, 2),
    "test_quotas.py": (2, 2),
    "test_console_follows.py": (2, 0),
    "test_recur_cli_coverage.py": (2, 0),
    "test_copies.py": (1, 2),
    "test_egress.py": (2, 1),
    "test_worker_liveness.py": (0, 1),
    "test_horizon_api.py": (1, 1),
    "test_missed_detached.py": (1, 1),
    "test_identities.py": (1, 1),
    "test_links.py": (1, 1),
    "test_background.py": (1, 1),
    "test_bench_cpu.py": (1, 0),
    "test_redis_down.py": (1, 1),
    "test_apply_file.py": (1, 1),
    "test_retention.py": (1, 1),
    "test_leases.py": (1, 1),
    "test_guard_embedded.py": (1, 0),
    "test_declarations.py": (1, 1),
    "test_reconcile_incremental.py": (1, 1),
    "test_driver.py": (0, 1),
    "test_timing_subdaily.py": (1, 0),
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
