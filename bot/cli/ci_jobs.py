"""What the four CI commands share: one `Echo` (progress on stderr), a job state that remembers nothing
(`Forgetful`), a session that reads files and commits from the job's checkout (`CheckedOut`), and
`dispatch`, a comment command through the one job dispatcher (`bot/jobs/run.py`); `run_job` is that path
for a session that masks what it posts itself (the automatic review: `ci_review.py`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import click

from ..types import PrereviewError


class Echo:
    """Plain lines for CI logs (no spinners): the progress of every CI command."""

    def __init__(self, prefix: str = "prereview: ") -> None:
        self.prefix = prefix

    def message(self, text: str) -> None:
        click.echo(f"{self.prefix}{text}", err=True)

    def step(self, done: int, total: int, label: str) -> None:
        click.echo(f"{self.prefix}[{done}/{total}] {label}", err=True)


class Forgetful:
    """A CI job's `JobState`: nothing is remembered between runs (the server keeps a store; a CI job has
    only what the forge shows), so `/review -i` through the dispatcher reviews everything."""

    def paused(self, pr_key: str) -> bool:
        return False

    def set_paused(self, pr_key: str, paused: bool) -> None:
        return None

    def last_reviewed(self, pr_key: str) -> dict[str, Any] | None:
        return None

    def set_reviewed(self, pr_key: str, head: str, added: dict[str, list[str]], max_bytes: int) -> None:
        return None

    def last_findings(self, pr_key: str) -> dict[str, Any] | None:
        return None

    def set_findings(self, pr_key: str, head: str, findings: Iterable[Any], most: int = 40) -> None:
        return None


class CheckedOut:
    """A forge session that reads files and commits from the CI job's own checkout when it has them
    (no second fetch), and reports no `.prereview.yml`: the CI command has resolved the config already
    (at the base, or --config, with the command line's overrides)."""

    def __init__(self, inner: Any, workspace: Path | None) -> None:
        self._inner, self._ws = inner, workspace

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _has(self, *shas: str) -> bool:
        from ..change import git

        if self._ws is None or not (self._ws / ".git").exists():
            return False
        try:
            return all(git.resolve(self._ws, s) for s in shas)
        except PrereviewError:
            return False

    def base_file(self, sha: str, path: str, dest: Path) -> str | None:
        from ..change import git
        from ..config import CONFIG_FILE

        if path == CONFIG_FILE:
            return None
        if self._has(sha):
            assert self._ws is not None
            return git.show(self._ws, sha, path)
        return self._inner.base_file(sha, path, dest)  # type: ignore[no-any-return]

    def clone(self, shas: list[str], dest: Path) -> Path:
        if self._has(*shas):
            assert self._ws is not None
            return self._ws
        return self._inner.clone(shas, dest)  # type: ignore[no-any-return]


def masking_of(secrets: Iterable[str]) -> Any:
    """What a CI job masks in everything it posts and asks: its own tokens (whatever their shape), then
    the secrets of the change it fetches."""
    from ..server.masking import Masking

    return Masking(frozenset(s for s in secrets if len(s) >= 8))


def dispatch(job: Any, session: Any, cfg: Any, secrets: Iterable[str], progress: Echo) -> int:
    """A comment command through the one job dispatcher, everything it posts and asks masked."""
    from ..server.masking import MaskedSession

    masking = masking_of(secrets)
    forge = MaskedSession(session, masking)
    if job.kind in ("pause", "resume") and job.forge != "github":
        forge.reply(NO_PAUSE.format(kind=job.kind, forge=job.forge.capitalize()), job.comment_id)
        return 0
    run_job(job, forge, cfg, masking, progress)
    return 0


def run_job(job: Any, forge: Any, cfg: Any, masking: Any, progress: Echo, state: Any = None) -> None:
    """`job` through `jobs.run` on a session that masks what it posts (`forge`), the model masked too;
    `state`: what the job remembers, nothing by default (`Forgetful`)."""
    from ..jobs import run as jobs
    from ..pipeline.run import LazyModel
    from ..server.masking import MaskedLazyModel

    progress.message(f"{job.kind} for {job.repo}#{job.number}")
    model = MaskedLazyModel(LazyModel(cfg, progress), masking)
    jobs.run(job, forge, cfg, model, state=Forgetful() if state is None else state)


NO_PAUSE = (
    "`{kind}` needs somewhere to remember it: the prereview server (`prereview serve`) does; a {forge} CI "
    "job keeps nothing between runs. To skip automatic reviews in CI, use `review.ignore` (labels, "
    "authors, title patterns) in `.prereview.yml`."
)


def need_env(env: Mapping[str, str], name: str, hint: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise PrereviewError(f"{name} is not set; {hint}")
    return value
