"""Which shard of a pass runs each test file (scripts/test runs each pass as two shards at once, tests/conftest.py
keeps a shard's files): the largest files first, each to the shard with the least time so far, so that the
shards of a pass end together (the suite lasts as long as its longest shard). A file's time is its seconds of a
pass as measured, or for a file not listed here half a second a test on SQLite, 0.8 on PostgreSQL.

Measured with RECUR_TEST_CPU_REPORT (harness/cpu_report.py: the second column, wall seconds, summed per file and
pass) in a whole run of scripts/test; refresh the table when a file's time changes much:

    RECUR_TEST_CPU_REPORT=/tmp/cpu.tsv scripts/test -q
"""

from __future__ import annotations

import zlib

# File: (seconds on the SQLite pass, seconds on the PostgreSQL pass), 2026-11-29, the 45 longest, and three
# files new since, timed alone (x 1.5 for a loaded machine).
SECONDS = {
    "test_link_log.py": (35, 40),
    "test_two_machines.py": (0, 25),
    "test_wheel.py": (25, 0),
    "test_contract.py": (276, 288),
    "test_collisions_e2e.py": (199, 192),
    "test_bench.py": (189, 185),
    "test_integration.py": (140, 161),
    "test_bench_mixed.py": (150, 142),
    "test_slots.py": (112, 112),
    "test_isolation.py": (76, 86),
    "test_console_browser.py": (52, 100),
    "test_chaos.py": (73, 74),
    "test_multi_host.py": (0, 135),
    "test_fuzz_schedule_bodies.py": (47, 86),
    "test_metrics.py": (50, 83),
    "test_recur_cli.py": (78, 48),
    "test_trust_e2e.py": (54, 69),
    "test_notify_e2e.py": (60, 56),
    "test_rolling_upgrade.py": (55, 58),
    "test_timeouts.py": (52, 58),
    "test_import_from_code.py": (64, 46),
    "test_bench_history.py": (51, 55),
    "test_fuzz_endpoints.py": (45, 60),
    "test_console_pages_browser.py": (43, 43),
    "test_clock_skew.py": (42, 41),
    "test_api_limits.py": (36, 46),
    "test_recur_apply.py": (39, 41),
    "test_run_output_e2e.py": (44, 35),
    "test_sentinel.py": (41, 29),
    "test_console_run_browser.py": (34, 33),
    "test_bounded_lists.py": (29, 35),
    "test_follows_e2e.py": (31, 32),
    "test_declarations_e2e.py": (31, 28),
    "test_rq_worker_command.py": (33, 26),
    "test_readme.py": (57, 0),
    "test_work_process_death.py": (28, 27),
    "test_redis_stall.py": (53, 0),
    "test_pg_failover.py": (52, 0),
    "test_group_stop.py": (24, 28),
    "test_run_alerts_e2e.py": (20, 29),
    "test_cron_seconds_e2e.py": (23, 25),
    "test_extra_runs_bounded.py": (20, 25),
    "test_queues.py": (25, 18),
    "test_db_faults.py": (39, 0),
    "test_chain.py": (20, 19),
    "test_finish_blip.py": (38, 0),
    "test_task_wait_e2e.py": (19, 17),
    "test_request_deadline.py": (20, 15),
}
PER_TEST = {"sqlite": 0.5, "postgres": 0.8}


def shards(tests_per_file: dict[str, int], count: int, database: str) -> dict[str, int]:
    """The shard (0 to count - 1) of each file of a pass, from its number of tests in this pass."""
    column = 0 if database == "sqlite" else 1

    def seconds(name: str) -> float:
        known = SECONDS.get(name)
        if known is not None and known[column]:
            return float(known[column])
        return tests_per_file[name] * PER_TEST[database]

    # Longest first; ties (and the order of files of no known time) by a hash of the name, stable across runs.
    order = sorted(tests_per_file, key=lambda name: (-seconds(name), zlib.crc32(name.encode())))
    load = [0.0] * count
    placed = {}
    for name in order:
        shard = min(range(count), key=lambda index: (load[index], index))
        placed[name] = shard
        load[shard] += seconds(name)
    return placed
