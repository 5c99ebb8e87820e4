"""`prereview github` end to end: real payloads, a real bug in the workspace, the emulated GitHub API."""

from __future__ import annotations

import pytest

from bot.change.diff import parse
from bot.forges.github.summary import RESOLVED_MARKER
from bot.render.markdown import SUMMARY_MARKER, fingerprints_in

from .conftest import Action, git, payload, pr_diff


def _assert_on_diff(action: Action) -> None:
    diff = parse(action.gh.diff_text)
    for c in action.gh.comments:
        assert diff.has_line(c["path"], c["line"], c["side"]), c


def test_first_review_then_rerun_posts_nothing_new(action: Action) -> None:
    first = action.run("pull_request", action.opened())
    assert first.code == 0, first.err
    gh = action.gh
    assert gh.schema_errors == []
    assert len(gh.reviews) == 1 and gh.reviews[0]["state"] == "COMMENTED"
    assert gh.comments, "the bug-introducing line gets an inline comment"
    _assert_on_diff(action)
    assert any(c["path"] == "python_programs/gcd.py" and c["line"] == 5 for c in gh.comments)
    summaries = [c for c in gh.issue_comments if SUMMARY_MARKER in c["body"]]
    assert len(summaries) == 1
    assert all(fingerprints_in(c["body"]) for c in gh.comments)
    assert int(first.outputs["findings"]) >= len(gh.comments)
    assert first.outputs["highest-severity"] in ("low", "medium", "high", "critical")
    assert "prereview" in first.step_summary

    second = action.run("pull_request", action.opened())
    assert second.code == 0, second.err
    assert len(gh.reviews) == 1 and gh.calls("POST", "/pulls/1/reviews") == 1
    assert len([c for c in gh.issue_comments if SUMMARY_MARKER in c["body"]]) == 1
    assert gh.schema_errors == []


def test_synchronize_reviews_only_the_new_commit(action: Action) -> None:
    action.run("pull_request", action.opened())
    gh = action.gh
    first_comments = len(gh.comments)
    before = action.commit({"python_programs/extra.py": "def twice(x):\n    return x + x + x\n"})
    event = payload(
        "pull_request.synchronize.octokit.json", head=action.head, base=action.base, before=before
    )
    run = action.run("pull_request", event)
    assert run.code == 0, run.err
    assert gh.schema_errors == []
    assert len(gh.reviews) == 2
    new = gh.comments[first_comments:]
    assert new and {c["path"] for c in new} == {"python_programs/extra.py"}
    _assert_on_diff(action)
    assert not any(RESOLVED_MARKER in c["body"] for c in gh.comments), (
        "the earlier finding was not re-reviewed"
    )
    summaries = [c for c in gh.issue_comments if SUMMARY_MARKER in c["body"]]
    assert len(summaries) == 1 and summaries[0]["edits"] == 1, "summary updated in place, not duplicated"
    assert "Incremental review" in summaries[0]["body"]
    # the earlier finding is still remembered by the summary: a full re-run posts nothing new
    full = action.run("pull_request", event, "--full")
    assert full.code == 0 and len(gh.reviews) == 2


def test_fixing_commit_resolves_the_stale_comment(action: Action) -> None:
    action.run("pull_request", action.opened())
    gh = action.gh
    original = (action.repo / "python_programs/gcd.py").read_text().replace("gcd(a % b, b)", "gcd(b, a % b)")
    before = action.commit({"python_programs/gcd.py": original, "README.md": "docs\n"})
    event = payload(
        "pull_request.synchronize.octokit.json", head=action.head, base=action.base, before=before
    )
    run = action.run("pull_request", event, "--full")
    assert run.code == 0, run.err
    gcd = [c for c in gh.comments if c["path"] == "python_programs/gcd.py"]
    assert gcd and all(RESOLVED_MARKER in c["body"] for c in gcd)
    assert gh.schema_errors == []


def test_422_for_one_comment_keeps_the_rest(action: Action) -> None:
    gh = action.gh
    action.commit({"python_programs/extra.py": "def twice(x):\n    return x + x + x\n"})
    # GitHub's view of the PR lacks extra.py (e.g. it computed another diff): a comment there is refused.
    gh.set_head(action.head, pr_diff(action.repo, action.base, action.head, "python_programs/gcd.py"))
    run = action.run("pull_request", action.opened())
    assert run.code == 0, run.err
    assert gh.calls("POST", "/pulls/1/reviews") == 2
    assert len(gh.reviews) == 1
    assert {c["path"] for c in gh.comments} == {"python_programs/gcd.py"}
    _assert_on_diff(action)
    summary = next(c["body"] for c in gh.issue_comments if SUMMARY_MARKER in c["body"])
    assert "python_programs/extra.py" in summary
    assert gh.schema_errors == []


