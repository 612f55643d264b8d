"""crontab lines as Recur schedules. Each line's command is mapped to a registered task (by --map, on the whole
command or its program); the command itself is handed to the task as its payload (`{"command": ...}`)."""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath

from recur_cli.importers.common import Imported, TaskMap, key_for

NICKNAMES = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
_ENV = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")


def import_crontab(text: str, tasks: TaskMap, system: bool = False) -> Imported:
    """`system`: lines carry a user field after the time (/etc/crontab, /etc/cron.d)."""
    imported = Imported()
    timezone = "UTC"
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"line {number}"
        env = _ENV.match(line)
        if env:
            name, value = env.group(1), env.group(2).strip().strip("'\"")
            if name in ("CRON_TZ", "TZ"):
                timezone = value or "UTC"
            else:
                imported.unmapped.append((f"{where} ({name}=...)", "environment settings are not carried over"))
            continue
        parsed = _split(line, system)
        if parsed is None:
            imported.unmapped.append((f"{where} ({line[:60]})", "not a crontab entry (5 time fields and a command)"))
            continue
        cron, command = parsed
        if cron == "@reboot":
            imported.unmapped.append((f"{where} ({line[:60]})", "@reboot has no time to schedule"))
            continue
        if "%" in command:
            imported.unmapped.append((f"{where} ({line[:60]})", "% in a command feeds cron's stdin: map it by hand"))
            continue
        program = _program(command)
        task = tasks.task_for(command, program, PurePosixPath(program).name)
        if task is None:
            imported.unmapped.append((f"{where} ({command[:60]})",
                                      f"no registered task for it (add --map '{program}=TASK')"))
            continue
        imported.schedules.append({
            "key": key_for("crontab", PurePosixPath(program).name, unique=f"{cron} {command}"),
            "workflow": task, "name": command if len(command) <= 200 else command[:197] + "...",
            "cron": cron, "timezone": timezone, "trigger_payload": {"command": command},
        })
    return imported


def _split(line: str, system: bool) -> tuple[str, str] | None:
    if line.startswith("@"):
        nickname, _, rest = line.partition(" ")
        if system:
            rest = rest.strip().partition(" ")[2]
        if nickname == "@reboot":
            return "@reboot", rest.strip()
        cron = NICKNAMES.get(nickname.lower())
        return (cron, rest.strip()) if cron and rest.strip() else None
    parts = line.split(None, 6 if system else 5)
    if len(parts) < (7 if system else 6):
        return None
    return " ".join(parts[:5]), parts[-1].strip()


def _program(command: str) -> str:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return words[0] if words else command
