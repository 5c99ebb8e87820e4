"""`prereview gitea` end to end: a Gitea Actions run's environment, the scripted model, an emulated Gitea."""

from __future__ import annotations

from tests.fakes.gitea_api import TOKEN
from tests.gitea.conftest import PR

MARKER = "<!-- prereview:summary -->"


def _writes(fake) -> list[str]:  # type: ignore[no-untyped-def]
    return [f"{r.method} {r.path}" for r in fake.requests if r.method != "GET"]


def _summaries(fake) -> list[dict]:  # type: ignore[no-untyped-def]
    return [c for c in fake.comments if c["body"].startswith(MARKER)]


def test_first_run_posts_one_review_on_the_new_line_and_a_summary(pr: PR) -> None:
    with pr.fake() as fake:
        run = pr.run(fake)
        assert run.code == 0, run.err
        assert fake.violations == [] and fake.off_diff == []
        [review] = fake.reviews
        assert review["state"] == "COMMENT" and review["commit_id"] == pr.head
        [comment] = fake.inline
        # the scripted model flags the first added line: new file line 6 ("total = w + h")
        assert comment["path"] == "geometry.py"
        assert comment["position"] == 6 and comment["original_position"] == 0
        assert "<!-- prereview:fp=" in comment["body"]
        [summary] = _summaries(fake)
        assert summary["user"]["login"] == "prereview-bot" and "1 medium" in summary["body"]
        assert "#3: 1 new inline comment(s); summary created" in run.err
        # the token went in the Authorization header and nowhere else
        assert all(r.auth == "token" for r in fake.requests)
        assert TOKEN not in run.err + run.out


def test_request_bodies_use_the_spec_fields(pr: PR) -> None:
    with pr.fake() as fake:
        assert pr.run(fake).code == 0
        [post] = [r for r in fake.requests if r.method == "POST" and r.path.endswith("/reviews")]
        assert set(post.body) == {"commit_id", "event", "body", "comments"}
        [c] = post.body["comments"]
        assert set(c) == {"path", "body", "new_position"} and c["new_position"] == 6


def test_rerun_posts_nothing_twice_and_a_new_commit_edits_the_summary_in_place(pr: PR) -> None:
    with pr.fake() as fake:
        assert pr.run(fake).code == 0
        first_id = _summaries(fake)[0]["id"]
        fake.requests.clear()
        again = pr.run(fake)
        assert again.code == 0, again.err
        assert _writes(fake) == []  # no review, not even an edit of the summary
        assert "1 already posted; summary unchanged" in again.err
        # a new commit: the same finding stays (same fingerprint), the summary names the new head
        head = pr.commit({"geometry.py": (pr.repo / "geometry.py").read_text() + "\nX = 1\n"})
        fake.push(pr.diff(), head)
        fake.requests.clear()
        third = pr.run(fake, action="synchronized")
        assert third.code == 0, third.err
        assert len(fake.reviews) == 1 and len(fake.inline) == 1  # no duplicate inline comment
        [summary] = _summaries(fake)
        assert summary["id"] == first_id and head[:12] in summary["body"]
        assert _writes(fake) == [f"PATCH /repos/acme/widgets/issues/comments/{first_id}"]
        assert "summary updated" in third.err
        assert fake.violations == []


def test_a_wrong_token_is_one_line_naming_the_fix_and_posts_nothing(pr: PR) -> None:
    with pr.fake() as fake:
        run = pr.run(fake, PREREVIEW_GITEA_TOKEN="0" * 40)
        assert run.code == 0, run.err  # the review's exit code; the job does not fail on posting
        assert "Gitea answered 401" in run.err and "PREREVIEW_GITEA_TOKEN" in run.err
        assert fake.reviews == [] and fake.comments == []


def test_fail_on_permission_fails_the_job(pr: PR, scripted_yaml) -> None:  # type: ignore[no-untyped-def]
    pr.config = scripted_yaml(gitea={"fail_on_permission": True})
    with pr.fake(read_only_tokens=(TOKEN,)) as fake:
        run = pr.run(fake)
        assert run.code == 2
        assert "prereview: error: Gitea answered 403" in run.err and "write:issue" in run.err
        assert fake.reviews == []


def test_a_read_only_token_warns_and_keeps_the_exit_code(pr: PR) -> None:
    with pr.fake(read_only_tokens=(TOKEN,)) as fake:
        run = pr.run(fake)
        assert run.code == 0, run.err
        assert "could not post on #3: Gitea answered 403" in run.err
        assert fake.reviews == []


def test_no_token_reviews_and_says_why_nothing_is_posted(pr: PR) -> None:
    with pr.fake() as fake:
        run = pr.run(fake, PREREVIEW_GITEA_TOKEN=None)
        assert run.code == 0, run.err
        assert "no token" in run.err and fake.requests == []


def test_a_closed_pull_request_event_is_nothing_to_do(pr: PR) -> None:
    with pr.fake() as fake:
        run = pr.run(fake, action="closed")
        assert run.code == 0 and "nothing to do for pull_request.closed" in run.err
        assert fake.requests == []


def test_pr_option_without_an_event_asks_the_api(pr: PR) -> None:
    """workflow_dispatch or a manual run: --pr N, base and head from GET /pulls/{index}."""
    with pr.fake() as fake:
        run = pr.run(fake, "--pr", "3", GITHUB_EVENT_NAME="workflow_dispatch", GITHUB_EVENT_PATH=None)
        assert run.code == 0, run.err
        assert any(r.method == "GET" and r.path == "/repos/acme/widgets/pulls/3" for r in fake.requests)
        [c] = fake.inline
        assert c["position"] == 6 and fake.violations == []
