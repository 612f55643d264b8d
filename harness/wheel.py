"""Recur as a team installs it, for the tests that run it so (tests/test_wheel.py, tests/test_multi_host.py)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

from harness.checkout import copy_of_the_checkout

TEAM_TASKS = '''import os

import recur


@recur.task("acme.ping")
def ping(event):
    with open(os.environ["ACME_RUNS"], "a") as runs:
        runs.write(event["scheduled_for"] + "\\n")
'''


def run_checked(argv: list[str], **kwargs: object) -> str:
    """`argv` run to its end, which must be a success: its output."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300,
                          **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-3000:])
    return str(done.stdout)


def installed_wheel(tmp_path: Path) -> Path:
    """A new virtualenv in `tmp_path` with the wheel built from a copy of the checkout in it, and a team's
    package `acme` (acme.jobs registers acme.ping): its bin directory. The tests' network namespace has no
    index to install from: the wheel is installed without its dependencies, which the new virtualenv reads
    from the checkout's (a path in a .pth file: only the packages, not the checkout's editable install)."""
    source = copy_of_the_checkout(tmp_path / "source")
    run_checked([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
          str(tmp_path / "dist"), str(source)])
    wheel = next((tmp_path / "dist").glob("recur-*.whl"))
    run_checked([sys.executable, "-m", "venv", str(tmp_path / "venv")])
    bin_dir = tmp_path / "venv" / "bin"
    run_checked([str(bin_dir / "pip"), "install", "-q", "--no-deps", "--no-index", str(wheel)])
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(run_checked([str(bin_dir / "python"), "-c", purelib]).strip())
    team = tmp_path / "team"
    (team / "acme").mkdir(parents=True)
    (team / "acme" / "__init__.py").write_text("")
    (team / "acme" / "jobs.py").write_text(TEAM_TASKS)
    (site / "acme.pth").write_text(f"{team}\n")  # the team's package, installed as an editable install is
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return bin_dir
