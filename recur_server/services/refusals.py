"""What the services refuse when asked to change something, each answered by the API as a 4xx of its own
(recur_server.api.errors.REFUSALS): the operations that carry out many changes at once (an apply, a declarations sync)
catch these to name the change that was refused."""

from __future__ import annotations

from recur_server.calendars.expansion import CalendarInvalid
from recur_server.services import calendars, quotas, schedules, webhooks
from recur_server.timing.work import WorkExceeded

CHANGE_REFUSED = (schedules.Invalid, schedules.Conflict, schedules.DuplicateKey, calendars.Conflict, CalendarInvalid,
                  webhooks.WebhookInvalid, quotas.QuotaExceeded, WorkExceeded)
