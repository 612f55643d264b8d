# gunicorn reads this file from the working directory: `gunicorn wsgi:app` (the Procfile, scripts/up and the
# tests) answers even its own errors (request line or headers over the limits) in the API's JSON error shape.
worker_class = "app.serving.JsonErrorWorker"
