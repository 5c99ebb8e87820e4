"""Fixtures for driving `prereview gitlab` with a real MR pipeline's environment against the emulated API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import PLATFORM, git
from tests.fakes.gitlab_api import TOKEN, FakeGitLab

CODEQUALITY_EXAMPLE = PLATFORM / "gitlab-ci" / "codequality.example.gitlab-docs.json"
# The scripted model, and nothing slow or external: the GitLab side is what these tests are about.
SCRIPTED = {
    "model": {"backend": "scripted", "name": "scripted"},
    "scanners": {"secrets": False, "bandit": False, "patterns": False, "self_verify": False},
    "patches": {"enabled": False},
    "sandbox": {"backend": "none"},
    "tests": "off",
}


def mr_diff(repo: Path, base: str, head: str) -> str:
    """What GitLab shows as the MR diff (merge-base..head, renames detected)."""
    return git(repo, "diff", "--no-color", "-M", "--src-prefix=a/", "--dst-prefix=b/", base, head)


def rev(repo: Path, name: str = "HEAD") -> str:
    return git(repo, "rev-parse", name).strip()


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.strip()]


@dataclass
class MR:
    """A repository with an MR (base..head) and its pipeline environment."""

    repo: Path
    base: str
    head: str
    config: Path

    def env(self, fake: FakeGitLab, **extra: str | None) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),  # the checkout under test, not an installed copy
            "LANG": "C.UTF-8",
            "CI": "true",
            "GITLAB_CI": "true",
            "CI_API_V4_URL": fake.url,
            "CI_SERVER_URL": fake.server_url,
            "CI_PROJECT_ID": str(fake.project_id),
            "CI_PROJECT_PATH": fake.project_path,
            "CI_PROJECT_DIR": str(self.repo),
            "CI_PIPELINE_SOURCE": "merge_request_event",
            "CI_MERGE_REQUEST_IID": str(fake.mr_iid),
            "CI_MERGE_REQUEST_PROJECT_ID": str(fake.project_id),
            "CI_MERGE_REQUEST_DIFF_BASE_SHA": self.base,
            "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
            "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "feature",
            "CI_MERGE_REQUEST_TITLE": fake.title,
            "CI_MERGE_REQUEST_EVENT_TYPE": "detached",
            "CI_COMMIT_SHA": self.head,
            "CI_JOB_TOKEN": "job-token",
            "PREREVIEW_GITLAB_TOKEN": TOKEN,
        }
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env

    def run(self, fake: FakeGitLab, *args: str, **extra: str | None) -> Run:
        proc = subprocess.run(
            [sys.executable, "-m", "bot", "gitlab", "--config", str(self.config), *args],
            env=self.env(fake, **extra),
            cwd=self.repo,
            capture_output=True,
            text=True,
            timeout=300,
        )
        return Run(proc.returncode, proc.stdout, proc.stderr)

    def fake(self, **kw: Any) -> FakeGitLab:
        if "diff_text" not in kw:
            kw["diff_text"] = mr_diff(self.repo, self.base, self.head)
        return FakeGitLab(base_sha=self.base, head_sha=self.head, **kw)

    def commit(self, files: dict[str, str], message: str = "more") -> str:
        for name, text in files.items():
            (self.repo / name).write_text(text)
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", message)
        self.head = rev(self.repo)
        return self.head

    def report(self) -> list[dict[str, Any]]:
        return json.loads((self.repo / "gl-code-quality-report.json").read_text())


@pytest.fixture
def scripted_yaml(tmp_path: Path) -> Callable[..., Path]:
    def _make(**extra: Any) -> Path:
        path = tmp_path / "prereview-gitlab.yml"
        cfg = json.loads(json.dumps(SCRIPTED))
        for section, values in extra.items():
            cfg.setdefault(section, {}).update(values)
        path.write_text(yaml.safe_dump(cfg))
        return path

    return _make


@pytest.fixture
def bug_mr(bench_repo: Callable[..., dict], scripted_yaml: Callable[..., Path]) -> MR:
    """The QuixBugs gcd case: base correct, head introduces the bug (one changed line)."""
    info = bench_repo("quixbugs", "gcd", kind="bug")
    repo = Path(info["repo"])
    return MR(repo, rev(repo, "HEAD~1"), rev(repo), scripted_yaml())


def assert_positions_on_diff(fake: FakeGitLab) -> None:
    """Every diff note sits on a line of the MR diff, and the position is the one GitLab expects there."""
    for note in fake.diff_notes:
        pos = note["position"]
        assert fake.position_error(pos) is None, pos
        if pos["position_type"] == "text":
            hit = fake.line_for(pos)
            assert hit is not None, pos
            _, line = hit
            if line.kind == "+":
                assert "old_line" not in pos and pos["new_line"] == line.new_pos
            elif line.kind == "-":
                assert "new_line" not in pos and pos["old_line"] == line.old_pos
            else:
                assert pos["old_line"] == line.old_pos and pos["new_line"] == line.new_pos