def test_fork_read_only_token_falls_back_to_annotations(action: Action) -> None:
    action.gh.read_only = True
    run = action.run("pull_request", action.opened())
    assert run.code == 0, run.err
    assert action.gh.reviews == [] and action.gh.issue_comments == []
    assert "::warning::prereview cannot comment on this PR" in run.out
    assert "file=python_programs/gcd.py,line=5" in run.out
    assert "python_programs/gcd.py" in run.step_summary
    assert "ghs_test" not in run.out + run.err + run.step_summary  # the token never reaches logs
    assert run.outputs["findings"] != "0"
    action.config["github"]["fail_on_permission"] = True
    strict = action.run("pull_request", action.opened())
    assert strict.code == 2 and "pull-requests: write" in strict.err


def test_rate_limits_and_server_errors_are_retried(action: Action) -> None:
    gh = action.gh
    gh.fail("POST", r"/pulls/1/reviews$", 429, headers={"Retry-After": "0"})
    gh.fail("GET", r"/pulls/1$", 502)
    gh.fail("POST", r"/issues/1/comments$", 403, headers={"Retry-After": "0"})
    run = action.run("pull_request", action.opened())
    assert run.code == 0, run.err
    assert gh.calls("POST", "/pulls/1/reviews") == 2 and len(gh.reviews) == 1
    assert gh.calls("POST", "/issues/1/comments") == 2 and len(gh.issue_comments) == 1


def test_pull_request_target_is_safe_mode(action: Action) -> None:
    event = payload("pull_request.opened.pac.json", head=action.head, base=action.base)
    run = action.run("pull_request_target", event)
    assert run.code == 0, run.err
    assert action.gh.calls("GET", "/pulls/1/files") >= 1, "the diff comes from the API, not the checkout"
    summary = next(c["body"] for c in action.gh.issue_comments if SUMMARY_MARKER in c["body"])
    assert "safe mode" in summary
    _assert_on_diff(action)


def test_comment_commands(action: Action) -> None:
    gh = action.gh
    stranger = payload(
        "issue_comment.created.on_pr.pac-retest.json", body="/review", association="CONTRIBUTOR"
    )
    assert action.run("issue_comment", stranger).code == 0
    assert gh.reviews == [] and gh.reactions == []
    other_bot = payload("issue_comment.created.on_pr.pac-retest.json")  # "/retest" is not ours
    assert action.run("issue_comment", other_bot).code == 0 and gh.reviews == []

    review = payload("issue_comment.created.on_pr.pac-retest.json", body="/review")
    assert action.run("issue_comment", review).code == 0
    assert len(gh.reviews) == 1 and gh.reactions[-1]["content"] == "eyes"

    assert (
        action.run(
            "issue_comment",
            payload("issue_comment.created.on_pr.pac-retest.json", body="/pause", comment_id=101),
        ).code
        == 0
    )
    before = action.commit({"python_programs/extra.py": "def twice(x):\n    return x + x + x\n"})
    push = payload("pull_request.synchronize.octokit.json", head=action.head, base=action.base, before=before)
    paused = action.run("pull_request", push)
    assert "paused" in paused.err and len(gh.reviews) == 1
    assert (
        action.run(
            "issue_comment",
            payload("issue_comment.created.on_pr.pac-retest.json", body="/resume", comment_id=102),
        ).code
        == 0
    )
    assert action.run("pull_request", push).code == 0 and len(gh.reviews) == 2

    assert (
        action.run(
            "issue_comment",
            payload("issue_comment.created.on_pr.pac-retest.json", body="/help", comment_id=103),
        ).code
        == 0
    )
    assert "prereview commands" in gh.issue_comments[-1]["body"]
    # the one job dispatcher answered /pause and /resume as the server does, in a reply each
    assert sum("Automatic reviews are" in c["body"] for c in gh.issue_comments) == 2
    assert len([c for c in gh.issue_comments if SUMMARY_MARKER in c["body"]]) == 1
    assert gh.schema_errors == []


def test_workflow_dispatch_and_check_run_and_sarif(action: Action) -> None:
    action.config["github"].update({"check_run": True, "sarif_upload": True})
    run = action.run("workflow_dispatch", {"inputs": {"pr": "1"}, "repository": {"full_name": "o/r"}})
    assert run.code == 0, run.err
    gh = action.gh
    assert len(gh.check_runs) == 1 and gh.check_runs[0]["annotations"]
    assert gh.check_runs[0]["head_sha"] == action.head
    assert len(gh.sarifs) == 1 and gh.sarifs[0]["sarif"]["runs"][0]["results"]
    assert gh.sarifs[0]["ref"] == "refs/pull/1/head"
    assert gh.schema_errors == []


def test_fail_level_sets_the_exit_code(action: Action) -> None:
    run = action.run("pull_request", action.opened(), "--fail-level", "low")
    assert run.code == 1 and len(action.gh.reviews) == 1


def test_nothing_to_do_and_user_errors(action: Action) -> None:
    closed = payload("pull_request.opened.pac.json", head=action.head, base=action.base, action="closed")
    assert action.run("pull_request", closed).code == 0
    draft = payload("pull_request.opened.pac.json", head=action.head, base=action.base, draft=True)
    assert action.run("pull_request", draft).code == 0
    assert action.gh.requests == []
    release = action.run("release", {"action": "published"})
    assert release.code == 2 and "not supported" in release.err and "Traceback" not in release.err
    bad_config = dict(action.config, github={"write_interval": 0, "max_coments": 3})
    action.config = bad_config
    typo = action.run("pull_request", action.opened())
    assert typo.code == 2 and "max_coments" in typo.err and "Traceback" not in typo.err


