"""Real servers for tests: a redis-server on a free loopback port, and helpers to wait on conditions."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from harness import preloaded

T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


FIRST_PAUSE, LONGEST_PAUSE = 0.05, 0.25  # wait_for's pauses between polls, unless a test gives its own


def wait_for(condition: Callable[[], T], timeout: float = 10.0, interval: float | None = None,
             what: str = "") -> T:
    """Poll `condition` until it returns something truthy; fail with `what` after `timeout` seconds. Between
    polls it pauses `interval` seconds, or by default FIRST_PAUSE growing by half each poll up to LONGEST_PAUSE:
    a condition met soon is seen soon, and a wait of many seconds does not ask the processes it polls (most
    conditions are API requests) twenty times a second, which on a machine running the suite's shards side by
    side is CPU taken from the processes the tests wait on."""
    deadline = time.monotonic() + timeout
    pause = FIRST_PAUSE if interval is None else interval
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or condition}")
        time.sleep(pause)
        if interval is None:
            pause = min(pause * 1.5, LONGEST_PAUSE)


class Tls:
    """A private CA and a certificate it signed for 127.0.0.1, as files: what a TLS redis-server serves
    and what a client names in its URL (`ssl_ca_certs`) to trust it."""

    def __init__(self, workdir: Path) -> None:
        import trustme

        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1", "localhost")
        self.ca = workdir / "ca.pem"
        self.cert = workdir / "cert.pem"
        self.key = workdir / "key.pem"
        ca.cert_pem.write_to_path(str(self.ca))
        cert.cert_chain_pems[0].write_to_path(str(self.cert))
        cert.private_key_pem.write_to_path(str(self.key))

    def server_args(self) -> list[str]:
        """TLS on the server's port; clients are not asked for certificates."""
        return ["--tls-cert-file", str(self.cert), "--tls-key-file", str(self.key),
                "--tls-ca-cert-file", str(self.ca), "--tls-auth-clients", "no"]

    def wrap(self, sock: socket.socket) -> socket.socket:
        """The socket, speaking TLS to a server whose certificate this CA signed."""
        import ssl

        return ssl.create_default_context(cafile=str(self.ca)).wrap_socket(sock, server_hostname="127.0.0.1")


