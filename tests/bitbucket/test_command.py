"""`prereview bitbucket` end to end, as a Jenkins pull request build runs it: a real git checkout, the
scripted model, and the emulated Bitbucket Data Center taking the comments and the Code Insights report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from tests.conftest import git
from tests.fakes.bitbucket_api import TOKEN, FakeBitbucket

SCRIPTED = {
    "model": {"backend": "scripted", "name": "scripted"},
    "scanners": {"secrets": False, "bandit": False, "patterns": False, "self_verify": False},
    "patches": {"enabled": False},
    "sandbox": {"backend": "none"},
    "tests": "off",
}
BASE = "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n"
HEAD = (
    "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    total = w + h\n    return total * 3\n"
)


def _run(
    repo: Path, fake: FakeBitbucket, config: Path, *args: str, **extra: str
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "LANG": "C.UTF-8",
        "CHANGE_ID": str(fake.number),
        "CHANGE_URL": f"{fake.url}/projects/{fake.project}/repos/{fake.slug}/pull-requests/{fake.number}",
        "CHANGE_TARGET": "main",
        "WORKSPACE": str(repo),
        "PREREVIEW_BITBUCKET_TOKEN": TOKEN,
        **extra,
    }
    return subprocess.run(
        [sys.executable, "-m", "bot", "bitbucket", "--config", str(config), *args],
        env=env,
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_pull_request_build_posts_anchored_comments_a_summary_and_a_report(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = make_repo({"geometry.py": BASE}, {"geometry.py": HEAD})
    base, head = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
    diff = git(repo, "diff", "--no-color", "--src-prefix=a/", "--dst-prefix=b/", base, head)
    config = tmp_path / "prereview.yml"
    config.write_text(yaml.safe_dump(SCRIPTED))
    with FakeBitbucket(diff_text=diff, base_sha=base, head_sha=head) as fake:
        first = _run(repo, fake, config)
        assert first.returncode == 0, first.stderr
        assert fake.violations == [] and fake.off_diff == []
        [inline] = fake.inline
        anchor = fake.anchors[inline["id"]]
        assert (anchor["path"], anchor["line"], anchor["lineType"], anchor["fileType"]) == (
            "geometry.py",
            6,
            "ADDED",
            "TO",
        )
        [summary] = fake.general
        assert summary["text"].startswith("[prereview:summary]: #")
        report = fake.reports[(head, "prereview")]
        assert report["result"] == "PASS" and len(fake.annotations[(head, "prereview")]) == 1
        assert "1 new inline comment(s)" in first.stderr and "summary created" in first.stderr

        again = _run(repo, fake, config)  # a rebuild: nothing posted twice, the summary left as it is
        assert again.returncode == 0, again.stderr
        assert len(fake.inline) == 1 and len(fake.general) == 1 and fake.general[0]["version"] == 0
        assert "1 already posted" in again.stderr and "summary unchanged" in again.stderr
        for out in (first, again):
            assert TOKEN not in out.stdout + out.stderr
        assert {r.auth for r in fake.requests} == {"token"}


def test_no_post_and_no_token_post_nothing(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    repo = make_repo({"geometry.py": BASE}, {"geometry.py": HEAD})
    base, head = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
    config = tmp_path / "prereview.yml"
    config.write_text(json.dumps(SCRIPTED))
    with FakeBitbucket(base_sha=base, head_sha=head) as fake:
        out = _run(repo, fake, config, "--no-post")
        assert out.returncode == 0, out.stderr
        assert fake.comments == [] and fake.reports == {}
        assert all(r.method == "GET" for r in fake.requests)


def test_a_branch_build_is_skipped_with_the_reason(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    repo = make_repo({"geometry.py": BASE}, {"geometry.py": HEAD})
    config = tmp_path / "prereview.yml"
    config.write_text(json.dumps(SCRIPTED))
    with FakeBitbucket() as fake:
        out = _run(repo, fake, config, CHANGE_ID="", CHANGE_URL="")
        assert out.returncode == 0 and "not a pull request build" in out.stderr
        assert fake.requests == []
