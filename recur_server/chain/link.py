"""The name the RQ jobs of links carry (recur_server.chain.redis_links.LINK_FUNC): links already queued in Redis name
recur_server.chain.link.run_link, so it stays importable here. The job function itself is recur_server.jobs.run_link."""

from recur_server.jobs import run_link

__all__ = ["run_link"]
