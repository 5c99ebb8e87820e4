"""GitLab: a thread whose finding came from the tests is not resolved by a review that could not run them
(a runner whose sandbox is off, tests off), and the summary says why it stays open (issue 27)."""

from __future__ import annotations

from dataclasses import replace

from bot.config import GitLabConfig
from bot.publish.gitlab import publish
from bot.render.markdown import SUMMARY_MARKER
from bot.types import ChangeRequest, Finding
from tests.fakes.gitlab_api import FakeGitLab

from .test_publish import change, forge, gl, review  # noqa: F401 (fixtures)


def test_a_tests_finding_stays_open_when_the_tests_did_not_run(
    gl: FakeGitLab,  # noqa: F811
    change: ChangeRequest,  # noqa: F811
) -> None:
    broke = Finding("app.py", 3, "This change breaks the test run", source="tests", quote="line 3 changed")
    model = Finding("app.py", 4, "b", quote="line 4")
    publish(forge(gl), change, review(change, broke, model), GitLabConfig())
    untested = replace(review(change), unchecked=("tests", "behaviour"))  # this run could not run them
    res = publish(forge(gl), change, untested, GitLabConfig())
    by_body = {n["body"].split("\n\n")[1]: n for n in gl.diff_notes}
    assert by_body["This change breaks the test run"]["resolved"] is False
    assert by_body["b"]["resolved"] is True and res.resolved == 1  # the model re-checked its own
    [summary] = [n["body"] for n in gl.notes if SUMMARY_MARKER in n["body"]]
    assert "left open" in summary and "the project's tests" in summary
