"""Which pass runs a test: the SQLite pass runs them all, the PostgreSQL pass only the tests that use the database
under test (tests/conftest.py); a file with none of those may run on either (harness/claims.py)."""

from __future__ import annotations

import os

import pytest


def this_pass() -> str:
    """The pass this process runs: `postgres` with RECUR_TEST_POSTGRES set, else `sqlite`."""
    return "postgres" if os.environ.get("RECUR_TEST_POSTGRES") else "sqlite"


def uses_database(item: pytest.Item) -> bool:
    """Whether a test uses the database under test: the `database_url` (or `empty_database_url`) fixture, or
    the `database` marker of a test that reaches it another way. Only those run on the PostgreSQL pass."""
    fixtures = set(getattr(item, "fixturenames", ()))
    return bool(fixtures & {"database_url", "empty_database_url"} or item.get_closest_marker("database"))


def file_of(item: pytest.Item) -> str:
    """A test's file, as its node id names it (tests/test_x.py)."""
    return item.nodeid.split("::")[0]


def either_pass_files(items: list[pytest.Item]) -> set[str]:
    """The files (node ids) none of whose tests uses the database: either pass may run them."""
    files: dict[str, bool] = {}
    for item in items:
        path = file_of(item)
        files[path] = files.get(path, False) or uses_database(item)
    return {path for path, database in files.items() if not database}
