"""`/ask` on the webhook server, against the emulated GitHub: the model sees the code as it is after the
change around what was asked and the latest review's findings, and its quoted line is checked against
that code (a removed line, or none, is said plainly)."""

from __future__ import annotations

import json
from pathlib import Path

from bot.change.diff import parse
from bot.config import Config
from bot.jobs import ask_code as ask
from bot.jobs.job import Job
from bot.pipeline.run import LazyModel
from bot.progress import Quiet
from bot.server.forge_session import GitHubSession
from bot.server.queue import make_storage
from bot.server.secrets import Secrets
from bot.server.state import ServerState
from bot.server.worker import ForgeRunner
from bot.types import Finding
from tests.fakes.github_api import FakeGitHub

HEAD, BASE = "a" * 40, "b" * 40
OLD_LINE = '    cur.execute("SELECT id FROM users WHERE name = ?", (name,))'
NEW_LINE = "    cur.execute(f\"SELECT id FROM users WHERE name = '{name}'\")"
HEAD_DB = (
    "import sqlite3\n\n\ndef connect(path):\n    return sqlite3.connect(path)\n\n\n"
    f"def find_user(cur, name):\n{NEW_LINE}\n    return cur.fetchone()\n\n\ndef other():\n    return 1\n"
)
# the hunk does not show the `def find_user` line: only the head file has it
DIFF = (
    "diff --git a/app/db.py b/app/db.py\n--- a/app/db.py\n+++ b/app/db.py\n"
    f"@@ -9,2 +9,2 @@ def find_user(cur, name):\n-{OLD_LINE}\n+{NEW_LINE}\n     return cur.fetchone()\n"
)
SQLI = Finding(
    "app/db.py", 9, "SQL built with an f-string: a quote in name changes the query.", category="security"
)
QUESTION = "is find_user safe against SQL injection?"


def _runner(tmp: Path, url: str, replies: list[str]) -> ForgeRunner:
    script = tmp / "script.json"
    script.write_text(json.dumps({"replies": [{"text": r} for r in replies], "default": {"text": "?"}}))
    cfg = Config.model_validate(
        {
            "model": {"backend": "scripted", "name": "scripted", "script": str(script)},
            "server": {"queue_path": str(tmp / "queue.db"), "github_api_url": url},
        }
    )

    class HeadFiles(GitHubSession):
        def base_file(self, sha: str, path: str, dest: Path) -> str | None:
            return HEAD_DB if (sha, path) == (HEAD, "app/db.py") else None  # no .prereview.yml

    state = ServerState(make_storage(cfg.server, "state"))
    return ForgeRunner(
        cfg, Secrets(github_token="ghs_test"), state, model=LazyModel(cfg, Quiet()), sessions=HeadFiles
    )


def _ask(
    tmp: Path, gh: FakeGitHub, replies: list[str], findings: tuple[Finding, ...] = (SQLI,)
) -> tuple[str, str]:
    runner = _runner(tmp, gh.url, replies)
    job = Job("ask", "github", "o/r", 1, text=QUESTION)
    if findings:
        runner.state.set_findings(job.pr_key, HEAD, findings)
    before = len(gh.issue_comments)
    runner.run(job)
    prompt = runner.model().requests[-1][-1].content  # type: ignore[attr-defined]
    return prompt, gh.issue_comments[before]["body"]


def test_ask_sees_the_head_code_and_the_review_and_a_removed_line_is_called_out(tmp_path: Path) -> None:
    answer = f"Yes: it passes name as a query parameter.\nQuote: {OLD_LINE.strip()}"
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh:
        prompt, reply = _ask(tmp_path, gh, [answer])
        assert "Code as it is after the change:" in prompt
        assert "    8  def find_user(cur, name):" in prompt and f"    9  {NEW_LINE}" in prompt
        assert "def other" not in prompt  # the function asked about, not the whole file
        assert "app/db.py:9 [medium security] SQL built with an f-string" in prompt
        assert prompt.index("Code as it is after the change") < prompt.index("Diff:") < prompt.index(QUESTION)
        assert "Yes: it passes name as a query parameter." in reply and "Quote:" not in reply
        assert "removed by this change" in reply
        assert gh.schema_errors == []


def test_a_quote_of_the_head_code_is_shown_with_its_place(tmp_path: Path) -> None:
    answer = f"No: name goes into the SQL text.\nQuote: `{NEW_LINE.strip()}`"
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh:
        _, reply = _ask(tmp_path, gh, [answer], findings=())
        assert "No: name goes into the SQL text." in reply and "Relies on `app/db.py:9`" in reply


def test_an_answer_without_a_quote_says_so(tmp_path: Path) -> None:
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh:
        prompt, reply = _ask(tmp_path, gh, ["It is fine."], findings=())
        assert "It is fine." in reply and "quotes no line of the code" in reply
        assert "Latest prereview review: none recorded" in prompt


def test_the_state_keeps_the_latest_reviews_findings(tmp_path: Path) -> None:
    cfg = Config.model_validate({"server": {"queue_path": str(tmp_path / "q.db")}})
    state = ServerState(make_storage(cfg.server, "state"))
    state.set_findings("github:o/r#1", HEAD, [SQLI, SQLI.with_(line=20, message="x\n  y")])
    last = state.last_findings("github:o/r#1")
    assert last is not None and last["head"] == HEAD
    assert [(f["path"], f["line"], f["message"]) for f in last["findings"]][1] == ("app/db.py", 20, "x y")


def test_places_and_definitions() -> None:
    diff = parse(DIFF)
    assert ask.places("see app/db.py:9 and db.py:3", None, ["app/db.py"]) == [
        ("app/db.py", 9),
        ("app/db.py", 3),
    ]
    assert ask.names("is find_user safe, and UserStore?") == ["find_user", "UserStore"]
    assert ask.definitions(HEAD_DB, ["find_user"]) == [8]
    x = ask.excerpt("app/db.py", HEAD_DB, 8, definition=True)
    assert x.start == 8 and x.lines[-1] == "    return cur.fetchone()"
    excerpts, texts = ask.head_code(diff, QUESTION, None, lambda p: HEAD_DB)
    assert [e.start for e in excerpts] == [8] and set(texts) == {"app/db.py"}
