"""The running server and worker against the emulated GitLab: signed note hooks in, discussions out."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from bot.server.forge_session import replied_to
from tests.fakes.gitlab_api import TOKEN, FakeGitLab
from tests.server.stack import DIFF, NEW_FILE, Stack, payload, wait_for

PROJECT, IID = "gitlab-org/gitlab-test", 1


@pytest.fixture(scope="module")
def gl() -> Iterator[FakeGitLab]:
    with FakeGitLab(
        project_id=5,
        project_path=PROJECT,
        mr_iid=IID,
        diff_text=DIFF,
        base_sha="b" * 40,
        head_sha="a" * 40,
        members={"developer": 30, "reporter": 20, "guest": 10},
    ) as fake:
        yield fake


@pytest.fixture(scope="module")
def stack(gl: FakeGitLab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    s = Stack(tmp_path_factory.mktemp("gitlab"), "http://127.0.0.1:9", gitlab_url=gl.url)
    s.env["PREREVIEW_GITLAB_TOKEN"] = TOKEN
    s.start_server()
    s.start_worker()
    yield s
    s.stop()


def note(gl: FakeGitLab, body: str, user: str) -> tuple[int, bytes]:
    data = payload("note_merge_request.go-gitlab.json", "gitlab")
    nid = gl.add_note(body, author=user)["id"]  # the note exists on GitLab before its hook arrives
    data["object_attributes"].update(note=body, id=nid)
    data["user"].update(username=user, id=gl.user_id(user))
    return nid, json.dumps(data).encode()


def replies(gl: FakeGitLab) -> list[int]:
    bodies = [n["body"] for d in gl.discussions for n in d["notes"]]
    return [i for b in bodies for i in sorted(replied_to([b]))]


def test_developer_review_posts_discussions(stack: Stack, gl: FakeGitLab) -> None:
    nid, body = note(gl, "/review", "developer")
    r = stack.gitlab(body)
    assert r.status_code == 202, r.text
    wait_for(
        lambda: any(n.get("position") for d in gl.discussions for n in d["notes"]),
        60,
        "an inline discussion\n" + stack.logs(),
    )
    wait_for(lambda: gl.award_emoji, 30, "the 👀 award")
    assert gl.award_emoji[0]["name"] == "eyes"
    assert not gl.violations


def test_incremental_review_reviews_only_the_new_commits(stack: Stack, gl: FakeGitLab) -> None:
    """`/review -i` after a push: only the new version's hunks are reviewed; the earlier thread on app.py
    (not re-reviewed) stays open; a second `-i` on the same head says there is nothing new."""
    assert any(n["position"]["new_path"] == "app.py" for n in gl.diff_notes), "runs after the first review"
    gl.push(DIFF + NEW_FILE, "c" * 40)
    nid, body = note(gl, "/review -i", "developer")
    assert stack.gitlab(body).status_code == 202
    wait_for(
        lambda: any("Incremental review" in n["body"] and "prereview:summary" in n["body"] for n in gl.notes),
        60,
        "the incremental summary\n" + stack.logs(),
    )
    [summary] = [n["body"] for n in gl.notes if "prereview:summary" in n["body"]]
    assert "Reviewed 1 file(s)" in summary  # new.py only
    paths = [n["position"]["new_path"] for n in gl.diff_notes]
    assert paths.count("new.py") >= 1 and paths.count("app.py") == 1  # app.py: not posted again
    assert not any(n["resolved"] for n in gl.diff_notes if n["position"]["new_path"] == "app.py")
    assert all(
        n["position"]["head_sha"] == "c" * 40 for n in gl.diff_notes if n["position"]["new_path"] == "new.py"
    )
    again, body = note(gl, "/review -i", "developer")
    assert stack.gitlab(body).status_code == 202
    wait_for(lambda: again in replies(gl), 60, "the nothing-new reply\n" + stack.logs())
    reply = next(n["body"] for n in gl.notes if again in replied_to([n["body"]]))
    assert reply.startswith(f"No new commits since the last review (`{'c' * 12}`)")
    assert not gl.violations


@pytest.mark.parametrize("user", ["guest", "reporter"])
def test_below_developer_is_refused_through_the_api(stack: Stack, gl: FakeGitLab, user: str) -> None:
    before = sum(1 for d in gl.discussions for n in d["notes"] if n.get("position"))
    nid, body = note(gl, "/review", user)
    assert stack.gitlab(body).status_code == 202
    wait_for(lambda: nid in replies(gl), 60, "the refusal\n" + stack.logs())
    assert sum(1 for d in gl.discussions for n in d["notes"] if n.get("position")) == before


def test_bad_or_missing_token_is_401_and_replay_is_one_job(stack: Stack, gl: FakeGitLab) -> None:
    nid, body = note(gl, "/help", "developer")
    assert stack.gitlab(body, token="wrong").status_code == 401
    assert stack.gitlab(body, token=None).status_code == 401
    assert stack.gitlab(body, delivery="uuid-1").status_code == 202
    assert stack.gitlab(body, delivery="uuid-1").json()["status"] == "duplicate delivery"
    wait_for(lambda: nid in replies(gl), 60, "the help reply\n" + stack.logs())
    barrier, body2 = note(gl, "/help", "developer")
    stack.gitlab(body2)
    wait_for(lambda: barrier in replies(gl), 60, "the barrier reply")
    assert replies(gl).count(nid) == 1
