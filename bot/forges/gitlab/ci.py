"""GitLab CI's environment → the merge request `prereview gitlab` reviews (`Pipeline.from_env`), the token
and the instance's CA.

Reads the predefined CI variables (CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID,
CI_MERGE_REQUEST_DIFF_BASE_SHA, CI_COMMIT_SHA, CI_PROJECT_DIR, CI_PIPELINE_SOURCE). The job's checkout
drives the review (the local git diff base..head); the Code Quality report is always written; notes
and discussions need PREREVIEW_GITLAB_TOKEN (or GITLAB_TOKEN), because CI_JOB_TOKEN cannot post them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...types import PrereviewError
from ..webhook import Event
from .webhook import parse

TOKEN_VARS = ("PREREVIEW_GITLAB_TOKEN", "GITLAB_TOKEN")
NOT_POSTING = (
    "PREREVIEW_GITLAB_TOKEN is not set (nor GITLAB_TOKEN), so nothing is posted on the merge request "
    "(CI_JOB_TOKEN cannot post notes): wrote the Code Quality report only; add a project access token "
    "(api scope, Developer role) as a masked CI/CD variable PREREVIEW_GITLAB_TOKEN"
)


@dataclass(frozen=True)
class Pipeline:
    """The merge request a pipeline runs for, from GitLab's predefined variables."""

    api_url: str
    project: str
    mr_iid: int
    base_sha: str | None
    head_sha: str
    project_dir: Path
    title: str = ""
    description: str = ""
    author: str = ""
    labels: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, mr_iid: int | None = None) -> Pipeline:
        source = env.get("CI_PIPELINE_SOURCE", "")
        iid = mr_iid or _int(env.get("CI_MERGE_REQUEST_IID"))
        if iid is None:
            raise PrereviewError(
                f"not a merge request pipeline (CI_PIPELINE_SOURCE is '{source or 'unset'}', "
                "no CI_MERGE_REQUEST_IID); run the job with "
                '`rules: - if: $CI_PIPELINE_SOURCE == "merge_request_event"` or pass --mr IID'
            )
        api = env.get("CI_API_V4_URL") or (
            env["CI_SERVER_URL"].rstrip("/") + "/api/v4" if env.get("CI_SERVER_URL") else ""
        )
        if not api:
            raise PrereviewError(
                "CI_API_V4_URL is not set; run in GitLab CI or set it to https://HOST/api/v4"
            )
        project = env.get("CI_MERGE_REQUEST_PROJECT_ID") or env.get("CI_PROJECT_ID")
        if not project:
            raise PrereviewError("CI_PROJECT_ID is not set; run in GitLab CI or set it to the project id")
        # Merged-results pipelines run on a merge commit; the MR's own head is the source branch sha.
        head = env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA") or env.get("CI_COMMIT_SHA")
        if not head:
            raise PrereviewError("CI_COMMIT_SHA is not set; run in GitLab CI or set it to the head commit")
        return cls(
            api_url=api,
            project=project,
            mr_iid=iid,
            base_sha=env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA") or None,
            head_sha=head,
            project_dir=Path(env.get("CI_PROJECT_DIR") or "."),
            title=env.get("CI_MERGE_REQUEST_TITLE", ""),
            description=env.get("CI_MERGE_REQUEST_DESCRIPTION", ""),
            author=env.get("GITLAB_USER_LOGIN", ""),  # who started the pipeline (a bot that pushed)
            labels=tuple(x.strip() for x in env.get("CI_MERGE_REQUEST_LABELS", "").split(",") if x.strip()),
        )


def _int(text: str | None) -> int | None:
    return int(text) if text and text.strip().isdigit() else None


def token_from(env: Mapping[str, str]) -> str | None:
    return next((env[v].strip() for v in TOKEN_VARS if env.get(v, "").strip()), None)


def ssl_verify_from(env: Mapping[str, str]) -> bool | str:
    """A self-managed instance's CA: CI_SERVER_TLS_CA_FILE (set by the runner) or REQUESTS_CA_BUNDLE."""
    for var in ("CI_SERVER_TLS_CA_FILE", "REQUESTS_CA_BUNDLE"):
        path = env.get(var, "").strip()
        if path:
            if not Path(path).is_file():
                raise PrereviewError(
                    f"{var} points at {path}, which does not exist; fix the path or unset it"
                )
            return path
    return True


def comment_event(env: Mapping[str, str]) -> Event | None:
    """The note of a pipeline a note webhook triggered (`CI_PIPELINE_SOURCE=trigger`, the payload in the
    file TRIGGER_PAYLOAD) as an Event (kind "none" when it is not a note on a merge request), or None for
    any other pipeline."""
    if env.get("CI_PIPELINE_SOURCE") != "trigger" or not env.get("TRIGGER_PAYLOAD", "").strip():
        return None
    path = env["TRIGGER_PAYLOAD"].strip()
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PrereviewError(
            f"cannot read TRIGGER_PAYLOAD={path} ({exc}); trigger the pipeline from a note webhook"
        ) from None
    return parse(data) or Event("gitlab", "none", "", 0)
