"""`prereview gitlab` with the real 0.5B model and the real scanners: shapes and positions, not wording."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.gitlab.conftest import MR, SCRIPTED, assert_positions_on_diff, rev
from tests.gitlab.test_codequality import assert_codequality_shape

CASE = "CWE-078-01d5bf5797"  # secfix: a command built into a shell string (bandit B605 flags it)


@pytest.fixture
def vuln_mr(bench_repo: Callable[..., dict], tmp_path: Path) -> MR:
    repo = Path(bench_repo("secfix", CASE, kind="bug")["repo"])
    return MR(repo, rev(repo, "HEAD~1"), rev(repo), tmp_path / "cfg.yml")


def _config(mr: MR, model: dict) -> None:
    cfg = {
        **SCRIPTED,
        "model": model,
        "scanners": {"bandit": True, "secrets": True, "patterns": False, "self_verify": False},
    }
    mr.config.write_text(yaml.safe_dump(cfg))


def test_scanner_findings_reach_gitlab(vuln_mr: MR) -> None:
    _config(vuln_mr, {"backend": "scripted", "name": "scripted"})
    with vuln_mr.fake() as fake:
        run = vuln_mr.run(fake)
        assert run.code == 0, run.err
        assert fake.violations == [] and fake.rejected == []
        assert_positions_on_diff(fake)
        assert any("bandit" in n["body"] for n in fake.diff_notes)
    report = json.loads((vuln_mr.repo / "gl-code-quality-report.json").read_text())
    assert_codequality_shape(report)
    assert any(i["check_name"].startswith("bandit/B605") for i in report)


@pytest.mark.model
@pytest.mark.slow
def test_real_model_posts_on_diff_lines_writes_a_valid_report_and_is_idempotent(
    vuln_mr: MR, test_model_path: Path
) -> None:
    _config(vuln_mr, {"name": str(test_model_path)})
    with vuln_mr.fake() as fake:
        first = vuln_mr.run(fake)
        assert first.code == 0, first.err
        assert fake.violations == []
        assert len(fake.diff_notes) >= 1  # at least bandit's
        assert_positions_on_diff(fake)
        report = json.loads((vuln_mr.repo / "gl-code-quality-report.json").read_text())
        assert_codequality_shape(report)
        summary = [n for n in fake.notes if "<!-- prereview:summary -->" in n["body"]]
        assert len(summary) == 1 and "qwen" in summary[0]["body"].lower()
        sources = sorted({i["check_name"].split("/")[0] for i in report})
        print(f"real model: {len(report)} finding(s) from {sources}, {len(fake.diff_notes)} discussion(s)")
        posted = len(fake.discussions)
        second = vuln_mr.run(fake)
        assert second.code == 0, second.err
        assert len(fake.discussions) == posted
