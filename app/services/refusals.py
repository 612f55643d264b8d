"""What the services refuse when asked to change something, each answered by the API as a 4xx of its own
(app.api.errors.REFUSALS): the operations that carry out many changes at once (an apply, a declarations sync)
catch these to name the change that was refused."""

from __future__ import annotations

from app.calendars.expansion import CalendarInvalid
from app.services import calendars, quotas, schedules, webhooks
from app.timing.work import WorkExceeded

CHANGE_REFUSED = (schedules.Invalid, schedules.Conflict, schedules.DuplicateKey, calendars.Conflict, CalendarInvalid,
                  webhooks.WebhookInvalid, quotas.QuotaExceeded, WorkExceeded)
