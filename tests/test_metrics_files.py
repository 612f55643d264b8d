"""A host's metric files: those of ended processes are folded into one archive per kind, every count kept,
and a fold killed at any step is finished or undone by the next, never counting a file twice or losing one.
Real files written by prometheus-client's own mmap format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from recur_server.infra import metrics_files

RUNS = json.dumps(["recur_runs_total", "recur_runs_total", {"status": "succeeded", "trigger": "schedule"},
                   "Runs finished."])
BUCKET = json.dumps(["recur_run_lateness_seconds", "recur_run_lateness_seconds_bucket", {"le": "0.1"}, "Lateness."])


def _ended_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


def _write(directory: Path, kind: str, pid: int | str, key: str, value: float) -> None:
    written = MmapedDict(str(directory / f"{kind}_{pid}.db"))
    written.write_value(key, value, 0.0)
    written.close()


def _totals(directory: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(generate_latest(registry).decode()) for s in f.samples}


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """Two ended processes and this live one, each with its counter and histogram file."""
    for pid, runs in ((_ended_pid(), 3), (_ended_pid(), 4), (os.getpid(), 5)):
        _write(tmp_path, "counter", pid, RUNS, runs)
        _write(tmp_path, "histogram", pid, BUCKET, runs)
    return tmp_path


def test_ended_processes_files_are_folded_into_one_archive_and_every_count_is_kept(host: Path) -> None:
    before = _totals(host)
    assert before[("recur_runs_total", (("status", "succeeded"), ("trigger", "schedule")))] == 12
    assert metrics_files.fold_ended(str(host)) == 4  # two ended processes, two kinds each
    assert sorted(p.name for p in host.glob("*.db")) == sorted([
        "counter_archive.db", f"counter_{os.getpid()}.db", "histogram_archive.db", f"histogram_{os.getpid()}.db"])
    assert _totals(host) == before
    _write(host, "counter", _ended_pid(), RUNS, 6)  # another process ended since: added to the archive
    assert metrics_files.fold_ended(str(host)) == 1
    assert _totals(host)[("recur_runs_total", (("status", "succeeded"), ("trigger", "schedule")))] == 18
    assert metrics_files.fold_ended(str(host)) == 0  # nothing more to fold


def test_a_fold_killed_before_its_archive_was_replaced_is_undone(host: Path) -> None:
    before = _totals(host)
    ended = sorted(p.name for p in host.glob("counter_*.db") if p.name != f"counter_{os.getpid()}.db")
    _write(host, "counter", "archive", RUNS, 7)  # the new archive, written; the old one never replaced
    os.rename(host / "counter_archive.db", host / "counter_archive.db.new")
    (host / "fold.journal").write_text(json.dumps({"archive": "counter_archive.db.new", "files": ended}))
    assert _totals(host) == before  # what a scrape sees meanwhile: the ended files, no archive
    metrics_files.fold_ended(str(host))
    assert _totals(host) == before and not (host / "fold.journal").exists()


def test_a_fold_killed_after_its_archive_was_replaced_finishes_removing_what_it_holds(host: Path) -> None:
    before = _totals(host)
    ended = sorted(p.name for p in host.glob("counter_*.db") if p.name != f"counter_{os.getpid()}.db")
    _write(host, "counter", "archive", RUNS, 7)  # the archive already holds the two ended files (3 + 4)
    (host / "fold.journal").write_text(json.dumps({"archive": "counter_archive.db.new", "files": ended}))
    metrics_files.fold_ended(str(host))
    assert _totals(host) == before and not (host / "fold.journal").exists()
    assert not any((host / name).exists() for name in ended)
