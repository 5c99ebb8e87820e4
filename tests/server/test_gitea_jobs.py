"""Worker jobs through the real Gitea session against the emulated Gitea: `/describe`, and `/ask` with the
server's token masked in what is posted."""

from __future__ import annotations

import json
from pathlib import Path

from bot.change.diff import parse
from bot.config import Config
from bot.jobs.job import Job
from bot.pipeline.run import LazyModel
from bot.progress import Quiet
from bot.render.markdown import SUMMARY_MARKER
from bot.render.walkthrough import START
from bot.server.gitea_session import GiteaSession
from bot.server.queue import make_storage
from bot.server.secrets import Secrets
from bot.server.state import ServerState
from bot.server.worker import ForgeRunner
from tests.fakes.gitea_api import TOKEN, FakeGitea
from tests.server.stack import DIFF


class NoRepoConfig(GiteaSession):
    def base_file(self, sha: str, path: str, dest: Path) -> str | None:
        return None  # the repository has no .prereview.yml


def _runner(tmp: Path, url: str, replies: list[dict]) -> ForgeRunner:
    script = tmp / "script.json"
    script.write_text(json.dumps({"replies": replies, "default": {}}))
    cfg = Config.model_validate(
        {
            "model": {"backend": "scripted", "name": "scripted", "script": str(script)},
            "server": {"queue_path": str(tmp / "queue.db"), "gitea_url": url},
        }
    )
    state = ServerState(make_storage(cfg.server, "state"))
    return ForgeRunner(
        cfg, Secrets(gitea_token=TOKEN), state, model=LazyModel(cfg, Quiet()), sessions=NoRepoConfig
    )


def test_describe_writes_the_summary_then_the_description(tmp_path: Path) -> None:
    paths = [f.path for f in parse(DIFF).files]
    text = json.dumps(
        {"summary": "Evaluates its input.", "files": {p: "now calls eval" for p in paths}, "risks": []}
    )
    reply = {"match": "Describe the change", "text": text}
    with FakeGitea(diff_text=DIFF, base_sha="b" * 40, head_sha="a" * 40, body="Author text.") as fake:
        runner = _runner(tmp_path, fake.url, [reply, reply])
        runner.run(Job("describe", "gitea", "acme/widgets", 3))
        (summary,) = [c for c in fake.comments if c["body"].startswith(SUMMARY_MARKER)]
        assert START in summary["body"] and "| `app.py` | now calls eval |" in summary["body"]
        runner.run(Job("describe", "gitea", "acme/widgets", 3, update=True))
        assert fake.body.startswith("Author text.") and "Evaluates its input." in fake.body
        assert fake.violations == []


def test_ask_reply_never_carries_the_servers_token(tmp_path: Path) -> None:
    leak = {"match": "Question:", "text": f"Use the token {TOKEN} to call the API."}
    with FakeGitea(diff_text=DIFF, base_sha="b" * 40, head_sha="a" * 40) as fake:
        asked = fake.add_comment("/ask how do I call it?", author="dev")
        _runner(tmp_path, fake.url, [leak]).run(
            Job(
                "ask",
                "gitea",
                "acme/widgets",
                3,
                comment_id=asked["id"],
                author="dev",
                text="how do I call it?",
            )
        )
        [answer] = [c for c in fake.comments if c["id"] != asked["id"]]
        assert "Use the token" in answer["body"] and TOKEN not in answer["body"]
        assert fake.violations == []
