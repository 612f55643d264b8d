"""gunicorn's worker for Recur: gunicorn answers some requests before Flask sees them (a request line or a
header over its limits, a malformed request line). Its own pages are HTML; this worker writes them in the
API's one error shape instead, so a client never parses an HTML error page.

Used through gunicorn.conf.py (`worker_class`), which gunicorn reads from the working directory.
"""

from __future__ import annotations

import json
import re
import socket

from gunicorn import util
from gunicorn.workers.gthread import ThreadWorker


def write_json_error(sock: socket.socket, status_int: int, reason: str, mesg: str) -> None:
    code = re.sub(r"[^a-z0-9]+", "_", reason.lower()).strip("_") or "error"
    body = json.dumps({"code": code, "status": status_int, "message": mesg[:500], "errors": {}}).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1")
    util.write_nonblock(sock, head + body)


class JsonErrorWorker(ThreadWorker):  # type: ignore[misc]
    """gunicorn's threaded worker, answering its own errors as JSON."""

    def init_process(self) -> None:
        # gunicorn's handle_error calls util.write_error; this process is a gunicorn worker and nothing else,
        # so its error writer is replaced for the process's lifetime.
        util.write_error = write_json_error
        super().init_process()
