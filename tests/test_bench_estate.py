"""`python -m bench --quick --only estate` end to end on the pass's database: a small estate inserted in bulk,
every link made by a startup pass, then the Procfile's workers (one per core) run what comes due through a
window. Speed is never asserted here: every figure must be there, every due run in the window ran (none early),
no link had to be made again, and Redis holds under issue 51's 600 bytes a schedule."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.estate import DAY, HOUR, MINUTE, due_between, mix
from harness.quick_bench import run_quick_bench

pytestmark = [pytest.mark.bench, pytest.mark.database]


def test_the_mix_puts_the_rate_due() -> None:
    counts = mix(1_000_000, 300)
    assert sum(counts.values()) == 1_000_000 and counts[MINUTE] == 3600 and counts[DAY] > 0
    assert 299 <= sum(count / interval for interval, count in counts.items()) <= 302
    small = mix(2000, 20)  # hourly ones cannot bring it: more every-minute ones do
    assert small[DAY] == 0 and abs(small[MINUTE] / MINUTE + small[HOUR] / HOUR - 20) < 0.05
    # each schedule's ticks in a window, the first at its offset: 120 every-minute ones spread over the minute
    assert due_between({MINUTE: 120}, 100.0, 160.0, origin=100.0) == 120
    assert due_between({MINUTE: 120}, 100.0, 130.0, origin=100.0) == 60
    assert due_between({MINUTE: 120}, 0.0, 100.0, origin=100.0) == 0


def test_quick_estate_scenario_produces_every_figure(tmp_path: Path) -> None:
    database, document, _ = run_quick_bench(tmp_path, "--only", "estate")
    estate = document["results"][database]["estate"]
    spec = document["config"]["estate"]
    assert "error" not in estate, estate
    assert estate["schedules"] == spec["schedules"] and estate["links_made"] == spec["schedules"], estate
    # a loaded machine may make the links after the first ticks (setup_overran): the window then starts later,
    # and what follows must hold either way
    assert isinstance(estate["setup_overran"], bool), estate
    assert estate["due"] > 0 and estate["fires"] == estate["due"] and estate["early"] == 0, estate
    assert estate["links_repaired"] == 0, estate
    assert 0 < estate["redis_bytes_per_schedule"] <= 600, estate
    assert estate["cpu_seconds"]["their work processes"] > 0, estate
    rows = [row for row in document["rows"] if row["database"] == database]
    assert {row["scenario"] for row in rows} == {"10 estate"}
    assert all(row["pass"] is not None for row in rows if row["target"]), rows
