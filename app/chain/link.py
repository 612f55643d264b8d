"""The name the RQ jobs of links carry (app.chain.redis_links.LINK_FUNC): links already queued in Redis name
app.chain.link.run_link, so it stays importable here. The job function itself is app.jobs.run_link."""

from app.jobs import run_link

__all__ = ["run_link"]
