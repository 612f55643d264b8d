# gunicorn reads this file from the working directory: `gunicorn wsgi:app` (the Procfile, scripts/up and the
# tests) answers even its own errors (request line or headers over the limits) in the API's JSON error shape.
from host_metrics import use_host_directory

worker_class = "app.serving.JsonErrorWorker"
use_host_directory()  # every web process, forked from the master, keeps its metrics beside the workers'


def on_starting(server):  # type: ignore[no-untyped-def]
    """The files of processes that ended before this start are folded into the host's archive."""
    import os

    from app.infra.metrics_files import fold_ended

    fold_ended(os.environ["PROMETHEUS_MULTIPROC_DIR"])


def post_worker_init(worker):  # type: ignore[no-untyped-def]
    """Each web process also delivers webhooks and watches for late schedules (app.notify.watch): with
    every worker gone, the web processes still notice that runs stopped happening and say so."""
    from app.notify.watch import start_thread

    start_thread(worker.wsgi)
