"""A bounded agent loop for `prereview fix` when single-shot patches fail.

Five tool kinds a small coding agent needs — read a file, list files, search the repo, run the tests,
edit — all confined to a scratch copy of head, tests run in the sandbox. The model picks one tool per
step through grammar-constrained JSON; every call is logged. An edit that touches a test file is
refused; after each edit the tests run, and the loop ends as soon as `verify.judge` accepts the result.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from .. import fsguard, prompts
from ..change.diff import is_test_path
from ..evidence.breakage import Breakage, first_error
from ..evidence.testrun import TestRun, TestRunner
from ..models import Message, Model
from ..models.answer import ask_json
from . import propose

TOOLS = ("read_file", "list_files", "search", "run_tests", "edit", "done")
OBSERVATION_CHARS = 1500
KEEP_STEPS = 4  # earlier exchanges are dropped to stay within a small context
SEARCH_MAX_BYTES = 1_000_000  # larger files are not searched or shown


def step_schema() -> dict[str, Any]:
    props = {k: {"type": "string"} for k in ("path", "query", "old", "new")}
    return {
        "type": "object",
        "properties": {"tool": {"type": "string", "enum": list(TOOLS)}, **props},
        "required": ["tool", "path", "query", "old", "new"],
        "additionalProperties": False,
    }


@dataclass
class AgentResult:
    ok: bool
    files: dict[str, str]  # path -> new text, for files the agent changed
    evidence: str | None
    log: list[str] = field(default_factory=list)
    steps: int = 0


class Workspace:
    """The scratch copy the tools act on. Every tool goes through `fsguard`: no `..`, no absolute paths,
    and no symlink is ever followed (the change, or a test run, may have planted one to a host file)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.original: dict[str, str] = {}

    def _rel(self, path: str) -> str:
        return str(PurePosixPath(path.strip().lstrip("/") or "."))

    def read_file(self, path: str) -> str:
        rel = self._rel(path)
        try:
            text = fsguard.read_text(self.root, rel, limit=SEARCH_MAX_BYTES)
        except fsguard.UnsafePath:
            text = None
        if text is None:
            return f"no such file: {path}"
        lines = text.split("\n")
        return "\n".join(f"{i:>4}  {ln}" for i, ln in enumerate(lines[:300], 1))

    def list_files(self, path: str) -> str:
        rel = self._rel(path or ".")
        if not fsguard.is_dir(self.root, rel):
            return f"no such directory: {path}"
        here = self.root / rel
        names = []
        for c in sorted(here.iterdir()):
            kind = "@" if c.is_symlink() else "/" if c.is_dir() else ""  # is_dir only for non-links
            names.append(str(c.relative_to(self.root)) + kind)
        return "\n".join(names[:200]) or "(empty)"

    def search(self, query: str) -> str:
        if not query.strip():
            return "empty query"
        hits = []
        for rel in fsguard.files(self.root):
            try:
                if (self.root / rel).stat(follow_symlinks=False).st_size > SEARCH_MAX_BYTES:
                    continue
                text = fsguard.read_text(self.root, rel) or ""
            except (OSError, fsguard.UnsafePath):
                continue
            for n, ln in enumerate(text.split("\n"), 1):
                if query in ln:
                    hits.append(f"{rel}:{n}: {ln.strip()[:160]}")
                    if len(hits) >= 30:
                        return "\n".join(hits)
        return "\n".join(hits) or "no match"

    def edit(self, path: str, old: str, new: str, near: int) -> str:
        rel = self._rel(path)
        if is_test_path(rel):
            return "refused: test files may not be edited"
        try:
            text = fsguard.read_text(self.root, rel)
        except fsguard.UnsafePath:
            text = None
        if text is None:
            return f"no such file: {path}"
        patch = propose.locate(propose.Problem(rel, near, ""), text, old, new)
        if patch is None:
            return "edit failed: `old` must be exact line(s) of the file, and `new` must differ"
        try:
            fsguard.write_text(self.root, rel, patch.apply(text))
        except fsguard.UnsafePath as exc:
            return f"refused: {exc}"
        self.original.setdefault(rel, text)
        return f"edited {rel} lines {patch.start}-{patch.end}"

    def changed(self) -> dict[str, str]:
        """The edited files' texts now; a file a test run replaced with a symlink is an error, not read."""
        out = {}
        for rel, before in self.original.items():
            now = fsguard.read_text(self.root, rel)
            if now is None:
                raise fsguard.UnsafePath(f"refused {rel}: it disappeared from the work copy")
            if now != before:
                out[rel] = now
        return out


def run(
    model: Model,
    workspace: Workspace,
    runner: TestRunner,
    *,
    head: TestRun,
    breakage: Breakage,
    task: str,
    near: tuple[str, int],
    max_steps: int,
    log: Callable[[str], None] = lambda _m: None,
) -> AgentResult:
    """Let the model use the tools for at most `max_steps` steps; stop when the tests say it is fixed."""
    from .verify import judge

    result = AgentResult(False, {}, None)

    def note(entry: str) -> None:
        result.log.append(entry)
        log(entry)

    intro = Message("user", f"<untrusted>\n{task}\n</untrusted>\nFix it. Reply with your first tool call.")
    history: list[Message] = []
    for step in range(1, max_steps + 1):
        messages = [Message("system", prompts.load("patch_agent")), intro, *history[-2 * KEEP_STEPS :]]
        answer = ask_json(model, messages, step_schema(), max_tokens=384, temperature=0.2)
        completion, call = answer.completion, answer.data
        result.steps = step
        if call is None:
            history += [
                Message("assistant", completion.text[:500]),
                Message("user", "Invalid JSON; try again."),
            ]
            continue
        tool = str(call["tool"])
        note(f"step {step}: {tool}({_args(call)})")
        if tool == "done":
            break
        if tool == "edit":
            line = near[1] if call.get("path", "").strip().lstrip("/") == near[0] else 1
            obs = workspace.edit(call.get("path", ""), call.get("old", ""), call.get("new", ""), line)
            if obs.startswith("edited"):
                after = runner.in_tree(workspace.root)
                ok, why = judge(after, head, breakage)
                obs += f"\ntests: {after.summary()}\n{_tail(after)}"
                if ok:
                    result.ok, result.evidence, result.files = True, why, workspace.changed()
                    note(f"  -> verified: {why}")
                    return result
        elif tool == "run_tests":
            after = runner.in_tree(workspace.root)
            obs = f"tests: {after.summary()}\n{_tail(after)}"
        elif tool == "read_file":
            obs = workspace.read_file(call.get("path", ""))
        elif tool == "list_files":
            obs = workspace.list_files(call.get("path", ""))
        else:
            obs = workspace.search(call.get("query", ""))
        note(f"  -> {obs.splitlines()[0][:120] if obs else ''}")
        history += [
            Message("assistant", completion.text),
            Message("user", "Result:\n" + obs[:OBSERVATION_CHARS]),
        ]
    return result


def _args(call: dict[str, Any]) -> str:
    parts = [f"{k}={str(call.get(k, ''))[:60]!r}" for k in ("path", "query", "old", "new") if call.get(k)]
    return ", ".join(parts)


def _tail(run_: TestRun) -> str:
    err = first_error(run_.output)
    tail = re.sub(r"\n{3,}", "\n\n", run_.output[-800:])
    return (f"first error: {err}\n" if err else "") + tail
