"""The README's quickstart and task example, pasted into bash as written and in order, against the processes
`scripts/up` starts; then the runnable examples of the docs (the API tour, calendars, the CLI). If a command in
them drifts from the code (a field, an option, a path, a missing token), this fails.

The blocks are the fenced `bash` blocks right after an HTML comment: `<!-- start -->` is a command the user
runs in a first shell (here in the background, stopped with SIGINT as Ctrl-C stops it, with the ports and the
database moved aside); `<!-- quickstart -->`, `<!-- task-example -->` and `<!-- tour -->` are pasted into a
second shell (here one bash process, `set -euo pipefail`, so a failing command fails the test), after the
`export` lines `scripts/up` printed. The checkout is copied (without .venv, which is linked) so the task module
the README has the user write lands in the copy's root, as it would in theirs."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.checkout import copy_of_the_checkout
from harness.markdown_blocks import Shell, marked_blocks
from harness.servers import free_port, print_logs_if_failed, wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent


# A line some process Recur started logged (Python's logging, gunicorn, redis-server), not scripts/up's own.
LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d|\[\d{4}-\d\d-\d\d |\d+:[A-Za-z])")


class FirstShell:
    """The user's first shell: one `<!-- start -->` command in the foreground at a time, Ctrl-C between."""

    def __init__(self, cwd: Path, env: dict[str, str], log: Path) -> None:
        self._cwd, self._env, self.log = cwd, env, log
        self._proc: subprocess.Popen[bytes] | None = None
        self._offset = 0

    def start(self, command: str) -> list[str]:
        """Start `command`; once its start-up output ends (the `export RECUR_URL=` line), the lines it printed
        itself since it started (the log lines of the processes it started are left out: one may come late)."""
        self.stop()
        self._offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as out:
            proc = subprocess.Popen(["bash", "-c", command], cwd=self._cwd, env=self._env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self._proc = proc
        wait_for(lambda: "export RECUR_URL=" in self.output() or proc.poll() is not None, 180,
                 interval=0.2, what=f"{command!r} to print its export lines")
        assert proc.poll() is None, f"{command!r} exited:\n{self.output()[-4000:]}"
        wait_for(lambda: self.output().endswith("\n"), 5, what="the line to end")
        return [line for line in self.output().splitlines() if not LOG_LINE.match(line)]

    def output(self) -> str:
        return self.log.read_bytes()[self._offset:].decode(errors="replace")

    def stop(self) -> None:
        """Ctrl-C: SIGINT to the foreground process group."""
        if self._proc is None or self._proc.poll() is not None:
            return
        os.killpg(self._proc.pid, signal.SIGINT)
        try:
            self._proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait(10)
        # Whatever it started and left behind (there should be nothing) goes with it.
        with _suppress_missing():
            os.killpg(self._proc.pid, signal.SIGKILL)


class _suppress_missing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        return kind is ProcessLookupError


def api_get(base: str, token: str, path: str) -> Any:
    request = urllib.request.Request(f"{base}/api/v1{path}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def statuses(base: str, token: str, schedule_id: str) -> list[str]:
    return [run["status"] for run in api_get(base, token, f"/schedules/{schedule_id}/runs/")["items"]]


@pytest.fixture
def shells(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[FirstShell, Shell]]:
    checkout = copy_of_the_checkout(tmp_path / "recur")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RECUR_", "REDIS_", "PROMETHEUS_")) and k not in ("DATABASE_URL", "PORT")}
    # What the user's machine has: the checkout's virtualenv on PATH for `recur` (docs/cli.md says so).
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    first_env = {**env, "PORT": str(free_port()), "REDIS_PORT": str(free_port()),
                 "DATABASE_URL": f"sqlite:///{tmp_path / 'recur.db'}", "RECUR_SKIP_INSTALL": "1",
                 "PYTHONUNBUFFERED": "1"}
    first = FirstShell(checkout, first_env, tmp_path / "scripts-up.log")
    second = Shell(checkout, env, tmp_path)
    yield first, second
    second.close()
    first.stop()
    transcript = tmp_path / "second-shell.log"
    transcript.write_text("\n".join(second.transcript) + "\n")
    print_logs_if_failed(request.node, [first.log, transcript], lines=80)


def test_the_readme_and_the_docs_examples_run_as_written(shells: tuple[FirstShell, Shell]) -> None:
    first, second = shells
    readme = marked_blocks(ROOT / "README.md")
    kinds = [kind for kind, _ in readme]
    assert kinds == ["start", "quickstart", "quickstart", "task-example", "start", "task-example"], kinds

    # The first start: on a fresh database its start-up output ends with the two lines to paste.
    started = first.start(readme[0][1])
    assert started[-2].startswith("export RECUR_URL=http://127.0.0.1:"), started[-5:]
    assert re.fullmatch(r"export RECUR_TOKEN=recur_[A-Za-z0-9_-]{43}", started[-1]), started[-5:]
    second.run("\n".join(started[-2:]))
    base, token = second.value("RECUR_URL"), second.value("RECUR_TOKEN")
    # scripts/up listens on this machine only unless told otherwise (RECUR_BIND_ADDRESS)
    assert "Listening at: http://127.0.0.1:" in first.output() and "0.0.0.0" not in first.output()

    # Quickstart: a workflow, a schedule of three runs two seconds apart, watched until it is done.
    for _, script in readme[1:3]:
        second.run(script)
    schedule = second.value("SCHEDULE")
    wait_for(lambda: api_get(base, token, f"/schedules/{schedule}/")["status"] == "done", 60, interval=0.5,
             what="the quickstart's schedule to be done")
    assert statuses(base, token, schedule) == ["succeeded"] * 3

    # The task example: the module is written, scripts/up restarted with it; web and worker both import it.
    second.run(readme[3][1])
    restarted = first.start(readme[4][1])
    assert restarted[-1].startswith("export RECUR_URL=http://127.0.0.1:"), restarted[-5:]
    assert any("tokens create admin" in line for line in restarted[-5:]), restarted[-5:]
    assert "hello.greet" in [t["name"] for t in api_get(base, token, "/tasks/")["items"]]
    second.run(readme[5][1])
    greeting = second.value("GREETING")
    wait_for(lambda: statuses(base, token, greeting) == ["succeeded"] * 2, 60, interval=0.5,
             what="the task example's two runs to succeed")
    wait_for(lambda: "hello, Ada: tick 1" in first.output(), 10, what="the worker to print the greeting")

    # The docs' runnable examples, in the same shell (they use API, AUTH, JSON and id_of from above).
    for page in ("quickstart.md", "api.md", "timing.md", "cli.md"):
        blocks = marked_blocks(ROOT / "docs" / page)
        assert [kind for kind, _ in blocks] == ["tour"], page
        second.run(blocks[0][1])
