"""The `/ask` job: a question about the change, answered from the head code around what was asked, the
diff and the latest review's findings, with the line it quotes checked (`ask_code.py`)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from ..change.diff import parse, render_hunk
from ..config import Config, ReviewConfig
from ..findings.chunks import DEFAULT_SKIP, select_files
from ..findings.language import instruction as language_instruction
from ..models.base import Message
from ..pipeline.run import LazyModel
from ..render.escape import text as _escape
from ..types import ChangeRequest
from . import ask_code
from .job import Job, RunStats
from .session import ForgeSession, JobState
from .workspace import config_for

# Files /ask names without their diff: the ones the review config leaves out (not deleted files).
BY_CONFIG = frozenset({"not in review.include", "matches review.exclude", *DEFAULT_SKIP})


def ask(job: Job, forge: ForgeSession, cfg: Config, lazy: LazyModel, state: JobState) -> RunStats | None:
    if job.thread and not forge.thread_is_ours(job.thread):
        return None  # a conversation between people: not ours to join
    change = forge.fetch()
    repo_cfg, _ = config_for(forge, change, cfg)
    model = lazy()
    question = job.text
    thread = (job.path, job.line) if job.thread and job.path and job.line else None
    if job.thread:
        question = f"(a reply in the review thread on {job.path}:{job.line}) {job.text}"
    diff = parse(change.diff_text)
    _, skipped = select_files(diff, repo_cfg.review, lambda _: None)
    with tempfile.TemporaryDirectory(prefix="prereview-ask-") as tmp:
        repo = Path(tmp) / "repo"  # one fetch of head serves every file read

        def read_head(path: str) -> str | None:
            return forge.base_file(change.head_sha, path, repo)

        excerpts, texts = ask_code.head_code(
            diff, job.text, thread, read_head, [s.path for s in skipped if s.reason in BY_CONFIG]
        )
    last = state.last_findings(job.pr_key)
    messages = ask_messages(
        change,
        question,
        budget=max(512, model.n_ctx - cfg.server.ask_max_tokens - 256),
        count=model.count_tokens,
        review=repo_cfg.review,
        head=excerpts,
        findings=ask_code.findings_text(last["findings"] if last else [], last["head"] if last else ""),
    )
    out = model.complete(messages, max_tokens=cfg.server.ask_max_tokens, temperature=0.0)
    body, where = ask_code.check_quote(out.text, texts, diff)
    answer = _escape(body) or "(the model gave no answer)"
    if out.finish_reason == "length":
        answer += " …"
    text = (
        f"{answer}\n\n{where}\n\n<sub>prereview · {model.name} · answered from the code after the "
        "change around what was asked, the diff and the latest review</sub>"
    )
    if job.thread:
        forge.reply_in_thread(job.thread, text, job.comment_id)
    else:
        forge.reply(text, job.comment_id)
    return RunStats(out.prompt_tokens, out.completion_tokens, out.seconds)


def ask_messages(
    change: ChangeRequest,
    question: str,
    *,
    budget: int,
    count: Callable[[str], int],
    review: ReviewConfig | None = None,
    head: Sequence[ask_code.Excerpt] = (),
    findings: str = "",
) -> list[Message]:
    """The question with the head code asked about (`head`), the latest review's `findings`, and as
    much of the diff as fits `budget` tokens (whole files first, in order).

    Files the (repository's) review config leaves out (`review.exclude`, lock files) are named only."""
    code = "".join(
        f"Code as it is after the change:\n{x.render()}\n\n" if i == 0 else f"{x.render()}\n\n"
        for i, x in enumerate(head)
    )
    head_text = f"Change: {change.title}\n\n{change.body[:2000]}\n\n{code}{findings}\nDiff:\n"
    tail = f"\n\nQuestion: {question}"
    system = ask_code.ASK_SYSTEM + language_instruction(review.language if review else "")
    room = budget - count(system) - count(head_text) - count(tail)
    parts: list[str] = []
    diff = parse(change.diff_text)
    _, skipped = select_files(diff, review or ReviewConfig(), lambda _: None)
    left_out = {s.path: s.reason for s in skipped if s.reason in BY_CONFIG}
    for f in diff.files:
        if f.path in left_out:
            parts.append(f"--- {f.path} (omitted: {left_out[f.path]})")
            continue
        text = f"--- {f.path}\n" + "\n".join(render_hunk(f, h) for h in f.hunks)
        cost = count(text)
        if cost > room:
            parts.append(f"--- {f.path} (omitted: too long)")
            continue
        parts.append(text)
        room -= cost
    return [Message("system", system), Message("user", head_text + "\n".join(parts) + tail)]
