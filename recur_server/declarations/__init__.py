"""Sync of declarations: bring the database in line with the schedules the code declares (DESIGN 17)."""
