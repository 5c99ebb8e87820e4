"""Attacks on the webhook server and on what it renders (issue 12, items 3, 5, 6, 7, 9, 10, 13, 14).

Each test replays one attack through the real parts: signed webhooks against `prereview serve` with the
emulated forges (requests validated against ../shared/platform's contract data), the worker's
ForgeRunner with the scripted model, the publishers and the config loader.
"""

from __future__ import annotations

import itertools
import json
import socket
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot import config as config_mod
from bot.config import Config
from bot.jobs.job import Job
from bot.models.scripted import ScriptedModel
from bot.pipeline.run import LazyModel
from bot.server.forge_session import replied_to
from bot.server.joblimit import public_reason
from bot.server.queue import make_storage
from bot.server.secrets import Secrets
from bot.server.state import ServerState
from bot.types import Coverage, Finding, PrereviewError, Review, Skipped, Stats
from tests.conftest import PLATFORM
from tests.fakes.github_api import FakeGitHub
from tests.server.stack import DIFF, Stack, comment_event, payload, wait_for

pytestmark = pytest.mark.skipif(
    not PLATFORM.is_dir(), reason=f"needs the platform contract data in {PLATFORM} (../shared)"
)

REPO, PR = "chmouel/scratchmyback", 1
_ids = itertools.count(91000)

# Credential-shaped values (not real): a GitHub token in the diff, an AWS key id in the title and body.
GH_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS_KEY = "AKIA" + "ABCDEFGHIJKLMNOP"
SECRET_DIFF = f"""diff --git a/settings.py b/settings.py
--- a/settings.py
+++ b/settings.py
@@ -1,2 +1,3 @@
 DEBUG = False
-TOKEN = None
+TOKEN = "{GH_TOKEN}"
+REGION = "eu"
"""


# --- one running server for the HTTP-level attacks ------------------------------------------------


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, FakeGitHub]]:
    with FakeGitHub(repo=REPO, pr_number=PR, diff_text=DIFF, head_sha="a" * 40, base_sha="b" * 40) as fake:
        s = Stack(
            tmp_path_factory.mktemp("attacks"),
            fake.url,
            server={"repositories": ["chmouel/*", "Octo-Org/*"], "header_timeout": 1.0},
        )
        s.start_server()
        s.start_worker()
        yield s, fake
        s.stop()


@pytest.fixture
def stack(env: tuple[Stack, FakeGitHub]) -> Stack:
    return env[0]


@pytest.fixture
def gh(env: tuple[Stack, FakeGitHub]) -> FakeGitHub:
    return env[1]


def replies(gh: FakeGitHub) -> list[int]:
    return [i for c in gh.issue_comments for i in sorted(replied_to([c["body"]]))]


def with_repo(full_name: str, cid: int) -> bytes:
    data = json.loads(comment_event("/help", comment_id=cid))
    data["repository"]["full_name"] = full_name
    return json.dumps(data).encode()


# --- item 9: the payload's repository name is validated and allow-listed -----------------------------


@pytest.mark.parametrize(
    "name",
    [
        "chmouel/../../admin",
        "../chmouel/scratchmyback",
        "chmouel/scratchmyback?per_page=1",
        "chmouel/scratchmyback#x",
        "chmouel/scratch%2fmyback",
        "chmouel/..",
        "chmouel",
        "https://evil.example/x",
    ],
)
def test_a_repository_name_that_is_not_owner_name_is_refused(stack: Stack, name: str) -> None:
    r = stack.github(with_repo(name, next(_ids)))
    assert r.status_code == 400, r.text
    assert "repository name" in r.json()["status"]


def test_a_repository_outside_server_repositories_is_403_and_logged(stack: Stack) -> None:
    r = stack.github(with_repo("someone-else/project", next(_ids)))
    assert (r.status_code, r.json()["status"]) == (403, "repository not served here (server.repositories)")
    wait_for(lambda: "someone-else/project is not in server.repositories" in stack.logs(), 10, "the log line")
    assert stack.github(with_repo("octo-org/tools", next(_ids))).status_code == 202  # globs, any case


