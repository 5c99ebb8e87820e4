"""Fixtures for driving `prereview gitea` in a Gitea/Forgejo Actions environment against the emulated API."""

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

from tests.conftest import git
from tests.fakes.gitea_api import TOKEN, FakeGitea

DATA = Path(__file__).resolve().parents[1] / "data" / "gitea"
# The scripted model, and nothing slow or external: the Gitea side is what these tests are about.
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


def rev(repo: Path, name: str = "HEAD") -> str:
    return git(repo, "rev-parse", name).strip()


@dataclass
class Result:
    code: int
    out: str
    err: str


@dataclass
class PR:
    """A repository with a pull request (base..head) and its Actions run environment."""

    repo: Path
    base: str
    head: str
    config: Path
    tmp: Path

    def diff(self) -> str:
        return git(
            self.repo, "diff", "--no-color", "--src-prefix=a/", "--dst-prefix=b/", self.base, self.head
        )

    def fake(self, **kw: Any) -> FakeGitea:
        return FakeGitea(diff_text=self.diff(), base_sha=self.base, head_sha=self.head, **kw)

    def event(self, fake: FakeGitea, action: str = "opened") -> Path:
        data = json.loads((DATA / "pull_request.opened.json").read_text())
        data["action"] = action
        data["number"] = data["pull_request"]["number"] = fake.number
        data["pull_request"]["base"]["sha"] = data["pull_request"]["merge_base"] = self.base
        data["pull_request"]["head"]["sha"] = self.head
        path = self.tmp / "event.json"
        path.write_text(json.dumps(data))
        return path

    def env(self, fake: FakeGitea, action: str = "opened", **extra: str | None) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            "LANG": "C.UTF-8",
            "CI": "true",
            "GITEA_ACTIONS": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(self.event(fake, action)),
            "GITHUB_REPOSITORY": fake.repo,
            "GITHUB_SERVER_URL": fake.url,
            "GITHUB_SHA": self.head,
            "GITHUB_WORKSPACE": str(self.repo),
            "PREREVIEW_GITEA_TOKEN": TOKEN,
        }
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env

    def run(self, fake: FakeGitea, *args: str, action: str = "opened", **extra: str | None) -> Result:
        proc = subprocess.run(
            [sys.executable, "-m", "bot", "gitea", "--config", str(self.config), *args],
            env=self.env(fake, action, **extra),
            cwd=self.repo,
            capture_output=True,
            text=True,
            timeout=300,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def commit(self, files: dict[str, str]) -> str:
        for name, text in files.items():
            (self.repo / name).write_text(text)
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", "more")
        self.head = rev(self.repo)
        return self.head


@pytest.fixture
def scripted_yaml(tmp_path: Path) -> Callable[..., Path]:
    def _make(**extra: Any) -> Path:
        path = tmp_path / "prereview-gitea.yml"
        cfg = json.loads(json.dumps(SCRIPTED))
        for section, values in extra.items():
            cfg.setdefault(section, {}).update(values)
        path.write_text(yaml.safe_dump(cfg))
        return path

    return _make


@pytest.fixture
def pr(make_repo: Callable[..., Path], scripted_yaml: Callable[..., Path], tmp_path: Path) -> PR:
    repo = make_repo({"geometry.py": BASE}, {"geometry.py": HEAD})
    return PR(repo, rev(repo, "HEAD~1"), rev(repo), scripted_yaml(), tmp_path)
