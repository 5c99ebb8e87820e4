"""One incremental algorithm: after a commit that only moves an already-reviewed line, the Action's
`/review -i` and the server's `/review -i` give the same answer (nothing new to review); after a commit that
also changes a line, both review the hunk holding it. Both run against the same emulated PR and checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot.config import Config
from bot.jobs.job import Job
from bot.pipeline.run import LazyModel
from bot.progress import Quiet
from bot.server.queue import make_storage
from bot.server.secrets import Secrets
from bot.server.state import ServerState
from bot.server.worker import ForgeRunner
from tests.conftest import git
from tests.github.conftest import REPO, Action, payload

TWO = "def twice(x):\n    return x + x + x\n\n\ndef half(x):\n    return x / 2\n"
SWAPPED = "def half(x):\n    return x / 2\n\n\ndef twice(x):\n    return x + x + x\n"
EDITED = "def half(x):\n    return x // 2\n\n\ndef twice(x):\n    return x + x + x\n"


def _runner(action: Action) -> tuple[ForgeRunner, ServerState]:
    remotes = action.tmp / "remotes"
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(action.repo), str(remotes / f"{REPO}.git")], check=True
    )
    cfg = Config.model_validate(
        {
            **action.config,
            "scanners": {"secrets": False, "bandit": False, "patterns": False},
            "server": {
                "queue_path": str(action.tmp / "q.db"),
                "github_api_url": action.gh.url,
                "github_git_url": f"file://{remotes}",
            },
        }
    )
    state = ServerState(make_storage(cfg.server, "state"))
    runner = ForgeRunner(cfg, Secrets(github_token="ghs_test"), state, model=LazyModel(cfg, Quiet()))
    return runner, state


def _push(action: Action, files: dict[str, str], remotes: Path) -> None:
    action.commit(files)
    git(action.repo, "push", "-q", str(remotes / f"{REPO}.git"), f"HEAD:refs/heads/pr{action.runs}")


def _server_finds(runner: ForgeRunner, state: ServerState, incremental: bool) -> int:
    job = Job("review", "github", REPO, 1, comment_id=None, incremental=incremental)
    runner.run(job)
    last = state.last_findings(job.pr_key)
    return len(last["findings"]) if last else 0


def _action_finds(action: Action, body: str) -> int:
    run = action.run("issue_comment", payload("issue_comment.created.on_pr.pac-retest.json", body=body))
    assert run.code == 0, run.err
    return int(run.outputs["findings"])


@pytest.mark.parametrize(("then", "found"), [(SWAPPED, 0), (EDITED, 1)])
def test_a_moved_line_gives_the_same_answer_from_the_action_and_the_server(
    action: Action, then: str, found: int
) -> None:
    remotes = action.tmp / "remotes"
    runner, state = _runner(action)
    _push(action, {"python_programs/extra.py": TWO}, remotes)
    # Both have reviewed the PR at this head: the Action (its summary records the head), the server.
    assert _action_finds(action, "/review") >= 1
    assert _server_finds(runner, state, incremental=False) >= 1
    _push(action, {"python_programs/extra.py": then}, remotes)  # `twice` moved below `half`
    # Moved only: nothing new, neither path reviews `twice` again. Edited: the hunk holding `half` is
    # reviewed whole (the file is new in the PR: one hunk), so `twice`'s finding is found again.
    assert _action_finds(action, "/review -i") == found
    assert _server_finds(runner, state, incremental=True) == found
