"""`client.webhooks`: signed webhooks, their delivery log, and redelivery by hand."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, cast

from recur_client.pages import WALK_PAGE, walk
from recur_client.results import CreatedWebhook, Delivery, DeliveryAttempt, DeliveryAttemptPage, Page, Webhook
from recur_client.transport import Transport


class Webhooks:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def list(self, *, limit: int | None = None, offset: int | None = None,
             cursor: str | None = None) -> Page[Webhook]:
        query = {"limit": limit, "offset": offset, "cursor": cursor}
        return cast(Page[Webhook], self.transport.request("GET", "/webhooks/", query=query))

    def iterate(self) -> Iterator[Webhook]:
        """Every webhook of the token's owner, walked page by page by cursor."""
        return walk(lambda cursor: self.list(limit=WALK_PAGE, cursor=cursor))

    def get(self, webhook_id: int) -> Webhook:
        return cast(Webhook, self.transport.request("GET", f"/webhooks/{webhook_id}/"))

    def create(self, url: str, event_types: Sequence[str], secret: str | None = None) -> CreatedWebhook:
        """A new webhook for these event types; the answer's `secret` (given, or made by the server) signs
        every delivery and is never shown again."""
        body: dict[str, Any] = {"url": url, "event_types": list(event_types)}
        if secret is not None:
            body["secret"] = secret
        return cast(CreatedWebhook, self.transport.request("POST", "/webhooks/", body))

    def update(self, webhook_id: int, *, url: str | None = None,
               event_types: Sequence[str] | None = None) -> Webhook:
        """Change the webhook's URL or event types (PATCH); its secret and delivery log stay."""
        body: dict[str, Any] = {}
        if url is not None:
            body["url"] = url
        if event_types is not None:
            body["event_types"] = list(event_types)
        return cast(Webhook, self.transport.request("PATCH", f"/webhooks/{webhook_id}/", body))

    def delete(self, webhook_id: int) -> None:
        self.transport.request("DELETE", f"/webhooks/{webhook_id}/")

    def deliveries(self, webhook_id: int, *, limit: int | None = None, offset: int | None = None,
                   cursor: str | None = None) -> DeliveryAttemptPage:
        """One page of the webhook's delivery log: each attempt, newest first, and how many are pending."""
        query = {"limit": limit, "offset": offset, "cursor": cursor}
        return cast(DeliveryAttemptPage,
                    self.transport.request("GET", f"/webhooks/{webhook_id}/deliveries/", query=query))

    def iterate_deliveries(self, webhook_id: int) -> Iterator[DeliveryAttempt]:
        """The webhook's whole delivery log, walked page by page by cursor."""
        return walk(lambda cursor: self.deliveries(webhook_id, limit=WALK_PAGE, cursor=cursor))

    def redeliver(self, webhook_id: int, delivery_id: int) -> Delivery:
        """Send a failed, dropped or delivered delivery again (due now); one already pending is left alone, so
        asking twice sends once."""
        return cast(Delivery, self.transport.request(
            "POST", f"/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver/", {}))
