"""What the tests and the bench share: real processes (redis-server, gunicorn, worker.py, PostgreSQL clusters,
webhook receivers) and the stacks built from them, tokens, databases per test, and the task modules and
legacy configs those processes load. Not shipped: it is imported from the repository root (`python -m pytest`,
`python -m bench`), never installed."""
