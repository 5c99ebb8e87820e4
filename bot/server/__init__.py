"""Webhook server: signed events -> authorised commands -> durable per-PR jobs -> worker processes."""
