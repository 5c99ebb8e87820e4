"""The dispatcher: `run(job, forge, cfg, model, state=...)` runs one job on one PR.

`forge` is the PR as a `ForgeSession` (fetch, reply, publish, …), `cfg` the caller's config (the
repository's `.prereview.yml` at the PR's base is merged over it per job), `model` the lazily loaded
model, `state` what is remembered per PR (paused, last reviewed head, last findings). A job whose author
may not command (GitLab: checked now) gets the refusal; an unknown kind gets the help.
"""

from __future__ import annotations

from collections.abc import Callable

from ..config import Config
from ..pipeline.run import LazyModel
from . import chatops
from .ask import ask
from .fix import fix
from .job import Job, RunStats
from .review import review
from .session import ForgeSession, JobState
from .workspace import config_for

REFUSAL = (
    "Sorry @{author}, only people with write access to this repository (owners, members, collaborators; "
    "Developer or higher on GitLab, write on Gitea/Forgejo) can run prereview commands."
)

Handler = Callable[[Job, ForgeSession, Config, LazyModel, JobState], "RunStats | None"]


def run(job: Job, forge: ForgeSession, cfg: Config, model: LazyModel, *, state: JobState) -> RunStats | None:
    if job.kind == "refuse" or (job.check_access and not forge.may_command(job)):
        forge.reply(REFUSAL.format(author=job.author or "there"), job.comment_id)
        return None
    return HANDLERS.get(job.kind, help_)(job, forge, cfg, model, state)


def help_(job: Job, forge: ForgeSession, cfg: Config, model: LazyModel, state: JobState) -> None:
    forge.reply(chatops.help_text(cfg.server.command_prefix), job.comment_id)


def pause(job: Job, forge: ForgeSession, cfg: Config, model: LazyModel, state: JobState) -> None:
    state.set_paused(job.pr_key, True)
    forge.set_paused(True)
    forge.reply("Automatic reviews are paused on this PR; `resume` turns them back on.", job.comment_id)


def resume(job: Job, forge: ForgeSession, cfg: Config, model: LazyModel, state: JobState) -> None:
    state.set_paused(job.pr_key, False)
    forge.set_paused(False)
    forge.reply("Automatic reviews are back on for this PR.", job.comment_id)


def describe(job: Job, forge: ForgeSession, cfg: Config, model: LazyModel, state: JobState) -> None:
    """`/describe [--update]`: the walkthrough in the summary comment, or in the PR/MR description."""
    from ..findings.walkthrough import describe_change
    from ..render.walkthrough import walkthrough_markdown

    change = forge.fetch()
    repo_cfg, _ = config_for(forge, change, cfg)
    w = describe_change(change, repo_cfg, model)
    forge.describe(walkthrough_markdown(w, change.head_sha), job.update)


HANDLERS: dict[str, Handler] = {
    "review": review,
    "ask": ask,
    "describe": describe,
    "fix": fix,
    "pause": pause,
    "resume": resume,
    "help": help_,
}
