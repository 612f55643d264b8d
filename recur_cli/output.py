"""How the CLI shows answers: aligned tables and key/value blocks for people, the API's JSON for scripts."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click

Column = tuple[str, Callable[[Mapping[str, Any]], Any]]


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


def text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], empty: str = "(none)") -> None:
    if not rows:
        click.echo(empty)
        return
    cells = [[text(get(row)).replace("\n", " ") for _, get in columns] for row in rows]
    widths = [max(len(title), *(len(line[i]) for line in cells)) for i, (title, _) in enumerate(columns)]
    click.echo("  ".join(title.ljust(w) for (title, _), w in zip(columns, widths, strict=True)).rstrip())
    for line in cells:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())


def fields(item: Mapping[str, Any], names: Sequence[str] | None = None) -> None:
    """`name: value` lines, in the API's order (or `names`'), leaving out what is unset."""
    keys = list(names) if names is not None else list(item)
    shown = [k for k in keys if item.get(k) not in (None, [], {})]
    width = max((len(k) for k in shown), default=0)
    for key in shown:
        click.echo(f"{key.ljust(width)}  {text(item[key])}")


def timing_of(schedule: Mapping[str, Any]) -> str:
    """The schedule's timing in one short cell: `cron 0 9 * * 1-5`, `every 60s`, `at ...`, `rrule ...`."""
    if schedule.get("cron"):
        return f"cron {schedule['cron']}"
    if schedule.get("interval_seconds"):
        return f"every {schedule['interval_seconds']}s"
    if schedule.get("at"):
        return f"at {schedule['at']}"
    if schedule.get("rrule"):
        rule = str(schedule["rrule"]).replace("\n", " ")
        return "rrule " + (rule if len(rule) <= 40 else rule[:37] + "...")
    return "-"


def page(answer: Mapping[str, Any], columns: Sequence[Column], empty: str = "(none)") -> None:
    """A page of a list as a table and, when more follow, the cursor that asks for them."""
    table(answer["items"], columns, empty=empty)
    if answer.get("next"):
        click.echo(f"(more: --cursor {answer['next']})")
