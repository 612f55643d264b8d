"""The web application gunicorn serves: `recur server` (recur_server.processes.wsgi:app), a checkout's
`gunicorn wsgi:app`. Made when gunicorn imports it, in each web process."""

from recur_server import create_app
from recur_server.services.schema import ensure_schema

app = create_app()
ensure_schema(app)
