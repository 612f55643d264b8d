"""Test files taken one at a time by the shards of a pass (pytest plugin): with RECUR_TEST_CLAIMS set to a directory
that the pass's pytest processes share (scripts/test makes one per pass), each process collects all of the pass's
tests and then, whenever it is ready for the next file, takes the longest file that no process has taken yet
(harness/shards.py's order) by creating its claim in that directory (O_EXCL: one process wins each file). A shard
whose files ran long simply takes fewer of them, so the shards of a pass end within about one short file of each
other, whatever the machine's load did to any of them; a placement fixed in advance ended 30-90 s apart.

A file none of whose tests uses the database runs on the SQLite pass alone; with RECUR_TEST_CLAIMS_EITHER (a
directory both passes share) the shards of either pass may take it there instead, so that the pass with less left
takes more of them and the two passes end together (they ended 21-24 s apart with each pass's own).

Without RECUR_TEST_CLAIMS, pytest runs its items as usual (RECUR_TEST_SHARD's fixed placement, tests/conftest.py,
still works alone)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.passes import either_pass_files, file_of, this_pass
from harness.shards import longest_first

_taken: list[str] = []


def claim_order(nodeids: list[str], database: str, shared: set[str]) -> list[str]:
    """The order a shard of the pass on `database` tries the files in: the longest first (harness/shards.py's
    table), except that the PostgreSQL pass, the longer, tries the files either pass may run (`shared`) only
    after its own. The SQLite pass takes them as they come, the longest early, and the PostgreSQL pass finds
    the short ones left when its own run out: it ended 18-25 s after the SQLite pass when both took them by
    length alone."""
    by_name = {Path(nodeid).name: nodeid for nodeid in nodeids}
    ranked = [by_name[name] for name in longest_first(list(by_name), database)]
    if database != "postgres":
        return ranked
    return [nodeid for nodeid in ranked if nodeid not in shared] + [nodeid for nodeid in ranked if nodeid in shared]


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    directory = os.environ.get("RECUR_TEST_CLAIMS")
    if not directory or session.config.option.collectonly:
        return None
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        raise session.Interrupted(f"{session.testsfailed} errors during collection")
    files: dict[str, list[pytest.Item]] = {}
    for item in session.items:
        files.setdefault(file_of(item), []).append(item)
    database = this_pass()
    either = os.environ.get("RECUR_TEST_CLAIMS_EITHER")
    shared = either_pass_files(session.items) if either else set()
    order = iter(claim_order(list(files), database, shared))

    def take() -> list[pytest.Item] | None:
        for nodeid in order:
            where = either if either and nodeid in shared else directory
            path = Path(where) / (nodeid.replace("/", "__") + ".claim")
            try:
                claim = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                continue
            os.write(claim, f"{os.getpid()} {os.environ.get('RECUR_TEST_SHARD', '')}\n".encode())
            os.close(claim)
            _taken.append(nodeid)
            return files[nodeid]
        return None

    current = take()
    while current is not None:
        following = None
        for index, item in enumerate(current):
            if index + 1 < len(current):
                nextitem: pytest.Item | None = current[index + 1]
            else:  # the next file is taken before this one's last test, so its fixtures are torn down right
                following = take()
                nextitem = following[0] if following else None
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            if session.shouldfail:
                raise session.Failed(session.shouldfail)
            if session.shouldstop:
                raise session.Interrupted(session.shouldstop)
        current = following
    return True


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int) -> None:
    """Which files this process took, in order, when something failed: a failure that depends on the tests run
    before it in the same process is then reproducible (`pytest FILE FILE …` in that order)."""
    if _taken and exitstatus != 0:
        terminalreporter.write_line("files this process took, in order: " + " ".join(_taken))
