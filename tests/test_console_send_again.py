"""The console's Send again on a delivery waiting for its next retry: offered, and pressing it sends the
delivery at once (as POST .../redeliver/), the attempt's entry in the log naming who asked."""

from __future__ import annotations

from harness.console_signin import HTTPS, csrf_of, signed_in_browser
from harness.deliveries import pending_delivery
from harness.receiver import Receiver
from harness.servers import free_port
from harness.tokens import token_for_app
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.notify import delivery
from recur_server.notify.models import Delivery


def test_send_again_sends_a_delivery_waiting_for_its_retry_at_once(app, client):
    app.config.update(RECUR_WEBHOOK_ALLOW_HOSTS="127.0.0.1", RECUR_WEBHOOK_BACKOFF_SECONDS=300)
    receiver = Receiver(free_port(), fail_first=1)
    receiver.start()
    try:
        row_id = pending_delivery(client, receiver.url)
        webhook_id = db.session.get(Delivery, row_id).webhook_id  # type: ignore[union-attr]
        delivery.deliver_due(clock.utcnow())
        delivery.wait_idle()
        db.session.remove()
        browser = signed_in_browser(app, token_for_app(app, "laptop"))
        page = browser.get(f"/webhooks/{webhook_id}", base_url=HTTPS).data.decode()
        assert "HTTP 500" in page or ">500<" in page
        assert f'id="redeliver-{row_id}"' in page  # pending, its retry five minutes away: offered
        pressed = browser.post(f"/webhooks/{webhook_id}/deliveries/{row_id}/redeliver",
                               data={"csrf_token": csrf_of(page.encode())}, base_url=HTTPS, follow_redirects=True)
        assert pressed.status_code == 200 and len(receiver.events()) == 2
        page = pressed.data.decode()
        assert f"Delivery {row_id} was sent again and delivered." in page
        assert "asked by admin (token laptop)" in page and ">204<" in page
        assert f'id="redeliver-{row_id}"' in page  # delivered: it can be sent again
    finally:
        receiver.stop()
