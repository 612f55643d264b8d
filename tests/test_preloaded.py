"""harness/preloaded.py: a process forked from the preloading interpreter lives as the command would: the
test's environment, directory, arguments and log, the script run as __main__ (the libraries and the server
preloaded, the rest imported afresh), its exit status (a code, or the signal that killed it), its atexit
handlers run at its end."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from harness import preloaded
from harness.servers import wait_for

SCRIPT = """\
import atexit, os, sys, threading, time
print("argv", sys.argv)
print("cwd", os.getcwd())
print("env", os.environ.get("RECUR_PRELOAD_PROBE"), os.environ.get("HOME"))
print("preloaded", "flask" in sys.modules, "recur_server.factory" in sys.modules, "recur_cli" in sys.modules)
import recur_cli  # what is not preloaded is imported here
print("path", sys.path[0])
atexit.register(lambda: print("atexit ran", flush=True))
# A thread that is no daemon is waited for before the atexit handlers, as the interpreter does.
threading.Thread(target=lambda: (time.sleep(0.3), print("thread ended", flush=True))).start()
if sys.argv[1:] == ["wait"]:
    import time
    time.sleep(60)
sys.exit(int(sys.argv[1]) if sys.argv[1:] and sys.argv[1].isdigit() else 0)
"""


def _start(tmp_path: Path, *args: str) -> tuple[preloaded.Child, Path]:
    script = tmp_path / "probe.py"
    script.write_text(SCRIPT)
    log = tmp_path / f"probe-{'-'.join(args) or 'none'}.log"
    env = {"RECUR_PRELOAD_PROBE": "seen", "PATH": "/usr/bin:/bin"}
    child = preloaded.preloader().start([sys.executable, str(script), *args], env, log, tmp_path, False)
    return child, log


def test_a_preloaded_child_runs_the_script_with_the_tests_environment_directory_and_arguments(tmp_path) -> None:
    child, log = _start(tmp_path, "3")
    assert child.wait(30) == 3
    output = log.read_text()
    assert f"argv ['{tmp_path / 'probe.py'}', '3']" in output, output
    assert f"cwd {tmp_path}" in output
    assert "env seen None" in output  # the test's environment only: not this process's HOME
    assert "preloaded True True False" in output  # the libraries and the server preloaded, the rest not
    assert f"path {tmp_path}" in output
    assert output.index("thread ended") < output.index("atexit ran")  # it ended as an interpreter ends


def test_a_preloaded_child_killed_by_a_signal_says_so_as_popen_does(tmp_path) -> None:
    child, log = _start(tmp_path, "wait")
    wait_for(lambda: "path" in log.read_text(), 30, what="the probe to start")
    assert child.poll() is None
    child.terminate()
    assert child.wait(30) == -signal.SIGTERM
    assert child.returncode == -signal.SIGTERM


def test_a_preloaded_python_m_command_reads_its_input_and_keeps_its_output_and_errors_apart(tmp_path) -> None:
    code = ("import sys; print('out', sys.argv[1:], sys.stdin.read().upper()); "
            "print('err', file=sys.stderr); sys.exit('gave up')")
    module = tmp_path / "probe_module.py"
    module.write_text(code)
    done = preloaded.run([sys.executable, "-m", "probe_module", "a", "b"], {"PATH": "/usr/bin:/bin"}, tmp_path,
                         input="given")
    assert (done.returncode, done.stdout, done.stderr) == (1, "out ['a', 'b'] GIVEN\n", "err\ngave up\n")
    assert done.args[:3] == [sys.executable, "-m", "probe_module"]


def test_a_closed_preloading_process_leaves_no_directory_behind() -> None:
    own = preloaded.Preloader()
    directory = own._directory
    assert os.path.isdir(os.path.join(directory, "metrics"))  # where its own imports count, none of a test's
    own.close()
    assert not os.path.exists(directory)
