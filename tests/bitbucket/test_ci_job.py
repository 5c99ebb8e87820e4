"""`prereview bitbucket`'s automatic review is the worker's review job (`jobs/review.py` through the one
dispatcher): it says so in the log, posts with the Code Insights report, and an ignored pull request is
left alone by the job's own `review.ignore` check unless forced."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from tests.bitbucket.test_command import BASE, HEAD, SCRIPTED, _run
from tests.conftest import git
from tests.fakes.bitbucket_api import FakeBitbucket


def _pr(make_repo: Callable[..., Path], tmp: Path, **review: object) -> tuple[Path, Path, dict[str, str]]:
    repo = make_repo({"geometry.py": BASE}, {"geometry.py": HEAD})
    base, head = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
    diff = git(repo, "diff", "--no-color", "--src-prefix=a/", "--dst-prefix=b/", base, head)
    config = tmp / "prereview.yml"
    config.write_text(yaml.safe_dump({**SCRIPTED, "review": review} if review else SCRIPTED))
    return repo, config, {"diff_text": diff, "base_sha": base, "head_sha": head}


def test_the_ci_review_runs_as_the_review_job(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    repo, config, pr = _pr(make_repo, tmp_path)
    with FakeBitbucket(**pr) as fake:  # type: ignore[arg-type]
        run = _run(repo, fake, config)
        assert run.returncode == 0, run.stderr
        assert f"prereview: review for {fake.project}/{fake.slug}#{fake.number}" in run.stderr.splitlines()
        assert len(fake.inline) == 1 and "Code Insights report with 1 annotation(s)" in run.stderr


def test_an_ignored_pull_request_is_skipped_by_the_job_unless_forced(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo, config, pr = _pr(make_repo, tmp_path, ignore={"title_prefixes": ["WIP"]})
    with FakeBitbucket(**pr, title="WIP: geometry") as fake:  # type: ignore[arg-type]
        run = _run(repo, fake, config)
        assert run.returncode == 0, run.stderr
        assert fake.inline == [] and fake.general == []
        assert f"#{fake.number}: review skipped: the title starts with 'WIP'" in run.stderr
        assert "`prereview bitbucket --force`" in run.stderr
        forced = _run(repo, fake, config, "--force")
        assert forced.returncode == 0, forced.stderr
        assert len(fake.inline) == 1
