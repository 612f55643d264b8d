"""The chaos run's faults: SIGKILLs of workers (with every process each takes down or orphans), Redis
flushed, restarted and stalled, and on PostgreSQL the database restarted and stalled; each recorded with when
it began and ended, for the check to put repairs and write-offs down to."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from redis import Redis

from bench import procfs
from harness.servers import Process, RedisServer

STALL_SECONDS = 10.0


@dataclass
class Fault:
    kind: str
    at: float  # epoch seconds
    until: float | None = None  # when a fault that lasts (a stall) ended


@dataclass
class Postgres:
    """The throwaway PostgreSQL cluster the run uses, to restart and stall."""

    data: Path

    def _as_owner(self, *argv: str) -> None:
        binaries = sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1]
        command = [str(binaries / argv[0]), *argv[1:]]
        if os.getuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        # No pipes: a postmaster that pg_ctl starts would hold them open, and the run would wait for ever.
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def restart(self) -> None:
        self._as_owner("pg_ctl", "-D", str(self.data), "-l", str(self.data.parent / "server.log"), "restart",
                       "-m", "fast", "-w", "-t", "60")

    def processes(self) -> set[int]:
        return procfs.with_descendants(int((self.data / "postmaster.pid").read_text().split()[0]))

    def stall(self, seconds: float) -> None:
        pids = self.processes()
        for pid in pids:
            _signal(pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            for pid in pids:
                _signal(pid, signal.SIGCONT)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _group_pids(pgid: int) -> set[int]:
    """Every process a killed worker takes down or orphans, read before it is killed: its process group,
    and its descendants (a work process may lead a process group of its own)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int(procfs.stat(int(entry.name))[2]) == pgid:
                    found.add(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found | procfs.with_descendants(pgid)


class Target(Protocol):
    """What the faults hit (bench.chaos.Chaos): the workers, replaced as they are killed, redis-server and the
    PostgreSQL cluster if any; the faults and the pids they killed are recorded on it."""

    workers: list[Process]
    redis: RedisServer
    postgres: Postgres | None
    faults: list[Fault]
    killed_pids: set[int]

    def start_worker(self) -> Process: ...


def inject_faults(chaos: Target, duration: float, rng: random.Random, db_faults: bool) -> None:
    """Kills every 3-8 s; one of each other fault at its point of the run, one at a time (a stall blocks
    this loop for its length, so no kill lands during one)."""
    start = time.time()
    stall = min(STALL_SECONDS, duration / 10)
    once: list[tuple[float, str]] = [(0.35, "FLUSHALL"), (0.7, "redis restart")]
    if db_faults:
        once.append((0.85, "redis stall"))
        if chaos.postgres is not None:
            once += [(0.2, "postgres restart"), (0.5, "postgres stall")]
    pending = sorted((start + duration * share, kind) for share, kind in once)
    next_kill = start + rng.uniform(3, 8)
    while time.time() < start + duration:
        now = time.time()
        if now >= next_kill:
            victim = rng.randrange(len(chaos.workers))
            chaos.killed_pids |= _group_pids(chaos.workers[victim].pid)
            chaos.workers[victim].kill(whole_group=True)
            chaos.faults.append(Fault("kill -9 worker", time.time()))
            chaos.workers[victim] = chaos.start_worker()
            next_kill = time.time() + rng.uniform(3, 8)
        if pending and now >= pending[0][0]:
            _, kind = pending.pop(0)
            fault = Fault(kind, time.time())
            chaos.faults.append(fault)
            if kind == "FLUSHALL":
                Redis.from_url(chaos.redis.url).flushall()
            elif kind == "redis restart":
                chaos.redis.restart(down_seconds=1.0)
            elif kind == "redis stall":
                _signal(chaos.redis.pid, signal.SIGSTOP)
                try:
                    time.sleep(stall)
                finally:
                    _signal(chaos.redis.pid, signal.SIGCONT)
            elif kind == "postgres restart":
                assert chaos.postgres is not None
                chaos.postgres.restart()
            elif kind == "postgres stall":
                assert chaos.postgres is not None
                chaos.postgres.stall(stall)
            fault.until = time.time()
            print(f"{kind} at +{fault.at - start:.0f}s, {fault.until - fault.at:.1f}s", flush=True)
        time.sleep(0.1)
