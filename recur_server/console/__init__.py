"""The web console at `/`: server-rendered pages over the same service layer and scoped queries as the API
(recur_server.services.schedules, recur_server.auth.scope), signed in with an API token kept in a secure session
cookie. The pages
beyond views.py live in modules of their own (one per subject), each registering its routes on the same
blueprint when imported here."""

from __future__ import annotations

from flask import Flask

from recur_server.console import (  # noqa: F401  (the page modules register their routes)
    audit_pages,
    bulk,
    calendar_pages,
    health_pages,
    owner_pages,
    runs,
    session,
    strips,
    times,
    token_pages,
    webhook_pages,
    workflow_pages,
)
from recur_server.console.views import console


def init_app(app: Flask) -> None:
    session.init_app(app)
    times.init_app(app)
    app.add_template_filter(strips.strip)
    app.register_blueprint(console)
