"""The README stays a front door, and the docs keep up with the code: every setting is documented, and every
page the README links to exists (`mkdocs build --strict`, in scripts/test, checks the links inside docs/)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from recur_server.infra.config import Settings

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_is_at_most_12_kb() -> None:
    assert len((ROOT / "README.md").read_bytes()) <= 12 * 1024


def test_every_setting_is_in_the_configuration_page() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    missing = [f.name for f in dataclasses.fields(Settings) if f"`{f.name}`" not in page]
    assert missing == []


def test_every_page_the_readme_links_to_exists() -> None:
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    assert links
    assert [link for link in links if not (ROOT / link).is_file()] == []


def test_every_docs_page_is_in_the_sites_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert [page for page in pages if f": {page}" not in nav] == []
