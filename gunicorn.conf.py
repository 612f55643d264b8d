# gunicorn reads this file from the working directory: a checkout's `gunicorn wsgi:app` (the Procfile, scripts/up
# and the tests) takes Recur's settings from recur_server/processes/gunicorn_conf.py, as `recur server` does.
from recur.host_metrics import use_host_directory

use_host_directory()  # every web process, forked from the master, keeps its metrics beside the workers'

from recur_server.processes.gunicorn_conf import *  # noqa: E402,F403
