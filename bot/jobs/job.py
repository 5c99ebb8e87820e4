"""What a worker is asked to do: one JSON-serialisable record per job, built from a verified event."""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

JobKind = Literal["review", "fix", "ask", "describe", "help", "pause", "resume", "refuse"]

# Jobs of these kinds supersede older queued jobs of the same kind on the same PR (burst coalescing).
COALESCING: frozenset[str] = frozenset({"review"})


@dataclass(frozen=True)
class Job:
    kind: str
    forge: str  # "github" | "gitlab"
    repo: str  # "owner/name" or GitLab project path/id
    number: int  # PR number / MR iid
    head_sha: str | None = None
    comment_id: int | None = None  # the comment that asked (reaction and reply go there)
    author: str = ""
    author_id: int | None = None
    check_access: bool = False  # GitLab: Developer+ still to be checked (the server could not ask GitLab)
    auto: bool = False  # from a PR open/synchronize event, not a comment
    incremental: bool = False  # /review -i: only the commits since the last review
    text: str = ""  # /ask question
    update: bool = False  # /describe --update: into the PR/MR description
    thread: str = ""  # a reply in one of our review threads: answered there, about `path`:`line`
    path: str = ""
    line: int | None = None
    delivery: str = ""
    installation: int | None = None  # GitHub App installation (for its token)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def pr_key(self) -> str:
        return f"{self.forge}:{self.repo}#{self.number}"

    @property
    def coalesces(self) -> bool:
        # A command whose author is not yet known to be allowed (GitLab, access unchecked) supersedes nothing.
        return self.kind in COALESCING and not self.check_access

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Job:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class RunStats:
    """What a job cost (for the server's metrics)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds_model: float = 0.0
    read_back_limits: int = 0  # notes saying a read-back from the sandbox was refused or cut
