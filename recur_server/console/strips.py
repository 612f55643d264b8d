"""The strip on the console's schedules list: a schedule's newest runs, one cell each, coloured by how the run
ended, with its due time (UTC) and outcome on hover. A page shows fifty strips of twenty cells; written here in
one pass each rather than cell by cell in a template, a full page costs about what an empty one does."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

from recur_server.console.times import UTC_NAME, in_zone
from recur_server.services.queries import Outcome


def strip(outcomes: Sequence[Outcome]) -> Markup:
    cells = []
    for outcome in outcomes:
        status = escape(outcome.status)
        due = in_zone(outcome.scheduled_for, UTC_NAME)
        cells.append(f'<span class="cell {status}" title="{due} {status}"></span>')
    return Markup(f'<span class="strip" aria-label="last {len(outcomes)} runs">{"".join(cells)}</span>')
