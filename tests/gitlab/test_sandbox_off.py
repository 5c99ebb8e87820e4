"""A runner where the sandbox cannot start: the review still posts, with one "sandbox off" note (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bot.render.markdown import SUMMARY_MARKER
from tests.sandbox.masked import masked_proc, needs_bwrap

pytestmark = needs_bwrap


def test_a_review_where_the_sandbox_cannot_start_posts_with_a_sandbox_off_note(
    bug_mr, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`prereview gitlab` with the tests, behaviour and patches on: posted, one note, exit 0 (was: exit 2
    after the model stage, nothing posted)."""
    cfg = yaml.safe_load(bug_mr.config.read_text())
    cfg.update(tests="auto", sandbox={"backend": "auto"}, patches={"enabled": True})
    cfg["behaviour"] = {"enabled": True}
    bug_mr.config.write_text(yaml.safe_dump(cfg))
    with bug_mr.fake() as fake:
        run = bug_mr.run(fake, "--fail-level", "none", PATH=masked_proc(tmp_path, monkeypatch))
        assert run.code == 0, run.err
        [summary] = [n["body"] for n in fake.notes if SUMMARY_MARKER in n.get("body", "")]
    notes = [ln for ln in summary.splitlines() if "Sandbox off" in ln]
    assert len(notes) == 1 and "Can't mount proc" in notes[0], summary
    assert "tests not run" not in summary and "behaviour not compared" not in summary, summary
