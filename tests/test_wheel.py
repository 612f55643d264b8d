"""Recur as a team installs it: the wheel built from a copy of the checkout, installed into a new virtualenv in
a temporary directory (no checkout on its path), run with `recur manage`, `recur server` and `recur worker`
from a directory of the team's, with tasks from the team's own installed package, `acme`. A schedule runs
its task, the console answers, and the version shows everywhere it is promised.

The tests' network namespace has no index to install from: the wheel is installed without its dependencies,
which the new virtualenv reads from the checkout's (a path in a .pth file: only the packages, not the
checkout's own editable install of Recur).

The sdist built from a copy of the checkout holds what the wheel holds, and installed (pip builds it into a
wheel, offline) it is the same files, which run: `recur manage db upgrade` finds its migrations."""

from __future__ import annotations

import json
import tarfile
import urllib.request
import zipfile
from pathlib import Path

import pytest
from redis import Redis

from harness.checkout import copy_of_the_checkout, project_version
from harness.servers import LOOPBACK_EGRESS, ROOT, Process, RedisServer, free_port, wait_for
from harness.stack import Api
from harness.wheel import build_sdist, build_wheel, install, installed_wheel, new_virtualenv, run_checked

pytestmark = pytest.mark.integration

# Besides the modules, what Recur reads from its package at run time: each file here must ship.
DATA_DIRECTORIES = ("recur_server/console/templates", "recur_server/console/static", "recur_server/migrations",
                    "recur_server/processes")


def test_the_wheel_installed_elsewhere_runs_a_teams_schedule_and_serves_the_console(
        tmp_path: Path, redis_server: RedisServer) -> None:
    bin_dir = installed_wheel(tmp_path)
    where = run_checked([str(bin_dir / "python"), "-c",
                         "import json, sys, recur, recur_server, recur_cli, recur_client; "
                         "modules = (recur, recur_server, recur_cli, recur_client); "
                         "print(json.dumps([sys.path, [m.__file__ for m in modules]]))"], cwd=tmp_path)
    path, files = json.loads(where)
    assert all(f.startswith(str(tmp_path / "venv")) for f in files), files
    assert str(ROOT) not in path and "" not in path[1:], path
    assert run_checked([str(bin_dir / "recur"), "--version"]).strip() == f"recur {project_version()}"

    home = tmp_path / "home"  # the team's own directory, where its processes run
    home.mkdir()
    Redis.from_url(redis_server.url).flushall()
    env = {**LOOPBACK_EGRESS, "PATH": f"{bin_dir}:/usr/bin:/bin", "REDIS_URL": redis_server.url,
           "DATABASE_URL": f"sqlite:///{home / 'recur.db'}", "RECUR_TASK_MODULES": "acme.jobs",
           "ACME_RUNS": str(home / "runs.txt")}
    run_checked([str(bin_dir / "recur"), "manage", "db", "upgrade"], cwd=home, env=env)
    bootstrap = run_checked([str(bin_dir / "recur"), "manage", "owners", "bootstrap"], cwd=home, env=env)
    token = bootstrap.strip().splitlines()[-1]
    port = free_port()
    logs = [tmp_path / "web.log", tmp_path / "worker.log"]
    web = Process([str(bin_dir / "recur"), "server", "--bind", f"127.0.0.1:{port}", "--workers", "1"], env, logs[0],
                  cwd=home)
    worker = Process([str(bin_dir / "recur"), "worker", "--concurrency", "1"], env, logs[1], cwd=home)
    try:
        api = Api(f"http://127.0.0.1:{port}", token)
        wait_for(api.answers, 60, what="recur server to answer")
        health = api.ok("GET", "/api/v1/health/")
        assert health["version"] == project_version()
        wait_for(lambda: sum(api.ok("GET", "/api/v1/health/")["workers"].values()), 60,
                 what="the worker's first beat")
        tasks = {t["name"]: t["path"] for t in api.ok("GET", "/api/v1/tasks/")["items"]}
        assert tasks.get("acme.ping") == "acme.jobs.ping"
        workflow = api.ok("POST", "/api/v1/workflows/", {"name": "ping", "task": "acme.ping"})
        schedule = api.ok("POST", "/api/v1/schedules/", {"name": "ping", "workflow_id": workflow["id"],
                                                         "interval_seconds": 1, "total_repeats": 2})
        wait_for(lambda: api.ok("GET", f"/api/v1/schedules/{schedule['id']}/")["status"] == "done", 60,
                 what="two runs of the team's task")
        assert sorted(r["status"] for r in api.runs(schedule["id"])) == ["succeeded", "succeeded"]
        assert len((home / "runs.txt").read_text().splitlines()) == 2
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/signin", timeout=10) as page:
            assert page.status == 200 and project_version() in page.read().decode()
        assert (home / "instance" / "metrics").is_dir()  # the host's metrics, under the team's directory
    except BaseException:
        for log in logs:
            print(f"----- {log.name}\n" + log.read_text()[-3000:])
        raise
    finally:
        web.stop()
        worker.stop()


def test_the_sdist_holds_what_the_wheel_holds_and_installs_the_same_files(tmp_path: Path) -> None:
    source = copy_of_the_checkout(tmp_path / "source")
    with zipfile.ZipFile(build_wheel(source, tmp_path / "dist")) as wheel:
        in_wheel = {name for name in wheel.namelist() if ".dist-info/" not in name}
    shipped = {str(p.relative_to(ROOT)) for directory in DATA_DIRECTORIES for p in (ROOT / directory).rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    assert "recur_server/console/templates/base.html" in shipped and "recur_server/migrations/env.py" in shipped
    assert shipped - in_wheel == set()
    sdist = build_sdist(source, tmp_path / "sdist")
    assert sdist.name == f"recur-{project_version()}.tar.gz"
    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert in_wheel - in_sdist == set()

    bin_dir = new_virtualenv(tmp_path / "venv")
    install(bin_dir, sdist)
    record = next((tmp_path / "venv").glob("lib/python*/site-packages/recur-*.dist-info/RECORD"))
    installed = {line.split(",")[0] for line in record.read_text().splitlines()}
    installed -= {name for name in installed if ".dist-info/" in name or "__pycache__" in name or name[0] == "."}
    assert installed == in_wheel  # the package files, without the metadata, compiled files and bin/recur
    assert run_checked([str(bin_dir / "recur"), "--version"]).strip() == f"recur {project_version()}"
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "DATABASE_URL": f"sqlite:///{home / 'recur.db'}"}
    run_checked([str(bin_dir / "recur"), "manage", "db", "upgrade"], cwd=home, env=env)
    tables = json.loads(run_checked([str(bin_dir / "python"), "-c", "import json, sqlite3, sys; print(json.dumps("
                                     "[r[0] for r in sqlite3.connect(sys.argv[1]).execute('select name from "
                                     "sqlite_master where type = ?', ('table',))]))", str(home / "recur.db")]))
    assert {"alembic_version", "scheduled_jobs", "runs", "owners"} <= set(tables), tables
