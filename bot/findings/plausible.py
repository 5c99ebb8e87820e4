"""Cheap, deterministic sanity checks of the model's own findings, before the model re-checks them.

A 1.5B model labels findings by reflex: "security, CWE-89" on arithmetic, "high" on a performance
remark. The rules are about what the labels and the code around a finding can support, never about a
dataset:

- A finding on a prose file (Markdown, reStructuredText, AsciiDoc: a changelog, a README, the docs)
  is advisory and capped at `low`: a line of prose runs nowhere, so it holds no bug. (Seen on a
  JavaScript ordinary commit: the model called the changelog's line for the change it describes a
  high bug.)
- Only bug and security findings may block: a model finding of another category (performance,
  maintainability, test) is advisory and capped at `low`.
- A security finding must name a CWE that can label a weakness in that file (bot/cwe.py): not an id
  the CWE list lacks, not a category or view, not deprecated, not a C/C++-only weakness on Python.
- A security finding whose CWE names a kind of sink (SQL, shell, HTML, paths, deserialization,
  credentials, ...) needs a sign of that sink in the lines around it. CWEs outside the table are left
  alone.
- A label that fails either check is the label being wrong, not the defect: a small model copies the
  CWE it has seen ("CWE-89" on an off-by-one) onto a right diagnosis. Such a finding is kept as a `bug`
  at its severity, without the CWE, the reason as evidence (the model's self-check still judges it).
- Injection into SQL (CWE-89) also needs text being *built* near the line (`"..." % x`, `+`,
  `.format(`, an f-string, `join(`): a query whose values travel as parameters cannot be injected, so
  that claim itself is refuted and is downgraded to `low`.
"""

from __future__ import annotations

import re

from ..types import Finding, severity_rank
from . import cwe

BLOCKING_CATEGORIES = ("bug", "security")
WINDOW = 3  # lines above and below the finding that count as "around" it

# CWE -> (what the sink is, in words; a pattern for a sign of it in code)
SINKS: dict[str, tuple[str, re.Pattern[str]]] = {
    "CWE-89": (
        "SQL",
        re.compile(
            r"\b(select|insert|update|delete|where|execute|executemany|query|cursor|sql|raw|filter|extra)\b",
            re.I,
        ),
    ),
    "CWE-78": (
        "a command runner",
        re.compile(r"\b(system|popen|subprocess|spawn|exec\w*|call|run|shell|command|cmd|sh)\b", re.I),
    ),
    "CWE-79": (
        "HTML output",
        re.compile(
            r"(<\w|\b(html|markup|mark_safe|safe|escape|render|template|response|format_html|innerhtml|"
            r"write|jinja|autoescape|href|url)\b)",
            re.I,
        ),
    ),
    "CWE-22": (
        "a file path",
        re.compile(r"\b(path|open|file\w*|dir\w*|join|send_file|read|write|os|folder|name|abspath)\b", re.I),
    ),
    "CWE-502": (
        "deserialization",
        re.compile(
            r"\b(pickle|cpickle|marshal|yaml|shelve|loads?|unserialize|deserializ\w*|jsonpickle)\b", re.I
        ),
    ),
    "CWE-798": (
        "a credential",
        re.compile(r"(password|passwd|secret|token|api_?key|credential|auth|private_key|\bkey\b)", re.I),
    ),
    "CWE-327": (
        "cryptography",
        re.compile(r"\b(md5|sha1|des|rc4|ecb|cipher|crypt\w*|hash\w*|hmac|ssl|tls|random)\b", re.I),
    ),
    "CWE-611": ("XML parsing", re.compile(r"\b(xml|etree|lxml|sax|minidom|parse\w*|dtd|entity)\b", re.I)),
    "CWE-918": (
        "an outgoing request",
        re.compile(r"\b(requests?|urlopen|http\w*|url\w*|fetch|get|post)\b", re.I),
    ),
    "CWE-601": ("a redirect", re.compile(r"\b(redirect\w*|location|url\w*|next|return_to)\b", re.I)),
}


# CWE -> (what must be seen as well, a pattern for it)
BUILT: dict[str, tuple[str, re.Pattern[str]]] = {
    "CWE-89": (
        "a query built from strings",
        re.compile(r"""(["']\s*%\s*[\w(\[{]|["']\s*\+|\+\s*["']|\.format\(|\b[fF]["']|\bjoin\(|\|\|)"""),
    ),
}


PROSE = (".md", ".markdown", ".rst", ".adoc", ".asciidoc")  # not .txt: requirements.txt, CMakeLists.txt


def is_prose(path: str) -> bool:
    """A file of prose, by its name: Markdown, reStructuredText, AsciiDoc."""
    return path.lower().endswith(PROSE)


def check(f: Finding, head_lines: list[str] | None) -> Finding:
    """The finding, downgraded to `low` (with the reason as evidence) when the code cannot support it."""
    if f.source != "model" or severity_rank(f.severity) <= severity_rank("low"):
        return f
    if is_prose(f.path):
        return f.with_(severity="low", evidence=f"advisory: {f.path} is prose, not code")
    if f.category not in BLOCKING_CATEGORIES:
        return f.with_(severity="low", evidence=f"advisory: a {f.category} remark, not a defect")
    if f.category != "security" or not f.cwe:
        return f
    why = cwe.unusable(f.cwe, f.path)
    if why:
        return _as_bug(f, why)
    if f.cwe not in SINKS or head_lines is None:
        return f
    lo, hi = max(0, f.line - 1 - WINDOW), min(len(head_lines), f.last_line + WINDOW)
    near = head_lines[lo:hi]
    what, sign = SINKS[f.cwe]
    if not any(sign.search(ln) for ln in near):
        return _as_bug(f, f"{f.cwe} needs {what}, and none is near the line")
    if f.cwe in BUILT:
        what, sign = BUILT[f.cwe]
        if not any(sign.search(ln) for ln in near):
            return f.with_(
                severity="low", evidence=f"not confirmed: {f.cwe} needs {what}, and none is near the line"
            )
    return f


def _as_bug(f: Finding, why: str) -> Finding:
    """A security finding whose label cannot stand: a bug at its severity, the label's fault said."""
    return f.with_(category="bug", cwe=None, evidence=f"kept as a bug, not {f.cwe}: {why}")
