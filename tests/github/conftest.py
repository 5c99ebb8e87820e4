"""Fixtures for driving `prereview github` against the emulated GitHub API with real event payloads."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli.root import main
from tests.conftest import PLATFORM, git
from tests.fakes.github_api import FakeGitHub

PAYLOADS = PLATFORM / "payloads" / "github"
REPO = "o/r"


def pr_diff(repo: Path, base: str, head: str, *paths: str) -> str:
    return git(
        repo, "diff", "--no-color", "-M", "--src-prefix=a/", "--dst-prefix=b/", base, head, "--", *paths
    )


def payload(name: str, **patch: Any) -> dict[str, Any]:
    """A real payload from shared/platform with repository, number and shas patched in."""
    event = copy.deepcopy(json.loads((PAYLOADS / name).read_text()))
    event["repository"]["full_name"] = REPO
    if "pull_request" in event:
        pr = event["pull_request"]
        pr["number"] = event["number"] = patch.get("number", 1)
        pr["head"]["sha"] = patch.get("head", pr["head"]["sha"])
        pr["base"]["sha"] = patch.get("base", pr["base"]["sha"])
        pr["draft"] = patch.get("draft", False)
        if "before" in patch:
            event["before"], event["after"] = patch["before"], patch["head"]
    if "issue" in event:
        event["issue"]["number"] = patch.get("number", 1)
        event["comment"]["body"] = patch.get("body", event["comment"]["body"])
        event["comment"]["id"] = patch.get("comment_id", event["comment"]["id"])
        event["comment"]["author_association"] = patch.get(
            "association", event["comment"]["author_association"]
        )
    for key in ("action",):
        if key in patch:
            event[key] = patch[key]
    return event


@dataclass
class Run:
    code: int
    out: str
    err: str
    outputs: dict[str, str] = field(default_factory=dict)
    step_summary: str = ""


@dataclass
class Action:
    """One workspace + one emulated PR; `.run(event_name, event)` invokes `prereview github`."""

    repo: Path
    base: str
    head: str
    gh: FakeGitHub
    tmp: Path
    monkeypatch: pytest.MonkeyPatch
    capfd: pytest.CaptureFixture[str]
    config: dict[str, Any]
    runs: int = 0

    def commit(self, files: dict[str, str]) -> str:
        """A new commit on the PR (a push): the workspace moves, the API's diff follows."""
        for name, text in files.items():
            (self.repo / name).write_text(text)
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", "another commit")
        before, self.head = self.head, git(self.repo, "rev-parse", "HEAD").strip()
        self.gh.set_head(self.head, pr_diff(self.repo, self.base, self.head))
        return before

    def run(self, event_name: str, event: dict[str, Any], *args: str) -> Run:
        self.runs += 1
        path = self.tmp / f"event{self.runs}.json"
        path.write_text(json.dumps(event))
        outputs, summary = self.tmp / f"out{self.runs}", self.tmp / f"summary{self.runs}.md"
        cfg = self.tmp / "config.yml"
        cfg.write_text(yaml.safe_dump(self.config))
        env = {
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(path),
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_API_URL": self.gh.url,
            "GITHUB_TOKEN": "ghs_test",
            "GITHUB_WORKSPACE": str(self.repo),
            "GITHUB_OUTPUT": str(outputs),
            "GITHUB_STEP_SUMMARY": str(summary),
        }
        for k, v in env.items():
            self.monkeypatch.setenv(k, v)
        self.capfd.readouterr()
        try:
            main(["github", "--config", str(cfg), *args])
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        cap = self.capfd.readouterr()
        parsed: dict[str, str] = {}
        if outputs.exists():
            lines = outputs.read_text().splitlines()
            i = 0
            while i < len(lines):
                name, _, delim = lines[i].partition("<<")
                parsed[name] = lines[i + 1]
                assert lines[i + 2] == delim
                i += 3
        return Run(code, cap.out, cap.err, parsed, summary.read_text() if summary.exists() else "")

    def opened(self) -> dict[str, Any]:
        return payload("pull_request.opened.pac.json", head=self.head, base=self.base)


@pytest.fixture(autouse=True)
def _platform_data() -> None:
    if not PLATFORM.is_dir():
        pytest.skip(
            f"shared platform data (OpenAPI subset, payloads) not found at {PLATFORM}; set PREREVIEW_SHARED"
        )


# The scripted model reports the two bugs the tests introduce, wherever a chunk shows them (a finding whose
# quote is not in the chunk is dropped by anchoring, so one script fits every chunk).
SCRIPT = {
    "replies": [],
    "default": {
        "findings": [
            {
                "quote": "return gcd(a % b, b)",
                "line": 5,
                "message": "Arguments swapped: the recursion never terminates for a < b.",
                "category": "bug",
                "severity": "high",
                "cwe": "",
            },
            {
                "quote": "return x + x + x",
                "line": 2,
                "message": "`twice` returns three times x.",
                "category": "bug",
                "severity": "medium",
                "cwe": "",
            },
        ]
    },
}


@pytest.fixture
def action(
    bench_repo: Callable[..., dict],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> Iterator[Action]:
    """quixbugs gcd: a real one-line bug introduced by the PR, checked out as the Action would."""
    info = bench_repo("quixbugs", "gcd", kind="bug")
    repo = Path(info["repo"])
    head = git(repo, "rev-parse", "HEAD").strip()
    base = git(repo, "rev-parse", "HEAD~1").strip()
    with FakeGitHub(
        repo=REPO, pr_number=1, diff_text=pr_diff(repo, base, head), head_sha=head, base_sha=base
    ) as gh:
        script = tmp_path / "script.json"
        script.write_text(json.dumps(SCRIPT))
        config = {
            "model": {"backend": "scripted", "name": "scripted", "script": str(script)},
            "github": {"write_interval": 0},
            "tests": "off",
            "sandbox": {"backend": "none"},
        }
        yield Action(repo, base, head, gh, tmp_path, monkeypatch, capfd, config)
