"""Run the few statements every link executes straight on the database driver.

SQLAlchemy still renders each statement (once per dialect) and supplies every type conversion (its own
bind and result processors, so values are stored and read exactly as through SQLAlchemy). What is left
out is its per-execution machinery (cache keys, execution contexts, result objects, pool events), which
cost several times the database's own work for a link's short statements: a claim and a finish took
1.5 ms through Core and 0.25 ms on the driver (SQLite, this machine). Everything else, the API and
recovery included, goes through SQLAlchemy as usual.

On PostgreSQL a transaction may run in the driver's pipeline mode (`transaction(engine, pipelined=True)`):
a statement that returns nothing is sent without waiting for its answer, and goes with the next one whose
rows are read or with the COMMIT; `send()` starts a statement whose rows are read later, so several reads
cost one round trip. The server runs them in the order sent, each as it would run alone. On SQLite, which
runs in this process, every statement runs when it is called.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Dialect, Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, StatementError
from sqlalchemy.sql.expression import Executable

from recur_server.infra import pool_check, write_lock

Processor = Callable[[Any], Any] | None


@dataclass(frozen=True)
class _Rendered:
    sql: str
    compiled: Any
    positions: tuple[str, ...] | None  # bind names in order, for positional paramstyles
    binds: dict[str, Processor]
    columns: tuple[str, ...]  # what the statement returns (RETURNING or SELECT), in order
    results: tuple[Processor, ...]

    def parameters(self, values: Mapping[str, Any]) -> Sequence[Any] | dict[str, Any]:
        params: dict[str, Any] = self.compiled.construct_params(values)  # adds the values the statement binds itself
        for name, process in self.binds.items():
            if process is not None and params[name] is not None:
                params[name] = process(params[name])
        if self.positions is None:
            return params
        return tuple(params[name] for name in self.positions)

    def row(self, raw: Sequence[Any]) -> tuple[Any, ...]:
        pairs = zip(self.results, raw, strict=True)
        return tuple(value if process is None else process(value) for process, value in pairs)


class Statement:
    """A Core statement rendered for each dialect it meets, run on a driver cursor."""

    def __init__(self, statement: Executable) -> None:
        self.statement = statement
        self._rendered: dict[str, _Rendered] = {}

    def rendered(self, dialect: Dialect) -> _Rendered:
        rendered = self._rendered.get(dialect.name)
        if rendered is None:
            rendered = self._rendered[dialect.name] = _render(self.statement, dialect)
        return rendered

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(column.key for column in _returned(self.statement))


def _returned(statement: Any) -> list[Any]:
    returned = getattr(statement, "selected_columns", None)
    if returned is None:
        returned = statement.exported_columns  # UPDATE/INSERT ... RETURNING
    return list(returned)


def _render(statement: Any, dialect: Dialect) -> _Rendered:
    compiled = statement.compile(dialect=dialect)
    binds = {}
    for name, bind in compiled.binds.items():
        binds[name] = bind.type.dialect_impl(dialect).bind_processor(dialect)
    columns = _returned(statement)
    results = tuple(column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns)
    return _Rendered(
        sql=compiled.string,
        compiled=compiled,
        positions=tuple(compiled.positiontup) if compiled.positional else None,
        binds=binds,
        columns=tuple(column.key for column in columns),
        results=results,
    )


class Pending:
    """A statement sent in a pipelined transaction whose rows are read later (rows(), first())."""

    def __init__(self, tx: Transaction, rendered: _Rendered, cursor: Any, params: Any,
                 raw: list[Any] | None = None) -> None:
        self._tx = tx
        self._rendered = rendered
        self._cursor = cursor
        self._params = params
        self._raw = raw

    def rows(self) -> list[tuple[Any, ...]]:
        if self._raw is None:
            self._raw = self._tx._fetch(self._cursor, self._rendered, self._params)
        return [self._rendered.row(row) for row in self._raw]

    def first(self) -> tuple[Any, ...] | None:
        rows = self.rows()
        return rows[0] if rows else None


class Transaction:
    """One transaction on one pooled driver connection; see transaction()."""

    def __init__(self, connection: Any, dialect: Dialect, pipelined: bool = False) -> None:
        self._connection = connection
        self._cursor = connection.cursor()
        self._dialect = dialect
        self.pipelined = pipelined
        self.rolled_back = False
        self.committed = False
        # Run after a successful commit (metrics of what the transaction recorded); never after a rollback.
        self.after_commit: list[Callable[[], None]] = []

    def execute(self, statement: Statement, values: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Run the statement; returns its rows (RETURNING or SELECT), each converted as SQLAlchemy would."""
        rendered = statement.rendered(self._dialect)
        params = rendered.parameters(values or {})
        self._send(self._cursor, rendered, params)
        raw = self._fetch(self._cursor, rendered, params)
        return [rendered.row(row) for row in raw]

    def send(self, statement: Statement, values: Mapping[str, Any] | None = None) -> Pending:
        """Start the statement; its rows are read by the Pending's rows() or first(). Pipelined, what is
        sent before that read shares its round trip; otherwise the statement runs now."""
        rendered = statement.rendered(self._dialect)
        params = rendered.parameters(values or {})
        if not self.pipelined:
            self._send(self._cursor, rendered, params)
            return Pending(self, rendered, self._cursor, params, self._fetch(self._cursor, rendered, params))
        cursor = self._connection.cursor()  # a cursor of its own: it keeps this statement's rows
        self._send(cursor, rendered, params)
        return Pending(self, rendered, cursor, params)

    def _send(self, cursor: Any, rendered: _Rendered, params: Any) -> None:
        try:
            cursor.execute(rendered.sql, params)
        except self._dialect.loaded_dbapi.Error as exc:
            raise self._wrapped(exc, rendered.sql, params) from exc

    def _fetch(self, cursor: Any, rendered: _Rendered, params: Any) -> list[Any]:
        if not rendered.columns:
            return []  # pipelined: its answer comes with the next read or the COMMIT
        try:
            return list(cursor.fetchall())  # read to the end: SQLite applies as it steps
        except self._dialect.loaded_dbapi.Error as exc:
            raise self._wrapped(exc, rendered.sql, params) from exc

    def first(self, statement: Statement, values: Mapping[str, Any] | None = None) -> tuple[Any, ...] | None:
        rows = self.execute(statement, values)
        return rows[0] if rows else None

    def rollback(self) -> None:
        """End the transaction without its changes (the block still runs to its end)."""
        if not self.rolled_back:
            self.rolled_back = True
            self._call(self._connection.rollback, "ROLLBACK")

    def _begin(self) -> None:
        """SQLite's transaction takes the write lock up front; PostgreSQL's driver begins by itself."""
        if self._dialect.name == "sqlite":
            self._call(lambda: self._cursor.execute(write_lock.BEGIN), write_lock.BEGIN)

    def commit(self) -> None:
        """Commit (the block's end does, unless rolled back or committed already). Called before the end,
        pipelined, the COMMIT shares the round trip of everything sent before it, and what those statements
        return is read after it: for a statement that decides by itself whether it writes anything
        (recur_server.chain.lean_claim)."""
        if not self.rolled_back and not self.committed:
            self.committed = True
            self._call(self._connection.commit, "COMMIT")

    def _call(self, method: Callable[[], object], sql: str) -> None:
        try:
            method()
        except self._dialect.loaded_dbapi.Error as exc:
            raise self._wrapped(exc, sql, ()) from exc

    def _wrapped(self, exc: Any, sql: str, params: Any) -> StatementError:
        """The error SQLAlchemy would have raised (IntegrityError, OperationalError, ...); a connection
        that the error shows is dead is invalidated, so the pool never hands it out again."""
        dead = self._dialect.is_disconnect(exc, self._connection.dbapi_connection, self._cursor)
        if dead:
            self._connection.invalidate(exc)
            pool_check.found_dead()  # the pool's other connections are suspect too
        wrapped: StatementError = DBAPIError.instance(
            sql, params, exc, self._dialect.loaded_dbapi.Error, connection_invalidated=dead, dialect=self._dialect,
        )
        return wrapped


