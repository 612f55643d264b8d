"""What the code-level importers (rq cron, Celery beat) print: a Python module of `recur.register(...)`
declarations, one per job that maps, with the jobs that do not listed at its top.

Their jobs name functions, not registered tasks: a declaration is what makes a plain function a task Recur
may run (nothing imports a path sent over the network), so the output is code for the team's task modules,
brought into the database by `flask declarations sync`, rather than an apply file (docs/migrating.md).
"""

from __future__ import annotations

import json
import keyword
from dataclasses import dataclass, field
from typing import Any

from recur_cli.importers.common import comment, key_for, one_line


@dataclass
class Declared:
    """One job as a declaration: the function (module and qualified name, plus an attribute to reach the
    function through, such as a Celery task's `run`), the declaration's options under recur's names, and
    notes on what of the job was not carried over."""

    source: str  # how the job is named where it came from (rq cron's name, the beat entry's name)
    module: str
    qualname: str
    options: dict[str, Any]
    attribute: str = ""
    notes: list[str] = field(default_factory=list)


@dataclass
class ImportedCode:
    declarations: list[Declared] = field(default_factory=list)
    unmapped: list[tuple[str, str]] = field(default_factory=list)  # (the job, why)
    header: list[str] = field(default_factory=list)  # notes on every job

    def as_python(self, source: str, load_hint: str) -> str:
        """The module's text. `load_hint` is the module list a reader puts in RECUR_TASK_MODULES."""
        lines = [
            f'"""Schedules imported from {_in_docstring(source)} by `recur import`.',
            "",
            f"Load it after the modules that define the functions (RECUR_TASK_MODULES={_in_docstring(load_hint)}), "
            "then run",
            "`flask declarations sync --dry-run` and `flask declarations sync`. What a job did not say is Recur's",
            "default: max_retries 3, overlap skip, catch_up latest (docs/migrating.md); add retries=0 where a",
            'second attempt would do harm."""',
            "",
        ]
        lines += [comment(note) for note in self.header]
        if self.unmapped:
            lines.append(f"# Not imported ({len(self.unmapped)}):")
            lines += [comment(f"  {job}: {why}") for job, why in self.unmapped]
            lines.append("")
        names = _import_names(self.declarations)
        lines.append("import recur")
        for module in sorted({d.module for d in self.declarations}):
            imported = sorted({(d.qualname.split(".")[0], names[(d.module, d.qualname.split(".")[0])])
                               for d in self.declarations if d.module == module})
            lines.append(f"from {module} import " + ", ".join(
                name if alias == name else f"{name} as {alias}" for name, alias in imported))
        for declared in self.declarations:
            head, _, rest = declared.qualname.partition(".")
            target = names[(declared.module, head)] + (f".{rest}" if rest else "")
            target += f".{declared.attribute}" if declared.attribute else ""
            lines.append("")
            lines += [comment(note) for note in declared.notes]
            arguments = [target] + [f"{name}={_literal(value)}" for name, value in declared.options.items()]
            lines += _call("recur.register", arguments)
        return "\n".join(lines) + "\n"


def unique_keys(prefix: str, jobs: list[tuple[str, Any]]) -> list[str]:
    """A stable key per job from its name; jobs that share a name get a suffix from what else they hold,
    so importing the same config again gives every job the same key."""
    counts: dict[str, int] = {}
    for name, _ in jobs:
        counts[name] = counts.get(name, 0) + 1
    return [key_for(prefix, name, unique=None if counts[name] == 1 else json.dumps(identity, sort_keys=True,
                                                                                  default=repr))
            for name, identity in jobs]


def json_value(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def importable(function: Any) -> str | None:
    """Why a declaration cannot name `function` by module and name, or None when it can."""
    module, qualname = getattr(function, "__module__", None), getattr(function, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return f"{function!r} is not a function"
    if "<" in qualname or module == "__main__" or not all(
            part.isidentifier() and not keyword.iskeyword(part) for part in [*module.split("."), *qualname.split(".")]):
        return f"{module}.{qualname} is not importable by its name: move it to the top level of a module"
    return None


def _in_docstring(text: str) -> str:
    """`text` inside the module's triple-quoted docstring: on one line, and no quote or backslash of its own
    can end the string."""
    return one_line(text).replace("\\", "\\\\").replace('"', '\\"')


def _import_names(declarations: list[Declared]) -> dict[tuple[str, str], str]:
    """The local name of each imported top-level name: itself, or name_2 ... where two modules share one."""
    names: dict[tuple[str, str], str] = {}
    taken = {"recur"}
    for module, head in sorted({(d.module, d.qualname.split(".")[0]) for d in declarations}):
        alias, n = head, 1
        while alias in taken or keyword.iskeyword(alias):
            n += 1
            alias = f"{head}_{n}"
        taken.add(alias)
        names[(module, head)] = alias
    return names


def _literal(value: Any) -> str:
    """A JSON value as Python source (repr of dicts, lists, str, numbers, True/False/None)."""
    return repr(value)


def _call(function: str, arguments: list[str], width: int = 110) -> list[str]:
    one_line = f"{function}({', '.join(arguments)})"
    if len(one_line) <= width:
        return [one_line]
    lines, current = [], f"{function}("
    indent = " " * len(current)
    for n, argument in enumerate(arguments):
        piece = argument + (")" if n == len(arguments) - 1 else ",")
        if current.strip() and current != f"{function}(" and len(current) + 1 + len(piece) > width:
            lines.append(current.rstrip())
            current = indent
        current += piece if current in (f"{function}(", indent) else " " + piece
    lines.append(current)
    return lines
