"""The names jobs queued before Recur's server package was named `recur_server` give their functions: until
0.2.0 it was `app`, and a link or outside run already waiting in Redis names `app.chain.link.run_link` or
`app.chain.outside.run_outside` (RQ imports a job's function by that name when it runs it). A worker answers
to them by registering its own modules under the former names, so that such jobs run after an upgrade; only
these full names, so a team's own package named `app` is left alone."""

from __future__ import annotations

import sys

import recur_server.chain.link
import recur_server.chain.outside
import recur_server.jobs

FORMER = {"app.chain.link": recur_server.chain.link, "app.chain.outside": recur_server.chain.outside,
          "app.jobs": recur_server.jobs}


def answer_to_former_names() -> None:
    for name, module in FORMER.items():
        sys.modules.setdefault(name, module)