def test_missing_token_is_a_one_line_error(action: Action) -> None:
    action.monkeypatch.setenv("GITHUB_TOKEN", "")
    event = action.tmp / "e.json"
    event.write_text("{}")
    action.monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    from bot.cli.root import main

    with pytest.raises(SystemExit) as exc:
        main(["github", "--pr", "1"])
    assert exc.value.code == 2
    err = action.capfd.readouterr().err
    assert err.strip().splitlines() == [err.strip()] and "GITHUB_TOKEN is not set" in err


def test_review_dash_i_reviews_since_the_last_reviewed_head(action: Action) -> None:
    action.run("pull_request", action.opened())
    gh = action.gh
    first = len(gh.comments)
    action.commit({"python_programs/extra.py": "def twice(x):\n    return x + x + x\n"})
    command = payload("issue_comment.created.on_pr.pac-retest.json", body="/review -i")
    run = action.run("issue_comment", command)
    assert run.code == 0, run.err
    assert {c["path"] for c in gh.comments[first:]} == {"python_programs/extra.py"}
    summary = next(c["body"] for c in gh.issue_comments if SUMMARY_MARKER in c["body"])
    assert f"<!-- prereview:head={action.head} -->" in summary
    assert gh.schema_errors == []


def test_shallow_head_checkout_uses_the_api_diff_and_the_checkout(action: Action, tmp_path) -> None:
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{action.repo}", str(shallow))
    action.repo = shallow  # HEAD is the PR head; the base is not in this clone
    run = action.run("pull_request", action.opened())
    assert run.code == 0, run.err
    assert action.gh.calls("GET", "/pulls/1/files") >= 1
    assert any(c["path"] == "python_programs/gcd.py" and c["line"] == 5 for c in action.gh.comments)
    _assert_on_diff(action)


def test_dispatch_reviews_even_when_paused(action: Action) -> None:
    pause = payload("issue_comment.created.on_pr.pac-retest.json", body="/pause")
    assert action.run("issue_comment", pause).code == 0
    assert action.run("pull_request", action.opened()).code == 0 and action.gh.reviews == []
    assert action.run("workflow_dispatch", {"inputs": {"pr": "1"}}).code == 0 and len(action.gh.reviews) == 1
    bad = action.run("workflow_dispatch", {"inputs": {"pr": "one"}})
    assert bad.code == 2 and "pull request number" in bad.err


def test_synchronize_reviews_since_the_last_reviewed_head_not_before(action: Action) -> None:
    # The run for the first push never happened (cancelled, failed): the next push's `before` is that
    # push's head, but the review must also cover its commit, from the head the summary recorded.
    assert action.run("pull_request", action.opened()).code == 0
    gh = action.gh
    first = len(gh.comments)
    action.commit({"python_programs/extra.py": "def twice(x):\n    return x + x + x\n"})  # never reviewed
    before = action.commit({"README.md": "docs\n"})
    event = payload(
        "pull_request.synchronize.octokit.json", head=action.head, base=action.base, before=before
    )
    run = action.run("pull_request", event)
    assert run.code == 0, run.err
    assert {c["path"] for c in gh.comments[first:]} == {"python_programs/extra.py"}
    summary = next(c["body"] for c in gh.issue_comments if SUMMARY_MARKER in c["body"])
    assert f"<!-- prereview:head={action.head} -->" in summary and "Incremental review" in summary


def test_synchronize_without_a_recorded_head_reviews_from_the_base(action: Action) -> None:
    before = action.commit({"python_programs/extra.py": "def twice(x):\n    return x + x + x\n"})
    event = payload(
        "pull_request.synchronize.octokit.json", head=action.head, base=action.base, before=before
    )
    run = action.run("pull_request", event)
    assert run.code == 0, run.err
    paths = {c["path"] for c in action.gh.comments}
    assert paths == {"python_programs/gcd.py", "python_programs/extra.py"}, "the first commit is reviewed too"


def test_a_broken_sandbox_is_one_note(action: Action) -> None:
    action.config.update(tests="auto", sandbox={"backend": "auto"})
    action.monkeypatch.setenv("PREREVIEW_SANDBOX_OFF", "bubblewrap cannot create user namespaces here")
    assert action.run("pull_request", action.opened()).code == 0
    summary = next(c["body"] for c in action.gh.issue_comments if SUMMARY_MARKER in c["body"])
    notes = [line for line in summary.splitlines() if "Sandbox off on this runner" in line]
    assert len(notes) == 1 and "cannot create user namespaces" in notes[0]


def test_a_push_is_the_warm_up_run(action: Action) -> None:
    """The documented default-branch warm-up job runs the action on `push`: it installs and saves the
    caches every pull request can restore, and the review step exits 0 saying there is nothing to review."""
    run = action.run("push", {"ref": "refs/heads/main"})
    assert run.code == 0, run.err
    assert "warm-up" in run.err and action.gh.reviews == [] and action.gh.issue_comments == []
