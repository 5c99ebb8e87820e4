"""A Jenkins build a Bitbucket `pr:comment:added` webhook triggered (Generic Webhook Trigger: the body in
PREREVIEW_BITBUCKET_EVENT) answers the comment's command through the one job dispatcher, as the webhook
server does: `/ask` answered in the comment's thread from the job's checkout, a command from someone
without write access refused, the comment's text and author read back from Bitbucket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from bot.forges.bitbucket.markers import from_bitbucket
from bot.server.forge_session import replied_to
from tests.conftest import git
from tests.fakes.bitbucket_api import TOKEN, FakeBitbucket

from .test_command import BASE, HEAD, SCRIPTED

DATA = Path(__file__).resolve().parents[1] / "data" / "bitbucket"
ANSWER = "perimeter now returns (w + h) * 3, which is not a perimeter: `return total * 3`."


def _setup(make_repo: Callable[..., Path], tmp: Path) -> tuple[Path, Path, dict[str, str]]:
    repo = make_repo({"geometry.py": BASE}, {"geometry.py": HEAD})
    base, head = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
    diff = git(repo, "diff", "--no-color", "--src-prefix=a/", "--dst-prefix=b/", base, head)
    script = tmp / "script.json"
    script.write_text(json.dumps({"replies": [{"text": ANSWER}], "default": {"text": "?"}}))
    remote = tmp / "scm" / "PRJ" / "widgets.git"  # what {url}/scm/PRJ/widgets.git serves
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(remote)], check=True)
    config = tmp / "prereview.yml"
    model = {**SCRIPTED["model"], "script": str(script)}
    server = {"bitbucket_git_url": f"file://{tmp / 'scm'}"}
    config.write_text(yaml.safe_dump({**SCRIPTED, "model": model, "server": server}))
    return repo, config, {"diff_text": diff, "base_sha": base, "head_sha": head}


def _build(
    repo: Path, fake: FakeBitbucket, config: Path, text: str, user: str, **extra: str
) -> tuple[int, str]:
    """The comment exists on Bitbucket; the build gets its webhook body, as Jenkins passes it."""
    cid = fake.add_comment(text, author=user)["id"]
    data = json.loads((DATA / "pr_comment_added.json").read_text())
    data["comment"].update(text=text, id=cid, author=fake.user(user))
    data["pullRequest"]["id"] = fake.number
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "LANG": "C.UTF-8",
        "WORKSPACE": str(repo),
        "PREREVIEW_BITBUCKET_URL": fake.url,
        "PREREVIEW_BITBUCKET_TOKEN": TOKEN,
        "PREREVIEW_BITBUCKET_EVENT": json.dumps(data),
        **extra,
    }
    out = subprocess.run(
        [sys.executable, "-m", "bot", "bitbucket", "--config", str(config)],
        env=env,
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert TOKEN not in out.stdout + out.stderr
    return cid, out.stderr


def _replies(fake: FakeBitbucket, cid: int) -> list[str]:
    root = next(c for c in fake.comments if c["id"] == cid)
    return [t for r in root["comments"] if cid in replied_to([t := from_bitbucket(r["text"])])]


def test_ask_is_answered_in_the_comments_thread(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    repo, config, pr = _setup(make_repo, tmp_path)
    with FakeBitbucket(**pr) as fake:
        cid, err = _build(repo, fake, config, "/ask why does perimeter multiply by 3?", "maintainer")
        [reply] = _replies(fake, cid)
        assert "perimeter now returns (w + h) * 3" in reply and "ask for PRJ/widgets#3" in err
        assert "cannot read" not in err  # the head's code came from the repository, for the model
        assert fake.inline == [] and fake.reports == {}  # an answer, not a review
        assert fake.violations == []
        assert any(q.path == "/api/latest/users" and q.query["filter"] == "maintainer" for q in fake.requests)


def test_someone_without_write_access_gets_the_refusal(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo, config, pr = _setup(make_repo, tmp_path)
    with FakeBitbucket(**pr) as fake:
        cid, _ = _build(repo, fake, config, "/review", "passer-by")
        [reply] = _replies(fake, cid)
        assert reply.startswith("Sorry @passer-by, only people with write access")
        assert fake.inline == [] and fake.reports == {} and fake.violations == []


def test_the_comment_is_read_back_from_bitbucket(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    """A build parameter that claims a maintainer wrote `/review` does not make it so: the comment with
    that id is someone else's `thanks`, so there is nothing to do."""
    repo, config, pr = _setup(make_repo, tmp_path)
    with FakeBitbucket(**pr) as fake:
        real = fake.add_comment("thanks", author="passer-by")
        data = json.loads((DATA / "pr_comment_added.json").read_text())
        data["comment"].update(text="/review", id=real["id"], author=fake.user("maintainer"))
        data["pullRequest"]["id"] = fake.number
        env = {
            **os.environ,
            "WORKSPACE": str(repo),
            "PREREVIEW_BITBUCKET_URL": fake.url,
            "PREREVIEW_BITBUCKET_TOKEN": TOKEN,
            "PREREVIEW_BITBUCKET_EVENT": json.dumps(data),
        }
        out = subprocess.run(
            [sys.executable, "-m", "bot", "bitbucket", "--config", str(config)],
            env=env,
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0 and "nothing to do" in out.stderr, out.stderr
        assert fake.inline == [] and real["comments"] == []


def test_a_build_for_another_repository_than_the_pinned_one_is_refused(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo, config, pr = _setup(make_repo, tmp_path)
    with FakeBitbucket(**pr) as fake:
        data = json.loads((DATA / "pr_comment_added.json").read_text())
        env = {
            **os.environ,
            "PREREVIEW_BITBUCKET_URL": fake.url,
            "PREREVIEW_BITBUCKET_TOKEN": TOKEN,
            "PREREVIEW_BITBUCKET_REPO": "OPS/infra",
            "PREREVIEW_BITBUCKET_EVENT": json.dumps(data),
        }
        out = subprocess.run(
            [sys.executable, "-m", "bot", "bitbucket", "--config", str(config)],
            env=env,
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 2 and "not PREREVIEW_BITBUCKET_REPO=OPS/infra" in out.stderr
        assert fake.requests == []


def test_the_example_comment_jenkinsfile_passes_the_body_and_pins_server_and_repository() -> None:
    text = (
        Path(__file__).resolve().parents[2] / "examples" / "bitbucket" / "Jenkinsfile.comments"
    ).read_text()
    assert "[key: 'PREREVIEW_BITBUCKET_EVENT', value: '$']" in text and "sh 'prereview bitbucket'" in text
    assert "PREREVIEW_BITBUCKET_URL = " in text and "PREREVIEW_BITBUCKET_REPO = " in text
    assert "variable: 'PREREVIEW_BITBUCKET_TOKEN'" in text and "tokenCredentialId" in text
