"""`/ask`: the question with the code as it is now around the lines asked about, the latest review's
findings and the diff; the answer must quote the line it relies on, and the quote is checked.

Answering from the diff alone, a small model read a removed line (`-`) as current code and contradicted
the review ("find_user is safe: it uses a placeholder", citing the line the change replaced with an
f-string). So the prompt leads with the head version of the code asked about (the thread's line, a
`path:line` in the question, or the function or class the question names), says that removed lines are
gone, lists what the latest review reported, and asks for a `Quote:` line. The quote is looked up in the
head code: found, it is shown with its place; a removed line, or no line at all, is said plainly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..change.diff import Diff
from ..change.redact import mask_patterns
from ..render.escape import code as _code

ASK_SYSTEM = (
    "You answer a reviewer's question about a code change. Use only what is given: the code as it is "
    "after the change (head), the diff, the latest review's findings and the description. In the diff, "
    "lines starting with `-` were removed: they are not in the code any more; judge the code as it is "
    "now. When the latest review reported something about the code asked about, say whether you agree "
    "and why. Say so when what is given does not contain the answer. Be brief and concrete; cite "
    "file:line. End with one line `Quote: <the line of the head code your answer relies on, copied "
    "exactly>`."
)
MAX_FILES = 6  # head files read for one question (each is a blob fetched from the forge)
MAX_EXCERPT_LINES = 40
_PATH_LINE = re.compile(r"([\w./-]+\.[A-Za-z0-9]+):(\d+)")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_QUOTE = re.compile(r"^[ \t>*_-]*quote[*_]*\s*:[ \t]*(.*?)\s*$", re.I | re.M)


@dataclass(frozen=True)
class Excerpt:
    path: str
    start: int  # line number of lines[0]
    lines: tuple[str, ...]

    def render(self) -> str:
        end = self.start + len(self.lines) - 1
        body = "\n".join(f"{self.start + i:>5}  {t}" for i, t in enumerate(self.lines))
        return f"--- {self.path} lines {self.start}-{end} (as it is after the change)\n{body}"


def places(question: str, thread: tuple[str, int] | None, paths: Sequence[str]) -> list[tuple[str, int]]:
    """`path:line` places the question is about: the review thread's line, `path:line` in the text."""
    out = [thread] if thread is not None else []
    for path, line in _PATH_LINE.findall(question):
        match = next((p for p in paths if p == path or p.endswith("/" + path)), None)
        if match is not None:
            out.append((match, int(line)))
    return list(dict.fromkeys(out))


def names(question: str) -> list[str]:
    """Words of the question that could name a function or class (`find_user`, `UserStore`)."""
    return list(dict.fromkeys(w for w in _WORD.findall(question) if "_" in w or not w.islower()))


def definitions(text: str, wanted: Iterable[str]) -> list[int]:
    """Line numbers where `text` defines one of `wanted` (Python, JavaScript/TypeScript, Go)."""
    want = "|".join(re.escape(w) for w in wanted)
    if not want:
        return []
    rx = re.compile(
        rf"^\s*(?:export\s+)?(?:async\s+)?(?:def|class|function|func)\s+(?:\([^)]*\)\s*)?(?:{want})\b"
        rf"|^\s*(?:export\s+)?(?:const|let|var)\s+(?:{want})\s*=",
    )
    return [i for i, line in enumerate(text.splitlines(), 1) if rx.match(line)]


def excerpt(path: str, text: str, line: int, *, definition: bool) -> Excerpt:
    """A definition from its first line to the end of its block; another line with some lines around."""
    lines = text.splitlines()
    if not lines:
        return Excerpt(path, 1, ())
    line = min(max(1, line), len(lines))
    if not definition:
        lo, hi = max(1, line - 8), min(len(lines), line + 12)
        return Excerpt(path, lo, tuple(lines[lo - 1 : hi]))
    indent = len(lines[line - 1]) - len(lines[line - 1].lstrip())
    hi = line
    for n in range(line + 1, min(len(lines), line + MAX_EXCERPT_LINES - 1) + 1):
        t = lines[n - 1]
        if t.strip() and len(t) - len(t.lstrip()) <= indent and not t.lstrip().startswith((")", "}", "]")):
            break
        if t.strip():
            hi = n
    return Excerpt(path, line, tuple(lines[line - 1 : hi]))


def head_code(
    diff: Diff,
    question: str,
    thread: tuple[str, int] | None,
    read_head: Callable[[str], str | None],
    skip: Iterable[str] = (),
) -> tuple[list[Excerpt], dict[str, str]]:
    """Excerpts of the head code the question is about, and the head files read (masked)."""
    left_out = set(skip)
    paths = [
        f.path for f in diff.files if f.path not in left_out and f.status != "deleted" and not f.is_binary
    ]
    asked = places(question, thread, paths)
    wanted = names(question)
    diff_of = {f.path: "\n".join(ln.text for h in f.hunks for ln in h.lines) for f in diff.files}
    mentions = [p for p in paths if any(w in diff_of.get(p, "") for w in wanted)]
    order = list(dict.fromkeys([p for p, _ in asked] + mentions + (paths if wanted else [])))
    texts: dict[str, str] = {}
    for p in order[:MAX_FILES]:
        text = read_head(p)
        if text is not None:
            texts[p] = mask_patterns(text)
    out = [excerpt(p, texts[p], n, definition=False) for p, n in asked if p in texts]
    for p, text in texts.items():
        out += [excerpt(p, text, n, definition=True) for n in definitions(text, wanted)[:2]]
    return out[:4], texts


def findings_text(findings: Sequence[dict[str, object]], head: str) -> str:
    if not findings:
        return "Latest prereview review: none recorded for this pull request.\n"
    rows = [
        f"- {f.get('path')}:{f.get('line')} [{f.get('severity')} {f.get('category')}] {f.get('message')}"
        for f in findings
    ]
    return f"Latest prereview review (of {head[:12]}) reported:\n" + "\n".join(rows) + "\n"


def check_quote(answer: str, texts: dict[str, str], diff: Diff) -> tuple[str, str]:
    """(the answer without its `Quote:` line, one markdown line saying where the quoted code is, or that
    it is not in the code as it is now; the code in it is escaped)."""
    found = list(_QUOTE.finditer(answer))
    if not found:
        return answer.strip(), "The answer quotes no line of the code: check it against the code."
    m = found[-1]
    body = (answer[: m.start()] + answer[m.end() :]).strip()
    quote = m.group(1).strip().strip("`").strip().strip("\"'").strip()
    norm = " ".join(quote.split())
    if len(norm) < 4:
        return body, "The answer quotes no line of the code: check it against the code."
    head_lines = {(p, i): t for p, text in texts.items() for i, t in enumerate(text.splitlines(), 1)}
    for f in diff.files:
        for h in f.hunks:
            for ln in h.lines:
                if ln.new_no is not None:
                    head_lines.setdefault((f.path, ln.new_no), ln.text)
    for (path, n), text in sorted(head_lines.items()):
        if norm in " ".join(text.split()):
            return body, f"Relies on {_code(f'{path}:{n}')}: {_code(text.strip()[:200])}"
    removed = any(
        norm in " ".join(ln.text.split())
        for f in diff.files
        for h in f.hunks
        for ln in h.lines
        if ln.kind == "-"
    )
    if removed:
        return body, (
            "⚠️ The line this answer relies on was removed by this change (it is not in the code any more): "
            "the answer may not hold for the code as it is now."
        )
    return (
        body,
        "⚠️ The line this answer quotes is not in the code as it is now: check the answer against the code.",
    )
