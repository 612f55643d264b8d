"""What the bench reads of a process from /proc (Linux): its stat fields, its children, its resident set."""

from __future__ import annotations

import contextlib
from pathlib import Path


def stat(pid: int) -> list[str]:
    """/proc/<pid>/stat's fields after the command name (field 3, the state, is index 0)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def resident_mb(pid: int, field: str = "VmRSS") -> float:
    """A memory field of /proc/<pid>/status in MB: VmRSS, resident now; VmHWM, the most it ever was."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no {field} for pid {pid}")


def with_descendants(pid: int) -> set[int]:
    """A process and every process under it, gone ones left out."""
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        found.add(current)
        with contextlib.suppress(OSError):
            todo.extend(children(current))
    return found
