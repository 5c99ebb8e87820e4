"""Who may run commands on GitLab: Developer (30) or higher on the project, asked through the API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.config import Config, ServerConfig
from bot.forges.gitlab.forge import GitLabForge
from bot.jobs.job import Job
from bot.server.forge_session import GitLabSession
from bot.server.secrets import Secrets
from tests.fakes.gitlab_api import TOKEN, FakeGitLab

PROJECT = "group/project"


@pytest.fixture(scope="module")
def gl() -> Iterator[FakeGitLab]:
    with FakeGitLab(project_path=PROJECT, members={"maint": 40, "developer": 30, "reporter": 20}) as fake:
        fake.user_id("stranger")  # a user of the instance who is not a member of the project
        yield fake


def test_access_level_reads_members_all(gl: FakeGitLab) -> None:
    forge = GitLabForge(gl.url, TOKEN, PROJECT)
    levels = {
        name: forge.access_level(gl.user_id(name)) for name in ("maint", "developer", "reporter", "stranger")
    }
    assert levels == {"maint": 40, "developer": 30, "reporter": 20, "stranger": 0}
    assert gl.count("GET", r"/members/all/\d+$") == 4 and not gl.violations


@pytest.mark.parametrize(("user", "allowed"), [("developer", True), ("maint", True), ("reporter", False)])
def test_developer_may_command_reporter_may_not(gl: FakeGitLab, user: str, allowed: bool) -> None:
    cfg = Config(server=ServerConfig(gitlab_url=gl.url))
    job = Job(
        "review", "gitlab", PROJECT, gl.mr_iid, author=user, author_id=gl.user_id(user), check_access=True
    )
    assert GitLabSession(job, cfg, Secrets(gitlab_token=TOKEN)).may_command(job) is allowed


def test_no_author_id_is_refused_without_asking(gl: FakeGitLab) -> None:
    cfg = Config(server=ServerConfig(gitlab_url=gl.url))
    job = Job("review", "gitlab", PROJECT, gl.mr_iid, author="ghost", check_access=True)
    before = gl.count("GET", r"/members/all/")
    assert GitLabSession(job, cfg, Secrets(gitlab_token=TOKEN)).may_command(job) is False
    assert gl.count("GET", r"/members/all/") == before
