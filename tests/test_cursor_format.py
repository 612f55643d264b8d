"""A cursor's pattern, published in the API's document, is exactly what the API reads: every string it
matches is a cursor (the fuzzer's made-up cursors are taken, not refused), every cursor written matches it,
and nothing else is read but the earlier format's tokens."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recur_server.infra import cursors

SHAPES = [(datetime, str), (datetime, int), (int,), (str,)]


@pytest.mark.parametrize("shape", SHAPES)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_every_string_the_pattern_matches_is_read(shape: cursors.Shape, data: st.DataObject) -> None:
    token = data.draw(st.from_regex(cursors.pattern(shape), fullmatch=True))
    key = cursors.decode(token, shape)
    assert cursors.encode(*key) == token


@settings(max_examples=300, deadline=None)
@given(at=st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2999, 12, 31, 23, 59, 59, 999999),
                       timezones=st.just(UTC)),
       number=st.integers(0, 2**31 - 1), text=st.from_regex(r"[0-9A-Za-z_-]{1,36}", fullmatch=True))
def test_every_cursor_written_matches_and_reads_back(at: datetime, number: int, text: str) -> None:
    for key, shape in (((at, text), (datetime, str)), ((at, number), (datetime, int)), ((number,), (int,))):
        token = cursors.encode(*key)
        assert re.fullmatch(cursors.pattern(shape), token)
        assert cursors.decode(token, shape) == key


@pytest.mark.parametrize("token", ["", "0", "32503680000000000.x", "1.2147483648", "01.5", "1.a.b", "a" * 201,
                                   "1.abc def", "-1.5"])
def test_anything_else_is_not_a_cursor(token: str) -> None:
    with pytest.raises(ValueError):
        cursors.decode(token, (datetime, int))


def test_a_token_of_the_earlier_format_is_still_read() -> None:
    earlier = "WyIyMDI2LTExLTI4VDE1OjA1OjMyLjIyODU2OCswMDowMCIsN10"  # ["2026-11-28T15:05:32.228568+00:00",7]
    assert cursors.decode(earlier, (datetime, int)) == (datetime(2026, 11, 28, 15, 5, 32, 228568, tzinfo=UTC), 7)
