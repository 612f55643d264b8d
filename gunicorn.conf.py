# gunicorn reads this file from the working directory: `gunicorn wsgi:app` (the Procfile, scripts/up and the
# tests) answers even its own errors (request line or headers over the limits) in the API's JSON error shape.
worker_class = "app.serving.JsonErrorWorker"


def post_worker_init(worker):  # type: ignore[no-untyped-def]
    """Each web process also delivers webhooks and watches for late schedules (app.notify.watch): with
    every worker gone, the web processes still notice that runs stopped happening and say so."""
    from app.notify.watch import start_thread

    start_thread(worker.wsgi)
