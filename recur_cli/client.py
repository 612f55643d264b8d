"""The CLI's client is the public one (recur_client): one client for scripts and the command line."""

from __future__ import annotations

from recur_client import ApiError, Client

__all__ = ["ApiError", "Client"]
