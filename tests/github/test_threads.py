"""Resolving review threads whose finding disappeared: GraphQL `resolveReviewThread`, validated by the
emulated API against GitHub's public schema (excerpt in tests/data/github_graphql)."""

from __future__ import annotations

import httpx

from bot.change.diff import parse
from bot.forges.github.api import GitHubAPI
from bot.forges.github.graphql import RESOLVE_MUTATION, THREADS_QUERY
from bot.forges.github.summary import RESOLVED_MARKER
from bot.publish.github import GitHubPublisher
from bot.types import Coverage, Finding, Review, Stats
from tests.fakes.github_api import FakeGitHub

HEAD, BASE = "a" * 40, "b" * 40
DIFF = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,1 +1,3 @@\n a = 1\n+b = 2\n+c = 3\n"


def _review(*findings: Finding) -> Review:
    return Review(BASE, HEAD, findings, Stats(model="scripted"), Coverage(reviewed=("app.py",)))


def _api(gh: FakeGitHub) -> GitHubAPI:
    return GitHubAPI(gh.url, "ghs_test", gh.repo, sleep=lambda s: None, write_interval=0)


def test_a_gone_finding_resolves_its_thread() -> None:
    gone, kept = (
        Finding("app.py", 2, "b is wrong", quote="b = 2"),
        Finding("app.py", 3, "c too", quote="c = 3"),
    )
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh:
        pub = GitHubPublisher(_api(gh), 1)
        pub.publish(_review(gone, kept), parse(DIFF))
        by_line = {c["line"]: c["id"] for c in gh.comments}
        res = pub.publish(_review(kept), parse(DIFF))
        assert res.resolved == 1 and pub.threads_resolved == 1
        assert gh.resolved_threads == {by_line[2]}  # only the gone finding's thread
        assert RESOLVED_MARKER in next(c["body"] for c in gh.comments if c["line"] == 2)
        again = GitHubPublisher(_api(gh), 1)
        again.publish(_review(kept), parse(DIFF))
        assert again.threads_resolved == 0  # nothing resolved twice
        assert gh.schema_errors == []
        threads = _api(gh).review_threads(1)
        assert {(t.first_comment, t.resolved) for t in threads} == {(by_line[2], True), (by_line[3], False)}


def test_a_token_that_may_not_resolve_threads_leaves_a_note() -> None:
    f = Finding("app.py", 2, "b is wrong", quote="b = 2")
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh:
        GitHubPublisher(_api(gh), 1).publish(_review(f), parse(DIFF))
        gh.read_only_graphql = True
        pub = GitHubPublisher(_api(gh), 1)
        res = pub.publish(_review(), parse(DIFF))
        assert res.resolved == 1 and gh.resolved_threads == set()
        assert any("could not resolve review threads" in n for n in res.notes)


def test_the_emulated_endpoint_validates_against_the_schema() -> None:
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh:
        headers = {"Authorization": "token ghs_test"}
        bad = 'mutation { resolveReviewThread(input: {id: "x"}) { thread { id } } }'  # threadId, not id
        r = httpx.post(f"{gh.url}/graphql", json={"query": bad}, headers=headers)
        assert r.status_code == 200 and r.json()["errors"] and gh.schema_errors
        gh.schema_errors.clear()
        for query, variables in (
            (RESOLVE_MUTATION, {"threadId": "PRRT_unknown"}),
            (THREADS_QUERY, {"owner": "o", "name": "r", "number": 1, "after": None}),
        ):
            r = httpx.post(
                f"{gh.url}/graphql", json={"query": query, "variables": variables}, headers=headers
            )
            assert r.status_code == 200
        assert gh.schema_errors == []  # what prereview sends is valid for GitHub's schema
