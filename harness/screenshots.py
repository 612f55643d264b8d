"""Screenshots of the console's pages from the browser tests: to docs/screenshots/ for review on the SQLite
pass; the PostgreSQL pass, which runs at the same time, keeps its own in a temporary directory."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from harness.servers import ROOT

SHOTS = ROOT / "docs" / "screenshots"


def save_screenshot(page: Any, name: str) -> None:
    """The whole of `page` as `name`.png."""
    on_postgres = bool(os.environ.get("RECUR_TEST_POSTGRES"))
    shots = Path(tempfile.gettempdir()) / "recur-screenshots-postgres" if on_postgres else SHOTS
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
