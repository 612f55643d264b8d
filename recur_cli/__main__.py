"""`python -m recur_cli`: the same as the `recur` console script."""

from recur_cli.main import cli

cli(prog_name="recur")  # its usage lines, and shell completion's _RECUR_COMPLETE, as the script's
