"""Loading the task modules named in RECUR_TASK_MODULES: they register tasks and declare schedules on import.

An entry is a module's dotted name (`reports.tasks`), or `name=path`: the package (or module file) at
`path` loaded under `name`. The second form is for a team whose own package is called `app`, as Recur's
is: one process cannot hold two top-level packages of one name, so theirs is loaded under another name
(`myapp=/srv/reports/app`), and its modules reach one another by relative imports (`from .db import x`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from recur_server.tasks import declarations as declared


def load_task_modules(modules: Iterable[str]) -> None:
    """Import the built-ins and the user modules, then register the plain functions their declarations name."""
    importlib.import_module("recur_server.tasks.builtin")
    for entry in modules:
        name, sep, path = entry.partition("=")
        if sep:
            load_under(name.strip(), Path(path.strip()))
        else:
            importlib.import_module(entry)
    declared.settle()


def load_under(name: str, path: Path) -> ModuleType:
    """Import the package directory (or .py file) at `path` as module `name`, once per process."""
    if name in sys.modules:
        return sys.modules[name]
    path = path.expanduser().resolve()
    if path.is_dir():
        spec = importlib.util.spec_from_file_location(name, path / "__init__.py",
                                                      submodule_search_locations=[str(path)])
    else:
        spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not (path.is_dir() or path.is_file()):
        raise ImportError(f"RECUR_TASK_MODULES: {name}={path}: no package or module there")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
