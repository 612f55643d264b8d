"""`python -m bench --quick` end to end, as CI runs it: it must produce every figure, Recur's and each
baseline's, on the pass's database (the SQLite pass runs it on SQLite, the PostgreSQL pass on its own durable
PostgreSQL server, as the bench does). Speed is never asserted here (shared machines make it noise)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.quick_bench import run_quick_bench

pytestmark = [pytest.mark.bench, pytest.mark.database]


def test_quick_bench_produces_every_figure(tmp_path: Path) -> None:
    database, document, output = run_quick_bench(tmp_path, timeout=900)
    rows = document["rows"]
    scenarios = {"1 throughput", "2 steady load", "3 herd", "4 scale", "5 API", "6 burst", "7 memory"}
    assert document["databases"] == [database]
    assert {row["scenario"] for row in rows if row["database"] == database} == scenarios
    default_rows = {row["figure"] for row in rows if row["scenario"] == "1 throughput"}
    assert any(figure.startswith("fires/s per worker, default (isolating) x") for figure in default_rows), default_rows
    missing = [row for row in rows
               if not isinstance(row["recur"], int | float) or not isinstance(row["baseline_value"], int | float)]
    assert not missing, missing
    assert all(row["pass"] is not None for row in rows if row["target"]), rows
    header = output.splitlines()[1]
    assert "Recur" in header and "baseline" in header and "ratio" in header
