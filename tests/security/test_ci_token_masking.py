"""A CI job's automatic review never posts the CI's token, whatever its shape: the job masks what it posts
with its own token (`cli/ci_jobs.masking_of`), as the worker masks with the server's."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import yaml

from tests.fakes.gitea_api import BOT
from tests.gitea.conftest import BASE, HEAD, PR, SCRIPTED, rev

SECRET = "ci-token-of-no-known-shape-7Hq2"  # noqa: S105 (a made-up token no pattern recognises)


def _config(tmp: Path) -> Path:
    """The scripted model, which repeats the token in its finding (a prompt injection got it to)."""
    script = tmp / "leak.json"
    finding = {
        "quote": "{first_added}",
        "line": "{first_added_line}",
        "message": f"Authenticate with {SECRET} here.",
        "category": "bug",
        "severity": "medium",
        "cwe": "",
    }
    script.write_text(json.dumps({"replies": [], "default": {"findings": [finding]}}))
    cfg = json.loads(json.dumps(SCRIPTED))
    cfg["model"]["script"] = str(script)
    path = tmp / "prereview.yml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_a_gitea_ci_review_masks_its_token_in_what_it_posts(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = make_repo({"geometry.py": BASE}, {"geometry.py": HEAD})
    pr = PR(repo, rev(repo, "HEAD~1"), rev(repo), _config(tmp_path), tmp_path)
    with pr.fake(tokens={SECRET: BOT}) as fake:
        run = pr.run(fake, PREREVIEW_GITEA_TOKEN=SECRET)
        assert run.code == 0, run.err
        posted = [c["body"] for c in fake.comments + fake.inline] + [r["body"] for r in fake.reviews]
    assert any("Authenticate with" in body for body in posted), posted
    assert not any(SECRET in body for body in posted), posted
