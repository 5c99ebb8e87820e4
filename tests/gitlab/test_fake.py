"""The emulated GitLab itself: it refuses what GitLab refuses, so a green test means something."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import gitlab
import pytest

from tests.fakes.gitlab_api import TOKEN, TOO_LONG_ERROR, FakeGitLab, split_diff
from tests.gitlab.test_position import DIFF, REFS


def call(
    fake: FakeGitLab,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    form: str | None = None,
) -> tuple[int, Any]:
    data = form.encode() if form is not None else None if body is None else json.dumps(body).encode()
    ctype = "application/x-www-form-urlencoded" if form is not None else "application/json"
    req = urllib.request.Request(
        fake.url + path,
        data=data,
        method=method,
        headers={"PRIVATE-TOKEN": TOKEN, "Content-Type": ctype, **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req) as resp:  # noqa: S310 - loopback test server
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


@pytest.fixture
def fake() -> Any:
    with FakeGitLab(
        diff_text=DIFF, base_sha=REFS.base_sha, start_sha=REFS.start_sha, head_sha=REFS.head_sha
    ) as f:
        yield f


MR = "/projects/42/merge_requests/7"
POS = {
    "base_sha": REFS.base_sha,
    "start_sha": REFS.start_sha,
    "head_sha": REFS.head_sha,
    "position_type": "text",
    "old_path": "f.py",
    "new_path": "f.py",
    "new_line": 5,
}


def test_schema_violations_are_400_and_recorded(fake: FakeGitLab) -> None:
    assert call(fake, "POST", MR + "/discussions", {"position": POS})[0] == 400  # no body
    assert (
        call(fake, "POST", MR + "/discussions", {"body": "x", "position": {**POS, "new_line": "5"}})[0] == 400
    )
    assert (
        call(fake, "POST", MR + "/discussions", {"body": "x", "position": {**POS, "position_type": "pdf"}})[0]
        == 400
    )
    incomplete = {k: v for k, v in POS.items() if k != "old_path"}
    status, body = call(fake, "POST", MR + "/discussions", {"body": "x", "position": incomplete})
    assert status == 400 and body == {"error": "position[old_path] is missing"}
    assert call(fake, "GET", MR + "/notes?per_page=500")[0] == 400
    assert call(fake, "GET", "/projects/42/pipelines")[0] == 404
    assert len(fake.violations) == 6
    assert fake.discussions == []


def test_a_valid_discussion_and_gitlabs_own_refusals(fake: FakeGitLab) -> None:
    status, d = call(fake, "POST", MR + "/discussions", {"body": "hi", "position": POS})
    assert (
        status == 201 and d["notes"][0]["type"] == "DiffNote" and d["notes"][0]["position"]["new_line"] == 5
    )
    status, err = call(fake, "POST", MR + "/discussions", {"body": "hi", "position": {**POS, "old_line": 5}})
    assert status == 400 and "line_code" in err["message"] and "must be a valid line code" in err["message"]
    assert call(fake, "POST", MR + "/notes", {"body": "x" * 1_000_001}) == (400, {"message": TOO_LONG_ERROR})
    assert fake.violations == []


def test_form_encoded_positions_work_like_json(fake: FakeGitLab) -> None:
    form = "&".join(f"position[{k}]={v}" for k, v in POS.items()) + "&body=hello"
    status, d = call(fake, "POST", MR + "/discussions", form=form)
    assert status == 201 and d["notes"][0]["position"]["new_line"] == 5


def test_resolve_takes_the_query_or_the_body_like_grape(fake: FakeGitLab) -> None:
    _, d = call(fake, "POST", MR + "/discussions", {"body": "hi", "position": POS})
    assert call(fake, "PUT", MR + f"/discussions/{d['id']}?resolved=true")[0] == 200
    assert fake.discussions[0]["notes"][0]["resolved"] is True
    assert call(fake, "PUT", MR + f"/discussions/{d['id']}", {"resolved": False})[0] == 200
    assert fake.discussions[0]["notes"][0]["resolved"] is False
    assert call(fake, "PUT", MR + f"/discussions/{d['id']}")[0] == 400  # resolved is required


def test_auth(fake: FakeGitLab) -> None:
    assert call(fake, "GET", MR, headers={"PRIVATE-TOKEN": "wrong"})[0] == 401
    job = {"PRIVATE-TOKEN": "", "JOB-TOKEN": "job-token"}
    req = urllib.request.Request(fake.url + MR, headers={"JOB-TOKEN": "job-token"})
    with urllib.request.urlopen(req) as resp:  # noqa: S310
        assert resp.status == 200  # a job token may read the MR
    status, _ = call(fake, "POST", MR + "/notes", {"body": "x"}, headers=job)
    assert status == 401
    gl = gitlab.Gitlab(fake.server_url, job_token="job-token")
    with pytest.raises(gitlab.exceptions.GitlabAuthenticationError) as exc:
        gl.projects.get(42, lazy=True).mergerequests.get(7, lazy=True).notes.create({"body": "x"})
    assert exc.value.response_code == 401


def test_members_and_user_for_the_webhook_server(fake: FakeGitLab) -> None:
    fake.members["maintainer"] = 40
    uid = fake.user_id("maintainer")
    status, m = call(fake, "GET", f"/projects/42/members/all/{uid}")
    assert status == 200 and m["access_level"] == 40 and m["username"] == "maintainer"
    assert call(fake, "GET", f"/projects/42/members/all/{fake.user_id('stranger')}")[0] == 404
    assert call(fake, "GET", "/user")[1]["username"] == "prereview-bot"


def test_versions_and_diffs(fake: FakeGitLab) -> None:
    fake.push(DIFF.replace("new b", "new B"), "d" * 40)
    _, versions = call(fake, "GET", MR + "/versions")
    assert [v["head_commit_sha"] for v in versions] == ["d" * 40, REFS.head_sha]  # newest first
    _, diffs = call(fake, "GET", MR + "/diffs?unidiff=true")
    assert diffs[0]["diff"].startswith("--- a/f.py\n+++ b/f.py\n@@")
    _, diffs = call(fake, "GET", MR + "/diffs")
    assert diffs[0]["diff"].startswith("@@") and "new B" in diffs[0]["diff"]
    _, mr = call(fake, "GET", MR)
    assert mr["diff_refs"]["head_sha"] == "d" * 40


def test_split_diff_handles_renames_new_and_deleted_files() -> None:
    text = (
        "diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\nrename to new.py\n"
        "index 1..2 100644\n--- a/old.py\n+++ b/new.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
        "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\nindex 1..0\n--- a/gone.py\n+++ /dev/null\n"
        "@@ -1 +0,0 @@\n-x\n"
        "diff --git a/born.sh b/born.sh\nnew file mode 100755\nindex 0..1\n--- /dev/null\n+++ b/born.sh\n"
        "@@ -0,0 +1 @@\n+echo\n\\ No newline at end of file\n"
    )
    ren, gone, born = split_diff(text)
    assert (ren.old_path, ren.new_path, ren.renamed_file) == ("old.py", "new.py", True)
    assert [(ln.kind, ln.old_pos, ln.new_pos) for ln in ren.lines] == [(" ", 1, 1), ("-", 2, 2), ("+", 3, 2)]
    assert gone.deleted_file and [(ln.old_pos, ln.new_pos) for ln in gone.lines] == [(1, 0)]
    assert (
        born.new_file
        and born.b_mode == "100755"
        and [(ln.old_pos, ln.new_pos) for ln in born.lines] == [(0, 1)]
    )
