"""Python security linter: bandit (JSON output) on the changed .py files."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from typing import Any

from ...config import ScannersConfig
from ...types import Finding, install_extra
from . import ScannerMissing, cwe_id, relpath, run_json

_SEVERITY = {"HIGH": "high", "MEDIUM": "medium", "LOW": "low"}
_DOWN = {"critical": "high", "high": "medium", "medium": "low", "low": "low"}


def command() -> list[str]:
    if importlib.util.find_spec("bandit") is not None:
        return [sys.executable, "-I", "-m", "bandit"]  # -I: never a `bandit` package in the working directory
    exe = shutil.which("bandit")
    if exe is None:
        raise ScannerMissing(
            f"bandit is not installed; {install_extra('scanners')}; or set scanners.bandit: false"
        )
    return [exe]


def scan(texts: dict[str, str], root: Path, cfg: ScannersConfig) -> list[Finding]:
    files = [str(root / p) for p in texts if p.endswith(".py")]
    if not files:
        return []
    argv = [*command(), "-f", "json", "-q"]
    if cfg.bandit_skip:
        argv += ["-s", ",".join(cfg.bandit_skip)]
    data = run_json("bandit", [*argv, *files], timeout=cfg.timeout)
    return [_finding(r, root) for r in data.get("results", [])]


def _finding(r: dict[str, Any], root: Path) -> Finding:
    severity = _SEVERITY.get(r.get("issue_severity", ""), "low")
    if r.get("issue_confidence") == "LOW":
        severity = _DOWN[severity]
    lines = r.get("line_range") or [r["line_number"]]
    return Finding(
        path=relpath(root, r["filename"]),
        line=int(r["line_number"]),
        end_line=int(max(lines)) if max(lines) > r["line_number"] else None,
        message=str(r.get("issue_text", "")).strip(),
        severity=severity,
        category="security",
        cwe=cwe_id((r.get("issue_cwe") or {}).get("id")),
        source="bandit",
        rule_id=f"{r.get('test_id')}:{r.get('test_name')}",
    )
