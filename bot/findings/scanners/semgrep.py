"""Multi-language pattern scanner: semgrep, offline, with the rule files shipped in bot/rules/.

semgrep runs as an external program (its pinned dependencies clash with prereview's, so it is not a
Python dependency): install it with `pipx install semgrep` or point scanners.semgrep at the binary.
No registry, no login, no metrics: only the local rule files are used.
"""

from __future__ import annotations

import os
import shutil
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from ...config import ScannersConfig
from ...types import Finding
from . import ScannerMissing, cwe_id, relpath, run_json

_SEVERITY = {"ERROR": "high", "WARNING": "medium", "INFO": "low"}


def rules_dir() -> Path:
    return Path(str(resources.files("bot").joinpath("rules")))


def executable(name: str = "semgrep") -> str | None:
    """On PATH, else next to the interpreter: a venv's tools are there even when it is not activated."""
    return shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))


def scan(texts: dict[str, str], root: Path, cfg: ScannersConfig) -> list[Finding]:
    exe = executable(cfg.semgrep)
    if exe is None:
        raise ScannerMissing(
            f"'{cfg.semgrep}' not found; install it (pipx install semgrep) or set scanners.patterns: false"
        )
    env = {**os.environ, "SEMGREP_ENABLE_VERSION_CHECK": "0", "SEMGREP_SEND_METRICS": "off"}
    argv = [
        exe,
        "scan",
        "--metrics=off",
        "--disable-version-check",
        "--json",
        "--quiet",
        "--no-git-ignore",
        "--config",
        str(rules_dir()),
        *[str(root / p) for p in texts],
    ]
    data = run_json("semgrep", argv, timeout=cfg.timeout, env=env)
    return [_finding(r, root) for r in data.get("results", [])]


def _finding(r: dict[str, Any], root: Path) -> Finding:
    extra = r.get("extra", {})
    meta = extra.get("metadata", {})
    start, end = int(r["start"]["line"]), int(r["end"]["line"])
    rule = str(r.get("check_id", "")).rsplit(".", 1)[-1]
    return Finding(
        path=relpath(root, r["path"]),
        line=start,
        end_line=end if end > start else None,
        message=str(extra.get("message", "")).strip(),
        severity=_SEVERITY.get(extra.get("severity", ""), "medium"),
        category=str(meta.get("category", "security")),
        cwe=cwe_id(meta.get("cwe")),
        source="semgrep",
        rule_id=rule,
    )
