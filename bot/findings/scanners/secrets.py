"""Hard-coded credentials (CWE-798): detect-secrets plugins plus the token shapes of bot.redact."""

from __future__ import annotations

from pathlib import Path

from ...change import redact
from ...change.diff import is_test_path
from ...config import ScannersConfig
from ...types import Finding, install_extra
from . import ScannerMissing

# detect-secrets entropy plugins flag hashes and ids all day; the named detectors are the useful part
_NOISY = {"Base64 High Entropy String", "Hex High Entropy String"}
# a value assigned to a name like `secret_key` or `password`, of no known token shape: in a test file it
# is a fixture (flask's tests set `app.secret_key = "new test key"`), low there; a real token shape in a
# test file is a leaked credential like any other
_BY_NAME = {"Secret Keyword"}


def scan(texts: dict[str, str], root: Path, cfg: ScannersConfig) -> list[Finding]:
    try:
        import detect_secrets  # noqa: F401
    except ImportError:
        raise ScannerMissing(f"detect-secrets is not installed; {install_extra('scanners')}") from None
    out: dict[tuple[str, int], Finding] = {}
    for path, text in texts.items():
        hits = [(k, n) for k, n, _ in redact.pattern_hits(text)]
        hits += [(k, n) for k, n, _ in redact.detect_secrets_hits(text) if k not in _NOISY]
        for kind, line in hits:
            out.setdefault((path, line), _finding(path, line, kind))
    return list(out.values())


def _finding(path: str, line: int, kind: str) -> Finding:
    rule = "secrets." + "-".join(kind.lower().split())
    fixture = kind in _BY_NAME and is_test_path(path)
    return Finding(
        path=path,
        line=line,
        message=f"Hard-coded credential ({kind}). Remove it from the code, rotate it, and load it from the "
        "environment or a secret store."
        + (
            " (In a test file: low, as test fixtures set such values; unless it is a real one.)"
            if fixture
            else ""
        ),
        severity="low" if fixture else "high",
        category="security",
        cwe="CWE-798",
        source="secrets",
        rule_id=rule,
    )
