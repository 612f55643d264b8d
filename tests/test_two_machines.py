"""docs/two-machines.md run as written and in order, on hosts that are network namespaces (harness/netns.py):
the data host (a namespace, address .1 of a subnet of the test's own) gets the guide's Redis and PostgreSQL
settings and runs its `<!-- data-host -->` commands; the app host (another, .2) runs `<!-- app-host-settings -->` and
`<!-- once -->` in one bash (`set -euo pipefail`: a failing command fails the test) and starts each line of
`<!-- app-host-processes -->` as a service manager would, from the wheel (harness/wheel.py); then
`<!-- check -->` runs from this test's own namespace, a third place on the network. If a command, an
option, a setting or a URL of the guide drifts from the code, this fails.

What the test does instead of the guide, visibly:
- The guide's unmarked lines (`apt-get install`, `systemctl restart`) are not run: the test starts a
  redis-server with the `<!-- redis-conf -->` lines as its configuration file, and a PostgreSQL server of its
  own (initdb, superuser `postgres`, trusted on its socket as Debian's peer rule trusts it) with the
  `<!-- postgresql-conf -->` and `<!-- pg-hba-conf -->` lines added to its files.
- `sudo -u USER` is a shell function running the command with `runuser` (sudo is not installed here, and it
  would drop PGHOST, which points the PostgreSQL tools at the test's server's socket directory instead of
  Debian's /var/run/postgresql).
- `createuser --pwprompt` reads the password from its input, as typed twice at its prompts.
- PLACEHOLDERS below are replaced in every block before it runs: the addresses and network by the
  namespaces', PASSWORD by one the test makes, /opt/recur/venv by the virtualenv the wheel is installed in,
  TOKEN by the token `recur manage owners bootstrap` printed.

Runs on the PostgreSQL pass, where network namespaces can be made (root and `ip`), as test_multi_host does."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import netns
from harness.markdown_blocks import Shell, marked_blocks
from harness.pgcluster import POSTGRES_BIN
from harness.servers import LOOPBACK_EGRESS, ROOT, wait_for
from harness.stack import Api
from harness.wheel import installed_wheel

pytestmark = [pytest.mark.integration, pytest.mark.database]

GUIDE = ROOT / "docs" / "two-machines.md"
MARKERS = ["redis-conf", "postgresql-conf", "pg-hba-conf", "data-host", "app-host-settings", "once",
           "app-host-processes", "check"]
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SUDO = 'sudo() { [ "$1" = -u ] || return 2; local user=$2; shift 2; runuser -u "$user" -- "$@"; }'


def placeholders(hosts: netns.Hosts, password: str, venv: Path) -> dict[str, str]:
    return {"10.0.0.0/24": f"{hosts.subnet}.0/24", "10.0.0.1": hosts.address(0), "10.0.0.2": hosts.address(1),
            "PASSWORD": password, "/opt/recur/venv": str(venv)}


def substituted(text: str, values: dict[str, str]) -> str:
    for placeholder, value in values.items():
        text = re.sub(rf"(?<![\w.]){re.escape(placeholder)}(?![\w.])", value, text)
    return text


def run_as_postgres(hosts: netns.Hosts, *argv: str) -> None:
    subprocess.run([*hosts.prefix(0), "runuser", "-u", "postgres", "--", *argv], check=True, capture_output=True,
                   timeout=60)


@contextlib.contextmanager
def postgresql(hosts: netns.Hosts, conf: str, hba: str) -> Iterator[Path]:
    """A PostgreSQL server on the data host, on its default port, with the guide's settings: the directory
    of its socket (what PGHOST names)."""
    assert POSTGRES_BIN is not None
    directory = Path(tempfile.mkdtemp(prefix="recur-two-machines-"))
    shutil.chown(directory, "postgres")
    data = directory / "data"
    run_as_postgres(hosts, str(POSTGRES_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                    "-E", "UTF8")
    with open(data / "postgresql.conf", "a") as settings:
        settings.write(f"\n{conf}unix_socket_directories = '{directory}'\nfsync = off\n")
    with open(data / "pg_hba.conf", "a") as rules:
        rules.write(f"\n{hba}")
    try:
        run_as_postgres(hosts, str(POSTGRES_BIN / "pg_ctl"), "-D", str(data), "-l", str(directory / "log"),
                        "-w", "-t", "60", "start")
        yield directory
    finally:
        with contextlib.suppress(subprocess.SubprocessError):
            run_as_postgres(hosts, str(POSTGRES_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def redis_server(hosts: netns.Hosts, conf: str, workdir: Path, password: str) -> Iterator[None]:
    """A redis-server on the data host, on its default port, with the guide's lines as its configuration."""
    path = workdir / "redis.conf"
    path.write_text(f"{conf}dir {workdir}\n")
    with open(workdir / "redis.log", "wb") as log:
        server = subprocess.Popen([*hosts.prefix(0), "redis-server", str(path)], stdout=log, stderr=log)

    def ping(*auth: str) -> str:
        return subprocess.run([*hosts.prefix(0), "redis-cli", "-h", hosts.address(0), *auth, "ping"],
                              capture_output=True, text=True, timeout=10).stdout.strip()

    try:
        wait_for(lambda: ping("--no-auth-warning", "-a", password) == "PONG" or server.poll() is not None, 10,
                 what="redis-server")
        assert server.poll() is None, (workdir / "redis.log").read_text()
        assert ping().startswith("NOAUTH"), "Redis answers without the guide's password"
        yield
    finally:
        server.terminate()
        server.wait(10)


