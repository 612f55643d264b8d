"""`python -m bench --quick` end to end, as CI runs it: it must produce every figure, Recur's and each
baseline's, on the pass's database (the SQLite pass runs it on SQLite, the PostgreSQL pass on its own durable
PostgreSQL server, as the bench does). Speed is never asserted here (shared machines make it noise)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.stack import postgres_available

pytestmark = [pytest.mark.bench, pytest.mark.database]

ROOT = Path(__file__).resolve().parent.parent


def test_quick_bench_produces_every_figure(tmp_path: Path) -> None:
    database = "postgres" if os.environ.get("RECUR_TEST_POSTGRES") else "sqlite"
    if database == "postgres" and not postgres_available():
        pytest.skip("PostgreSQL's server binaries are not installed")
    out = tmp_path / "results.json"
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", "--db", database, "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    document = json.loads(out.read_text())
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
    header = done.stdout.splitlines()[1]
    assert "Recur" in header and "baseline" in header and "ratio" in header
