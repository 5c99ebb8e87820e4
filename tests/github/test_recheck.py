"""A `/review` comment without the PR's head checked out resolves nothing it could not re-check (issue 27).

On `issue_comment` the documented checkout is the default branch, so the review runs from the API alone:
no tests, no behaviour checks, no patches. The earlier test-backed finding must stay open, and the summary
must say what did not run.
"""

from __future__ import annotations

from bot.publish.recheck import source_of
from bot.render.markdown import SUMMARY_MARKER, comment_body
from bot.types import Finding
from tests.conftest import git

from .conftest import Action, payload

TEST_COMMAND = "python -c 'from python_programs.gcd import gcd; assert gcd(35, 21) == 7'"


def test_a_review_comment_without_a_checkout_keeps_test_findings_open(action: Action) -> None:
    action.config.update(tests="auto", sandbox={"backend": "auto"}, test_command=TEST_COMMAND)
    assert action.run("pull_request", action.opened()).code == 0
    gh = action.gh
    tested = [c for c in gh.comments if source_of(c["body"]) == "tests"]
    assert tested, [c["body"] for c in gh.comments]  # the tests ran (bubblewrap) and their finding is posted

    git(action.repo, "checkout", "-q", "--detach", action.base)  # what issue_comment's checkout gives
    run = action.run("issue_comment", payload("issue_comment.created.on_pr.pac-retest.json", body="/review"))
    assert run.code == 0, run.err
    bodies = {c["id"]: c["body"] for c in gh.comments}
    for c in tested:
        assert "Resolved" not in bodies[c["id"]], bodies[c["id"]]
    assert not gh.resolved_threads & {c["id"] for c in tested}, "no thread of theirs resolved"
    summary = next(c["body"] for c in gh.issue_comments if SUMMARY_MARKER in c["body"])
    assert "the project's tests" in summary and "did not run" in summary, summary
    assert "left open" in summary, summary


def test_the_source_is_read_from_the_heading_prereview_wrote() -> None:
    for source, rule in (("tests", None), ("behaviour", None), ("semgrep", "py-x"), ("model", None)):
        f = Finding("a.py", 1, "msg", category="test", source=source, rule_id=rule, cwe="CWE-20")
        assert source_of(comment_body(f)) == (source if source in ("tests", "behaviour") else None)
    assert source_of("🔴 **high** · bug\n\ntext · tests") is None  # the message is not the heading
