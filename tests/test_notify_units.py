"""The pure parts of failure handling: the breaker's decisions with literal datetimes, missed-run lateness,
Standard Webhooks signatures against the specification's own example, and the outbound-address guard."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from recur_server.notify import guard, signing
from recur_server.notify.delivery import backoff_seconds
from recur_server.policies import breaker
from recur_server.policies.alerts import is_late

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_the_breaker_opens_at_its_threshold_probes_once_and_closes_on_success() -> None:
    state = breaker.Breaker(breaker.CLOSED, 0, None, None)
    for n in range(2):
        state, moved = breaker.record(state, 3, f"r{n}", False, T0)
        assert moved is None and state.failures == n + 1
    state, moved = breaker.record(state, 3, "r2", False, T0)
    assert state.state == breaker.OPEN and moved == breaker.Transition("closed", "open",
                                                                      "3 consecutive failed runs (threshold 3)")
    assert breaker.admit(state, 5, "early", T0 + timedelta(seconds=4.9))[0] is False
    allowed, state, moved = breaker.admit(state, 5, "probe", T0 + timedelta(seconds=5))
    assert allowed and state.state == breaker.HALF_OPEN and state.probe_run_id == "probe"
    assert breaker.admit(state, 5, "second", T0 + timedelta(seconds=6))[0] is False  # one probe only
    state, moved = breaker.record(state, 3, "straggler", True, T0 + timedelta(seconds=6))
    assert state.state == breaker.HALF_OPEN  # a run other than the probe decides nothing
    state, moved = breaker.record(state, 3, "probe", False, T0 + timedelta(seconds=7))
    assert state.state == breaker.OPEN and state.opened_at == T0 + timedelta(seconds=7) and moved is not None
    allowed, state, _ = breaker.admit(state, 5, "probe2", T0 + timedelta(seconds=12))
    state, moved = breaker.record(state, 3, "probe2", True, T0 + timedelta(seconds=12))
    assert state == breaker.Breaker(breaker.CLOSED, 0, None, None) and moved is not None


def test_a_success_resets_the_count_of_consecutive_failures() -> None:
    state = breaker.Breaker(breaker.CLOSED, 2, None, None)
    state, _ = breaker.record(state, 3, "ok", True, T0)
    state, moved = breaker.record(state, 3, "bad", False, T0)
    assert state.failures == 1 and moved is None


def test_late_is_past_the_expected_tick_by_more_than_alert_after() -> None:
    assert not is_late(T0, 5, T0 + timedelta(seconds=5))
    assert is_late(T0, 5, T0 + timedelta(seconds=5.001))
    assert not is_late(None, 5, T0) and not is_late(T0, None, T0 + timedelta(days=1))


def test_signatures_match_the_standard_webhooks_example() -> None:
    # the example of https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
    assert signing.sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
                        b'{"test": 2432232314}') == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    made = signing.new_secret()
    assert signing.is_valid_secret(made) and not signing.is_valid_secret("whsec_short")


@pytest.mark.parametrize("url", ["http://127.0.0.1/", "http://[::1]/", "http://10.0.0.7/", "http://192.168.1.1/",
                                 "http://169.254.169.254/latest/meta-data", "http://0.0.0.0/", "http://[fd00::1]/",
                                 "http://[::ffff:127.0.0.1]/", "http://localhost:8080/",
                                 "http://100.64.0.1/", "http://198.18.0.1/", "http://224.0.0.1/"])
def test_internal_addresses_are_refused(url: str) -> None:
    with pytest.raises(guard.Refused, match="internal address"):
        guard.resolve(url, frozenset())


@pytest.mark.parametrize(("url", "why"), [("ftp://example.com/", "http or https"), ("http:///x", "name a host"),
                                          ("http://u:p@example.com/", "user name"), ("http://[zz/", "valid URL")])
def test_only_plain_http_and_https_urls(url: str, why: str) -> None:
    with pytest.raises(guard.Refused, match=why):
        guard.parse(url)


def test_an_allowed_host_may_be_internal_and_the_request_goes_to_the_address_checked() -> None:
    target = guard.resolve("http://127.0.0.1:8080/hook?x=1", frozenset({"127.0.0.1"}))
    assert (target.address, target.port, target.path) == ("127.0.0.1", 8080, "/hook?x=1")


def test_backoff_doubles_up_to_its_cap() -> None:
    assert [backoff_seconds(n, 5, 3600) for n in (1, 2, 3, 4, 12)] == [5, 10, 20, 40, 3600]
