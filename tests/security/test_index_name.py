"""`prereview` is not a name on the package index that this project holds: anyone may register it, and a
job that runs `pip install prereview` (or `prereview[model]`, `prereview==0.1.0`) would then run their code
with the forge token it holds. Nothing shipped (messages, templates, examples, docs) may tell anyone to
install the bare name; installs name the source: a checkout (`pip install -e '.[model]'`), a pinned git URL
or a release wheel (`'prereview[model] @ URL'`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("bot", "templates", "examples", "docs", "scripts", "action.yml", "README.md", "Dockerfile")
SUFFIXES = {".py", ".sh", ".yml", ".yaml", ".md", ".toml", ".txt", ".cfg", ""}

# an install command, then (on the same logical line) the bare name as one requirement: optional extras
# and version, and no ` @ URL` after it (a direct reference names its source)
_INSTALL = re.compile(r"\b(?:pip3?|pipx|uv(?:\s+pip|\s+tool)?)\s+(?:install|add)\b(?P<rest>.*)")
_BARE = re.compile(
    r"(?<![\w./@+-])prereview(?:\[[^\]\s]*\])?(?:\s*(?:===?|~=|>=|<=|!=|>|<)\s*[\w.*+!-]+)?"
    r"(?![\w./-])(?!\[)(?!'s)(?!\s*@)"
)
_PINNED = re.compile(r"(?<![\w./@+-])prereview\s*(?:===?|~=)\s*\d")  # a pinned name anywhere (a spec)


def _files() -> list[Path]:
    out = []
    for name in SHIPPED:
        path = ROOT / name
        found = sorted(path.rglob("*")) if path.is_dir() else [path]
        out += [p for p in found if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts]
    return out


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Lines with shell continuations (`\\` at the end) joined, numbered by their first line."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for n, line in enumerate(text.splitlines(), 1):
        if not pending:
            start = n
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append((start, pending + line))
        pending = ""
    return out


def bare_installs(text: str) -> list[tuple[int, str]]:
    hits = []
    for n, line in _logical_lines(text):
        m = _INSTALL.search(line)
        rest = re.split(r"\s#|[`;&|]", m["rest"])[0] if m else ""  # where the command ends
        if _BARE.search(rest) or _PINNED.search(line):
            hits.append((n, line.strip()))
    return hits


def test_nothing_shipped_installs_the_bare_name_from_the_index() -> None:
    files = _files()
    assert len(files) > 100 and ROOT / "templates" / "prereview.yml" in files
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line}"
        for p in files
        for n, line in bare_installs(p.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not found, "install prereview from its source, never the bare name:\n" + "\n".join(found)


def test_the_scan_tells_the_bare_name_from_a_named_source() -> None:
    bad = [
        "pip install prereview",
        "pip install 'prereview[model]'",
        "\"the backend needs numpy; pip install 'prereview[model]' (or use --api-base)\"",
        "python -m pip install --quiet prereview==0.1.0",
        "uv tool install prereview",
        "pip install --force-reinstall 'prereview[{entry.extra}]'",
        "pip install -q \\\n  prereview[gitlab]",
        "PREREVIEW_SPEC: prereview==0.1.0",
    ]
    good = [
        "pip install -e '.[model]'",
        "pip install 'prereview[webhook,model] @ git+https://github.com/OWNER/prereview@<COMMIT-SHA>'",
        'python -m pip install --quiet $find_links "prereview[$extras] @ $PREREVIEW_SOURCE"',
        "pip install prereview[model] @ https://example.org/prereview-0.1.0-py3-none-any.whl",
        "pip install ./prereview",
        "pip install semgrep  # for prereview",
        "(`pip install -e .[test]` first, then run prereview's review)",
        "git clone https://github.com/OWNER/prereview && pip install -e prereview/",
    ]
    assert [b for b in bad if not bare_installs(b)] == []
    assert [g for g in good if bare_installs(g)] == []
