"""`prereview github` with the real 0.5B model: output shapes, not wording."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.change.diff import parse
from bot.render.markdown import SUMMARY_MARKER

from .conftest import Action


@pytest.mark.model
@pytest.mark.slow
def test_real_model_review_is_schema_valid_on_diff_lines_and_idempotent(
    action: Action, test_model_path: Path
) -> None:
    action.config["model"] = {"name": str(test_model_path)}
    action.config["patches"] = {"enabled": False}
    first = action.run("pull_request", action.opened())
    assert first.code == 0, first.err
    gh = action.gh
    assert gh.schema_errors == []
    assert len(gh.reviews) <= 1
    diff = parse(gh.diff_text)
    assert all(diff.has_line(c["path"], c["line"], c["side"]) for c in gh.comments)
    assert int(first.outputs["findings"]) >= len(gh.comments)
    summary = [c for c in gh.issue_comments if SUMMARY_MARKER in c["body"]]
    assert len(summary) == 1 and "qwen" in summary[0]["body"].lower()
    comments = len(gh.comments)
    print(f"real model: {first.outputs['findings']} finding(s), {comments} inline comment(s)")  # figures, -s
    second = action.run("pull_request", action.opened())
    assert second.code == 0, second.err
    assert len(gh.comments) == comments and len(gh.reviews) <= 1
    assert gh.schema_errors == []
