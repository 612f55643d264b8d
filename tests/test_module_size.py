"""The house stays readable: no module of the server grows past 400 lines (split it by concept instead)."""

from __future__ import annotations

from pathlib import Path

LIMIT = 400
ROOT = Path(__file__).resolve().parent.parent


def test_no_module_in_app_is_over_400_lines() -> None:
    sizes = {str(path.relative_to(ROOT)): len(path.read_text().splitlines())
             for path in (ROOT / "recur_server").rglob("*.py")
             if "migrations" not in path.parts}
    assert sizes, "no module found under recur_server/"
    assert {path: lines for path, lines in sizes.items() if lines > LIMIT} == {}
