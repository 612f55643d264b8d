"""What a request's statements read, on both databases: the SELECTs that name a table, captured from the
engine while the request runs, and a check that each reads a bounded number of its rows (SQLite: EXPLAIN
QUERY PLAN, PostgreSQL: EXPLAIN ANALYZE)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from sqlalchemy import event

from recur_server.infra.extensions import db
from recur_server.services.queries import TOTAL_CAP

Captured = list[tuple[str, Any]]


class Statements:
    """The SELECTs that read one of `tables`, captured from the engine."""

    def __init__(self, tables: tuple[str, ...]) -> None:
        self.seen: Captured = []
        self.pattern = re.compile(r"\b(FROM|JOIN) (" + "|".join(tables) + r")\b")

    def __call__(self, _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any,
                 executemany: bool) -> None:
        if not executemany and statement.lstrip().upper().startswith(("SELECT", "WITH")) \
                and self.pattern.search(statement):
            self.seen.append((statement, parameters))


def reading(fetch: Callable[[], Any], *tables: str) -> Captured:
    """The statements that read any of `tables` while `fetch` runs a request (which must answer 200)."""
    statements = Statements(tables)
    event.listen(db.engine, "before_cursor_execute", statements)
    try:
        response = fetch()
    finally:
        event.remove(db.engine, "before_cursor_execute", statements)
    assert response.status_code == 200, response.data[:500]
    return statements.seen


def sqlite_plan(statement: str, parameters: Any) -> list[str]:
    return [row[-1] for row in db.session.connection().exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}",
                                                                        parameters)]


def postgres_rows_read(statement: str, parameters: Any, table: str) -> int:
    """Rows the statement read from `table` (returned or filtered out, over all loops), by EXPLAIN ANALYZE."""
    plan = db.session.connection().exec_driver_sql(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}",
                                                   parameters).scalar()
    document = plan if isinstance(plan, list) else json.loads(plan)

    def read(node: dict[str, Any]) -> int:
        own = 0
        if node.get("Relation Name") == table:
            own = (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)
                   + node.get("Rows Removed by Index Recheck", 0)) * node.get("Actual Loops", 1)
        return own + sum(read(child) for child in node.get("Plans", []))

    return int(read(document[0]["Plan"]))


def _through_an_index(line: str, table: str, whole_list: bool) -> bool:
    """A SQLite plan line on `table` that reads a range of an index (or, for a statement that reads the
    table's whole list, with no WHERE, the index's or the table's own order, up to its LIMIT)."""
    if line.startswith(f"SEARCH {table} USING") and ("INDEX" in line or "PRIMARY KEY" in line):
        return True
    return whole_list and line.startswith(f"SCAN {table}")


def assert_bounded(statements: Captured, page_bound: int, table: str = "runs") -> None:
    """SQLite: every read of `table` is a SEARCH through an index, never a SCAN of the table (unless the
    statement reads its whole list, up to a LIMIT) nor a sort of its rows. PostgreSQL: no statement reads
    more than the capped count's rows; a page's own statement (the one with an OFFSET) reads at most
    `page_bound`."""
    assert statements, f"the request read no {table}"
    db.session.rollback()  # the plans are read on the session's connection, in a transaction of their own
    for statement, parameters in statements:
        if db.engine.dialect.name == "sqlite":
            plan = sqlite_plan(statement, parameters)
            whole_list = " WHERE " not in statement and " LIMIT " in statement
            on_table = [line for line in plan if re.search(rf"\b{table}\b", line)]
            assert on_table and all(_through_an_index(line, table, whole_list) for line in on_table), \
                (statement, plan)
            assert not any("TEMP B-TREE FOR ORDER BY" in line or "TEMP B-TREE FOR LAST" in line
                           for line in plan), (statement, plan)
        else:
            rows = postgres_rows_read(statement, parameters, table)
            bound = page_bound if "OFFSET" in statement else TOTAL_CAP + 1
            assert rows <= bound, (rows, bound, statement)
    db.session.rollback()
