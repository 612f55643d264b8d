"""Recur's processes started from an interpreter that has the libraries and the server imported already: one
per test process, forking a child for each web server and worker a test starts, and for each `flask` or `recur`
command it runs (`run`), as gunicorn's --preload or multiprocessing's forkserver do. A test run starts about a
thousand of them, and each otherwise spent most of its start importing Flask, SQLAlchemy, RQ, marshmallow and the
rest (about 0.8 s of CPU of 1.2).

What each child then does is what `gunicorn wsgi:app ...`, `python worker.py ...` or `python -m MODULE ...` does:
it takes the test's environment, working directory, arguments, input and output, and runs the same script or
module as `__main__` (wsgi.py, worker.py, the CLI and the test's own modules imported afresh; the server's
modules already imported, as gunicorn's --preload has them; see SERVER). It ends as the interpreter
ends a process (the threads that are not daemons joined, the atexit handlers run, the output flushed) but
without tearing down each module, as multiprocessing's forked children end. Only its parent differs: the
preloading process, which reaps it and keeps its exit status for the test.

Tests of how Recur is installed and started (the wheel, the README, the rolling upgrade, other commands) run
their commands as they are; RECUR_TEST_PRELOAD=0 starts every process with exec.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import io
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# Third-party modules that every web and worker process imports, and that read nothing of the environment
# when imported.
PRELOAD = [
    "apispec", "blinker", "click", "cron_descriptor", "croniter", "dateutil.parser", "dateutil.rrule", "dateutil.tz",
    "flask", "flask_smorest", "flask_sqlalchemy", "gunicorn.app.wsgiapp", "gunicorn.arbiter",
    "gunicorn.workers.gthread", "hiredis", "itsdangerous", "jinja2", "markupsafe", "marshmallow", "psycopg",
    "redis", "rq", "rq.worker", "rq.worker_pool", "sqlalchemy", "sqlalchemy.dialects.postgresql.psycopg",
    "sqlalchemy.dialects.sqlite", "sqlalchemy.orm", "webargs", "werkzeug", "yaml",
    # and the standard library's that they do not import
    "gzip", "mmap", "multiprocessing", "resource", "sqlite3", "timeit", "wsgiref.simple_server",
]
# The server's own modules, which a web process (gunicorn's settings, worker class and app) and a worker import:
# about half of what a start of each still cost (a stack's start and stop, 0.75 CPU-s, took 0.37 with them).
# They do no work when imported but for prometheus-client's one choice: its value class, multiprocess when
# PROMETHEUS_MULTIPROC_DIR is set, as it always is for these processes (harness.servers.Process). Each value
# opens its file again from the environment's directory at its first use after a fork (the pid changed), so
# a child counts in its own test's directory, never in the one set here.
SERVER = ["recur_server.factory", "recur_server.processes.gunicorn_conf", "recur_server.processes.worker",
          "recur_server.serving"]
NEVER = ("recur_cli", "recur_client", "wsgi", "harness", "bench")


def _serve(path: str) -> tuple[str, list[str]]:
    """The preloading process: import, then answer start and status requests until stdin closes. Returns only
    in a forked child: the script it is to run and its sys.argv."""
    import importlib

    sys.path.pop(0)  # this file's directory: harness/'s modules are no library's
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = os.path.join(os.path.dirname(path), "metrics")
    for name in SERVER:
        importlib.import_module(name)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in NEVER)
    assert not leaked, f"preloaded modules import {leaked}"
    # What is imported stays out of the garbage collector's passes in every child: a pass over it would touch,
    # and so copy, each page it shares with this process (a stack's start and stop took 17% less CPU).
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    print("ready", flush=True)
    ended: dict[int, int] = {}
    used = [0.0]  # CPU seconds of the children reaped, for harness/cpu_report.py
    connections: list[socket.socket] = []
    while True:
        _reap(ended, used)
        readable, _, _ = select.select([listener, sys.stdin, *connections], [], [], 0.05)
        for ready in readable:
            if ready is listener:
                connections.append(listener.accept()[0])
            elif not isinstance(ready, socket.socket):  # stdin
                if not sys.stdin.readline():
                    raise SystemExit(0)  # the test process is gone: so is this one (its children live on)
            else:
                line = ready.makefile("r").readline()
                if not line:
                    connections.remove(ready)
                    ready.close()
                    continue
                request = json.loads(line)
                if request["op"] == "status":
                    _reap(ended, used)
                    answer = {"returncode": ended.get(request["pid"]), "cpu": used[0]}
                    ready.sendall(json.dumps(answer).encode() + b"\n")
                    continue
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for connection in connections:
                        connection.close()
                    return _become(request)
                ready.sendall(json.dumps({"pid": pid}).encode() + b"\n")


def _reap(ended: dict[int, int], used: list[float]) -> None:
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        ended[pid] = os.waitstatus_to_exitcode(status)  # negative: killed by that signal, as Popen says
        used[0] += usage.ru_utime + usage.ru_stime  # with its own reaped children's


def _become(request: dict[str, Any]) -> tuple[str, list[str]]:
    """In the forked child: the session, directory, input, output, environment and arguments of the command.
    Returns the script to run, or `-m` and the module."""
    if request["new_session"]:
        os.setsid()
    os.chdir(request["cwd"])
    for fd, path, flags in ((0, request.get("stdin") or os.devnull, os.O_RDONLY),
                            (1, request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT),
                            (2, request.get("stderr") or request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    sys.stdin = open(0, closefd=False)  # noqa: SIM115
    # PYTHONUNBUFFERED=1, as the harness sets: every write reaches the log at once.
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True, write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True, write_through=True)
    argv = request["argv"]
    if argv[0] == sys.executable and argv[1] == "-m":  # python -m MODULE ARGS: runpy sets sys.argv[0]
        sys.argv = ["-m", *argv[3:]]
        sys.path.insert(0, request["cwd"])
        return "-m", [argv[2]]
    script = argv[1] if argv[0] == sys.executable else argv[0]
    sys.argv = argv[1:] if argv[0] == sys.executable else argv
    sys.path.insert(0, str(Path(script).resolve().parent))
    return script, sys.argv


class Child:
    """A started process, as much of subprocess.Popen as the harness and the tests use."""

    def __init__(self, preloader: Preloader, pid: int, argv: list[str]) -> None:
        self._preloader, self.pid, self.args = preloader, pid, argv
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._preloader.ask({"op": "status", "pid": self.pid})["returncode"]
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.02)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Preloader:
    """The preloading process of this test process, started at its first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._directory = tempfile.mkdtemp(prefix="recur-preload-")
        self._path = os.path.join(self._directory, "socket")
        self._process = subprocess.Popen([sys.executable, __file__, self._path], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, start_new_session=True)
        assert self._process.stdout is not None
        ready = self._process.stdout.readline()
        assert ready.strip() == "ready", f"the preloading process did not start: {ready!r}"
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._socket.connect(self._path)
        self._answers = self._socket.makefile("r")

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._socket.sendall(json.dumps(request).encode() + b"\n")
            answer: dict[str, Any] = json.loads(self._answers.readline())
            return answer

    def start(self, argv: list[str], env: dict[str, str], log_path: Path, cwd: Path, new_session: bool,
              stderr: Path | None = None, stdin: Path | None = None) -> Child:
        log_path.touch()  # there when this returns, as a log Popen writes to is
        answer = self.ask({"op": "start", "argv": argv, "env": env, "cwd": str(cwd), "log": str(log_path),
                           "stderr": stderr and str(stderr), "stdin": stdin and str(stdin),
                           "new_session": new_session})
        return Child(self, answer["pid"], argv)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._socket.close()
        with contextlib.suppress(OSError):
            self._answers.close()
        if self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(10)
        if self._process.stdout is not None:
            self._process.stdout.close()
        shutil.rmtree(self._directory, ignore_errors=True)  # its socket, and the metrics of its own imports


