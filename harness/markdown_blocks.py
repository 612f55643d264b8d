"""The docs' runnable blocks and a shell to run them in, for the tests that run the docs as written
(tests/test_readme.py, tests/test_two_machines.py).

A marked block is a fenced block right after an HTML comment that names it: `<!-- quickstart -->`, then
a ```bash block (or another fence's, e.g. the ```text lines of a server's configuration file)."""

from __future__ import annotations

import re
import subprocess
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path

BLOCK = re.compile(r"^<!-- ([a-z-]+) -->\n```([a-z]*)\n(.*?)^```$", re.M | re.S)


def marked_blocks(path: Path, languages: Sequence[str] = ("bash",)) -> list[tuple[str, str]]:
    """(marker, text) of each marked block of a Markdown file whose fence names one of `languages`, in order."""
    return [(m.group(1), m.group(3)) for m in BLOCK.finditer(path.read_text()) if m.group(2) in languages]


class Shell:
    """One bash process, as a user's shell: blocks run in it one after another, sharing variables, under
    `set -euo pipefail`. `prefix` goes before `bash` (`ip netns exec NAME`: a shell on another host)."""

    def __init__(self, cwd: Path, env: dict[str, str], workdir: Path, prefix: Sequence[str] = ()) -> None:
        self._workdir = workdir
        self._proc = subprocess.Popen([*prefix, "bash"], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      start_new_session=True)
        self._lines: list[str] = []
        self._cond = threading.Condition()
        self._closed = False
        threading.Thread(target=self._read, daemon=True).start()
        self.transcript: list[str] = []
        self.run("set -euo pipefail")

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            with self._cond:
                self._lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def run(self, script: str, timeout: float = 120, stdin: str | None = None) -> str:
        """Run `script` in the shell (sourced from a file: nothing in it can read the next block as input;
        with `stdin`, what its commands read, as typed at their prompts); its output. A command that fails
        ends the shell, and the test, with the transcript."""
        path = self._workdir / f"block-{uuid.uuid4().hex}.sh"
        path.write_text(script)
        source = f"source {path}"
        if stdin is not None:
            typed = path.with_suffix(".input")
            typed.write_text(stdin)
            source += f" < {typed}"
        marker = f"--- block done {uuid.uuid4().hex}"
        self.transcript.append(f"$ {script.strip()}")
        assert self._proc.stdin is not None
        with self._cond:
            start = len(self._lines)
        self._proc.stdin.write(f"{source}\necho '{marker}'\n")
        self._proc.stdin.flush()
        with self._cond:
            done = self._cond.wait_for(lambda: marker in self._lines[start:] or self._closed, timeout)
            output = self._lines[start:]
        if marker in output:
            output = output[:output.index(marker)]
        self.transcript.extend(output)
        assert done and not self._closed, "the block failed or hung:\n" + "\n".join(self.transcript[-60:])
        return "\n".join(output)

    def value(self, name: str) -> str:
        return self.run(f'echo "${name}"').strip()

    def close(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(10)
        with self._cond:
            self._cond.wait_for(lambda: self._closed, 10)
        assert self._proc.stdout is not None
        self._proc.stdout.close()
