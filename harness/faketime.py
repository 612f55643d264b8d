"""A process whose wall clock is off, as on a host whose clock drifted: libfaketime's shared library, from the
test extra's `libfaketime` package, preloaded with a shift."""

from __future__ import annotations

from pathlib import Path

import pytest


def faketime_env(shift: str) -> dict[str, str]:
    """What a process needs in its environment for its wall clock (only) to be off by `shift`."""
    try:
        import libfaketime

        library = Path(libfaketime.get_reload_information()[1]["LD_LIBRARY_PATH"]) / "libfaketime.so.1"
    except (ImportError, RuntimeError, KeyError) as exc:
        pytest.skip(f"libfaketime's shared library cannot be found ({exc!r}); pip install -e '.[test]'")
    if not library.is_file():
        pytest.skip(f"libfaketime's shared library is not where its package says: {library}")
    return {
        "LD_PRELOAD": str(library),
        "FAKETIME": shift,
        # Only the wall clock is off, as on a real host (and Event.wait(timeout) keeps working).
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_NO_CACHE": "1",
    }
