"""How a figure is printed in the bench's tables."""

from __future__ import annotations

import math
from typing import Any


def fmt(value: Any) -> str:
    """A figure as the tables print it: thousands separated, two decimals below 100, '-' for none."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)[:60]
