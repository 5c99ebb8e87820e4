"""Does the change's own text account for a behaviour difference?

A small model cannot tell a bug from an intended change in the abstract, but it can read what the author
wrote — the title, the description, the commit messages, the lines the change adds to its documentation
and changelog — and say whether those words describe a concrete difference (`f(x)` returned A, returns B
now). The answer must quote the words that do: a quote the text does not contain is no answer. A
difference nothing in the text accounts for is shown to the reviewer with "is this intended?" (judge.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import prompts
from ...change import git
from ...change.diff import Diff
from ...change.redact import mask_patterns
from ...findings.language import instruction as language_instruction
from ...models import Message, Model, ModelError
from ...models.answer import ask_json
from ...types import ChangeRequest
from .addedtests import AddedTest
from .compare import Difference

MAX_CHARS = 3000  # of the change's text shown to the model (the description's head counts most)
DOC_SUFFIXES = (".md", ".rst", ".txt", ".adoc")
DOC_NAMES = re.compile(r"^(change|history|news|release|whatsnew|upgrad)", re.I)
MIN_QUOTE = 4  # characters of a quote that count (shorter ones match anywhere)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "accounted": {"enum": ["yes", "no"]},
        "quote": {"type": "string", "maxLength": 200},
    },
    "required": ["accounted", "quote"],
}


@dataclass(frozen=True)
class Words:
    """What the change's author says it does."""

    title: str = ""
    body: str = ""
    commits: str = ""  # commit messages, base..head, oldest last
    docs: str = ""  # lines the change adds to documentation and changelog files
    tests: tuple[AddedTest, ...] = ()  # test functions the change adds (addedtests.py); not for the model

    def text(self) -> str:
        parts = [
            ("Title", self.title),
            ("Description", self.body),
            ("Commit messages", self.commits),
            ("Added to the documentation", self.docs),
        ]
        shown = "\n".join(f"{k}: {v.strip()}" for k, v in parts if v.strip())
        return shown[:MAX_CHARS]

    def contains(self, quote: str) -> bool:
        """Does the text hold the quote (case, spacing and surrounding punctuation aside)?"""
        q = _norm(quote).strip(" .,;:\"'`")
        return len(q) >= MIN_QUOTE and q in _norm(self.text())


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("`", "").split())


def is_doc(path: str) -> bool:
    name = Path(path).name
    return path.lower().endswith(DOC_SUFFIXES) or DOC_NAMES.match(name) is not None


def gather(change: ChangeRequest, diff: Diff, tests: tuple[AddedTest, ...] = ()) -> Words:
    """The change's words: title and description (masked already), its commit messages (token shapes
    masked) and the lines it adds to documentation files (from the masked diff); with the test functions
    it adds (addedtests.added_tests)."""
    commits = ""
    if change.workdir is not None and change.base_sha and change.head_sha:
        commits = git.git(
            change.workdir,
            "log",
            "--format=%B",
            f"{change.base_sha}..{change.head_sha}",
            check=False,
        )
        commits = mask_patterns(commits.strip())[:MAX_CHARS]
    added = [
        ln.text for f in diff.files if is_doc(f.path) for h in f.hunks for ln in h.lines if ln.kind == "+"
    ]
    return Words(change.title, change.body, commits, "\n".join(added)[:MAX_CHARS], tests)


@dataclass(frozen=True)
class Account:
    """The answer: accounted for (with the words that do), or not, and why, in words a reader checks."""

    accounted: bool
    why: str
    seconds: float = 0.0
    asked: bool = False  # the model was asked (a change without text is not)
    read: bool = True  # the text was read: the model answered, or there was no text (False: no answer)


def ask(
    function: str, diffs: Sequence[Difference], model: Model, words: Words, language: str = ""
) -> Account:
    """Whether `words` account for `diffs` (the same callable), as the model reads them, its quote checked
    against the text."""
    text = words.text()
    if not text.strip():
        return Account(False, "the change has no title, description, commit message or documentation")
    examples = "\n".join(f"- `{d.call}`: before {d.before}; now {d.after}" for d in diffs)
    prompt = (
        f"<untrusted>\n{text}\n</untrusted>\n\n{function}"
        f"The change makes these differences (same input, before -> now):\n{examples}\n\n"
        "Does the author's text account for this difference?"
    )
    system = prompts.load("behaviour_accounted") + language_instruction(language)
    try:
        answer = ask_json(model, [Message("system", system), Message("user", prompt)], SCHEMA, max_tokens=120)
    except ModelError:
        return Account(False, "the model gave no answer about the change's text", asked=True, read=False)
    seconds, data = answer.completion.seconds, answer.data
    if data is None or data.get("accounted") not in ("yes", "no"):
        return Account(False, "the model gave no answer about the change's text", seconds, True, False)
    quote = str(data.get("quote") or "").strip()[:200]
    if data["accounted"] == "no":
        return Account(False, "nothing in the change's text accounts for it", seconds, True)
    if not words.contains(quote):
        said = f' ("{quote}")' if quote else ""
        return Account(
            False,
            f"the model's quote{said} is not in the change's text, so nothing there accounts for it",
            seconds,
            True,
        )
    return Account(True, f'the change says so: "{quote}"', seconds, True)
