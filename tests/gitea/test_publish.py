"""The Gitea publisher in process against the emulated API: positions, the summary, refusals, events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.config import GiteaConfig
from bot.forges.gitea.ci import Run
from bot.forges.gitea.forge import GiteaForge
from bot.publish.flow import PublishResult
from bot.publish.gitea import publish
from bot.types import ChangeRef, ChangeRequest, Coverage, Finding, Review, Stats
from tests.fakes.gitea_api import TOKEN, FakeGitea

DATA = Path(__file__).resolve().parents[1] / "data" / "gitea"
DIFF = """diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1,3 +1,5 @@
 def f(x):
-    return x
+    y = eval(x)
+    z = y
+    return z
 # end
"""


def _change() -> ChangeRequest:
    return ChangeRequest(ChangeRef("gitea", "acme/widgets", number=3), "b" * 40, "a" * 40, DIFF)


def _finding(line: int, side: str = "RIGHT", end: int | None = None, msg: str = "m") -> Finding:
    return Finding(path="app.py", line=line, end_line=end, side=side, message=msg, severity="high")


def _publish(fake: FakeGitea, *findings: Finding, **cfg: int) -> PublishResult:
    api = GiteaForge(fake.url, TOKEN, "acme/widgets", retries=0)
    review = Review("b" * 40, "a" * 40, tuple(findings), Stats(), Coverage())
    return publish(api, _change(), review, GiteaConfig(**cfg))


def test_removed_line_uses_old_position_and_added_line_new_position() -> None:
    with FakeGitea(diff_text=DIFF) as fake:
        res = _publish(fake, _finding(2, "LEFT", msg="removed"), _finding(3, msg="added"))
        assert fake.violations == [] and fake.off_diff == []
        [post] = [r for r in fake.requests if r.method == "POST"][:1]
        by_body = {c["body"].split("\n")[2]: c for c in post.body["comments"]}
        assert by_body["removed"]["old_position"] == 2 and "new_position" not in by_body["removed"]
        assert by_body["added"]["new_position"] == 3 and "old_position" not in by_body["added"]
        assert res.posted == 2


def test_a_range_sits_on_its_first_line_and_names_the_range() -> None:
    with FakeGitea(diff_text=DIFF) as fake:
        _publish(fake, _finding(2, end=4))
        [c] = fake.inline
        assert c["position"] == 2 and c["body"].startswith("**lines 2–4**")


def test_outside_the_diff_and_over_the_cap_go_to_the_summary() -> None:
    with FakeGitea(diff_text=DIFF) as fake:
        outside = Finding(path="app.py", line=40, message="far away", severity="low", in_diff=False)
        res = _publish(fake, _finding(2, msg="one"), _finding(3, msg="two"), outside, max_comments=1)
        assert len(fake.inline) == 1 and res.in_summary == 2
        [summary] = fake.comments
        assert "far away" in summary["body"] and "two" in summary["body"]
        assert "(outside the diff)" in summary["body"]


def test_a_finding_that_disappeared_has_its_comment_resolved_once() -> None:
    with FakeGitea(diff_text=DIFF) as fake:
        _publish(fake, _finding(2, msg="fixed later"), _finding(3, msg="stays"))
        res = _publish(fake, _finding(3, msg="stays"))
        by_msg = {c["body"].split("\n")[2]: c for c in fake.inline}
        assert res.resolved == 1 and res.skipped == 1 and fake.violations == []
        assert by_msg["fixed later"]["resolver"]["login"] and by_msg["stays"]["resolver"] is None
        again = _publish(fake, _finding(3, msg="stays"))
        assert again.resolved == 0  # resolved once, never again


def test_a_server_without_the_resolve_api_keeps_the_comment_and_says_why() -> None:
    with FakeGitea(diff_text=DIFF, resolve_api=False) as fake:  # Forgejo, Gitea before 1.26
        _publish(fake, _finding(2, msg="fixed later"))
        res = _publish(fake)
        assert res.resolved == 0 and "no API to resolve review comments" in res.cannot_resolve
        [summary] = fake.comments
        assert "Outdated prereview comments stay open" in summary["body"]


def test_a_refused_review_moves_its_comments_to_the_summary() -> None:
    with FakeGitea(diff_text=DIFF, state="closed") as fake:
        res = _publish(fake, _finding(2, msg="kept"))
        assert fake.reviews == [] and res.rejected == 1
        [summary] = fake.comments
        assert "kept" in summary["body"] and "Gitea refused the inline comments" in summary["body"]


def test_someone_elses_marker_is_not_our_summary() -> None:
    with FakeGitea(diff_text=DIFF) as fake:
        forged = fake.add_comment("<!-- prereview:summary -->\nforged", author="mallory")
        _publish(fake, _finding(3))
        assert forged["body"].endswith("forged")  # never edited
        assert len([c for c in fake.comments if c["user"]["login"] == "prereview-bot"]) == 1


def test_the_event_fixture_is_read_like_a_gitea_actions_run(tmp_path: Path) -> None:
    env = {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(DATA / "pull_request.opened.json"),
        "GITHUB_REPOSITORY": "acme/widgets",
        "GITHUB_SERVER_URL": "https://gitea.example.com",
        "GITHUB_WORKSPACE": str(tmp_path),
        "FORGEJO_ACTIONS": "true",
    }
    run = Run.from_env(env)
    assert isinstance(run, Run)
    assert (run.number, run.base_sha, run.head_sha) == (3, "b" * 40, "a" * 40)
    assert run.title == "Add a parser" and run.author == "dev" and run.forge == "Forgejo"
    event = json.loads((DATA / "pull_request.opened.json").read_text())
    event["action"] = "synchronized"  # Gitea's spelling
    (tmp_path / "e.json").write_text(json.dumps(event))
    assert isinstance(Run.from_env({**env, "GITHUB_EVENT_PATH": str(tmp_path / "e.json")}), Run)


@pytest.mark.parametrize("missing", ["GITHUB_REPOSITORY", "GITHUB_SERVER_URL"])
def test_missing_run_variables_are_named(missing: str) -> None:
    from bot.types import PrereviewError

    env = {"GITHUB_REPOSITORY": "acme/widgets", "GITHUB_SERVER_URL": "https://gitea.example.com"}
    env.pop(missing)
    with pytest.raises(PrereviewError, match=missing):
        Run.from_env(env, pr=3)


def test_findings_on_the_same_line_are_one_comment() -> None:
    with FakeGitea(diff_text=DIFF) as fake:
        res = _publish(fake, _finding(3, msg="first"), _finding(3, msg="second"), _finding(4, msg="other"))
        assert len(fake.inline) == 2 and res.posted == 3
        [both] = [c for c in fake.inline if "first" in c["body"]]
        assert "second" in both["body"] and fake.violations == []
