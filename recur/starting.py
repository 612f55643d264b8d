"""What a Recur process does first, before it imports the server (this package loads nothing of the server's):
it sets the host's metrics directory (recur.host_metrics) and holds Python's cyclic garbage collector until the
process has started. Importing the server makes a few hundred thousand objects, and the collections their count
sets off went over them again and again: a sixth of a process's start (0.1-0.2 s of CPU). What the start made
lives as long as the process, so `started()` puts it out of the collector's reach (gc.freeze) and turns the
collector back on."""

from __future__ import annotations

import gc

from recur.host_metrics import use_host_directory


def starting() -> None:
    use_host_directory()  # before the server's modules import prometheus-client
    gc.disable()


def started() -> None:
    """The process has imported what it runs and made its app: from here on the collector runs as usual, over
    what the process makes from now on. (A forked process then shares the frozen objects' pages with its parent
    instead of copying them when a collection would have touched them.)"""
    gc.freeze()
    gc.enable()
