"""Safeguards a change deletes: an escaping, sanitizing, validating or safe-API call that the removed
lines made and the added lines of the same file no longer make.

Diff-based and language-agnostic (identifiers, not a parser): a human reviewer's first question when
`escape(...)`, `secure_filename(...)`, `yaml.safe_load` or `check_redirect_url(url)` disappears. A file
that removes a safeguard and adds another of the same family (cgi.escape -> html.escape) is not reported;
nor is a safeguard that only moves within the file.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ...change.diff import Diff, FileDiff, Hunk, Line
from ...types import Finding


@dataclass(frozen=True)
class Family:
    cwe: str
    what: str  # the safeguard, in words
    risk: str  # what can happen without it
    names: re.Pattern[str]  # matched against a whole identifier, dotted (`shlex.quote`) or plain
    calls_only: bool = False  # count the name only where it is called (`is_valid(` but not `is_valid =`)


FAMILIES: tuple[Family, ...] = (
    Family(
        "CWE-79",
        "HTML escaping",
        "a value with markup in it reaches the page as HTML (cross-site scripting)",
        re.compile(
            r"(?:\w+\.)*(escape|escape_?html|html_?escape|escapeHTML|xhtml_escape|conditional_escape|escapejs|"
            r"htmlspecialchars|htmlentities|strip_tags|sanitize_?html|JSONEncoderForHTML|quoteattr|"
            r"EscapeString|HTMLEscapeString|escapeHtml4|encodeForHTML|DOMPurify)",
            re.I,
        ),
    ),
    Family(
        "CWE-22",
        "path confinement",
        "a name with `../` or an absolute path in it can reach files outside the intended folder "
        "(path traversal)",
        re.compile(
            r"(?:\w+\.)*(safe_join|secure_filename|sanitize_?(?:file)?(?:name|path)|realpath|normpath|"
            r"commonpath|is_relative_to|resolve_path)",
            re.I,
        ),
    ),
    Family(
        "CWE-78",
        "shell quoting",
        "shell metacharacters in the value run as commands (command injection)",
        re.compile(r"((?:shlex|pipes)\.quote|escapeshellarg|escapeshellcmd|shell_?quote|quote_?shell)", re.I),
    ),
    Family(
        "CWE-502",
        "the safe YAML API",
        "`yaml.load`/`dump` without the safe variants can build arbitrary Python objects "
        "(unsafe deserialization)",
        re.compile(r"(?:\w+\.)*(safe_load|safe_load_all|safe_dump|safe_dump_all|C?SafeLoader|C?SafeDumper)"),
    ),
    Family(
        "CWE-601",
        "the redirect check",
        "a user-supplied URL can send people to another site (open redirect)",
        re.compile(r"(?:\w+\.)*(is_safe_url|url_has_allowed_host_and_scheme|check_redirect_url)", re.I),
    ),
    Family(
        "CWE-20",
        "input validation",
        "values the check used to reject now flow on unchecked",
        re.compile(
            r"(?:\w+\.)*(_?(?:sanitize|sanitise|validate|is_valid|is_safe)\w*|\w+_(?:is_valid|is_safe|valid)|"
            r"\w+_(?:sanitize|sanitise|validate)\w*)",
            re.I,
        ),
        calls_only=True,
    ),
)

IDENT = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*")
COMMENT = re.compile(r"(^\s*(#|//|\*|/\*).*$)|(\s#\s.*$)|(\s//\s.*$)")
STRING = re.compile(r"""("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""")
# imports and definitions name a safeguard without using it
DECLARATION = re.compile(
    r"^\s*(import\s|from\s+\S+\s+import\s|using\s|#include|require\(|def\s|function\s|func\s)"
)


def scan(diff: Diff) -> list[Finding]:
    out: list[Finding] = []
    for f in diff.files:
        if f.is_binary or f.status in ("deleted", "added"):
            continue
        out += _file(f)
    return out


def _file(f: FileDiff) -> list[Finding]:
    removed: Counter[int] = Counter()  # family index -> calls removed
    added: Counter[int] = Counter()
    first: dict[int, tuple[Hunk, Line, str]] = {}
    for hunk in f.hunks:
        for ln in hunk.lines:
            if ln.kind == " ":
                continue
            for i, name in _safeguards(ln.text):
                (removed if ln.kind == "-" else added)[i] += 1
                if ln.kind == "-":
                    first.setdefault(i, (hunk, ln, name))
    out = []
    for i, count in removed.items():
        if count <= added[i]:
            continue
        fam = FAMILIES[i]
        hunk, ln, name = first[i]
        anchor = _anchor(hunk, ln)
        if anchor is None:
            continue
        out.append(
            Finding(
                path=f.path,
                line=anchor,
                message=(
                    f"This change removes `{name}` ({fam.what}) and adds nothing of the kind in its "
                    f"place: unless the value is checked elsewhere, {fam.risk}."
                ),
                severity="medium",
                category="security",
                cwe=fam.cwe,
                source="safeguards",
                rule_id=f"removed-safeguard/{fam.cwe.lower()}",
            )
        )
    return out


def _safeguards(text: str) -> list[tuple[int, str]]:
    """(family index, identifier) for each safeguard named in a line of code (comments and strings cut)."""
    if DECLARATION.match(text):
        return []
    code = STRING.sub('""', COMMENT.sub("", text))
    hits = []
    for m in IDENT.finditer(code):
        called = code[m.end() :].lstrip().startswith("(")
        for i, fam in enumerate(FAMILIES):
            if fam.names.fullmatch(m.group()) and (called or not fam.calls_only):
                hits.append((i, m.group()))
                break
    return hits


def _anchor(hunk: Hunk, removed: Line) -> int | None:
    """The new-side line a comment about `removed` belongs on: the added line nearest to where it was,
    else the line that now stands in its place."""
    idx = hunk.lines.index(removed)
    best: tuple[int, int] | None = None
    for j, ln in enumerate(hunk.lines):
        if ln.kind == "+" and ln.new_no and (best is None or abs(j - idx) < best[0]):
            best = (abs(j - idx), ln.new_no)
    if best:
        return best[1]
    after = [ln.new_no for ln in hunk.lines[idx:] if ln.kind == " " and ln.new_no]
    before = [ln.new_no for ln in hunk.lines[:idx] if ln.kind == " " and ln.new_no]
    return after[0] if after else (before[-1] if before else None)
