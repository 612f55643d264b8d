"""The processes Recur runs, as `recur server` and `recur worker` start them where Recur is installed (and a
checkout's wsgi.py, worker.py and gunicorn.conf.py): the web application gunicorn serves, gunicorn's settings,
and the worker's main."""
