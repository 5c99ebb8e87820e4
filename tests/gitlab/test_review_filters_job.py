"""review.ignore in the GitLab job: an ignored MR is not reviewed (the report is empty) unless --force."""

from __future__ import annotations

from tests.gitlab.conftest import MR


def test_gitlab_job_skips_a_draft_title_unless_forced(bug_mr: MR) -> None:
    with bug_mr.fake(title="Draft: half done") as fake:
        run = bug_mr.run(fake)
        assert run.code == 0, run.err
        assert fake.discussions == [] and fake.notes == []
        assert "review skipped: the title starts with 'Draft:'" in run.err
        assert bug_mr.report() == []
        forced = bug_mr.run(fake, "--force")
        assert forced.code == 0 and fake.diff_notes
    with bug_mr.fake() as fake:
        run = bug_mr.run(fake, CI_MERGE_REQUEST_LABELS="backend,skip-review")
        assert fake.discussions == [] and "label 'skip-review'" in run.err
