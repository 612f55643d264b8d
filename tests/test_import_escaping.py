"""What the importers print carries names, notes and reasons copied from the jobs they read. None of it may
become code: a job's name holding a line break (of any kind), a quote or a backslash stays inside its
comment, docstring or string literal, in the Python module (rq cron, Celery beat) and in the YAML apply file
(crontab, rq-scheduler). The output is parsed back and must hold nothing but what the importer wrote."""

from __future__ import annotations

import ast
import types
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.legacy_jobs import refresh
from recur_cli.importers.common import Imported
from recur_cli.importers.declarations import importable
from recur_cli.importers.rq_cron import import_config

# Text that tries to break out: every kind of line break Python or YAML ends a line at, quotes, backslashes
# and the starts of code, mixed with anything else.
NASTY = st.lists(st.sampled_from(["\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028",
                                          "\u2029", "'", '"', '"""', "\\", "#", "import os", "os.system('x')",
                                          "a", "é", " ", "\x00", ")"]), max_size=12).map("".join) | st.text()


def _statements(module: str) -> list[ast.stmt]:
    return ast.parse(module).body


def _only_what_an_import_writes(module: str) -> None:
    """A docstring, `import recur`, `from M import f` and `recur.register(...)` calls: nothing else."""
    body = _statements(module)
    assert isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)  # the docstring
    for statement in body[1:]:
        if isinstance(statement, ast.Import):
            assert [alias.name for alias in statement.names] == ["recur"]
        elif isinstance(statement, ast.ImportFrom):
            assert statement.module == "harness.legacy_jobs", ast.dump(statement)
        else:
            assert isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call), ast.dump(statement)
            assert ast.unparse(statement.value.func) == "recur.register"


@settings(max_examples=300, deadline=None)
@given(mapped=NASTY, unmapped=NASTY, queue=NASTY)
def test_no_name_an_rq_cron_job_holds_becomes_code(mapped: str, unmapped: str, queue: str) -> None:
    calls: list[dict[str, Any]] = [
        {"func": refresh, "name": mapped, "interval": 60, "queue_name": queue, "meta": {"x": mapped}},
        {"func": lambda: None, "name": unmapped, "interval": 60},  # not importable by name: listed, with why
        {"func": refresh, "name": unmapped + "!", "cron": "0 * * * *", "interval": 5},  # both: listed
    ]
    module = import_config(calls).as_python(source=mapped, load_hint=unmapped)
    _only_what_an_import_writes(module)
    registered = [s.value for s in _statements(module)[1:] if isinstance(s, ast.Expr)]
    assert len(registered) == 1
    names = {k.arg: ast.literal_eval(k.value) for k in registered[0].keywords}  # type: ignore[attr-defined]
    assert names["name"] == (mapped or "harness.legacy_jobs.refresh")  # a string literal, exactly


@settings(max_examples=300, deadline=None)
@given(source=NASTY, job=NASTY, why=NASTY, command=NASTY)
def test_no_name_a_yaml_import_carries_becomes_yaml(source: str, job: str, why: str, command: str) -> None:
    imported = Imported(schedules=[{"key": "crontab/x", "workflow": "builtin.noop", "name": command,
                                    "cron": "0 * * * *"}],
                        unmapped=[(job, why)])
    document = yaml.safe_load(imported.as_yaml(source))
    assert document == {"workflows": [{"name": "builtin.noop", "task": "builtin.noop"}],
                        "schedules": [{"key": "crontab/x", "workflow": "builtin.noop", "name": command,
                                       "cron": "0 * * * *"}]}


@given(module=NASTY, qualname=NASTY)
def test_a_function_named_other_than_by_identifiers_is_not_declared(module: str, qualname: str) -> None:
    """A module or function name that is not a dotted path of identifiers would be written into an import
    line as code: such a function is listed as not importable instead."""
    function = types.SimpleNamespace(__module__=module, __qualname__=qualname)
    valid = all(part.isidentifier() for part in [*module.split("."), *qualname.split(".")])
    assert (importable(function) is None) <= valid
