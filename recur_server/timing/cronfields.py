"""Parsing and validating cron expressions into value sets, with messages naming the field.

Five fields (minute hour day-of-month month day-of-week), or six with **seconds first** (second minute hour
day-of-month month day-of-week), as Quartz, Spring and robfig/cron's seconds option read them; a five-field
expression fires at second 0. (croniter itself puts seconds last: canonical() writes them there.)
Supported: numbers, names (JAN-DEC, SUN-SAT), '*', '?', ranges a-b, lists, steps (*/n, a-b/n, a/n),
and the macros @hourly @daily @midnight @weekly @monthly @yearly @annually. Day of week: 0 or 7 = Sunday.
Not supported (rejected with a message): a year field, @reboot, and the L, W, # and H extensions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import TimingError

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
MONTH_LENGTHS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December")


@dataclass(frozen=True)
class FieldRule:
    """Name, allowed range and value names of one cron field."""

    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    name_base: int = 0


SECOND = FieldRule("second", 0, 59)
FIELDS = (
    FieldRule("minute", 0, 59),
    FieldRule("hour", 0, 23),
    FieldRule("day-of-month", 1, 31),
    FieldRule("month", 1, 12, MONTHS, 1),
    FieldRule("day-of-week", 0, 7, DAYS, 0),
)
_EXTENSION = re.compile(r"#|^lw?$|^\d+[lw]$|^h")
_ITEM = re.compile(r"^(?P<base>\*|\?|[a-z0-9]+(?:-[a-z0-9]+)?)(?:/(?P<step>[^/]*))?$")


@dataclass(frozen=True)
class CronFields:
    """Parsed expression: sets of allowed values (day of week 0-6, Sunday = 0) and star flags."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    days_star: bool
    weekdays_star: bool
    text: str
    seconds: frozenset[int] | None = None  # a six-field expression's; None: five fields, second 0

    def canonical(self) -> str:
        """The expression as plain sorted lists ('*' kept for unrestricted day fields), for croniter, which
        reads a sixth field as the seconds (last)."""
        def join(values: frozenset[int], star: bool = False) -> str:
            return "*" if star else ",".join(str(v) for v in sorted(values))

        fields = [join(self.minutes), join(self.hours), join(self.days, self.days_star), join(self.months),
                  join(self.weekdays, self.weekdays_star)]
        if self.seconds is not None:
            fields.append(join(self.seconds))
        return " ".join(fields)


def _value(token: str, rule: FieldRule) -> int:
    """One number or name, range-checked."""
    if token.isdigit():
        number = int(token)
    elif token in rule.names:
        number = rule.names.index(token) + rule.name_base
    else:
        what = "numbers" if not rule.names else "names like MON" if rule.names is DAYS else "names like JAN"
        raise TimingError("cron", f"{rule.name} field: cannot read {token!r} (expected {what})")
    if not rule.low <= number <= rule.high:
        raise TimingError("cron", f"{rule.name} field value {number} out of range {rule.low}-{rule.high}")
    return number


def _item(item: str, rule: FieldRule) -> set[int]:
    """One comma-separated item of a field: '*', value, range, each with an optional step."""
    if _EXTENSION.search(item):
        raise TimingError("cron", f"{rule.name} field: {item!r} uses an unsupported extension (L, W, # or H)")
    match = _ITEM.match(item)
    if match is None:
        raise TimingError("cron", f"{rule.name} field: cannot read {item!r}")
    base, step_text = match.group("base"), match.group("step")
    step = 1
    if step_text is not None:
        if not step_text.isdigit():
            raise TimingError("cron", f"{rule.name} field: step {step_text!r} in {item!r} is not a number")
        step = int(step_text)
        if step < 1:
            raise TimingError("cron", f"{rule.name} field: step {step} in {item!r} must be at least 1")
    if base in ("*", "?"):
        if base == "?" and rule.name not in ("day-of-month", "day-of-week"):
            raise TimingError("cron", f"{rule.name} field: '?' is only allowed in the day fields")
        low, high = rule.low, 6 if rule.high == 7 else rule.high
    elif "-" in base:
        first, last = base.split("-")
        low, high = _value(first, rule), _value(last, rule)
        if rule.names is DAYS and last == "sun" and low > 0:
            high = 7  # "MON-SUN" means Monday through Sunday
        if low > high:
            raise TimingError("cron", f"{rule.name} field: range {base!r} goes backwards ({low} > {high})")
    else:
        low = _value(base, rule)
        high = (6 if rule.high == 7 else rule.high) if step_text is not None else low
    return set(range(low, high + 1, step))


def _field(text: str, rule: FieldRule) -> frozenset[int]:
    """A whole field: comma-separated items."""
    if text == "" or text.startswith(",") or text.endswith(",") or ",," in text:
        raise TimingError("cron", f"{rule.name} field: empty list item in {text!r}")
    values: set[int] = set()
    for item in text.split(","):
        values |= _item(item, rule)
    if rule.high == 7:
        values = {v % 7 for v in values}
    return frozenset(values)


def _check_days_possible(days: frozenset[int], months: frozenset[int], days_star: bool, weekdays_star: bool,
                         day_or: bool) -> None:
    """Reject day-of-month/month combinations that never occur (e.g. 30 February)."""
    if days_star or (day_or and not weekdays_star):
        return
    if not any(day <= MONTH_LENGTHS[month - 1] for day in days for month in months):
        listed = ", ".join(MONTH_NAMES[m - 1] for m in sorted(months))
        raise TimingError("cron", f"day-of-month {','.join(map(str, sorted(days)))} never occurs in {listed}")


def parse_cron(expression: str, day_or: bool = True) -> CronFields:
    """Parse and validate a cron expression (5 fields, 6 with the second first, or a macro)."""
    if not isinstance(expression, str):
        raise TimingError("cron", f"expected a cron expression string, got {type(expression).__name__}")
    text = " ".join(expression.split()).lower()
    if text.startswith("@"):
        if text == "@reboot":
            raise TimingError("cron", "@reboot is not supported: a schedule needs clock times")
        if text not in MACROS:
            raise TimingError("cron", f"unknown macro {expression.strip()!r} (use {', '.join(MACROS)})")
        text = MACROS[text]
    parts = text.split(" ") if text else []
    if len(parts) == 7:
        raise TimingError("cron", "got 7 fields, but a year field is not supported; use 5 fields (minute hour "
                                  "day-of-month month day-of-week) or 6 with the second first")
    if len(parts) not in (5, 6):
        raise TimingError("cron", f"expected 5 fields (minute hour day-of-month month day-of-week) or 6 (second "
                                  f"first), got {len(parts)}")
    seconds = _field(parts.pop(0), SECOND) if len(parts) == 6 else None
    sets = [_field(part, rule) for part, rule in zip(parts, FIELDS, strict=True)]
    minutes, hours, days, months, weekdays = sets
    days_star, weekdays_star = parts[2] in ("*", "?"), parts[4] in ("*", "?")
    _check_days_possible(days, months, days_star, weekdays_star, day_or)
    return CronFields(minutes, hours, days, months, weekdays, days_star, weekdays_star, text, seconds)
