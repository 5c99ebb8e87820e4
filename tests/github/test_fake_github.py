"""The emulated GitHub API itself answers like GitHub (so the other tests mean something)."""

from __future__ import annotations

import httpx

from tests.fakes.github_api import LINE_NOT_IN_DIFF, FakeGitHub

DIFF = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,3 @@\n x\n+y\n z\n"
AUTH = {"Authorization": "token t"}


def test_schema_validation_pagination_diff_and_errors() -> None:
    with FakeGitHub(diff_text=DIFF) as gh:
        c = httpx.Client(base_url=gh.url + "/repos/o/r", headers=AUTH)
        bad = c.post("/pulls/1/reviews", json={"event": "MAYBE", "body": "x"})
        assert bad.status_code == 422 and gh.schema_errors and "MAYBE" in gh.schema_errors[0]
        gh.schema_errors.clear()
        off = c.post(
            "/pulls/1/reviews",
            json={"event": "COMMENT", "body": "x", "comments": [{"path": "a.py", "line": 9, "body": "b"}]},
        )
        assert off.status_code == 422 and off.json()["errors"] == [LINE_NOT_IN_DIFF]
        ok = c.post(
            "/pulls/1/reviews",
            json={
                "event": "COMMENT",
                "body": "x",
                "comments": [{"path": "a.py", "line": 2, "side": "RIGHT", "body": "b"}],
            },
        )
        assert ok.status_code == 200 and len(gh.comments) == 1
        reply = c.post(f"/pulls/1/comments/{gh.comments[0]['id']}/replies", json={"body": "thanks"})
        assert reply.status_code == 201 and gh.comments[-1]["in_reply_to_id"] == gh.comments[0]["id"]
        single = c.post(
            "/pulls/1/comments", json={"body": "b", "commit_id": gh.head_sha, "path": "a.py", "line": 3}
        )
        assert single.status_code == 201
        assert c.get("/pulls/1", headers={"Accept": "application/vnd.github.v3.diff"}).text == DIFF
        for i in range(5):
            c.post("/issues/1/comments", json={"body": f"c{i}"})
        page = c.get("/issues/1/comments", params={"per_page": 2})
        assert len(page.json()) == 2 and 'rel="next"' in page.headers["Link"]
        last = c.get("/issues/1/comments", params={"per_page": 2, "page": 3})
        assert len(last.json()) == 1 and 'rel="next"' not in last.headers.get("Link", "")
        assert c.delete(f"/issues/comments/{gh.issue_comments[0]['id']}").status_code == 204
        assert httpx.get(gh.url + "/repos/o/r/pulls/1").status_code == 401
        gh.read_only = True
        assert c.post("/issues/1/comments", json={"body": "x"}).status_code == 403
        gh.fail("GET", r"/pulls/1$", 429, headers={"Retry-After": "5"})
        limited = c.get("/pulls/1")
        assert limited.status_code == 429 and limited.headers["Retry-After"] == "5"
        assert c.get("/pulls/1").status_code == 200
        assert gh.calls("GET", "/pulls/1") == 4  # diff, unauthenticated, 429, ok and gh.schema_errors == []
