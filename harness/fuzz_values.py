"""What the API fuzz draws (hypothesis strategies): targeted values (huge and negative integers, floats,
NUL bytes, lone surrogates, deep nesting, far dates with offsets), plausible and valid values for each field of
a schedule, and create and PATCH bodies built from them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

HUGE_INTS = [2**31 - 1, 2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 10**12, 10**30, -1, -(2**31) - 1,
             -(2**63) - 1, 0]
NASTY_STRINGS = [
    "", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "\ud83d", "\U0001f600", "é", "\u202e", "null", "0", "-1",
    "1e309", "NaN", "%00", "../../etc", "a" * 300, "a" * 70_000, "\n", "'; DROP TABLE x;--", "FREQ=DAILY\x00",
    "0 \x00 * * *", "UTC\x00", "Europe/Berlin", "08:00-18:00", "  08:00  -   18:00         ", "sat",
]
FAR_DATES = [
    "0001-01-01T00:00+01:00", "0001-01-01T00:00:00Z", "0001-01-01T00:00-01:00", "9999-12-31T23:00-14:00",
    "9999-12-31T23:59:59Z", "9999-12-31T23:59:59+14:00", "1969-12-31T23:59:59Z", "1970-01-01T00:00:00Z",
    "2033-01-01T00:00:00Z", "2999-12-31T23:59:59Z", "3000-01-01T00:00:00Z", "2100-02-29T00:00:00Z",
    "2026-13-01T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01", "2026-01-01T00:00:00", "now", "",
]
offsets = st.builds(lambda minutes: timezone(timedelta(minutes=minutes)), st.integers(-1439, 1439))
dates = st.one_of(
    st.sampled_from(FAR_DATES),
    st.builds(lambda d: d.isoformat(), st.datetimes(timezones=offsets)),
    st.builds(lambda d: d.isoformat(), st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2200, 1, 1),
                                                    timezones=st.just(UTC))),
)
ints = st.one_of(st.sampled_from(HUGE_INTS), st.integers(), st.integers(-5, 100))
floats = st.one_of(st.floats(), st.sampled_from([1.5, 1e308, -0.0, 60.0]))
texts = st.one_of(st.sampled_from(NASTY_STRINGS), st.text(max_size=30),
                  st.text(st.characters(codec=None, categories=["Cs", "Cc", "Lo", "So"]), max_size=10))
scalars = st.one_of(st.none(), st.booleans(), ints, floats, texts, dates)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"a": value}
    return value


deep = st.builds(nested, st.sampled_from([30, 64, 65, 200, 900]))

# Plausible values for each known field, so bodies get past the first check and reach the deeper layers.
TIMING = {
    "interval_seconds": st.one_of(ints, st.sampled_from([1, 60, 86400, 7 * 86400, 316_224_000, 316_224_001])),
    "every": st.one_of(texts, st.sampled_from(["5m", "daily", "99999999999999999999w", "0s", "1d", "10000000000s"])),
    "cron": st.one_of(texts, st.sampled_from(["* * * * *", "0 9 * * MON-FRI", "0 0 29 2 1", "@yearly", "0 3 * * *",
                                              "0 0 31 2 *"])),
    "rrule": st.one_of(texts, st.sampled_from([
        "FREQ=DAILY", "FREQ=YEARLY;INTERVAL=6", "FREQ=MONTHLY;BYDAY=MO;BYSETPOS=-1", "FREQ=DAILY;COUNT=3",
        "FREQ=DAILY;UNTIL=20200101T000000Z", "FREQ=DAILY;UNTIL=99991231T235959Z", "FREQ=SECONDLY;INTERVAL=1",
        "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", "FREQ=DAILY;INTERVAL=7;BYDAY=MO",
        "FREQ=YEARLY;INTERVAL=100000", "FREQ=MINUTELY;INTERVAL=999999999999",
    ])),
    "at": dates,
    "after_seconds": st.one_of(ints, st.sampled_from([1, 3600, 10**12, 316_224_000])),
}
CONSTRAINTS = {
    "anchor_date": st.one_of(st.none(), dates),
    "start_at": st.one_of(st.none(), dates),
    "end_at": st.one_of(st.none(), dates),
    "timezone": st.one_of(texts, st.sampled_from(["UTC", "Europe/Berlin", "Pacific/Kiritimati", "Etc/GMT+12"])),
    "only_between": st.one_of(st.none(), texts, st.sampled_from(["08:00-18:00", "22:00-06:00", "03:00-03:01"])),
    "not_on": st.one_of(st.none(), st.lists(st.one_of(texts, ints), max_size=8),
                        st.sampled_from([["sat", "sun"], [0, 1, 2, 3, 4, 5]])),
    "jitter_seconds": st.one_of(ints, st.sampled_from([0, 30, 604800, 604801])),
    "day_or": st.one_of(st.booleans(), texts, ints),
}
PLAIN = {
    "name": st.one_of(texts, st.just("ok")),
    "description": st.one_of(st.none(), texts),
    "trigger_node_id": st.one_of(st.none(), texts),
    "total_repeats": ints,
    "max_retries": ints,
    "timeout_seconds": st.one_of(ints, st.sampled_from([1, 604800, 604801, 2**31])),
    "trigger_payload": st.one_of(json_values, deep, st.builds(lambda n: {"blob": "x" * n},
                                                             st.sampled_from([10, 70_000, 1_100_000]))),
}
FIELDS = {**TIMING, **CONSTRAINTS, **PLAIN}


# Values each field accepts, so that a body with one bad value reaches the layer that value tests.
future = st.datetimes(min_value=datetime(2027, 1, 1), max_value=datetime(2400, 1, 1), timezones=st.just(UTC))
VALID = {
    "interval_seconds": st.one_of(st.integers(1, 10**6), st.sampled_from([86400, 7 * 86400, 316_224_000])),
    "every": st.sampled_from(["30s", "5m", "2h", "1d", "1w", "daily", "hourly"]),
    "cron": st.sampled_from(["* * * * *", "0 9 * * MON-FRI", "0 0 29 2 1", "@yearly", "*/5 8-18 * * *"]),
    "rrule": st.sampled_from(["FREQ=DAILY", "FREQ=YEARLY;INTERVAL=6", "FREQ=MONTHLY;BYDAY=MO;BYSETPOS=-1",
                              "FREQ=DAILY;COUNT=3", "FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=9", "FREQ=HOURLY;INTERVAL=7"]),
    "at": st.builds(lambda d: d.isoformat(), future),
    "after_seconds": st.integers(1, 10**7),
    "anchor_date": st.builds(lambda d: d.isoformat(), st.datetimes(datetime(1990, 1, 1), datetime(2300, 1, 1),
                                                                  timezones=offsets)),
    "start_at": st.one_of(st.none(), st.builds(lambda d: d.isoformat(), future)),
    "end_at": st.one_of(st.none(), st.builds(lambda d: d.isoformat(), future)),
    "timezone": st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Pacific/Kiritimati", "Asia/Kolkata"]),
    "only_between": st.one_of(st.none(), st.sampled_from(["08:00-18:00", "22:00-06:00", "00:00-23:59"])),
    "not_on": st.one_of(st.none(), st.sampled_from([["sat", "sun"], [0], ["Monday", 7]])),
    "jitter_seconds": st.integers(0, 604800),
    "day_or": st.booleans(),
    "name": st.text(min_size=1, max_size=20),
    "description": st.one_of(st.none(), st.text(max_size=50)),
    "trigger_node_id": st.one_of(st.none(), st.text(max_size=20)),
    "total_repeats": st.integers(0, 100),
    "max_retries": st.integers(0, 10),
    "timeout_seconds": st.integers(1, 3600),
    "trigger_payload": st.recursive(st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=10),
                                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                                        st.text(max_size=5), inner, max_size=3), max_leaves=6),
}
valid_field = st.sampled_from(sorted(set(VALID) - set(TIMING))).flatmap(
    lambda name: st.tuples(st.just(name), VALID[name]))
nasty_field = st.sampled_from(sorted(FIELDS)).flatmap(
    lambda name: st.tuples(st.just(name), FIELDS[name]))


@st.composite
def schedule_bodies(draw: st.DrawFn, workflow_id: int) -> Any:
    """A valid create body, mostly with one bad value in it; now and then two, or something else entirely."""
    shape = draw(st.integers(0, 19))
    if shape == 0:
        return draw(json_values)
    if shape == 1:
        return draw(deep)
    kind = draw(st.sampled_from(sorted(TIMING)))
    body: dict[str, Any] = {"name": "fz", "workflow_id": workflow_id, kind: draw(VALID[kind])}
    body.update(draw(st.lists(valid_field, max_size=3)))
    body.update(draw(st.lists(nasty_field, max_size=2)))
    if draw(st.integers(0, 9)) == 0:
        body["workflow_id"] = draw(st.one_of(ints, texts, st.none()))
    if draw(st.integers(0, 9)) == 0:
        body[draw(texts)] = draw(json_values)
    if draw(st.integers(0, 9)) == 0:
        body.pop(draw(st.sampled_from(sorted(body))))
    return body


@st.composite
def patch_bodies(draw: st.DrawFn) -> Any:
    """One to four fields, valid ones and bad ones; now and then not an object at all."""
    if draw(st.integers(0, 19)) == 0:
        return draw(st.one_of(json_values, deep))
    fields = draw(st.lists(st.one_of(valid_field, nasty_field, st.sampled_from(sorted(TIMING)).flatmap(
        lambda name: st.tuples(st.just(name), VALID[name]))), min_size=1, max_size=4))
    return dict(fields)
