"""REDIS_URL=redis+sentinel://: a client made by connect_redis writes to the master the Sentinels name, and
after the master is killed and a replica promoted, the same client writes to the new master; the same over
TLS (rediss+sentinel://, the servers speaking only TLS, with a private CA named in the URL)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis import Redis
from redis.exceptions import RedisError

from harness.servers import Tls, answers_ping, free_port, wait_for
from recur_server.infra.extensions import connect_redis

SENTINEL = shutil.which("redis-sentinel")
pytestmark = pytest.mark.skipif(SENTINEL is None or shutil.which("redis-server") is None,
                                reason="redis-sentinel is not installed (apt-get install redis-sentinel)")
SERVICE = "recurmaster"


class Cluster:
    """A master, one replica and three Sentinels on free loopback ports, with a fast failover. With `tls`
    every one of them speaks only TLS, to clients and to each other, and `url` is rediss+sentinel://
    naming the CA."""

    def __init__(self, workdir: Path, tls: Tls | None = None) -> None:
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.tls = tls
        self.master_port, self.replica_port = free_port(), free_port()
        self._server("master", self.master_port, workdir)
        self._server("replica", self.replica_port, workdir, "--replicaof", "127.0.0.1", str(self.master_port))
        self.sentinel_ports = [free_port() for _ in range(3)]
        for i, port in enumerate(self.sentinel_ports):
            conf = workdir / f"sentinel-{i}.conf"  # Sentinel rewrites its config file, so each has its own
            conf.write_text(
                (f"port {port}\n" if tls is None else f"port 0\ntls-port {port}\n") +
                f"bind 127.0.0.1\ndir {workdir}\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {self.master_port} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} 1000\n"
                f"sentinel failover-timeout {SERVICE} 3000\n"
                f"sentinel parallel-syncs {SERVICE} 1\n" + (_tls_conf(tls) if tls is not None else ""))
            assert SENTINEL is not None
            self.procs[f"sentinel-{i}"] = subprocess.Popen([SENTINEL, str(conf)], stdout=subprocess.DEVNULL,
                                                           stderr=subprocess.DEVNULL)
        for port in self.sentinel_ports:
            wait_for(lambda port=port: self._answers(port), 10, what="sentinel to answer")
        hosts = ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports)
        self.url = (f"redis+sentinel://{hosts}/{SERVICE}/0" if tls is None
                    else f"rediss+sentinel://{hosts}/{SERVICE}/0?ssl_ca_certs={tls.ca}")

    def _server(self, name: str, port: int, workdir: Path, *extra: str) -> None:
        tls = self.tls
        ports = ["--port", str(port)] if tls is None else ["--port", "0", "--tls-port", str(port),
                                                            "--tls-replication", "yes", *tls.server_args()]
        self.procs[name] = subprocess.Popen(
            ["redis-server", *ports, "--bind", "127.0.0.1", "--save", "", "--dir", str(workdir),
             *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: self._answers(port), 10, what=f"redis {name} to answer")

    def _answers(self, port: int) -> bool:
        return answers_ping(port, self.tls)

    def server(self, port: int) -> Redis:
        """A client of one server itself (the master, the replica or a Sentinel), not through the Sentinels."""
        if self.tls is None:
            return Redis(port=port, socket_timeout=2)
        return Redis(port=port, socket_timeout=2, ssl=True, ssl_ca_certs=str(self.tls.ca))

    def master_named(self) -> int:
        sentinel = self.server(self.sentinel_ports[0])
        return int(sentinel.sentinel_get_master_addr_by_name(SERVICE)[1])

    def kill_master(self) -> None:
        self.procs["master"].kill()
        self.procs["master"].wait(10)

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def _tls_conf(tls: Tls) -> str:
    """A Sentinel that reaches the servers and the other Sentinels over TLS (tls-replication)."""
    return (f"tls-cert-file {tls.cert}\ntls-key-file {tls.key}\ntls-ca-cert-file {tls.ca}\n"
            "tls-auth-clients no\ntls-replication yes\n")


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    yield from _running(Cluster(tmp_path))


@pytest.fixture(params=["plain", "tls"])
def any_cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    yield from _running(Cluster(tmp_path, Tls(tmp_path) if request.param == "tls" else None))


def _running(c: Cluster) -> Iterator[Cluster]:
    try:
        yield c
    finally:
        c.stop()


def _writes(client: Redis, key: str) -> bool:
    try:
        return bool(client.set(key, "1"))
    except RedisError:
        return False


def test_connect_redis_follows_a_sentinel_failover(any_cluster: Cluster) -> None:
    cluster = any_cluster
    client = connect_redis(cluster.url)
    assert client.set("before", "1")
    assert cluster.server(cluster.master_port).get("before") == b"1"
    wait_for(lambda: cluster.server(cluster.replica_port).get("before") == b"1", 10, what="replication")
    cluster.kill_master()
    wait_for(lambda: cluster.master_named() == cluster.replica_port, 30, interval=0.2, what="promotion")
    wait_for(lambda: _writes(client, "after"), 30, interval=0.2, what="writes to the new master")
    assert cluster.server(cluster.replica_port).get("after") == b"1"


def test_worker_chains_survive_a_master_failover(cluster: Cluster, tmp_path: Path, database_url: str) -> None:
    """Real worker.py processes and the API on the Sentinel URL; the master is SIGKILLed mid-run. After the
    promotion every chain runs again (within 30 s), and no (schedule, repeat) body ran twice."""
    from collections import Counter

    from harness.servers import start_worker
    from harness.stack import parse_instant, serve_api

    log = tmp_path / "executions.log"
    env = {"DATABASE_URL": database_url, "REDIS_URL": cluster.url, "RECUR_RECONCILE_SECONDS": "1",
           "RECUR_LEASE_SECONDS": "3", "RECUR_EXECUTION_LOG": str(log)}
    web, api = serve_api(env, tmp_path / "web.log")
    processes = [web]
    try:
        processes += [start_worker(env, tmp_path / f"worker{i}.log", slots=1) for i in range(2)]
        workflow = api.ok("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
        ids = [api.ok("POST", "/api/v1/schedules/", {"name": f"s{i}", "workflow_id": workflow["id"],
                                                     "interval_seconds": 1})["id"] for i in range(50)]
        wait_for(lambda: all(len(api.runs(i)) >= 2 for i in ids), 30, interval=0.3, what="every chain to run")
        cluster.kill_master()
        wait_for(lambda: cluster.master_named() == cluster.replica_port, 30, interval=0.2, what="promotion")
        promoted_at = max(parse_instant(r["started_at"]) for i in ids for r in api.runs(i) if r["started_at"])

        def all_ran_again() -> bool:
            return all(any(r["started_at"] and parse_instant(r["started_at"]) > promoted_at
                           and r["status"] == "succeeded" for r in api.runs(i)) for i in ids)

        wait_for(all_ran_again, 30, interval=0.5, what="every chain to run again after the promotion")
        executions = Counter(tuple(line.split()[:2]) for line in log.read_text().splitlines())
        twice = {key: n for key, n in executions.items() if n > 1}
        assert not twice, twice
        for schedule_id in ids:
            assert api.ok("GET", f"/api/v1/schedules/{schedule_id}/")["status"] == "active"
        assert all(process.alive() for process in processes)  # no process quit when its Redis went away
    finally:
        for process in processes:
            process.stop()
        for name in ("web.log", "worker0.log", "worker1.log"):
            path = tmp_path / name
            if path.exists():
                print(f"----- {name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-30:]))
