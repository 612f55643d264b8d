"""The HTTP floor for scenario 5: the same Flask + gunicorn stack answering the same shapes of request
with no database and no Redis. `gunicorn bench.floor_app:app`."""

from __future__ import annotations

import itertools

from flask import Flask, jsonify, request

app = Flask(__name__)
_ids = itertools.count(1)
_ITEM = {"id": "00000000-0000-0000-0000-000000000000", "name": "s", "status": "active", "interval_seconds": 3600}


@app.post("/api/v1/schedules/")
def create():  # type: ignore[no-untyped-def]
    body = request.get_json()
    return jsonify({**_ITEM, **body, "id": str(next(_ids))}), 201


@app.get("/api/v1/schedules/")
def listing():  # type: ignore[no-untyped-def]
    limit = int(request.args.get("limit", 50))
    return jsonify({"items": [_ITEM] * limit, "total": limit})
