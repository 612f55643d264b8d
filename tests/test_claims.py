"""The shards of a pass take test files as they go (harness/claims.py): real pytest processes sharing one claims
directory run every test exactly once, each file whole in one process, module fixtures torn down once per file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.claims import claim_order
from harness.shards import longest_first

FILE = '''
import os, time, pytest

@pytest.fixture(scope="module")
def module_fixture():
    with open(os.environ["LOG"], "a") as log:
        log.write(f"setup {{os.getpid()}} {name}\\n")
    # With READY, a process's files wait (up to 60 s) until another process has taken one too: on a loaded
    # machine one process could otherwise start seconds before the others and take every file.
    ready = os.environ.get("READY")
    if ready:
        open(os.path.join(ready, str(os.getpid())), "w").close()
        waited = time.monotonic()
        while len(os.listdir(ready)) < 2 and time.monotonic() - waited < 60:
            time.sleep(0.05)
    yield
    with open(os.environ["LOG"], "a") as log:
        log.write(f"teardown {{os.getpid()}} {name}\\n")

@pytest.mark.parametrize("n", range(3))
def test_it(module_fixture, n):
    time.sleep({pause})
    with open(os.environ["LOG"], "a") as log:
        log.write(f"ran {{os.getpid()}} {name} {{n}}\\n")
'''


def _outside_the_suite() -> dict[str, str]:
    """This process's environment without what scripts/test gives the suite's own shards (their claim
    directories above all: the processes a test starts must not take files of the suite's)."""
    return {name: value for name, value in os.environ.items()
            if name not in {"RECUR_TEST_CLAIMS", "RECUR_TEST_CLAIMS_EITHER", "RECUR_TEST_SHARD", "RECUR_TEST_POSTGRES",
                            "RECUR_TEST_CPU_REPORT"}}


def test_processes_sharing_a_claims_directory_run_each_file_once_and_whole(tmp_path: Path) -> None:
    names = [f"test_c{index}.py" for index in range(8)]
    suite = tmp_path / "suite"
    suite.mkdir()
    for index, name in enumerate(names):
        (suite / name).write_text(FILE.format(name=name, pause=0.05 if index % 3 else 0.2))
    claims, log = tmp_path / "claims", tmp_path / "log"
    claims.mkdir()
    root = Path(__file__).resolve().parent.parent
    ready = tmp_path / "ready"
    ready.mkdir()
    env = {**_outside_the_suite(), "RECUR_TEST_CLAIMS": str(claims), "LOG": str(log), "PYTHONPATH": str(root),
           "READY": str(ready)}
    processes = [subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "harness.claims", "-p",
                                   "no:cacheprovider", str(suite)], cwd=suite, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for _ in range(3)]
    outputs = [process.communicate(timeout=120)[0].decode() for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0], outputs

    lines = [line.split() for line in log.read_text().splitlines()]
    ran = sorted((line[2], line[3]) for line in lines if line[0] == "ran")
    assert ran == sorted((name, str(n)) for name in names for n in range(3))  # each test once, none left
    runner: dict[str, str] = {}
    for _kind, pid, name, *_ in lines:
        assert runner.setdefault(name, pid) == pid, f"{name} ran in two processes"
    for name in names:  # the module fixture: one setup, one teardown, around the file's three tests
        events = [line[0] for line in lines if line[2] == name]
        assert events == ["setup", "ran", "ran", "ran", "teardown"], (name, events)
    assert sorted(path.name for path in claims.iterdir()) == sorted(f"{name}.claim" for name in names)
    assert len(set(runner.values())) > 1  # the work was shared


DATABASE_FILE = '''
import os, pytest

@pytest.mark.database
@pytest.mark.parametrize("n", range(2))
def test_it(n):
    with open(os.environ["LOG"], "a") as log:
        log.write(f"ran {{os.environ['PASS']}} {name} {{n}}\\n")
'''


def test_a_file_without_the_database_runs_once_on_either_pass_and_the_others_once_on_each(tmp_path: Path) -> None:
    suite, log = tmp_path / "suite", tmp_path / "log"
    suite.mkdir()
    database = [f"test_d{index}.py" for index in range(4)]
    either = [f"test_e{index}.py" for index in range(6)]
    for name in database:
        (suite / name).write_text(DATABASE_FILE.format(name=name))
    for name in either:
        source = FILE.format(name=name, pause=0.05)
        (suite / name).write_text(source.replace("ran {os.getpid()}", "ran {os.environ['PASS']}"))
    directories = {name: tmp_path / name for name in ("sqlite", "postgres", "either")}
    for directory in directories.values():
        directory.mkdir()
    root = Path(__file__).resolve().parent.parent
    processes = []
    for database_pass in ("sqlite", "sqlite", "postgres", "postgres"):
        env = {**_outside_the_suite(), "RECUR_TEST_CLAIMS": str(directories[database_pass]), "PASS": database_pass,
               "RECUR_TEST_CLAIMS_EITHER": str(directories["either"]), "LOG": str(log), "PYTHONPATH": str(root)}
        if database_pass == "postgres":
            env["RECUR_TEST_POSTGRES"] = "postgresql://unused"
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "harness.claims", "-p", "no:cacheprovider", str(suite)],
            cwd=suite, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    outputs = [process.communicate(timeout=120)[0].decode() for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0, 0], outputs

    ran = sorted(tuple(line.split()[1:]) for line in log.read_text().splitlines() if line.startswith("ran"))
    assert [run for run in ran if run[1] in database] == sorted(
        (database_pass, name, str(n)) for database_pass in ("sqlite", "postgres") for name in database
        for n in range(2))
    either_runs = [run for run in ran if run[1] in either]
    assert sorted((name, n) for _, name, n in either_runs) == sorted(
        (name, str(n)) for name in either for n in range(3))
    assert len({(name, database_pass) for database_pass, name, _ in either_runs}) == len(either)  # each on one pass


def test_the_longest_files_come_first_and_unknown_ones_last() -> None:
    order = longest_first(["test_api.py", "test_new_and_unmeasured.py", "test_collisions_e2e.py"], "sqlite")
    assert order == ["test_collisions_e2e.py", "test_api.py", "test_new_and_unmeasured.py"]


def test_the_postgresql_pass_tries_the_files_either_pass_may_run_after_its_own() -> None:
    files = ["tests/test_api.py", "tests/test_readme.py", "tests/test_collisions_e2e.py", "tests/test_docs.py"]
    shared = {"tests/test_readme.py", "tests/test_docs.py"}
    assert claim_order(files, "postgres", shared) == [
        "tests/test_collisions_e2e.py", "tests/test_api.py", "tests/test_readme.py", "tests/test_docs.py"]
    sqlite = claim_order(files, "sqlite", shared)
    assert sqlite == [f"tests/{name}" for name in longest_first([f.split("/")[1] for f in files], "sqlite")]
    assert sqlite != claim_order(files, "postgres", shared)  # the SQLite pass takes them by length alone
