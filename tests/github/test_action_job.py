"""The Action's review (`prereview github`) is the worker's review job (`jobs/review.py` through the one
dispatcher), its state read from the PR's summary comment (`cli/ci_action.py: ActionState`): the push
after a commit that only moves an already-reviewed line reviews nothing new, as the server's `/review -i`;
after a commit that also edits a line both review its hunk. Paused PRs are left alone by the job."""

from __future__ import annotations

import pytest

from bot.render.markdown import SUMMARY_MARKER
from tests.github.conftest import REPO, Action, payload
from tests.github.test_incremental_paths import EDITED, SWAPPED, TWO, _push, _runner, _server_finds


def test_the_action_review_runs_as_the_review_job(action: Action) -> None:
    run = action.run("pull_request", action.opened())
    assert run.code == 0, run.err
    assert f"review for {REPO}#1" in run.err.splitlines()
    assert action.gh.comments and int(run.outputs["findings"]) >= 1


@pytest.mark.parametrize(("then", "found"), [(SWAPPED, 0), (EDITED, 1)])
def test_a_push_that_moves_a_line_gives_the_same_answer_from_the_action_and_the_server(
    action: Action, then: str, found: int
) -> None:
    remotes = action.tmp / "remotes"
    runner, state = _runner(action)
    _push(action, {"python_programs/extra.py": TWO}, remotes)
    first = action.run("pull_request", action.opened())
    assert first.code == 0 and int(first.outputs["findings"]) >= 1, first.err
    assert _server_finds(runner, state, incremental=False) >= 1
    before = action.head
    _push(action, {"python_programs/extra.py": then}, remotes)  # `twice` moved below `half`
    event = payload(
        "pull_request.synchronize.octokit.json", head=action.head, base=action.base, before=before
    )
    run = action.run("pull_request", event)
    assert run.code == 0, run.err
    summary = next(c["body"] for c in action.gh.issue_comments if SUMMARY_MARKER in c["body"])
    assert f"Incremental review of the commits {before[:12]}..{action.head[:12]}" in summary
    assert int(run.outputs["findings"]) == found
    assert _server_finds(runner, state, incremental=True) == found


def test_a_paused_pr_is_not_reviewed_on_a_push(action: Action) -> None:
    assert action.run("pull_request", action.opened()).code == 0
    paused = action.run(
        "issue_comment", payload("issue_comment.created.on_pr.pac-retest.json", body="/pause")
    )
    assert paused.code == 0, paused.err
    reviews = len(action.gh.reviews)
    before = action.commit({"python_programs/extra.py": "def twice(x):\n    return x + x + x\n"})
    event = payload(
        "pull_request.synchronize.octokit.json", head=action.head, base=action.base, before=before
    )
    run = action.run("pull_request", event)
    assert run.code == 0, run.err
    assert "automatic reviews are paused on this PR" in run.err
    assert len(action.gh.reviews) == reviews and run.outputs == {}
