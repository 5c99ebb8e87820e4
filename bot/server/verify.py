"""Webhook authenticity: GitHub's HMAC-SHA256 body signature, GitLab's shared token; both constant-time."""

from __future__ import annotations

import hashlib
import hmac


def github_signature(secret: str, body: bytes) -> str:
    """The `X-Hub-Signature-256` value GitHub sends for `body` (docs: validating webhook deliveries)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def github_ok(secret: str | None, body: bytes, header: str | None) -> bool:
    if not secret or not header:
        return False
    return hmac.compare_digest(
        github_signature(secret, body).encode(), header.strip().encode("utf-8", "replace")
    )


def gitlab_ok(expected: str | None, header: str | None) -> bool:
    if not expected or header is None:
        return False
    return hmac.compare_digest(expected.encode(), header.encode("utf-8", "replace"))
