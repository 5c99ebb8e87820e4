"""Bitbucket Data Center webhooks: the X-Hub-Signature check and payload -> Event."""

from __future__ import annotations

import json
from pathlib import Path

from bot.forges.bitbucket.webhook import parse, signature, signature_ok
from bot.server.events import Event

DATA = Path(__file__).resolve().parents[1] / "data" / "bitbucket"
SECRET = "s3cret"


def _payload(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def test_a_valid_signature_passes_and_any_change_fails() -> None:
    body = (DATA / "pr_opened.json").read_bytes()
    header = signature(SECRET, body)
    assert header.startswith("sha256=") and len(header) == 7 + 64
    assert signature_ok(SECRET, body, header)
    assert not signature_ok(SECRET, body + b" ", header)
    assert not signature_ok("other", body, header)
    assert not signature_ok(SECRET, body, header.replace("sha256=", "sha1="))
    assert not signature_ok(SECRET, body, None) and not signature_ok(None, body, header)


def test_pr_opened_is_a_pr_event() -> None:
    ev = parse("pr:opened", _payload("pr_opened.json"))
    assert ev == Event(
        "bitbucket",
        "pr",
        "PRJ/widgets",
        3,
        "opened",
        head_sha="ef8755f06ee4b28c96a847a95cb8ec8ed6ddd1ca",
        author="dev",
        author_id=2,
    )


def test_new_commits_carry_the_head_they_replaced() -> None:
    data = {**_payload("pr_opened.json"), "eventKey": "pr:from_ref_updated", "previousFromHash": "c" * 40}
    ev = parse("pr:from_ref_updated", data)
    assert isinstance(ev, Event) and ev.action == "synchronize" and ev.before == "c" * 40


def test_a_comment_is_a_comment_event_and_a_reply_names_its_thread() -> None:
    ev = parse("pr:comment:added", _payload("pr_comment_added.json"))
    assert isinstance(ev, Event) and (ev.kind, ev.body, ev.comment_id, ev.author, ev.thread) == (
        "comment",
        "/review",
        62,
        "reviewer",
        "",
    )
    reply = parse("pr:comment:added", {**_payload("pr_comment_added.json"), "commentParentId": 43})
    assert isinstance(reply, Event) and reply.thread == "43"


def test_the_bots_own_comment_is_marked() -> None:
    data = _payload("pr_comment_added.json")
    data["comment"]["text"] = "[prereview:summary]: #\nhello"  # a marker as the bot writes it on Bitbucket
    ev = parse("pr:comment:added", data)
    assert isinstance(ev, Event) and ev.is_bot


def test_unknown_events_are_ignored_with_a_reason() -> None:
    why = parse("diagnostics:ping", {"test": True})
    assert isinstance(why, str) and "diagnostics:ping" in why
    assert isinstance(parse("pr:merged", _payload("pr_opened.json")), str)


def test_a_payload_without_a_valid_repository_is_ignored() -> None:
    data = _payload("pr_opened.json")
    data["pullRequest"]["toRef"]["repository"]["slug"] = "../../admin"
    assert isinstance(parse("pr:opened", data), str)
    assert isinstance(parse("pr:opened", {"pullRequest": "nope"}), str)


def test_receive_checks_the_signature_before_reading_the_body() -> None:
    from bot.forges.bitbucket.webhook import receive

    body = (DATA / "pr_opened.json").read_bytes()
    good = {"x-event-key": "pr:opened", "x-hub-signature": signature(SECRET, body)}
    ev = receive(SECRET, body, good)
    assert isinstance(ev, Event) and ev.repo == "PRJ/widgets"
    bad = receive(SECRET, body, {**good, "x-hub-signature": signature("wrong", body)})
    assert isinstance(bad, tuple) and bad[0] == 401 and "X-Hub-Signature" in bad[1]
    assert receive(
        SECRET, b"{", {"x-event-key": "pr:opened", "x-hub-signature": signature(SECRET, b"{")}
    ) == (
        400,
        "body is not JSON",
    )
    ping = {"x-event-key": "diagnostics:ping", "x-hub-signature": signature(SECRET, b"{}")}
    assert receive(SECRET, b"{}", ping) == (200, "pong")
    merged = {"x-event-key": "pr:merged", "x-hub-signature": signature(SECRET, body)}
    ignored = receive(SECRET, body, merged)
    assert isinstance(ignored, tuple) and ignored[0] == 200 and "pr:merged" in ignored[1]