def answers_ping(port: int, tls: Tls | None = None, timeout: float = 0.3) -> bool:
    """Whether a redis-server (or Sentinel) on this loopback port answers PING, over TLS with `tls`."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw, \
                (tls.wrap(raw) if tls is not None else raw) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """A redis-server of our own on a free loopback port; `appendonly` turns on AOF persistence. With
    `tls` it speaks only TLS on that port (no plain port at all), and its URL is rediss:// naming the CA."""

    def __init__(self, workdir: Path, appendonly: bool = False, tls: Tls | None = None) -> None:
        self._binary = shutil.which("redis-server")
        if self._binary is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        self.port = free_port()
        self.tls = tls
        self.url = (f"redis://127.0.0.1:{self.port}/0" if tls is None
                    else f"rediss://127.0.0.1:{self.port}/0?ssl_ca_certs={tls.ca}")
        self._workdir = workdir
        self._appendonly = appendonly
        self._process = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        assert self._binary is not None
        ports = ["--port", str(self.port)] if self.tls is None else ["--port", "0", "--tls-port", str(self.port),
                                                                      *self.tls.server_args()]
        process = subprocess.Popen(
            [self._binary, *ports, "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes" if self._appendonly else "no", "--dir", str(self._workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        wait_for(self._ready, 10, what="redis-server to accept connections")
        return process

    @property
    def pid(self) -> int:
        """The server's process (SIGSTOP and SIGCONT it to stall Redis as a hung host would)."""
        return self._process.pid

    def restart(self, down_seconds: float = 0.0) -> None:
        """Stop the server (as a crash would: no final save) and start it again on the same port."""
        self._process.kill()
        self._process.wait(10)
        time.sleep(down_seconds)
        self._process = self._start()

    def _ready(self) -> bool:
        return answers_ping(self.port, self.tls, timeout=0.2)

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(10)


ROOT = Path(__file__).resolve().parent.parent

# The egress allowlist every process a test or bench starts gets unless its own env says otherwise, and the
# in-process app's (tests/conftest.py): webhooks a test makes reach loopback receivers and nothing else, on
# top of the loopback-only network namespace scripts/test runs the passes in.
LOOPBACK_EGRESS = {"RECUR_WEBHOOK_EGRESS": "127.0.0.0/8,::1,localhost"}


def print_logs_if_failed(node: Any, logs: Iterable[Path], lines: int = 40) -> None:
    """In a fixture's teardown: when the test failed (conftest keeps its report on the item), print the last
    lines of each process's log, so that they land in the failure's report."""
    report = getattr(node, "report_call", None)
    if report is None or not report.failed:
        return
    for path in sorted(logs):
        print(f"----- {path.name} (last {lines} lines)")
        print("\n".join(path.read_text(errors="replace").splitlines()[-lines:]))


def pid_alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class Process:
    """A real Recur process (gunicorn web or worker.py) with its output in a log file."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path, new_session: bool = False,
                 cwd: Path = ROOT, preload: bool = False) -> None:
        import os
        import sys

        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 (closed in stop)
        full_env = {**LOOPBACK_EGRESS, **os.environ, **env, "PYTHONUNBUFFERED": "1"}  # a test's own egress wins
        if cwd == ROOT:  # a test's processes share a metrics directory of their own (the default,
            # instance/metrics under the checkout, would be shared by every test run from it)
            full_env.setdefault("PROMETHEUS_MULTIPROC_DIR", str(log_path.parent / "metrics"))
        bin_dir = str(Path(sys.executable).parent)
        full_env["PATH"] = bin_dir + os.pathsep + full_env.get("PATH", "")
        self.popen: subprocess.Popen[bytes] | preloaded.Child
        if preload and preloaded.enabled():  # forked from an interpreter that has the libraries imported
            self.popen = preloaded.preloader().start(argv, full_env, log_path, cwd, new_session)
        else:
            self.popen = subprocess.Popen(argv, cwd=cwd, env=full_env, stdout=self._log, stderr=subprocess.STDOUT,
                                          start_new_session=new_session)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self, whole_group: bool = False) -> None:
        """SIGKILL the process; with `whole_group` (needs new_session=True) its children die with it,
        as when a machine or container goes away."""
        import os
        import signal

        if whole_group:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
        elif self.alive():
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)
        self._log.close()

    def stop(self, timeout: float = 20) -> None:
        under = _started_under(self.popen.pid) if self.alive() else {}
        if self.alive():
            self.popen.terminate()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        _end_stragglers(under, self.log_path)
        self._log.close()  # closing twice is harmless

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


def start_web(env: dict[str, str], port: int, log_path: Path, cwd: Path = ROOT, app: str = "wsgi:app",
              workers: int = 2) -> Process:
    """gunicorn as the Procfile runs it (two web processes of four threads; the bench's), or with `workers`."""
    import sys

    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    # No control socket: gunicorn 27 puts it at one path per user, which concurrent test servers share.
    return Process([gunicorn, app, "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--threads", "4",
                    "--no-control-socket"],
                   env, log_path, cwd=cwd, preload=cwd == ROOT and app == "wsgi:app")


def serve_web(env: dict[str, str], log_path: Path, answers: Callable[[int], bool], cwd: Path = ROOT,
              timeout: float = 90, tries: int = 3, app: str = "wsgi:app", workers: int = 1) -> tuple[Process, int]:
    """gunicorn on a free port, once `answers(port)` says it serves: the process and its port. A test's server
    runs one web process (each is a whole app start, the largest part of a stack's start-up) unless the test
    asks for more, as those of several web processes do (the `web_workers` marker). A port found
    free can be taken by another process before gunicorn binds it (the test passes run side by side), and
    then gunicorn gives up and exits: it is started again on another port. A server that never answers is
    stopped, its log closed, and the failure carries the log's tail."""
    for _ in range(tries):
        port = free_port()
        web = start_web(env, port, log_path, cwd=cwd, app=app, workers=workers)

        def served_or_gone(port: int = port, web: Process = web) -> bool:
            return answers(port) or not web.alive()

        try:
            wait_for(served_or_gone, timeout, interval=0.2, what="the web server")
        except AssertionError:
            web.stop()
            raise AssertionError(f"the web server did not answer in {timeout}s; its log ends:\n"
                                 + web.output()[-3000:]) from None
        if web.alive():
            return web, port
        web.stop()
    raise AssertionError(f"the web server exited {tries} times before answering; its log ends:\n"
                         + log_path.read_text(errors="replace")[-3000:])


def start_worker(env: dict[str, str], log_path: Path, *extra: str, slots: int | None = None,
                 new_session: bool = False, cwd: Path = ROOT) -> Process:
    """worker.py with `extra` arguments and `slots` slots (its --concurrency; None: as `extra` says, else the
    worker's own default, as the Procfile starts it)."""
    import sys

    assert slots is None or "--concurrency" not in extra, "slots, or --concurrency in extra, not both"
    argv = [sys.executable, "worker.py", *extra, *(() if slots is None else ("--concurrency", str(slots)))]
    return Process(argv, env, log_path, new_session=new_session, cwd=cwd, preload=cwd == ROOT)


def flask_command(env: dict[str, str], *args: str) -> str:
    """Run `flask --app recur_server:create_app ARGS` as a user would, against `env`'s database; returns its output."""
    import os
    import sys

    done = python_command([sys.executable, "-m", "flask", "--app", "recur_server:create_app", *args],
                          {**os.environ, **env})
    done.check_returncode()
    return done.stdout


def python_command(argv: list[str], env: dict[str, str], input: str | None = None,
                   timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """subprocess.run(argv, cwd=ROOT, capture_output=True, text=True) for `python -m MODULE ARGS` from the
    checkout, forked from the preloading process (harness/preloaded.py) unless RECUR_TEST_PRELOAD=0."""
    if preloaded.enabled():
        return preloaded.run(argv, env, ROOT, input=input, timeout=timeout)
    return subprocess.run(argv, cwd=ROOT, env=env, input=input, capture_output=True, text=True, timeout=timeout)


def _started_under(pid: int) -> dict[int, str]:
    """The processes under `pid` (its background process, slots, work processes), each with its start time, so
    that a pid used again by another process is never taken for one of them."""
    from bench.procfs import stat, with_descendants

    found = {}
    for child in with_descendants(pid) - {pid}:
        with contextlib.suppress(OSError):
            found[child] = stat(child)[19]  # field 22, starttime
    return found


def _end_stragglers(under: dict[int, str], log_path: Path, grace: float = 10) -> None:
    """The processes a stopped process started exit with it (each watches its parent): any still there after
    `grace` s is killed, and named in the log, so that it runs no pass against a later test's Redis or
    database (a background process that outlived its worker once took the watch's lock in another test)."""
    import os
    import signal

    from bench.procfs import stat

    def left() -> list[int]:
        alive = []
        for pid, started in under.items():
            with contextlib.suppress(OSError, IndexError):
                fields = stat(pid)
                if fields[19] == started and fields[0] != "Z":
                    alive.append(pid)
        return alive

    deadline = time.monotonic() + grace
    while left() and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left():
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"harness: process {pid} outlived the process that started it by {grace:.0f} s: killed\n")
