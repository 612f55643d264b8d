"""Importers: jobs of other schedulers (rq-scheduler, crontab) as an apply file, and what could not be mapped."""
