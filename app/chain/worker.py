"""RQ worker for links: when a work horse dies under a link, the attempt fails and the chain goes on."""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

from rq import Worker

from app import clock
from app.chain import state
from app.chain.handoff import hand_off
from app.chain.ids import parse_link_id
from app.extensions import db

log = logging.getLogger(__name__)


class RecurWorker(Worker):
    def setup_work_horse_signals(self) -> None:
        """A SIGTERM sent to the whole process group (systemd, Heroku, Ctrl-C in a shell) must not kill a
        running link: the worker's warm shutdown lets it finish and hand off; a second signal kills it."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def handle_work_horse_killed(self, job: Any, retpid: int, ret_val: int, rusage: Any) -> None:
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)  # type: ignore[no-untyped-call]
        parsed = parse_link_id(job.id)
        if parsed is None:
            return
        schedule_id, repeat, retry = parsed
        signal_note = f" by signal {os.WTERMSIG(ret_val)}" if ret_val and os.WIFSIGNALED(ret_val) else ""
        reason = f"work process died{signal_note} (exit status {ret_val})"
        db.session.remove()  # start from the database as the work horse left it
        try:
            schedule = state.write_off(schedule_id, repeat, retry, reason, clock.utcnow())
            if schedule is not None:
                hand_off(schedule)
        except Exception:  # the reconciler repairs what this could not
            log.exception("could not record the death of link %s", job.id)
        finally:
            db.session.remove()
