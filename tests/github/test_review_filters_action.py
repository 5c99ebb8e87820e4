"""review.ignore in the Action: an automatic review of an ignored PR is skipped, saying why."""

from __future__ import annotations

from .conftest import Action


def test_action_skips_an_ignored_pr_and_says_why_but_a_dispatch_reviews_it(action: Action) -> None:
    gh = action.gh
    gh.title = "WIP: not ready"
    run = action.run("pull_request", action.opened())
    assert run.code == 0, run.err
    assert gh.reviews == [] and gh.issue_comments == []
    assert "review skipped: the title starts with 'WIP'" in run.err
    assert "review skipped" in run.step_summary
    gh.title, gh.labels = "Fine title", ["skip-review"]
    run = action.run("pull_request", action.opened())
    assert gh.reviews == [] and "label 'skip-review'" in run.err
    dispatched = action.run("workflow_dispatch", {"inputs": {"pr": "1"}, "repository": {"full_name": "o/r"}})
    assert dispatched.code == 0 and len(gh.reviews) == 1  # a person asked: reviewed anyway