class Services:
    """Each line of a block as a process a service manager keeps running, on a host, in its own group."""

    def __init__(self, prefix: list[str], env: dict[str, str], cwd: Path, logs: Path) -> None:
        self._prefix, self._env, self._cwd, self._logs = prefix, env, cwd, logs
        self.started: list[tuple[subprocess.Popen[bytes], Path]] = []

    def start(self, block: str) -> None:
        for i, line in enumerate(line for line in block.splitlines() if line.strip()):
            log = self._logs / f"service-{i}.log"
            with open(log, "wb") as out:
                self.started.append((subprocess.Popen([*self._prefix, "bash", "-c", f"exec {line}"], cwd=self._cwd,
                                                      env=self._env, stdout=out, stderr=subprocess.STDOUT,
                                                      start_new_session=True), log))

    def all_running(self) -> bool:
        return all(process.poll() is None for process, _ in self.started)

    def stop(self) -> None:
        for process, _ in self.started:  # SIGTERM to each one's group: a graceful stop for both
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process, _ in self.started:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


def test_the_two_machines_guide_runs_as_written(tmp_path: Path) -> None:
    if not os.environ.get("RECUR_TEST_POSTGRES"):
        pytest.skip("the guide's database is PostgreSQL (the test starts its own): this runs on the PostgreSQL pass")
    if POSTGRES_BIN is None or not netns.available():
        pytest.skip("needs PostgreSQL's server binaries, root and ip (network namespaces)")
    blocks = marked_blocks(GUIDE, languages=("bash", "text"))
    assert [marker for marker, _ in blocks] == MARKERS
    bin_dir = installed_wheel(tmp_path)
    password = secrets.token_hex(12)
    hosts = netns.Hosts(2)
    values = placeholders(hosts, password, bin_dir.parent)
    guide = {marker: substituted(text, values) for marker, text in blocks}
    home = tmp_path / "var-lib-recur"  # the app host's working directory, /var/lib/recur for the units
    home.mkdir()
    base_env = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", **LOOPBACK_EGRESS}
    shells: list[Shell] = []
    services: list[Services] = []
    try:
        with contextlib.ExitStack() as stack:
            stack.callback(hosts.destroy)
            stack.enter_context(redis_server(hosts, guide["redis-conf"], tmp_path, password))
            socket_directory = stack.enter_context(postgresql(hosts, guide["postgresql-conf"], guide["pg-hba-conf"]))
            stack.callback(lambda: [shell.close() for shell in shells])
            stack.callback(lambda: [service.stop() for service in services])  # first: before the servers go

            data_host = Shell(Path("/"), {**base_env, "PGHOST": str(socket_directory)}, tmp_path, hosts.prefix(0))
            shells.append(data_host)
            data_host.run(SUDO)
            data_host.run(guide["data-host"], stdin=f"{password}\n{password}\n")

            app_host = Shell(home, {**base_env, "HOME": str(home)}, tmp_path, hosts.prefix(1))
            shells.append(app_host)
            app_host.run(guide["app-host-settings"])
            assert app_host.run("command -v recur").strip() == str(bin_dir / "recur")
            token = app_host.run(guide["once"]).splitlines()[-1]
            assert re.fullmatch(r"recur_[A-Za-z0-9_-]{43}", token), token
            env = dict(line.split("=", 1) for line in app_host.run("env").splitlines() if "=" in line)
            processes = Services(hosts.prefix(1), env, home, tmp_path)
            services.append(processes)
            processes.start(guide["app-host-processes"])
            api = Api(f"http://{hosts.address(1)}:5000", token)
            for started, what in ((api.answers, "recur server"),
                                  (lambda: sum(api.ok("GET", "/api/v1/health/")["workers"].values()), "a worker")):
                wait_for(lambda started=started: started() or not processes.all_running(), 60, interval=0.2,
                         what=what)
                assert processes.all_running(), "a process of the guide's exited"

            anywhere = Shell(tmp_path, {**base_env, "PATH": f"{bin_dir}:{SYSTEM_PATH}"}, tmp_path)
            shells.append(anywhere)
            checked = anywhere.run(substituted(guide["check"], {"TOKEN": token}))
            assert "acme.ping" in checked  # the web process imported RECUR_TASK_MODULES
            wait_for(lambda: api.ok("GET", "/api/v1/schedules/check/")["status"] == "done", 30, interval=0.5,
                     what="the check schedule's two runs")
            runs = api.runs(api.ok("GET", "/api/v1/schedules/check/")["id"])
            assert sorted(run["status"] for run in runs) == ["succeeded", "succeeded"], runs
            assert processes.all_running()
    except BaseException:
        for shell in shells:
            print("----- a shell's transcript\n" + "\n".join(shell.transcript[-40:]))
        for _, log in (started for service in services for started in service.started):
            print(f"----- {log.name}\n" + log.read_text(errors="replace")[-3000:])
        raise
