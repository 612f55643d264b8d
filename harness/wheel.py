"""Recur as a team installs it, for the tests that run it so (tests/test_wheel.py, tests/test_multi_host.py,
tests/test_two_machines.py): the wheel or the sdist built from a copy of the checkout, in a new virtualenv."""

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


def build_wheel(source: Path, dist: Path) -> Path:
    """The wheel of the project at `source`, built offline (no build isolation: the tests' namespace has no index)."""
    run_checked([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                 str(source)])
    return next(dist.glob("recur-*.whl"))


def build_sdist(source: Path, dist: Path) -> Path:
    """The sdist of the project at `source`, built offline by its build backend (setuptools' PEP 517 hook,
    which `python -m build --sdist` calls)."""
    name = run_checked([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                        "print(build_meta.build_sdist(sys.argv[1]))", str(dist)], cwd=source)
    return dist / name.strip().splitlines()[-1]


def new_virtualenv(path: Path, packages: Path | None = None) -> Path:
    """A new virtualenv at `path` that reads Recur's dependencies (and pip and setuptools, to install with)
    from the checkout's (a path in a .pth file: only the packages, not the checkout's editable install of
    Recur, which a .pth file's path does not run), and with `packages` a directory of the team's packages as
    an editable install reads them: its bin directory."""
    run_checked([sys.executable, "-m", "venv", "--without-pip", str(path)])
    bin_dir = path / "bin"
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(run_checked([str(bin_dir / "python"), "-c", purelib]).strip())
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    if packages is not None:
        (site / "team.pth").write_text(f"{packages}\n")
    return bin_dir


def install(bin_dir: Path, distribution: Path) -> None:
    """`pip install` of a wheel or an sdist into the virtualenv, offline: no dependencies, no index, no build
    isolation (an sdist is built with the setuptools the virtualenv reads from the checkout's)."""
    run_checked([str(bin_dir / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                 "--no-build-isolation", str(distribution)])


def installed_wheel(tmp_path: Path) -> Path:
    """A new virtualenv in `tmp_path` with the wheel built from a copy of the checkout in it, and a team's
    package `acme` (acme.jobs registers acme.ping): its bin directory. The tests' network namespace has no
    index to install from: the wheel is installed without its dependencies, which the new virtualenv reads
    from the checkout's (new_virtualenv)."""
    wheel = build_wheel(copy_of_the_checkout(tmp_path / "source"), tmp_path / "dist")
    team = tmp_path / "team"
    (team / "acme").mkdir(parents=True)
    (team / "acme" / "__init__.py").write_text("")
    (team / "acme" / "jobs.py").write_text(TEAM_TASKS)
    bin_dir = new_virtualenv(tmp_path / "venv", packages=team)
    install(bin_dir, wheel)
    return bin_dir
