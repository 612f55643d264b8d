"""Standard Webhooks signatures (https://www.standardwebhooks.com): what Svix and many receivers verify.

The secret is `whsec_` + base64 of random bytes; the signature of a delivery is
`v1,` + base64(HMAC-SHA256(secret bytes, f"{id}.{timestamp}.{body}")).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

PREFIX = "whsec_"


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def secret_bytes(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(PREFIX))


def is_valid_secret(secret: str) -> bool:
    if not secret.startswith(PREFIX):
        return False
    try:
        return 16 <= len(base64.b64decode(secret.removeprefix(PREFIX), validate=True)) <= 64
    except ValueError:
        return False


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_bytes(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, message_id, timestamp, body),
        "Content-Type": "application/json",
        "User-Agent": "Recur-Webhooks/1",
    }
