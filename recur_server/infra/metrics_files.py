"""The directory where the processes of one host keep their metrics (prometheus-client's multiprocess
mode), so that a scrape of any web process adds up what every process of the host counted.

- **Its default.** With PROMETHEUS_MULTIPROC_DIR unset, the entry points (wsgi.py, worker.py,
  gunicorn.conf.py) set it to `instance/metrics` under the directory they start in (recur/host_metrics.py) before
  anything
  imports prometheus-client: the Procfile's processes, started as written, share one directory per host.
- **Files of ended processes folded into one.** Every process writes its values into files of its own
  (`counter_{pid}.db`, `histogram_{pid}.db`), and a host that runs for a year starts many processes. A
  process's files, once it has ended, are added into `counter_archive.db` / `histogram_archive.db` and
  removed, so the directory holds the live processes' files and one archive per type, and every count is
  kept (a counter summed over the directory never goes down, which Prometheus would read as a reset).

A fold holds the directory's lock exclusively; a scrape holds it shared (`reading`), so it never reads a
file a fold is removing, nor a count twice. A fold survives being killed at any line: the new archive is
written beside the old one, a journal names the files it holds, and the archive is replaced by a rename;
the next fold finishes or undoes what the journal says.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from typing import Any

_LOCK = ".lock"
_JOURNAL = "fold.journal"
_FOLDED_TYPES = ("counter", "histogram")  # the kinds of metric Recur's processes count (no live gauges)


@contextlib.contextmanager
def _locked(directory: str, kind: int) -> Iterator[None]:
    with open(os.path.join(directory, _LOCK), "a+b") as handle:
        fcntl.flock(handle.fileno(), kind)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def reading(directory: str) -> contextlib.AbstractContextManager[None]:
    """Hold while reading the directory's files (a scrape): no fold removes one meanwhile."""
    return _locked(directory, fcntl.LOCK_SH)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def _ended_files(directory: str, kind: str) -> list[str]:
    ended = []
    for name in sorted(os.listdir(directory)):
        stem, _, suffix = name.rpartition(".")
        parts = stem.split("_")
        if suffix == "db" and parts[0] == kind and len(parts) == 2 and parts[1].isdigit() \
                and not _alive(int(parts[1])):
            ended.append(name)
    return ended


def fold_ended(directory: str) -> int:
    """Add the files of this host's ended processes into the archives and remove them; returns how many
    files were folded. Safe beside live processes (their files are left) and other folds (one at a time)."""
    from prometheus_client.mmap_dict import MmapedDict

    folded = 0
    with _locked(directory, fcntl.LOCK_EX):
        _finish_interrupted(directory)
        for kind in _FOLDED_TYPES:
            ended = _ended_files(directory, kind)
            if not ended:
                continue
            archive = os.path.join(directory, f"{kind}_archive.db")
            fresh = archive + ".new"
            totals: dict[str, float] = {}
            for name in [archive, *(os.path.join(directory, n) for n in ended)]:
                if os.path.exists(name):
                    for key, value, _, _ in MmapedDict.read_all_values_from_file(name):  # type: ignore[no-untyped-call]
                        totals[key] = totals.get(key, 0.0) + value
            with contextlib.suppress(FileNotFoundError):
                os.remove(fresh)
            written: Any = MmapedDict(fresh)  # type: ignore[no-untyped-call]
            for key, value in totals.items():
                written.write_value(key, value, 0.0)
            written.close()
            _fsync(fresh)
            _write_journal(directory, fresh, ended)
            os.replace(fresh, archive)
            _finish_interrupted(directory)
            folded += len(ended)
    return folded


def _fsync(path: str) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _write_journal(directory: str, fresh: str, ended: list[str]) -> None:
    journal = os.path.join(directory, _JOURNAL)
    with open(journal + ".tmp", "w") as handle:
        json.dump({"archive": os.path.basename(fresh), "files": ended}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(journal + ".tmp", journal)


def _finish_interrupted(directory: str) -> None:
    """A journal left by a fold: if its new archive is still beside the old one, the fold never replaced
    it (undo: drop the new one); if not, it did, and the files it names are counted there (finish: remove
    them). No journal: a new archive lying about was never journaled, and goes."""
    journal = os.path.join(directory, _JOURNAL)
    try:
        with open(journal) as handle:
            entry = json.load(handle)
    except FileNotFoundError:
        for name in os.listdir(directory):
            if name.endswith(".db.new"):
                os.remove(os.path.join(directory, name))
        return
    fresh = os.path.join(directory, entry["archive"])
    if os.path.exists(fresh):
        os.remove(fresh)
    else:
        for name in entry["files"]:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(directory, name))
    os.remove(journal)
