"""`prereview gitlab` end to end: a real MR pipeline environment, a bug-introducing change, a fake GitLab."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PLATFORM, git
from tests.fakes.gitlab_api import LINE_CODE_ERROR, TOKEN
from tests.gitlab.conftest import MR, assert_positions_on_diff, mr_diff, rev
from tests.gitlab.test_codequality import assert_codequality_shape


def _posts(fake) -> list[str]:  # type: ignore[no-untyped-def]
    return [f"{r.method} {r.path}" for r in fake.requests if r.method in ("POST", "PUT", "DELETE")]


def test_first_review_posts_discussions_on_diff_lines_and_writes_the_report(bug_mr: MR) -> None:
    with bug_mr.fake() as fake:
        run = bug_mr.run(fake)
        assert run.code == 0, run.err
        assert fake.violations == []
        assert fake.rejected == []
        assert len(fake.diff_notes) >= 1
        assert_positions_on_diff(fake)
        # the scripted model flags the first added line: the bug's line in gcd.py
        pos = fake.diff_notes[0]["position"]
        assert pos["new_path"] == "python_programs/gcd.py" and "old_line" not in pos
        assert pos["base_sha"] == bug_mr.base and pos["head_sha"] == bug_mr.head
        summaries = [n for n in fake.notes if "<!-- prereview:summary -->" in n["body"]]
        assert len(summaries) == 1
        assert "1 medium" in summaries[0]["body"]
        assert any("1 new discussion(s)" in ln for ln in run.lines)
        # the token went in the PRIVATE-TOKEN header and nowhere else
        assert all(r.auth == "private" for r in fake.requests)
        assert TOKEN not in run.err + run.out
    report = bug_mr.report()
    assert_codequality_shape(report)
    assert report[0]["location"]["path"] == "python_programs/gcd.py"
    assert report[0]["location"]["lines"]["begin"] == pos["new_line"]


def test_second_run_posts_nothing_new(bug_mr: MR) -> None:
    with bug_mr.fake() as fake:
        assert bug_mr.run(fake).code == 0
        before = (len(fake.discussions), [n["body"] for n in fake.notes])
        fake.requests.clear()
        run = bug_mr.run(fake)
        assert run.code == 0, run.err
        assert _posts(fake) == []  # not even an edit of the summary
        assert (len(fake.discussions), [n["body"] for n in fake.notes]) == before
        assert any("already posted" in ln and "summary unchanged" in ln for ln in run.lines)


def test_new_commit_posts_only_the_new_finding_and_resolves_the_gone_one(bug_mr: MR) -> None:
    with bug_mr.fake() as fake:
        assert bug_mr.run(fake).code == 0
        first = fake.diff_notes[0]
        # the next push reverts the buggy line and adds a different change further down
        gcd = bug_mr.repo / "python_programs" / "gcd.py"
        base_text = git(bug_mr.repo, "show", f"{bug_mr.base}:python_programs/gcd.py")
        head = bug_mr.commit({"python_programs/gcd.py": base_text + "\n\nLIMIT = 10 ** 6  # new line\n"})
        assert gcd.read_text().endswith("# new line\n")
        fake.push(mr_diff(bug_mr.repo, bug_mr.base, head), head)
        fake.requests.clear()
        run = bug_mr.run(fake)
        assert run.code == 0, run.err
        assert fake.violations == [] and fake.rejected == []
        new = [n for n in fake.diff_notes if n["id"] != first["id"]]
        assert len(new) == 1 and new[0]["position"]["head_sha"] == head
        assert first["resolved"] is True
        assert_positions_on_diff(fake)
        assert sum(1 for p in _posts(fake) if p.endswith("/discussions")) == 1
        summary_put = f"PUT /projects/42/merge_requests/7/notes/{_summary_id(fake)}"
        assert summary_put in _posts(fake)
        assert any("1 resolved" in ln and "summary updated" in ln for ln in run.lines)


def _summary_id(fake) -> int:  # type: ignore[no-untyped-def]
    return next(n["id"] for n in fake.notes if "<!-- prereview:summary -->" in n["body"])


def _shift_hunks(diff: str, by: int) -> str:
    shifted = re.sub(
        r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@",
        lambda m: f"@@ -{int(m[1]) + by}{m[2] or ''} +{int(m[3]) + by}{m[4] or ''} @@",
        diff,
        flags=re.M,
    )
    assert shifted != diff
    return shifted


def test_rejected_position_falls_back_to_a_file_note(bug_mr: MR) -> None:
    # GitLab's MR diff differs from the checkout's (e.g. the MR was computed against another base):
    # here the hunk GitLab knows is shifted, so the line prereview computed is not in it.
    shifted = _shift_hunks(mr_diff(bug_mr.repo, bug_mr.base, bug_mr.head), 40)
    with bug_mr.fake(diff_text=shifted) as fake:
        run = bug_mr.run(fake)
        assert run.code == 0, run.err
        assert fake.violations == []
        assert [err for _, err in fake.rejected] == [LINE_CODE_ERROR]
        (note,) = fake.diff_notes
        assert note["position"]["position_type"] == "file"
        assert "GitLab did not accept a comment on the line itself" in note["body"]
        assert any("1 on files" in ln for ln in run.lines)
        assert any("GitLab refused a position" in ln for ln in run.lines)


def test_rejected_position_on_old_gitlab_goes_to_the_summary(bug_mr: MR) -> None:
    shifted = _shift_hunks(mr_diff(bug_mr.repo, bug_mr.base, bug_mr.head), 40)
    with bug_mr.fake(diff_text=shifted, file_positions=False) as fake:  # GitLab < 16.4: no file positions
        run = bug_mr.run(fake)
        assert run.code == 0, run.err
        assert fake.diff_notes == []
        (summary,) = fake.notes
        assert "Scripted finding on the first added line" in summary["body"]
        assert "python_programs/gcd.py:" in summary["body"]
        assert any("1 in the summary only" in ln for ln in run.lines)


def test_missing_token_still_writes_the_report(bug_mr: MR) -> None:
    with bug_mr.fake() as fake:
        run = bug_mr.run(fake, PREREVIEW_GITLAB_TOKEN=None)
        assert run.code == 0, run.err
        assert fake.requests == []
    token_lines = [ln for ln in run.lines if "PREREVIEW_GITLAB_TOKEN is not set" in ln]
    assert len(token_lines) == 1
    assert "CI_JOB_TOKEN cannot post notes" in token_lines[0]
    assert_codequality_shape(bug_mr.report())
    assert len(bug_mr.report()) == 1


def test_gitlab_token_is_accepted_too(bug_mr: MR) -> None:
    with bug_mr.fake() as fake:
        run = bug_mr.run(fake, PREREVIEW_GITLAB_TOKEN=None, GITLAB_TOKEN=TOKEN)
        assert run.code == 0, run.err
        assert len(fake.diff_notes) == 1


def test_fail_level_sets_the_exit_code_even_without_a_token(bug_mr: MR) -> None:
    with bug_mr.fake() as fake:
        run = bug_mr.run(fake, PREREVIEW_GITLAB_TOKEN=None, PREREVIEW_FAIL_LEVEL="medium")
    assert run.code == 1
    assert bug_mr.report()


def test_self_managed_instance_under_a_path_prefix(bug_mr: MR) -> None:
    with bug_mr.fake(prefix="/gitlab/api/v4", project_id=1234) as fake:
        assert fake.url.endswith("/gitlab/api/v4")
        run = bug_mr.run(fake)
        assert run.code == 0, run.err
        assert fake.violations == []
        assert len(fake.diff_notes) == 1
        # the MR's own API paths, plus GET /user (whose summary is the bot's: the token's user)
        assert all(r.path.startswith("/projects/1234/") or r.path == "/user" for r in fake.requests)


def test_a_token_without_write_access_warns_and_keeps_the_exit_code(bug_mr: MR) -> None:
    with bug_mr.fake() as fake:
        run = bug_mr.run(fake, PREREVIEW_GITLAB_TOKEN="job-token-used-by-mistake")
        assert run.code == 0, run.err
        assert any("could not post on !7" in ln and "api scope" in ln for ln in run.lines)
        assert "job-token-used-by-mistake" not in run.err
    assert bug_mr.report()


def test_not_a_merge_request_pipeline_is_one_line_and_exit_2(bug_mr: MR) -> None:
    with bug_mr.fake() as fake:
        run = bug_mr.run(fake, CI_PIPELINE_SOURCE="push", CI_MERGE_REQUEST_IID=None)
    assert run.code == 2
    assert len(run.lines) == 1 and "merge_request_event" in run.lines[0]
    assert "Traceback" not in run.err


def test_shallow_clone_fetches_the_base(bug_mr: MR, tmp_path: Path) -> None:
    clone = tmp_path / "ci-checkout"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{bug_mr.repo}", str(clone)], check=True)
    assert (
        subprocess.run(
            ["git", "-C", str(clone), "cat-file", "-e", bug_mr.base + "^{commit}"], capture_output=True
        ).returncode
        != 0
    )
    ci = MR(clone, bug_mr.base, rev(clone), bug_mr.config)
    with ci.fake(diff_text=mr_diff(bug_mr.repo, bug_mr.base, bug_mr.head)) as fake:
        run = ci.run(fake)
        assert run.code == 0, run.err
        assert any("not in the checkout" in ln and "fetching it" in ln for ln in run.lines)
        assert len(fake.diff_notes) == 1


def test_merged_results_pipeline_reviews_the_source_branch_head(bug_mr: MR) -> None:
    # CI_COMMIT_SHA is GitLab's merge commit there; the MR's own head is CI_MERGE_REQUEST_SOURCE_BRANCH_SHA
    git(bug_mr.repo, "checkout", "-q", "-b", "merge-result")
    git(bug_mr.repo, "commit", "-q", "--allow-empty", "-m", "Merge branch 'feature' into 'main'")
    merge = rev(bug_mr.repo)
    with bug_mr.fake() as fake:
        run = bug_mr.run(
            fake,
            CI_COMMIT_SHA=merge,
            CI_MERGE_REQUEST_SOURCE_BRANCH_SHA=bug_mr.head,
            CI_MERGE_REQUEST_EVENT_TYPE="merged_result",
        )
        assert run.code == 0, run.err
        assert [n["position"]["head_sha"] for n in fake.diff_notes] == [bug_mr.head]


def test_start_sha_of_the_mr_version_is_used(bug_mr: MR) -> None:
    target_moved = "f" * 40  # the target branch moved on after the MR was branched
    with bug_mr.fake(start_sha=target_moved) as fake:
        run = bug_mr.run(fake)
        assert run.code == 0, run.err
        assert fake.diff_notes[0]["position"]["start_sha"] == target_moved


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI not installed (makes the test CA)")
def test_self_managed_instance_with_a_private_ca(bug_mr: MR, tmp_path: Path) -> None:
    cert, key = tmp_path / "ca.pem", tmp_path / "ca.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    with bug_mr.fake(tls=(cert, key)) as fake:
        assert fake.url.startswith("https://")
        bad = bug_mr.run(fake)
        assert bad.code == 2
        assert "TLS verification failed" in bad.err and "CI_SERVER_TLS_CA_FILE" in bad.err
        assert "Traceback" not in bad.err
        assert bug_mr.report()  # written before anything was posted
        good = bug_mr.run(fake, CI_SERVER_TLS_CA_FILE=str(cert))
        assert good.code == 0, good.err
        assert len(fake.diff_notes) == 1
        fake.discussions.clear()
        also = bug_mr.run(fake, REQUESTS_CA_BUNDLE=str(cert))
        assert also.code == 0, also.err
        assert len(fake.diff_notes) == 1


def test_report_path_from_config(bug_mr: MR, scripted_yaml) -> None:  # type: ignore[no-untyped-def]
    cfg = scripted_yaml(gitlab={"codequality_path": "reports/cq.json"})
    (bug_mr.repo / "reports").mkdir()
    with bug_mr.fake() as fake:
        run = MR(bug_mr.repo, bug_mr.base, bug_mr.head, cfg).run(fake, "--no-post")
        assert run.code == 0, run.err
        assert fake.requests == []
    assert json.loads((bug_mr.repo / "reports" / "cq.json").read_text())


def test_env_from_a_real_merge_request_hook(bug_mr: MR) -> None:
    """Project, MR and branches as GitLab's own merge_request hook payload names them."""
    hook = json.loads((PLATFORM / "payloads" / "gitlab" / "merge_request.pac.json").read_text())
    mr, project = hook["object_attributes"], hook["project"]
    with bug_mr.fake(
        project_id=project["id"],
        project_path=project["path_with_namespace"],
        mr_iid=mr["iid"],
        title=mr["title"],
        source_branch=mr["source_branch"],
        target_branch=mr["target_branch"],
    ) as fake:
        run = bug_mr.run(
            fake,
            CI_PROJECT_PATH=project["path_with_namespace"],
            CI_MERGE_REQUEST_TITLE=mr["title"],
            CI_MERGE_REQUEST_SOURCE_BRANCH_NAME=mr["source_branch"],
            CI_MERGE_REQUEST_TARGET_BRANCH_NAME=mr["target_branch"],
        )
        assert run.code == 0, run.err
        assert fake.violations == [] and len(fake.diff_notes) == 1
        mr_path = f"/projects/{project['id']}/merge_requests/{mr['iid']}"
        assert all(r.path.startswith(mr_path) or r.path == "/user" for r in fake.requests)


def test_a_wrong_ca_path_is_one_line_after_the_report(bug_mr: MR) -> None:
    with bug_mr.fake() as fake:
        run = bug_mr.run(fake, CI_SERVER_TLS_CA_FILE="/no/such/ca.pem")
        assert fake.requests == []
    assert run.code == 2 and "Traceback" not in run.err
    assert run.lines[-1].startswith("prereview: error: CI_SERVER_TLS_CA_FILE points at /no/such/ca.pem")
    assert bug_mr.report()
