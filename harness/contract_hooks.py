"""schemathesis hooks for the contract test (loaded through SCHEMATHESIS_HOOKS): a webhook URL the fuzzer
makes up in the document's form (http or https, any host) is pointed at loopback, where the test stack's
egress allowlist lets it be taken; its path and query stay as generated. Anything not in that form is sent
as generated, so the refusals of malformed URLs are still checked."""

from __future__ import annotations

import re
from typing import Any

import schemathesis

_HTTP = re.compile(r"^([Hh][Tt][Tt][Pp][Ss]?://)[^/?#]*(.*)$", re.DOTALL)
LOOPBACK = "127.0.0.1:9"  # nothing listens there: a delivery's attempt fails at once, on this machine


@schemathesis.hook
def map_body(context: Any, body: Any) -> Any:
    operation = context.operation
    if operation is None or "/webhooks/" not in operation.path or not isinstance(body, dict):
        return body
    url = body.get("url")
    match = _HTTP.match(url) if isinstance(url, str) else None
    if match is not None:
        body = {**body, "url": match.group(1) + LOOPBACK + match.group(2)}
    return body
