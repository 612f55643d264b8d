"""IN lists of any length: a database refuses, or plans badly, an IN list of a hundred thousand values, so a
read of many rows by id, key or name goes IN_BATCH values at a time."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")
IN_BATCH = 500  # values in one IN list


def in_batches(values: Sequence[T]) -> Iterator[Sequence[T]]:
    """`values` IN_BATCH at a time, in their order."""
    for start in range(0, len(values), IN_BATCH):
        yield values[start:start + IN_BATCH]
