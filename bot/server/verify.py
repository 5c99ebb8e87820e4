"""Webhook authenticity: GitHub's and Gitea's HMAC-SHA256 body signatures, GitLab's shared token.

All compared in constant time."""

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


def gitea_signature(secret: str, body: bytes) -> str:
    """The `X-Gitea-Signature` (and Forgejo's `X-Forgejo-Signature`) value for `body`: the hex HMAC-SHA256
    of the exact body with the webhook's secret, no `sha256=` prefix (go-gitea/gitea
    services/webhook/deliver.go, addDefaultHeaders: `hmac.New(sha256.New, secret)` over the payload,
    `req.Header.Add("X-Gitea-Signature", signatureSHA256)`; Forgejo's copy adds X-Forgejo-Signature)."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def gitea_ok(secret: str | None, body: bytes, header: str | None) -> bool:
    if not secret or not header:
        return False
    return hmac.compare_digest(
        gitea_signature(secret, body).encode(), header.strip().lower().encode("utf-8", "replace")
    )
