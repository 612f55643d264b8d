"""What importers share: mapping a job's function or command to a registered task, and the result as YAML."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import yaml


@dataclass
class Imported:
    """Schedules to apply (keyed), and each job that could not be mapped with the reason."""

    schedules: list[dict[str, Any]] = field(default_factory=list)
    unmapped: list[tuple[str, str]] = field(default_factory=list)  # (the job, why)

    def document(self) -> dict[str, Any]:
        """The apply file: a workflow named for each task the schedules use, and the schedules."""
        return {"workflows": [{"name": task, "task": task} for task in sorted({s["workflow"] for s in self.schedules})],
                "schedules": self.schedules}

    def as_yaml(self, source: str) -> str:
        lines = [comment(f"Imported from {source} by `recur import`; apply with `recur apply FILE`.")]
        if self.unmapped:
            lines.append(f"# Not imported ({len(self.unmapped)}):")
            lines += [comment(f"  {job}: {why}") for job, why in self.unmapped]
        document = self.document()
        body: str = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
        if yaml.safe_load(body) != document:  # PyYAML writes NEL, U+2028 and U+2029 raw, and reads them as breaks
            body = yaml.safe_dump(document, sort_keys=False, allow_unicode=False)  # every non-ASCII escaped
        return "\n".join(lines) + "\n" + body


def one_line(text: str) -> str:
    """`text` with every character that is not printable (line breaks of any kind: \\n, \\r, \\v, \\f, NEL,
    U+2028, U+2029; other controls) written as its Python escape: what an importer copies from a job into a
    comment or a docstring of what it prints can then never end that line and start code."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def comment(text: str) -> str:
    """A `#` comment line holding `text` (one_line: it cannot become code, in Python or in YAML)."""
    return "# " + one_line(text)


class TaskMap:
    """Finds the registered task for a job: an explicit --map first, then a task whose name or whose
    function's import path is the job's function (or, for a command, its program)."""

    def __init__(self, tasks: list[dict[str, str]], explicit: dict[str, str]) -> None:
        self.names = {t["name"] for t in tasks}
        self.by_path = {t["path"]: t["name"] for t in tasks}
        self.explicit = explicit
        unknown = sorted(set(explicit.values()) - self.names)
        if unknown:
            raise ValueError(f"--map names tasks the server does not have: {unknown}; it has {sorted(self.names)}")

    def task_for(self, *candidates: str) -> str | None:
        for candidate in candidates:
            if candidate in self.explicit:
                return self.explicit[candidate]
        for candidate in candidates:
            if candidate in self.names:
                return candidate
            if candidate in self.by_path:
                return self.by_path[candidate]
        return None


def parse_maps(pairs: tuple[str, ...]) -> dict[str, str]:
    """`--map FROM=TASK` options as a dict."""
    out = {}
    for pair in pairs:
        source, sep, task = pair.partition("=")
        if not sep or not source or not task:
            raise ValueError(f"--map {pair!r}: give FROM=TASK")
        out[source.strip()] = task.strip()
    return out


_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/@+-]+")


def key_for(prefix: str, text: str, unique: str | None = None) -> str:
    """A stable key from a job's own identity: the same job imported again gets the same key."""
    slug = _UNSAFE.sub("-", text).strip("-.")[:80] or "job"
    if unique is not None:
        slug += "-" + hashlib.sha1(unique.encode()).hexdigest()[:8]
    return f"{prefix}/{slug}"
