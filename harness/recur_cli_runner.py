"""Run the `recur` command line as a user would (a separate process, against a real server)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from harness.servers import python_command


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def recur(url: str, token: str | None, *args: str, stdin: str | None = None, ok: bool = True) -> Result:
    """`recur ARGS` with RECUR_URL and RECUR_TOKEN set; with `ok`, fail unless it exits 0."""
    env = {**os.environ, "RECUR_URL": url}
    env.pop("RECUR_TOKEN", None)
    if token is not None:
        env["RECUR_TOKEN"] = token
    done = python_command([sys.executable, "-m", "recur_cli", *args], env, input=stdin)
    result = Result(done.returncode, done.stdout, done.stderr)
    if ok:
        assert result.code == 0, (args, result)
    return result
