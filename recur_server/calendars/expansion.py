"""What a calendar's fields expand to: a country's (and subdivision's) public holidays of a span of years,
plus dates listed by hand, minus dates removed by hand, as {ISO date: name}. Bounded, so no request buys
unbounded work: at most MAX_YEARS years, MAX_ENTRIES entries per list, MAX_RANGE_DAYS days per range and
MAX_DAYS days in all."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

MAX_YEARS = 20  # years of a country's holidays one calendar expands
MAX_ENTRIES = 500  # dates or ranges listed by hand, in `dates` and in `removed` each
MAX_RANGE_DAYS = 366  # days one range "YYYY-MM-DD/YYYY-MM-DD" spans, both ends included
MAX_DAYS = 5_000  # days a calendar holds in all
FIRST_YEAR, LAST_YEAR = 1970, 2999  # the timing math's range (recur_server.timing.EARLIEST, LATEST)
BY_HAND = "listed by hand"


class CalendarInvalid(Exception):
    """A field's value cannot be expanded: carries {field: [messages]} (a 422)."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(errors)
        self.errors = errors


@dataclass(frozen=True)
class Source:
    """The fields a calendar's days come from."""

    country: str | None
    subdivision: str | None
    first_year: int
    last_year: int
    dates: list[str]
    removed: list[str]


def entry_span(text: str) -> tuple[date, date]:
    """One entry: "YYYY-MM-DD", or "YYYY-MM-DD/YYYY-MM-DD" (both ends included); ValueError saying why not."""
    if not isinstance(text, str):
        raise ValueError(f"expected a date as text (YYYY-MM-DD or YYYY-MM-DD/YYYY-MM-DD), got {text!r}")
    first_text, _, last_text = text.partition("/")
    try:
        first = date.fromisoformat(first_text.strip())
        last = date.fromisoformat(last_text.strip()) if last_text else first
    except ValueError:
        raise ValueError(f"{text!r} is not YYYY-MM-DD or YYYY-MM-DD/YYYY-MM-DD") from None
    if len(first_text.strip()) != 10 or (last_text and len(last_text.strip()) != 10):
        raise ValueError(f"{text!r} is not YYYY-MM-DD or YYYY-MM-DD/YYYY-MM-DD")
    if last < first:
        raise ValueError(f"{text!r} ends before it starts")
    if (last - first).days + 1 > MAX_RANGE_DAYS:
        raise ValueError(f"{text!r} spans more than {MAX_RANGE_DAYS} days")
    if not (first.year >= FIRST_YEAR and last.year <= LAST_YEAR):
        raise ValueError(f"{text!r} lies outside the years {FIRST_YEAR} to {LAST_YEAR}")
    return first, last


def _days_of(entries: Iterable[str], field: str) -> list[date]:
    """Every date the entries name; CalendarInvalid naming `field` and the entry's index for a bad one."""
    out: list[date] = []
    for index, entry in enumerate(entries):
        try:
            first, last = entry_span(entry)
        except ValueError as exc:
            raise CalendarInvalid({field: [f"[{index}]: {exc}"]}) from None
        out.extend(first + timedelta(days=n) for n in range((last - first).days + 1))
        if len(out) > MAX_DAYS:
            raise CalendarInvalid({field: [f"names more than {MAX_DAYS} days"]})
    return out


def country_holidays(country: str, subdivision: str | None, first_year: int, last_year: int) -> dict[date, str]:
    """The public holidays of a country (and subdivision) in [first_year, last_year]; CalendarInvalid naming
    `country` or `subdivision` when the holidays package has none."""
    import holidays  # here, not at import: it takes a fifth of a second, and only an edit with a country needs it

    supported: dict[str, Any] = holidays.list_supported_countries()
    if country not in supported:
        raise CalendarInvalid({"country": [f"no holidays are known for country {country!r} (an ISO 3166 code "
                                           "such as US, DE or GB)"]})
    if subdivision is not None and subdivision not in supported[country]:
        known = ", ".join(supported[country][:40]) or "none"
        raise CalendarInvalid({"subdivision": [f"{country} has no subdivision {subdivision!r} (known: {known})"]})
    try:
        found = holidays.country_holidays(country, subdiv=subdivision, years=range(first_year, last_year + 1))
    except (NotImplementedError, ValueError) as exc:
        raise CalendarInvalid({"country": [str(exc)]}) from None
    return {day: str(name) for day, name in found.items()}


def expand(source: Source) -> dict[str, str]:
    """{ISO date: name}, sorted: the country's holidays, plus `dates`, minus `removed`."""
    if source.last_year < source.first_year:
        raise CalendarInvalid({"last_year": ["must not be before first_year"]})
    if source.last_year - source.first_year + 1 > MAX_YEARS:
        raise CalendarInvalid({"last_year": [f"a calendar expands at most {MAX_YEARS} years of holidays"]})
    if source.subdivision is not None and source.country is None:
        raise CalendarInvalid({"subdivision": ["give the country too"]})
    for field, entries in (("dates", source.dates), ("removed", source.removed)):
        if len(entries) > MAX_ENTRIES:
            raise CalendarInvalid({field: [f"at most {MAX_ENTRIES} entries"]})
    days: dict[date, str] = {}
    if source.country is not None:
        days.update(country_holidays(source.country, source.subdivision, source.first_year, source.last_year))
    for day in _days_of(source.dates, "dates"):
        days.setdefault(day, BY_HAND)
    for day in _days_of(source.removed, "removed"):
        days.pop(day, None)
    if len(days) > MAX_DAYS:
        raise CalendarInvalid({"dates": [f"the calendar would hold {len(days)} days; at most {MAX_DAYS}"]})
    return {day.isoformat(): days[day] for day in sorted(days)}
