"""Secrets of unchanged files that the change's code reads at run time (issue 25, item 7).

The review masks the change's own secrets and every token shape. A test run in the sandbox may also read
an unchanged file — a settings module with a generic password — and the value then travels in runtime
text: the behaviour evidence, the judge's prompt, the summary. Each must be masked.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.config import Config
from bot.forges.local import LocalForge
from bot.models.scripted import ScriptedModel
from bot.pipeline.run import review_change
from bot.render.markdown import summary
from bot.types import ChangeRef
from tests.conftest import git
from tests.security.fixed_model import Fixed as _Fixed

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

PASSWORD = "hunter2-generic-xyz"  # no token shape: only detect-secrets' keyword rule knows it


@needs_bwrap
def test_a_secret_read_from_an_unchanged_file_is_masked_in_runtime_text(tmp_path: Path) -> None:
    pytest.importorskip("detect_secrets")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "settings.py").write_text(f'DB_PASSWORD = "{PASSWORD}"\n')  # never changed by the PR
    (repo / "label.py").write_text("def label(host):\n    return 'db ' + host\n")
    (repo / "test_label.py").write_text(
        "from label import label\n\n\ndef test_label():\n    assert label('x').startswith('db x')\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    (repo / "label.py").write_text(
        "from settings import DB_PASSWORD\n\n\ndef label(host):\n"
        "    return 'db ' + host + ' ' + DB_PASSWORD\n"
    )
    git(repo, "commit", "-q", "-am", "head")
    intended = {
        "match": "Is the new behaviour intended",
        "text": json.dumps({"verdict": "intended", "reason": "ok"}),
    }
    model = ScriptedModel({"replies": [intended], "default": {"findings": []}})
    cfg = Config.model_validate(
        {"model": {"backend": "scripted"}, "patches": {"enabled": False}, "scanners": {"bandit": False}}
    )
    change = LocalForge().fetch(ChangeRef("local", str(repo), None, None))
    review = review_change(change, cfg, model=_Fixed(model))

    # the changed result is listed as intended or shown as a finding asking whether it is (judge.py)
    shown = [b.after for b in review.behaviour] + [
        f"{f.message} {f.evidence or ''}" for f in review.findings if f.source == "behaviour"
    ]
    assert shown, "the behaviour stage should show the changed result"  # the attack ran
    assert any("[REDACTED]" in x for x in shown), shown
    assert not any(PASSWORD in x for x in shown), shown
    prompts = [m.content for req in [*model.requests, *model.scored] for m in req]
    assert any("label(" in p for p in prompts)  # the judge was asked about it
    assert not any(PASSWORD in p for p in prompts), "the judge's prompt carried the secret"
    text = summary(review)
    assert PASSWORD not in text and PASSWORD not in json.dumps([str(x) for x in review.behaviour])