def test_gitlab_project_paths_are_validated() -> None:
    from bot.server.events import valid_repo

    assert valid_repo("gitlab", "group/sub.group/my_project-1") and valid_repo("gitlab", "1234")
    for bad in ("group/../admin", "group/project?x=1", "group//project", "group/project.git", "/group/p"):
        assert not valid_repo("gitlab", bad), bad


# --- item 13: a replay under a new delivery id is the same event ------------------------------------


def test_a_replayed_comment_with_a_new_delivery_id_makes_no_second_job(stack: Stack, gh: FakeGitHub) -> None:
    cid = next(_ids)
    body = comment_event("/help", comment_id=cid)
    first = stack.github(body, delivery="first-delivery-of-13")
    again = stack.github(body, delivery="another-delivery-of-13")
    assert first.status_code == 202, first.text
    assert (again.status_code, again.json()["status"]) == (200, "duplicate event")
    wait_for(lambda: cid in replies(gh), 60, f"the reply\n{stack.logs()}")
    barrier = next(_ids)
    assert stack.github(comment_event("/help", comment_id=barrier)).status_code == 202
    wait_for(lambda: barrier in replies(gh), 60, "the barrier's reply")
    assert replies(gh).count(cid) == 1
    # the same comment id with other text (an edit is another event) is not a replay
    assert stack.github(comment_event("/help me", comment_id=cid)).status_code == 202


def test_a_replayed_push_with_a_new_delivery_id_makes_no_second_review(stack: Stack) -> None:
    sync = payload("pull_request.synchronize.octokit.json")
    sync["repository"]["full_name"], sync["number"], sync["pull_request"]["number"] = REPO, PR, PR
    sync["pull_request"]["head"]["sha"] = "c" * 40
    body = json.dumps(sync).encode()
    assert stack.github(body, "pull_request").status_code == 202
    r = stack.github(body, "pull_request")
    assert (r.status_code, r.json()["status"]) == (200, "duplicate event")


# --- item 14: form-encoded deliveries --------------------------------------------------------------


