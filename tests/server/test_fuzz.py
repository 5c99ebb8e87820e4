"""Fuzzed bodies and headers, signed or not, never make the running server answer 5xx."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server.stack import GITLAB_TOKEN, Stack, payload

EVENTS = ["issue_comment", "pull_request", "pull_request_review_comment", "ping", "push", "", "x" * 300]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80).map(str.strip)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    s = Stack(tmp_path_factory.mktemp("fuzz"), "http://127.0.0.1:9", server={"max_body_bytes": 20_000})
    s.start_server()
    yield s
    s.stop()


def _mutated(base: dict, key: str, value: object) -> bytes:
    data = json.loads(json.dumps(base))
    node = data
    for part in key.split(".")[:-1]:
        node = node.setdefault(part, {}) if isinstance(node, dict) else {}
    if isinstance(node, dict):
        node[key.split(".")[-1]] = value
    return json.dumps(data).encode()


KEYS = [
    "action",
    "issue",
    "issue.pull_request",
    "issue.number",
    "comment",
    "comment.body",
    "comment.user",
    "comment.author_association",
    "comment.id",
    "repository",
    "repository.full_name",
    "installation.id",
    "pull_request",
    "pull_request.number",
    "number",
]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.one_of(st.binary(max_size=300), json_values.map(lambda v: json.dumps(v).encode())),
    event=st.sampled_from(EVENTS),
    signed=st.booleans(),
    delivery=header_text,
)
def test_github_random_bodies(stack: Stack, body: bytes, event: str, signed: bool, delivery: str) -> None:
    r = stack.github(body, event, delivery=delivery or None, signature="valid" if signed else "sha256=zz")
    assert r.status_code < 500, r.text


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(KEYS), value=json_values, event=st.sampled_from(EVENTS[:3]))
def test_github_signed_mutated_real_payloads(stack: Stack, key: str, value: object, event: str) -> None:
    body = _mutated(payload("issue_comment.created.on_pr.pac-retest.json"), key, value)
    r = stack.github(body, event)
    assert r.status_code < 500, r.text


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    key=st.sampled_from(
        [
            "object_kind",
            "object_attributes",
            "object_attributes.note",
            "merge_request",
            "merge_request.iid",
            "project",
            "project.id",
            "user",
            "object_attributes.action",
        ]
    ),
    value=json_values,
    token=st.sampled_from([GITLAB_TOKEN, "wrong", None]),
)
def test_gitlab_mutated_real_payloads(stack: Stack, key: str, value: object, token: str | None) -> None:
    body = _mutated(payload("note_merge_request.go-gitlab.json", "gitlab"), key, value)
    r = stack.gitlab(body, token=token)
    assert r.status_code < 500, r.text
    if token != GITLAB_TOKEN:
        assert r.status_code == 401


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    headers=st.dictionaries(
        st.sampled_from(
            [
                "X-Hub-Signature-256",
                "X-GitHub-Event",
                "X-GitHub-Delivery",
                "Content-Type",
                "X-Gitlab-Token",
                "X-Gitlab-Event-UUID",
            ]
        ),
        header_text,
        max_size=6,
    )
)
def test_random_headers(stack: Stack, headers: dict[str, str]) -> None:
    for path in ("/webhooks/github", "/webhooks/gitlab"):
        r = stack.http.post(path, content=b'{"action": "created"}', headers=headers)
        assert r.status_code < 500, r.text
        if "X-Hub-Signature-256" not in headers and path.endswith("github"):
            assert r.status_code == 401


def test_oversized_body_is_413(stack: Stack) -> None:
    r = stack.github(b"{" + b" " * 30_000 + b"}")
    assert r.status_code == 413