def unavailable(exc: BaseException, engine: Engine) -> bool:
    """Whether `exc` says the database could not be reached or lost the connection (worth retrying once
    it is back), as SQLAlchemy wraps it or as the driver raised it (the pool's checkout does not wrap)."""
    dbapi = engine.dialect.loaded_dbapi
    return isinstance(exc, (OperationalError, InterfaceError, dbapi.OperationalError, dbapi.InterfaceError))


@contextlib.contextmanager
def transaction(engine: Engine, pipelined: bool = False) -> Iterator[Transaction]:
    """Commits at the end of the block, rolls back on an exception; the connection goes back to the pool
    either way (and the pool resets it). `pipelined` asks for the driver's pipeline mode where the
    driver has one (psycopg); elsewhere it changes nothing."""
    with pool_check.trusting_recent():  # a link's connection, given back a moment ago, is taken without a ping
        connection = engine.raw_connection()
    try:
        pipeline = _pipeline(connection, engine.dialect.loaded_dbapi) if pipelined else None
        with pipeline if pipeline is not None else contextlib.nullcontext():
            tx = Transaction(connection, engine.dialect, pipelined=pipeline is not None)
            tx._begin()
            try:
                yield tx
            except BaseException:
                with contextlib.suppress(Exception):
                    tx.rollback()
                raise
            tx.commit()
        if not tx.rolled_back:
            for hook in tx.after_commit:
                hook()
    finally:
        connection.close()


def _pipeline(connection: Any, driver: Any) -> Any:
    """psycopg's pipeline mode on this pooled connection, or None (another driver, or a libpq without it).
    `driver` is the engine's DBAPI module (psycopg itself on PostgreSQL): psycopg is imported by the engine
    that uses it, not by every process (a fifth of a process's imports on SQLite)."""
    pipeline = getattr(connection.dbapi_connection, "pipeline", None)
    if pipeline is None:
        return None
    return pipeline() if driver.Pipeline.is_supported() else None