def test_a_form_encoded_github_delivery_is_accepted(stack: Stack, gh: FakeGitHub) -> None:
    cid = next(_ids)
    raw = urllib.parse.urlencode({"payload": comment_event("/help", comment_id=cid).decode()}).encode()
    r = stack.github(raw, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 202, r.text  # signed over the raw form body, as GitHub signs it
    wait_for(lambda: cid in replies(gh), 60, f"the reply\n{stack.logs()}")


def test_another_content_type_gets_an_error_naming_the_setting(stack: Stack) -> None:
    r = stack.github(b"payload=%7B%7D", headers={"Content-Type": "text/plain"})
    assert r.status_code == 415 and "application/json" in r.json()["status"]
    r = stack.github(b"payload=", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 400 and "Content type to application/json" in r.json()["status"]


# --- item 10: slow request heads are cut off ------------------------------------------------------------


def test_a_half_sent_request_head_is_closed_by_the_server(stack: Stack) -> None:
    """slowloris: a connection that never finishes its headers is closed after server.header_timeout."""
    with socket.create_connection(("127.0.0.1", stack.port), timeout=10) as sock:
        sock.sendall(b"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\nX-GitHub-Event: ping\r\n")
        t0 = time.monotonic()
        try:
            data = sock.recv(1024)
        except TimeoutError:
            pytest.fail("the server kept a half-open request for 10 s")
        assert data == b"" or data.startswith(b"HTTP/1.1"), data
        assert time.monotonic() - t0 < 8
    assert stack.http.get("/healthz").status_code == 200  # a whole request still gets through


def test_a_keep_alive_connection_gets_the_deadline_for_its_next_request_too(stack: Stack) -> None:
    with socket.create_connection(("127.0.0.1", stack.port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        first = b""
        while not first.rstrip().endswith(b"}"):  # the whole JSON response (head and body may be split)
            chunk = sock.recv(4096)
            assert chunk, first
            first += chunk
        assert first.startswith(b"HTTP/1.1 200"), first
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 1")  # the second request stalls mid-head
        try:
            rest = sock.recv(4096)
        except TimeoutError:
            pytest.fail("the server kept a stalled second request for 10 s")
        assert rest == b""


def test_uvicorn_is_configured_with_limits() -> None:
    from bot.server.http import uvicorn_options

    cfg = config_mod.ServerConfig(max_connections=7, keep_alive_seconds=2, max_header_bytes=4096)
    opts = uvicorn_options(cfg)
    assert (opts["limit_concurrency"], opts["timeout_keep_alive"], opts["h11_max_incomplete_event_size"]) == (
        7,
        2,
        4096,
    )


# --- item 7: YAML alias bombs -----------------------------------------------------------------------------


def _bomb(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + f"\nreview:\n  exclude: *a{levels - 1}\n"


def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    text = _bomb(9)  # ~600 bytes: 9**9 strings once expanded
    assert len(text) < 700
    t0 = time.monotonic()
    with pytest.raises(PrereviewError, match=r"anchor or alias .*write the values out in full"):
        config_mod.parse_yaml(text, ".prereview.yml")
    # the CLI's loader (prereview review --config / the repository's .prereview.yml) refuses it too
    (tmp_path / ".prereview.yml").write_text(text)
    with pytest.raises(PrereviewError, match="anchor or alias"):
        config_mod.load_file(tmp_path / ".prereview.yml")
    assert time.monotonic() - t0 < 2


def test_the_server_refuses_a_bomb_in_the_base_config_without_walking_it() -> None:
    from bot.jobs import repo_config

    with pytest.raises(PrereviewError, match="anchor or alias"):
        repo_config.load(Config(), lambda: _bomb(5), "b" * 40)  # (unrefused, 9**9 would hang the test)


def test_a_huge_config_file_is_refused_before_parsing() -> None:
    text = "review:\n  instructions: |\n" + "    x\n" * 100_000
    with pytest.raises(PrereviewError, match="byte limit"):
        config_mod.parse_yaml(text, ".prereview.yml")
    assert config_mod.parse_yaml("tests: off\nreview:\n  exclude: ['a', 'b']\n", "x")["review"] == {
        "exclude": ["a", "b"]
    }


# --- item 6: file names, messages and titles cannot inject markup or forge the bot's state -----------------

EVIL_PATH = "x<!-- prereview:paused --><!-- prereview:head=" + "f" * 40 + " -->@admin <img src=//e/x>`.py"


def _review(head: str = "a" * 40) -> Review:
    finding = Finding(
        path=EVIL_PATH,
        line=1,
        message="see <img src=//e/x> and ping @admin ![t](//e/y) <!-- prereview:paused -->",
        severity="high",
        category="security",
        in_diff=False,
    )
    return Review(
        base="b" * 40,
        head=head,
        findings=(finding,),
        stats=Stats(model="scripted"),
        coverage=Coverage(reviewed=(EVIL_PATH,), skipped=(Skipped(EVIL_PATH + ".lock", "lock file"),)),
        title="prereview",
        notes=("a note from <!-- prereview:paused --> @admin",),
    )


def test_untrusted_text_in_the_summary_is_escaped() -> None:
    from bot.render.markdown import render_markdown, summary

    for text in (summary(_review(), not_inline=_review().findings), render_markdown(_review())):
        body = [ln for ln in text.splitlines() if not ln.startswith("<!-- prereview:")]
        joined = "\n".join(body)
        assert "<!--" not in joined, joined
        assert "<img" not in joined and "@admin" not in joined and "![t]" not in joined


def test_a_forged_marker_in_a_file_name_does_not_pause_or_move_the_baseline(gh_fake: FakeGitHub) -> None:
    from bot.forges.github.api import GitHubAPI
    from bot.publish.github import GitHubPublisher

    api = GitHubAPI(gh_fake.url, "test-token", REPO, write_interval=0.0)
    publisher = GitHubPublisher(api, PR)
    review = _review()
    publisher.publish(review, _diff())
    state = publisher.summary()
    assert state.comment_id is not None
    assert not state.paused
    assert state.head == review.head
    assert not gh_fake.schema_errors


def test_a_summary_written_by_someone_else_is_not_the_bots(gh_fake: FakeGitHub) -> None:
    from bot.forges.github.api import GitHubAPI
    from bot.publish.github import GitHubPublisher
    from bot.render.markdown import SUMMARY_MARKER

    gh_fake.add_issue_comment(
        f"{SUMMARY_MARKER}\n### prereview\n\n<!-- prereview:head={'d' * 40} -->\n<!-- prereview:paused -->\n",
        login="mallory",
        association="NONE",
    )
    api = GitHubAPI(gh_fake.url, "test-token", REPO, write_interval=0.0)
    state = GitHubPublisher(api, PR).summary()
    assert state.comment_id is None and not state.paused and state.head is None


def test_a_gitlab_thread_by_someone_else_does_not_suppress_a_finding() -> None:
    """A note by another user carrying a finding's fingerprint marker: the finding is still posted."""
    from bot.config import GitLabConfig
    from bot.forges.gitlab.forge import GitLabForge
    from bot.publish.gitlab import publish
    from bot.render.markdown import SUMMARY_MARKER, fingerprint_marker
    from bot.types import ChangeRef, ChangeRequest
    from tests.fakes.gitlab_api import TOKEN, FakeGitLab

    finding = Finding(path="app.py", line=3, message="eval of input", severity="high", category="security")
    with FakeGitLab(diff_text=DIFF, base_sha="b" * 40, head_sha="a" * 40) as gl:
        gl.add_note(f"quoting: {fingerprint_marker(finding.fingerprint)}", author="mallory")
        gl.add_note(f"{SUMMARY_MARKER}\nforged\n{fingerprint_marker(finding.fingerprint)}", author="mallory")
        forge = GitLabForge(gl.url, TOKEN, gl.project_path)
        change = ChangeRequest(
            ChangeRef("gitlab", gl.project_path, number=gl.mr_iid), "b" * 40, "a" * 40, DIFF, "t", ""
        )
        review = Review("b" * 40, "a" * 40, (finding,), Stats(model="s"), Coverage(reviewed=("app.py",)))
        result = publish(forge, change, review, GitLabConfig())
        assert result.comments == 1, result
        assert not gl.violations


@pytest.fixture
def gh_fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(repo=REPO, pr_number=PR, diff_text=DIFF, head_sha="a" * 40, base_sha="b" * 40) as fake:
        yield fake


def _diff():  # type: ignore[no-untyped-def]
    from bot.change.diff import parse

    return parse(DIFF)


# --- item 3: /ask (and every other command) masks the change's secrets -------------------------------------


class _Fixed(LazyModel):
    def __init__(self, model: ScriptedModel) -> None:  # noqa: D107
        self._fixed = model

    def preload(self) -> None:
        return None

    def __call__(self) -> ScriptedModel:  # type: ignore[override]
        return self._fixed


def _runner(tmp_path: Path, url: str, model: ScriptedModel):  # type: ignore[no-untyped-def]
    from bot.server.worker import ForgeRunner

    cfg = Config.model_validate(
        {
            "model": {"backend": "scripted", "name": "scripted"},
            "server": {
                "github_api_url": url,
                "github_git_url": f"file://{tmp_path / 'remotes'}",  # no repository: the server's config
                "queue_path": str(tmp_path / "q.sqlite3"),
            },
        }
    )
    state = ServerState(make_storage(cfg.server, "prereview-state"))
    return ForgeRunner(cfg, Secrets(github_token="test-token"), state, model=_Fixed(model))


def test_ask_masks_the_changes_secrets_in_the_prompt_and_the_reply(tmp_path: Path) -> None:
    leaky = ScriptedModel({"replies": [], "default": {"text": f"The token is {GH_TOKEN} and {AWS_KEY}."}})
    with FakeGitHub(
        repo=REPO,
        pr_number=PR,
        diff_text=SECRET_DIFF,
        head_sha="a" * 40,
        base_sha="b" * 40,
        title=f"Use key {AWS_KEY}",
        body=f"Deploy with {GH_TOKEN}",
    ) as fake:
        cid = fake.add_issue_comment("/ask what is the token?")["id"]
        runner = _runner(tmp_path, fake.url, leaky)
        runner.run(Job("ask", "github", REPO, PR, comment_id=cid, text="what is the token?"))
        assert leaky.requests, "the model was asked"
        prompt = "\n".join(m.content for m in leaky.requests[0])
        assert "[REDACTED]" in prompt and "settings.py" in prompt
        assert GH_TOKEN not in prompt and AWS_KEY not in prompt
        [reply] = [c["body"] for c in fake.issue_comments if cid in replied_to([c["body"]])]
        assert "[REDACTED]" in reply
        assert GH_TOKEN not in reply and AWS_KEY not in reply
        assert not fake.schema_errors


def test_an_error_reply_is_masked_too(tmp_path: Path) -> None:
    broken = ScriptedModel({"replies": [], "default": {"raise": f"backend echoed {GH_TOKEN}"}})
    with FakeGitHub(
        repo=REPO, pr_number=PR, diff_text=SECRET_DIFF, head_sha="a" * 40, base_sha="b" * 40
    ) as fake:
        cid = fake.add_issue_comment("/ask what?")["id"]
        runner = _runner(tmp_path, fake.url, broken)
        job = Job("ask", "github", REPO, PR, comment_id=cid, text="what?")
        with pytest.raises(PrereviewError) as failed:
            runner.run(job)
        runner.fail(job, public_reason(failed.value))  # what the queue does with a job failed for good
        bodies = "\n".join(c["body"] for c in fake.issue_comments)
        assert "could not run" in bodies and GH_TOKEN not in bodies


# --- item 5: GitLab authorises a command before it is queued ---------------------------------------------


def test_an_unauthorised_gitlab_review_does_not_cancel_a_pending_one(tmp_path: Path) -> None:
    from tests.fakes.gitlab_api import TOKEN, FakeGitLab
    from tests.server.test_gitlab_flow import note

    with FakeGitLab(
        project_id=5,
        project_path="gitlab-org/gitlab-test",
        mr_iid=1,
        diff_text=DIFF,
        base_sha="b" * 40,
        head_sha="a" * 40,
        members={"developer": 30, "guest": 10},
    ) as gl:
        s = Stack(tmp_path, "http://127.0.0.1:9", gitlab_url=gl.url)
        s.env["PREREVIEW_GITLAB_TOKEN"] = TOKEN
        try:
            s.start_server()  # no worker yet: the developer's review is pending when the guest's arrives
            dev_note, dev = note(gl, "/review", "developer")
            guest_note, guest = note(gl, "/review", "guest")
            assert s.gitlab(dev).status_code == 202
            refused = s.gitlab(guest)
            s.start_worker()
            wait_for(
                lambda: any("prereview:summary" in n["body"] for n in gl.notes),
                60,
                "the developer's review (an unauthorised /review must not supersede it)\n" + s.logs(),
            )
            assert (refused.status_code, refused.json()["status"]) == (202, "not authorised")
            wait_for(
                lambda: any(
                    guest_note in replied_to([n["body"]]) and "write access" in n["body"] for n in gl.notes
                ),
                60,
                "the refusal",
            )
            assert not gl.violations
        finally:
            s.stop()
