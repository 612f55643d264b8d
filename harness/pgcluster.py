"""Private PostgreSQL clusters for fault tests: a server of a test's own that it may restart, stop, stall
(SIGSTOP/SIGCONT) or kill, and a primary with a streaming standby that it may promote. Never the shared
test server (RECUR_TEST_POSTGRES): other tests use that one.

Debian's server binaries (/usr/lib/postgresql/<version>/bin) are used; tests that need them skip when they
are missing (`POSTGRES_BIN is None`). PostgreSQL refuses to run as root, so as root every command runs as
the `postgres` user (as scripts/pg-throwaway does), in a directory of its own outside pytest's tmp_path
(which that user cannot reach).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from harness.servers import free_port, wait_for


def _find_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: [int(x) if x.isdigit() else 0 for x in p.split("/")[4].split(".")])
    return Path(found[-1]).parent if found else None


POSTGRES_BIN = _find_bin()
AS_ROOT = os.getuid() == 0


def _run(*argv: str, timeout: float = 60) -> str:
    command = ["runuser", "-u", "postgres", "--", *argv] if AS_ROOT else list(argv)
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stdout}{done.stderr}")
    return done.stdout


def _tool(name: str) -> str:
    assert POSTGRES_BIN is not None, "PostgreSQL's server binaries are not installed"
    return str(POSTGRES_BIN / name)


def _new_directory() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="recur-pgcluster-"))
    if AS_ROOT:
        shutil.chown(directory, "postgres")
    return directory


class PgServer:
    """One PostgreSQL server (a data directory and a postmaster) on a free loopback port, user `recur`
    trusted, with durable commits (fsync on) unless `fast`: a fault test checks what survives."""

    def __init__(self, directory: Path, port: int | None = None, settings: dict[str, str] | None = None) -> None:
        self.directory = directory
        self.data = directory / "data"
        self.port = port or free_port()
        self.settings = settings or {}

    @property
    def url(self) -> str:
        return f"postgresql://recur@127.0.0.1:{self.port}/postgres"

    def initdb(self) -> None:
        _run(_tool("initdb"), "-D", str(self.data), "-U", "recur", "--auth=trust", "-E", "UTF8")

    def _options(self) -> str:
        settings = {"listen_addresses": "127.0.0.1", "max_connections": "100", "wal_level": "replica",
                    "max_wal_senders": "5", "hot_standby": "on", "unix_socket_directories": str(self.directory),
                    **self.settings}
        return " ".join([f"-p {self.port}", *(f"-c {name}={value}" for name, value in settings.items())])

    def start(self) -> None:
        _run(_tool("pg_ctl"), "-D", str(self.data), "-l", str(self.directory / "server.log"), "-w", "-t", "60",
             "-o", self._options(), "start")

    def restart(self) -> None:
        """`pg_ctl restart -m fast`: every session is ended, the server comes back on the same port."""
        _run(_tool("pg_ctl"), "-D", str(self.data), "-l", str(self.directory / "server.log"), "-w", "-t", "60",
             "-m", "fast", "-o", self._options(), "restart")

    def stop(self, mode: str = "fast") -> None:
        _run(_tool("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def promote(self) -> None:
        """A standby becomes a primary (`pg_ctl promote`, waiting until it accepts writes)."""
        _run(_tool("pg_ctl"), "-D", str(self.data), "-w", "-t", "60", "promote")

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None

    def pids(self) -> list[int]:
        """The postmaster and every backend and helper process it started."""
        parent = self.postmaster_pid()
        if parent is None:
            return []
        children = subprocess.run(["pgrep", "-P", str(parent)], capture_output=True, text=True).stdout.split()
        return [parent, *(int(pid) for pid in children)]

    def signal_all(self, signum: int) -> None:
        """Send `signum` to the postmaster and all its processes (SIGSTOP/SIGCONT: a stalled server)."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def kill(self) -> None:
        """SIGKILL the postmaster and every process of it, as when its machine goes away."""
        pids = self.pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not any(_alive(pid) for pid in pids), 30, what="the killed server's processes to go")

    def accepts_writes(self) -> bool:
        done = subprocess.run([_tool("psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "recur", "-d",
                               "postgres", "-Atc", "SELECT NOT pg_is_in_recovery()"],
                              capture_output=True, text=True, timeout=10)
        return done.returncode == 0 and done.stdout.strip() == "t"

    def sql(self, statement: str) -> str:
        done = subprocess.run([_tool("psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "recur", "-d",
                               "postgres", "-Atc", statement], capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
        return done.stdout.strip()

    def log_tail(self, lines: int = 30) -> str:
        path = self.directory / "server.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def destroy(self) -> None:
        with contextlib.suppress(Exception):
            self.signal_all(signal.SIGCONT)
        with contextlib.suppress(Exception):
            _run(_tool("pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop", timeout=30)
        shutil.rmtree(self.directory, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (the killed postmaster's children, until reaped) counts as gone.
    with contextlib.suppress(OSError):
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    return False


def single_server() -> PgServer:
    """A started server of a test's own; `destroy()` it afterwards."""
    server = PgServer(_new_directory())
    server.initdb()
    server.start()
    return server


class PrimaryStandby:
    """A primary and a streaming standby made from it (pg_basebackup -R writes standby.signal and the
    primary's address). Replication is synchronous (synchronous_standby_names on the primary): a commit
    returns only once the standby has it, so a failover loses no commit a caller saw, as a production pair
    with a synchronous standby runs. `url` names both, libpq's multi-host form, read-write sessions only."""

    def __init__(self) -> None:
        self.primary = PgServer(_new_directory(), settings={"synchronous_standby_names": "'standby'",
                                                            "synchronous_commit": "on"})
        self.primary.initdb()
        hba = self.primary.data / "pg_hba.conf"
        _append_as_owner(hba, "host replication recur 127.0.0.1/32 trust\n")
        self.primary.start()
        self.standby = PgServer(_new_directory(), settings={"primary_conninfo": "'"
                                                            + self._conninfo() + "'"})
        _run(_tool("pg_basebackup"), "-h", "127.0.0.1", "-p", str(self.primary.port), "-U", "recur",
             "-D", str(self.standby.data), "-R", "-X", "stream", "-c", "fast", timeout=120)
        self.standby.start()
        wait_for(self._streaming, 30, interval=0.2, what="the standby to stream from the primary")
        self.url = (f"postgresql://recur@127.0.0.1:{self.primary.port},127.0.0.1:{self.standby.port}/postgres"
                    "?target_session_attrs=read-write")

    def _conninfo(self) -> str:
        return f"host=127.0.0.1 port={self.primary.port} user=recur application_name=standby"

    def _streaming(self) -> bool:
        try:
            return self.primary.sql("SELECT sync_state FROM pg_stat_replication "
                                    "WHERE application_name = 'standby'") == "sync"
        except RuntimeError:
            return False

    def fail_over(self) -> float:
        """SIGKILL the primary, promote the standby; returns time.monotonic() when the standby took writes."""
        self.primary.kill()
        self.standby.promote()
        wait_for(self.standby.accepts_writes, 60, interval=0.2, what="the promoted standby to accept writes")
        return time.monotonic()

    def destroy(self) -> None:
        self.standby.destroy()
        self.primary.destroy()


def _append_as_owner(path: Path, text: str) -> None:
    with open(path, "a") as fh:  # root may write it; its owner stays `postgres`
        fh.write(text)


def server_on(address: str, network: str) -> PgServer:
    """A started server of a test's own that also listens on `address` and trusts user `recur` from `network`
    (e.g. 10.203.0.0/24: the hosts of harness.netns); `destroy()` it afterwards."""
    server = PgServer(_new_directory(), settings={"listen_addresses": f"127.0.0.1,{address}"})
    server.initdb()
    _append_as_owner(server.data / "pg_hba.conf", f"host all recur {network} trust\n")
    server.start()
    return server
