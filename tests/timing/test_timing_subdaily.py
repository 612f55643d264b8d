"""HOURLY, MINUTELY and SECONDLY rules found a day at a time (recur_server.timing.subdaily) give exactly dateutil's
occurrences, and sparse ones cost a bounded number of steps: dateutil itself is the oracle, on rules dense
enough for it to walk quickly, with date filters, time filters (which filter at the frequency's level and
expand below it), INTERVALs that do not divide a day, COUNT and UNTIL."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from itertools import islice

import pytest
from dateutil.rrule import rrulestr
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from recur_server.timing import TimingError, build_spec, preview, work
from recur_server.timing.subdaily import SubDaily

STOP = datetime(3000, 1, 2)
ORACLE_SECONDS = 2.0


@st.composite
def rules(draw: st.DrawFn) -> str:
    freq = draw(st.sampled_from(["HOURLY", "MINUTELY", "SECONDLY"]))
    parts = [f"FREQ={freq}", f"INTERVAL={draw(st.sampled_from([1, 2, 5, 7, 13, 25, 90]))}"]
    if draw(st.booleans()):
        parts.append("BYDAY=" + ",".join(draw(st.lists(st.sampled_from(["MO", "TU", "WE", "TH", "FR", "SA", "SU"]),
                                                       min_size=1, max_size=3, unique=True))))
    if draw(st.booleans()):
        parts.append("BYMONTHDAY=" + ",".join(map(str, draw(st.lists(st.sampled_from([1, 2, 15, 28, -1]),
                                                                     min_size=1, max_size=3, unique=True)))))
    for name, values in (("BYHOUR", range(24)), ("BYMINUTE", range(60)), ("BYSECOND", range(60))):
        if draw(st.booleans()):
            chosen = draw(st.lists(st.sampled_from(list(values)), min_size=1, max_size=4, unique=True))
            parts.append(f"{name}=" + ",".join(map(str, chosen)))
    ending = draw(st.sampled_from(["", "COUNT", "UNTIL"]))
    if ending == "COUNT":
        parts.append(f"COUNT={draw(st.integers(1, 40))}")
    elif ending == "UNTIL":
        parts.append("UNTIL=20260320T120000")
    return ";".join(parts)


@settings(max_examples=200, deadline=None)
@given(rule=rules(), start_offset=st.integers(0, 40 * 86400), query_offset=st.integers(-3600, 30 * 86400))
def test_the_same_occurrences_as_dateutil(rule: str, start_offset: int, query_offset: int) -> None:
    start = datetime(2026, 3, 1, 0, 0, 0) + timedelta(seconds=start_offset)
    query = start + timedelta(seconds=query_offset)
    try:
        oracle = rrulestr(rule, dtstart=start)
        with _oracle_time(ORACLE_SECONDS):
            expected = list(islice(oracle.xafter(query, inc=False), 8))
    except ValueError:
        return  # dateutil refuses it (an INTERVAL its BYHOUR can never meet): so do the checks before this
    except _SlowOracle:
        reject()
    ours = SubDaily(oracle, STOP)
    got: list[datetime] = []
    cursor: datetime | None = query
    while cursor is not None and len(got) < len(expected) + 1:
        cursor = ours.next_after(cursor)
        if cursor is not None:
            got.append(cursor)
    assert got[:len(expected)] == expected, (rule, start, query)
    if len(expected) < 8:  # dateutil ran out (COUNT, UNTIL): so must we
        assert got == expected


class _SlowOracle(Exception):
    pass


@contextmanager
def _oracle_time(seconds: float) -> Iterator[None]:
    """Gives dateutil `seconds`: a rule whose filters never meet (Wednesday the 28th at 00:00 on a 7-minute
    grid) it walks period by period to the year 9999, 37 s on this machine (an UNTIL does not stop it: it
    checks UNTIL only against occurrences), where ours answers in 0.5 s. Such an example is rejected: the
    oracle has no answer to compare with."""

    def interrupt(signum: int, frame: object) -> None:
        raise _SlowOracle

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _leap(year: int, *hms: int) -> datetime:
    return datetime(year, 2, 29, *hms, tzinfo=UTC)


def _minutely_every_7_on_new_years_eve() -> list[datetime]:
    """MINUTELY;INTERVAL=7 from 2027-01-01T00:00:01 at 23:xx on 31 December: periods every 7 minutes from
    00:00, each at second 1 (DTSTART's); brute force over that one day."""
    start = datetime(2027, 1, 1)
    eve = datetime(2027, 12, 31, 23)
    minutes = [eve + timedelta(minutes=m) for m in range(60)]
    return [m.replace(second=1, tzinfo=UTC) for m in minutes if (m - start) // timedelta(minutes=1) % 7 == 0][:3]


SPARSE = [
    ("FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=23;BYMINUTE=59;BYSECOND=59",
     [_leap(2028, 23, 59, 59), _leap(2032, 23, 59, 59), _leap(2036, 23, 59, 59)]),
    ("FREQ=SECONDLY;BYMONTH=12;BYMONTHDAY=31;BYHOUR=23;BYMINUTE=59",
     [datetime(2027, 12, 31, 23, 59, s, tzinfo=UTC) for s in range(3)]),
    ("FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=0;BYMINUTE=1",
     [_leap(2028, 0, 1, 1), _leap(2032, 0, 1, 1), _leap(2036, 0, 1, 1)]),
    ("FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO;BYHOUR=12",  # a Monday leap day: 2044 next
     [_leap(2044, 12, 0, s) for s in range(3)]),
    ("FREQ=SECONDLY;BYYEARDAY=366;BYHOUR=23;BYMINUTE=59;BYSECOND=58",
     [datetime(y, 12, 31, 23, 59, 58, tzinfo=UTC) for y in (2028, 2032, 2036)]),
    ("FREQ=MINUTELY;INTERVAL=7;BYMONTH=12;BYMONTHDAY=31;BYHOUR=23", _minutely_every_7_on_new_years_eve()),
]


@pytest.mark.parametrize(("rule", "expected"), SPARSE)
def test_sparse_rules_are_found_within_a_request_budget(rule: str, expected: list[datetime]) -> None:
    """Each within the steps one request may take (dateutil took seconds to minutes for each of these)."""
    anchor = datetime(2027, 1, 1, 0, 0, 1, tzinfo=UTC)
    with work.budget():
        spec = build_spec({"rrule": rule, "anchor_at": anchor})
        assert preview(spec, anchor, 3) == expected


def test_a_rule_too_sparse_for_the_budget_is_a_timing_error_naming_rrule() -> None:
    """A budget smaller than the days to the next run: refused (a 422 in a request), never cut short."""
    rule = "FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=23;BYMINUTE=59;BYSECOND=59"
    anchor = datetime(2028, 3, 1, tzinfo=UTC)
    with work.budget(200), pytest.raises(TimingError) as raised:
        build_spec({"rrule": rule, "anchor_at": anchor}).next_after(anchor)
    assert raised.value.field == "rrule"
    assert build_spec({"rrule": rule, "anchor_at": anchor}).next_after(anchor) == datetime(2032, 2, 29, 23, 59, 59,
                                                                                            tzinfo=UTC)
