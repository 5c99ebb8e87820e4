"""A GitLab pipeline a note webhook triggered (`CI_PIPELINE_SOURCE=trigger`, the note in `TRIGGER_PAYLOAD`)
answers the note's command through the one job dispatcher, as the webhook server does."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.gitlab_api import FakeGitLab
from tests.server.stack import payload

from .conftest import MR

PROJECT = "gitlab-org/gitlab-test"  # the note payload's project


def _trigger(mr: MR, gl: FakeGitLab, tmp: Path, body: str, user: str) -> tuple[int, dict[str, str | None]]:
    data = payload("note_merge_request.go-gitlab.json", "gitlab")
    nid = gl.add_note(body, author=user)["id"]  # the note exists on GitLab before the pipeline starts
    data["object_attributes"].update(note=body, id=nid)
    data["user"].update(username=user, id=gl.user_id(user))
    path = tmp / f"note-{nid}.json"
    path.write_text(json.dumps(data))
    env: dict[str, str | None] = {
        "CI_PIPELINE_SOURCE": "trigger",
        "TRIGGER_PAYLOAD": str(path),
        "CI_MERGE_REQUEST_IID": None,
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": None,
    }
    return nid, env


def _bodies(gl: FakeGitLab) -> list[str]:
    return [n["body"] for n in gl.notes]


def test_a_triggered_pipeline_answers_help(bug_mr: MR, tmp_path: Path) -> None:
    with bug_mr.fake(project_id=5, project_path=PROJECT, mr_iid=1, members={"developer": 30}) as gl:
        nid, env = _trigger(bug_mr, gl, tmp_path, "/help", "developer")
        run = bug_mr.run(gl, **env)
        assert run.code == 0, run.err
        assert any("prereview commands" in b and f"reply-to={nid}" in b for b in _bodies(gl)), _bodies(gl)
        assert not (bug_mr.repo / "gl-code-quality-report.json").exists()  # not a review


def test_a_reporter_gets_the_refusal(bug_mr: MR, tmp_path: Path) -> None:
    with bug_mr.fake(project_id=5, project_path=PROJECT, mr_iid=1, members={"reporter": 20}) as gl:
        _, env = _trigger(bug_mr, gl, tmp_path, "/review", "reporter")
        run = bug_mr.run(gl, **env)
        assert run.code == 0, run.err
        assert any("only people with write access" in b for b in _bodies(gl))
        assert not gl.diff_notes
