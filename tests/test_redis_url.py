"""The REDIS_URL parser: which URLs are Sentinel targets and what they name."""

from __future__ import annotations

import pytest

from recur_server.infra.redis_url import SentinelTarget, parse


@pytest.mark.parametrize("url", ["redis://localhost:6379/0", "rediss://h:6380/1", "unix:///tmp/r.sock"])
def test_plain_and_tls_urls_are_left_to_redis_py(url: str) -> None:
    assert parse(url) is None


def test_sentinel_url_names_hosts_service_and_db() -> None:
    assert parse("redis+sentinel://host1:26379,host2:26380/mymaster/3") == SentinelTarget(
        (("host1", 26379), ("host2", 26380)), "mymaster", 3)


def test_sentinel_defaults_port_and_db() -> None:
    assert parse("redis+sentinel://a,b:1/m") == SentinelTarget((("a", 26379), ("b", 1)), "m", 0)


def test_sentinel_password_and_user() -> None:
    target = parse("redis+sentinel://:s%40cret@a/m/0")
    assert target is not None and (target.username, target.password) == (None, "s@cret")
    target = parse("redis+sentinel://bob:pw@a:5,[::1]:7/m")
    assert target is not None
    assert (target.username, target.password, target.sentinels) == ("bob", "pw", (("a", 5), ("::1", 7)))


def test_tls_sentinel() -> None:
    target = parse("rediss+sentinel://a/m")
    assert target is not None and target.ssl


@pytest.mark.parametrize("url", ["redis+sentinel://a:26379", "redis+sentinel://a/m/x", "redis+sentinel://a:p/m",
                                 "redis+sentinel://a,,b/m", "redis+sentinel://a/m/0/extra"])
def test_malformed_sentinel_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError):
        parse(url)


def test_tls_sentinel_options_in_the_query() -> None:
    target = parse("rediss+sentinel://a,b/m/2?ssl_ca_certs=/etc/ca.pem&ssl_cert_reqs=required&ssl_check_hostname=no")
    assert target is not None
    assert (target.service, target.db, target.sentinels) == ("m", 2, (("a", 26379), ("b", 26379)))
    assert target.tls_options == {"ssl_ca_certs": "/etc/ca.pem", "ssl_cert_reqs": "required",
                                  "ssl_check_hostname": False}


@pytest.mark.parametrize(("url", "names"), [
    ("rediss+sentinel://a/m?ssl_verify=1", "'ssl_verify' is not one of"),
    ("redis+sentinel://a/m?ssl_ca_certs=/ca.pem", "needs TLS"),
    ("rediss+sentinel://a/m?ssl_cert_reqs=always", "ssl_cert_reqs must be one of"),
    ("rediss+sentinel://a/m?ssl_check_hostname=maybe", "ssl_check_hostname must be true or false"),
    ("rediss+sentinel://a/m?ssl_ca_certs=", "ssl_ca_certs is empty"),
    ("rediss+sentinel://a/m?ssl_ca_certs", "query is malformed"),
])
def test_bad_sentinel_options_are_refused_by_name(url: str, names: str) -> None:
    with pytest.raises(ValueError, match=names):
        parse(url)
