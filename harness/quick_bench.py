"""`python -m bench --quick` run as CI runs it, on the pass's database (the SQLite pass on SQLite, the
PostgreSQL pass on the bench's own durable PostgreSQL server): the tests of the bench's scenarios share it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from bench.stack import postgres_available
from harness.passes import this_pass

ROOT = Path(__file__).resolve().parent.parent


class QuickBench(NamedTuple):
    database: str  # the pass's: sqlite or postgres
    document: dict[str, Any]  # the report it wrote (--out)
    output: str  # what it printed (the table)


def run_quick_bench(tmp_path: Path, *options: str, timeout: float = 600) -> QuickBench:
    """`python -m bench --quick OPTIONS` on the pass's database; skips without PostgreSQL's server on the
    PostgreSQL pass, fails with the bench's own error output."""
    database = this_pass()
    if database == "postgres" and not postgres_available():
        pytest.skip("PostgreSQL's server binaries are not installed")
    out = tmp_path / "results.json"
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", *options, "--db", database, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-4000:]
    return QuickBench(database, json.loads(out.read_text()), done.stdout)
