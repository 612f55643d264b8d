"""An owner's named calendars: sets of dates (a country's holidays and dates listed by hand) that schedules
skip or shift their ticks off (the math is recur_server.timing.calendar_days)."""
