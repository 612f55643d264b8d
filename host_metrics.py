"""The default of PROMETHEUS_MULTIPROC_DIR for the entry points (wsgi.py, worker.py, gunicorn.conf.py): the
processes of one host keep their metrics in `instance/metrics` under the checkout, so a scrape of any web
process adds up what they all counted (app.infra.metrics_files). Set before anything imports prometheus-client,
which reads the variable once, when it is imported; a value given in the environment is kept."""

from __future__ import annotations

import os
from pathlib import Path


def use_host_directory() -> str:
    path = os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(Path(__file__).resolve().parent / "instance"
                                                                   / "metrics"))
    os.makedirs(path, exist_ok=True)
    return path
