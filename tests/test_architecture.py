"""The layout holds: every module of recur_server/ is in a layer of the import contract, docs/architecture.md draws
the same layers, no source file outgrows 400 lines (migrations aside), and gunicorn's master imports nothing of
the server."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 400


def _layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    return [name.strip() for layer in contract["layers"] for name in re.split(r"[|:]", layer)]


def _modules() -> list[str]:
    names = []
    for path in sorted((ROOT / "recur_server").rglob("*.py")):
        if "migrations" in path.parts:  # scripts Alembic loads by path, not modules
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


def _outside(modules: list[str], layers: list[str]) -> list[str]:
    return [m for m in modules if m != "recur_server" and not any(m == n or m.startswith(n + ".") for n in layers)]


def test_every_module_of_the_server_is_in_a_layer():
    outside = _outside(_modules(), _layers())
    assert outside == [], f"in no layer of [tool.importlinter] (add it to one): {outside}"


def test_a_module_beside_the_layers_is_found():
    assert _outside(["recur_server.services.schedules", "recur_server.loose", "recur_server.chainsaw"], _layers()) == [
        "recur_server.loose", "recur_server.chainsaw"]


def test_docs_architecture_draws_every_layer_of_the_contract():
    page = (ROOT / "docs" / "architecture.md").read_text()
    for name in _layers():
        path = name.replace(".", "/")
        assert f"{path}/" in page or f"{path}.py" in page, f"docs/architecture.md does not draw {name}"


def test_no_source_file_is_over_400_lines():
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    files = [f for f in tracked.stdout.split() if not f.startswith("migrations/")]
    long = {f: n for f in files if (ROOT / f).exists() and (n := len((ROOT / f).read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"over {MAX_LINES} lines (split by concept): {long}"


def test_gunicorns_master_imports_nothing_of_the_server():
    """gunicorn's master reads Recur's settings (recur_server.processes.gunicorn_conf) and its worker class
    (recur_server.serving), then only forks and watches web processes, which import the app themselves. A master
    that imported the server too took 1.3 s of CPU to start, once more for every stack a test starts."""
    heavy = ["flask", "sqlalchemy", "redis", "recur_server.factory", "recur_server.api", "recur_server.notify.watch"]
    code = ("import sys, recur_server.processes.gunicorn_conf, recur_server.serving; "
            f"print(' '.join(m for m in {heavy!r} if m in sys.modules))")
    imported = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert imported.stdout.split() == []
