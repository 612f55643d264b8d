"""Recur's WSGI app (wsgi.py) with two routes that only the request-deadline test serves: one that runs
Python for as long as it is asked (a request the deadline stops where it stands) and one that sleeps in C
(one no exception reaches: the deadline ends its process). Served by real gunicorn with Recur's own worker
and configuration: `gunicorn harness.slow_wsgi:app`."""

from __future__ import annotations

import os
import time

from flask import jsonify, request

from wsgi import app


def _spin() -> object:
    until = time.monotonic() + float(request.args.get("seconds", "60"))
    turns = 0
    while time.monotonic() < until:
        turns += 1
    return jsonify({"turns": turns, "pid": os.getpid()})


def _sleep() -> object:
    time.sleep(float(request.args.get("seconds", "60")))
    return jsonify({"pid": os.getpid()})


app.add_url_rule("/test/spin/", view_func=_spin)
app.add_url_rule("/test/sleep/", view_func=_sleep)
