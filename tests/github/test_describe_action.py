"""`/describe` in the Action: the walkthrough in the summary comment, or with `--update` in the PR
description next to the author's text; a later review keeps it."""

from __future__ import annotations

import json

from bot.change.diff import parse
from bot.render.markdown import SUMMARY_MARKER
from bot.render.walkthrough import START

from .conftest import SCRIPT, Action, payload


def _script(action: Action, summary: str) -> None:
    paths = [f.path for f in parse(action.gh.diff_text).files]
    text = json.dumps({"summary": summary, "files": {p: f"changes {p}" for p in paths}, "risks": []})
    script = {**SCRIPT, "replies": [{"match": "Describe the change", "text": text}]}
    path = action.tmp / f"describe-{len(summary)}.json"
    path.write_text(json.dumps(script))
    action.config["model"]["script"] = str(path)


def _comment(body: str) -> dict:
    return payload("issue_comment.created.on_pr.pac-retest.json", body=body)


def test_describe_goes_into_the_summary_and_survives_a_review(action: Action) -> None:
    gh = action.gh
    _script(action, "Swaps the gcd arguments.")
    run = action.run("issue_comment", _comment("/describe"))
    assert run.code == 0, run.err
    (summary,) = [c for c in gh.issue_comments if SUMMARY_MARKER in c["body"]]
    assert START in summary["body"] and "Swaps the gcd arguments." in summary["body"]
    assert "| `python_programs/gcd.py` | changes python_programs/gcd.py |" in summary["body"]
    assert gh.reviews == []  # a walkthrough is not a review
    assert action.run("pull_request", action.opened()).code == 0
    (summary,) = [c for c in gh.issue_comments if SUMMARY_MARKER in c["body"]]
    assert "Swaps the gcd arguments." in summary["body"] and len(gh.reviews) == 1
    assert gh.schema_errors == []


def test_describe_update_writes_the_description_between_markers(action: Action) -> None:
    gh = action.gh
    gh.body = "Fixes #12.\n\nPlease look at the recursion."
    _script(action, "First walkthrough.")
    assert action.run("issue_comment", _comment("/describe --update")).code == 0
    assert gh.body.startswith("Fixes #12.\n\nPlease look at the recursion.")
    assert "First walkthrough." in gh.body and gh.pull_edits == 1
    _script(action, "Second, newer walkthrough.")
    assert action.run("issue_comment", _comment("/describe --update")).code == 0
    assert gh.body.count(START) == 1 and "Second, newer walkthrough." in gh.body
    assert "First walkthrough." not in gh.body and gh.body.startswith("Fixes #12.")
    assert not any(SUMMARY_MARKER in c["body"] for c in gh.issue_comments)
    assert gh.schema_errors == []


def test_review_walkthrough_true_on_every_review(action: Action) -> None:
    _script(action, "Every review describes the change.")
    action.config["review"] = {"walkthrough": True}
    assert action.run("pull_request", action.opened()).code == 0
    (summary,) = [c for c in action.gh.issue_comments if SUMMARY_MARKER in c["body"]]
    assert "Every review describes the change." in summary["body"] and action.gh.comments
