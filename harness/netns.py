"""Hosts on one machine: network namespaces on a bridge, for the tests that run Recur on several hosts.

The bridge is in this process's own namespace, which is itself a host of the network (the data host: its
address on the bridge is `.254`); each other host is a named namespace with a veth on the bridge and an
address of its own (`.1`, `.2`, ...), reaching only the bridge's subnet (and its own loopback). `cut(i)`
takes host i off the network (its interface down: what it sends and what is sent to it is lost) until
`restore(i)`. Needs root and `ip`; `available()` says whether this machine can."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

# The interfaces Hosts makes in this process's namespace: its bridge and its veths (the inner end until it is
# moved into the namespace it made, which has nothing else): they lead nowhere beyond the machine.
MADE_HERE = re.compile(r"r[bvp]\d+")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def available() -> bool:
    if os.getuid() != 0 or shutil.which("ip") is None:
        return False
    probe = f"recur-probe-{os.getpid()}"
    try:
        _ip("netns", "add", probe)
    except (subprocess.CalledProcessError, OSError):
        return False
    _ip("netns", "del", probe)
    return True


class Hosts:
    def __init__(self, count: int) -> None:
        pid = os.getpid()
        tag = f"{pid % 100000}"
        # The passes' pytest processes share one network namespace (scripts/test): each process's hosts get a
        # subnet of their own, from its pid (two processes started together have pids apart by less than 12,500).
        self.subnet = f"10.{200 + pid // 250 % 50}.{pid % 250}"
        self.bridge = f"rb{tag}"
        self.names = [f"recur-h{i}-{tag}" for i in range(count)]
        self._veths = [(f"rv{i}{tag}", f"rp{i}{tag}") for i in range(count)]
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.data_address}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for i, name in enumerate(self.names):
            outside, inside = self._veths[i]
            _ip("netns", "add", name)
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", name)
            _ip("link", "set", outside, "master", self.bridge)
            _ip("link", "set", outside, "up")
            self.run(i, "ip", "addr", "add", f"{self.address(i)}/24", "dev", inside)
            self.run(i, "ip", "link", "set", inside, "up")
            self.run(i, "ip", "link", "set", "lo", "up")

    @property
    def data_address(self) -> str:
        return f"{self.subnet}.254"

    def address(self, i: int) -> str:
        return f"{self.subnet}.{i + 1}"

    def prefix(self, i: int) -> list[str]:
        """What to put before a command to run it on host i."""
        return ["ip", "netns", "exec", self.names[i]]

    def run(self, i: int, *argv: str) -> None:
        subprocess.run([*self.prefix(i), *argv], check=True, capture_output=True, timeout=30)

    def cut(self, i: int) -> None:
        self.run(i, "ip", "link", "set", self._veths[i][1], "down")

    def restore(self, i: int) -> None:
        self.run(i, "ip", "link", "set", self._veths[i][1], "up")

    def destroy(self) -> None:
        for name in self.names:
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, timeout=30)