_preloader: Preloader | None = None
_started_lock = threading.Lock()


def reaped_cpu() -> float:
    """CPU seconds of the processes started here that have ended (harness/cpu_report.py adds them: they are
    the preloading process's children, not this one's)."""
    return 0.0 if _preloader is None else float(_preloader.ask({"op": "status", "pid": 0})["cpu"])


def enabled() -> bool:
    return os.environ.get("RECUR_TEST_PRELOAD", "1") != "0"


def preloader() -> Preloader:
    global _preloader
    with _started_lock:
        if _preloader is None:
            _preloader = Preloader()
            atexit.register(_preloader.close)
        return _preloader


def run(argv: list[str], env: dict[str, str], cwd: Path, input: str | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """subprocess.run(argv, capture_output=True, text=True) for a Python command (`python -m MODULE ARGS` or
    `python SCRIPT ARGS`), forked from the preloading process: the `flask` and `recur` commands the tests run, a
    few hundred in a run, each otherwise importing its libraries again."""
    with tempfile.TemporaryDirectory(prefix="recur-run-") as directory:
        out, err, given = (Path(directory, name) for name in ("out", "err", "in"))
        given.write_text(input or "")
        child = preloader().start(argv, env, out, cwd, False, stderr=err, stdin=given)
        try:
            code = child.wait(timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise
        return subprocess.CompletedProcess(argv, code, out.read_text(errors="replace"),
                                           err.read_text(errors="replace"))


def _main() -> None:
    script, argv = _serve(sys.argv[1])
    import runpy

    try:
        if script == "-m":
            runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    _exit(code)


def _exit_code(code: object) -> int:
    """The status the interpreter exits with for `sys.exit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _exit(code: int) -> None:
    """End as the interpreter ends a process, in its order (the threads that are not daemons joined, the atexit
    handlers run, the output flushed), but without tearing down every module: in a child that holds the preloaded
    libraries that took 0.09 s of CPU, to no purpose (multiprocessing's forked children end so too). A child that
    forks (gunicorn's web processes, a worker's slots) leaves each fork's end through here as well."""
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    _main()
