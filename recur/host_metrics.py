"""The default of PROMETHEUS_MULTIPROC_DIR for Recur's processes (`recur server`, `recur worker`, and the
checkout's wsgi.py, worker.py and gunicorn.conf.py): the processes of one host keep their metrics in
`instance/metrics` under the directory they start in, so a scrape of any web process adds up what they all
counted (recur_server.infra.metrics_files). Set before anything imports prometheus-client, which reads the
variable once, when it is imported; a value given in the environment is kept. (In this package, whose import
loads nothing of the server's, so that it can run first.)"""

from __future__ import annotations

import os
from pathlib import Path


def use_host_directory() -> str:
    path = os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(Path("instance", "metrics").resolve()))
    os.makedirs(path, exist_ok=True)
    return path
