"""Owners and API tokens: who is calling, and the one place that scopes every query to them."""
