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


def test_gitlab_job_with_review_walkthrough_puts_it_in_the_summary_note(
    bench_repo, scripted_yaml, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    import json
    from pathlib import Path

    from tests.gitlab.conftest import rev

    info = bench_repo("quixbugs", "gcd", kind="bug")
    repo = Path(info["repo"])
    text = json.dumps(
        {"summary": "Swaps the arguments.", "files": {"python_programs/gcd.py": "recursion"}, "risks": []}
    )
    script = tmp_path / "walkthrough-script.json"
    script.write_text(json.dumps({"replies": [{"match": "Describe the change", "text": text}]}))
    cfg = scripted_yaml(model={"script": str(script)}, review={"walkthrough": True})
    mr = MR(repo, rev(repo, "HEAD~1"), rev(repo), cfg)
    with mr.fake() as fake:
        run = mr.run(fake)
        assert run.code == 0, run.err
        (note,) = [n for n in fake.notes if "<!-- prereview:summary -->" in n["body"]]
        assert "#### Walkthrough" in note["body"] and "Swaps the arguments." in note["body"]
        assert "| `python_programs/gcd.py` | recursion |" in note["body"]
