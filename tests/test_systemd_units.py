"""The systemd units in deploy/systemd/ are valid units (systemd-analyze verify, with this machine's paths
put in) and stop each process the way it is made to stop: the worker by SIGTERM to its whole group
(tests/test_group_stop.py does exactly that to a busy worker), with a timeout past a default task's
timeout and grace; the web processes by SIGTERM to gunicorn's master."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from recur_server.infra.config import Settings

UNITS = Path(__file__).resolve().parent.parent / "deploy" / "systemd"
DEFAULT_TASK_TIMEOUT = 600  # a schedule's timeout_seconds when none is given


def _unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(UNITS / name)
    return parser


@pytest.mark.parametrize("name", ["recur-web.service", "recur-worker.service", "recur-migrate.service"])
def test_each_unit_is_valid_and_runs_a_recur_command(name: str, tmp_path: Path) -> None:
    command = _unit(name)["Service"]["ExecStart"].split()
    assert command[0] == "/opt/recur/venv/bin/recur" and command[1] in ("server", "worker", "manage"), command
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    recur = Path(sys.executable).parent / "recur"
    (tmp_path / "recur.env").write_text("")
    text = ((UNITS / name).read_text().replace("/opt/recur/venv/bin/recur", str(recur))
            .replace("/etc/recur/recur.env", str(tmp_path / "recur.env")).replace("/var/lib/recur", str(tmp_path))
            .replace("User=recur", "User=root"))
    (tmp_path / name).write_text(text)
    verified = subprocess.run(["systemd-analyze", "verify", str(tmp_path / name)], capture_output=True, text=True,
                              timeout=60)
    assert verified.returncode == 0 and "error" not in verified.stderr.lower(), verified.stderr


def test_the_worker_unit_stops_its_group_with_sigterm_and_waits_out_a_default_task() -> None:
    service = _unit("recur-worker.service")["Service"]
    assert service["KillMode"] == "control-group" and service["KillSignal"] == "SIGTERM"
    grace = Settings.__dataclass_fields__["RECUR_TIMEOUT_GRACE_SECONDS"].default
    assert float(service["TimeoutStopSec"]) > DEFAULT_TASK_TIMEOUT + float(grace)  # type: ignore[arg-type]


def test_the_web_unit_lets_gunicorn_finish_its_requests() -> None:
    service = _unit("recur-web.service")["Service"]
    assert service["KillMode"] == "mixed" and service["KillSignal"] == "SIGTERM"
    assert float(service["TimeoutStopSec"]) > 30  # gunicorn's --graceful-timeout (recur_server.processes)
