"""The single error type of the timing package: bad input, naming the field at fault."""
from __future__ import annotations


class TimingError(ValueError):
    """Invalid timing input; `field` names the input field, `message` says why in plain words."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
