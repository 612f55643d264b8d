"""`python -m recur_cli`: the same as the `recur` console script."""

from recur_cli.main import cli

cli()
