"""Model catalog: assembling chunk packages with sha256 checks, GGUF paths, refusing corrupt files."""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.root import main
from bot.models import catalog
from bot.types import PrereviewError

ROOT = Path(__file__).resolve().parents[1]


def gguf_bytes(kv: dict[str, int | str], version: int = 3) -> bytes:
    """A minimal GGUF header (no tensors) with uint32 / string metadata."""
    out = b"GGUF" + struct.pack("<IQQ", version, 0, len(kv))
    for key, value in kv.items():
        out += struct.pack("<Q", len(key)) + key.encode()
        if isinstance(value, int):
            out += struct.pack("<I", 4) + struct.pack("<I", value)
        else:
            out += struct.pack("<I", 8) + struct.pack("<Q", len(value)) + value.encode()
    return out


@pytest.fixture
def parts_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A catalog entry backed by two real (tiny) importable part packages on sys.path."""
    site = tmp_path / "site"
    payload = [
        gguf_bytes({"general.name": "tiny"})[:20],
        gguf_bytes({"general.name": "tiny"})[20:] + b"\0" * 50,
    ]
    for i, blob in enumerate(payload, 1):
        pkg = site / f"tinyparts_p{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(blob)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))
    whole = b"".join(payload)
    return catalog.CatalogEntry(
        "tiny",
        "test entry",
        "tiny.gguf",
        len(whole),
        hashlib.sha256(whole).hexdigest(),
        ("tinyparts_p1", "tinyparts_p2"),
        "testmodel",
        2048,
    )


def test_catalog_entries_are_pinned() -> None:
    assert catalog.DEFAULT_MODEL in catalog.CATALOG and catalog.TEST_MODEL in catalog.CATALOG
    for e in catalog.CATALOG.values():
        assert re.fullmatch(r"[0-9a-f]{64}", e.sha256) and e.size > 100_000_000
        assert e.parts and e.filename.endswith(".gguf") and e.extra in ("model", "testmodel")


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert catalog.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("PREREVIEW_CACHE_DIR")
    assert catalog.cache_dir() == tmp_path / "x" / "prereview"


def test_ensure_assembles_verifies_and_caches(parts_entry: catalog.CatalogEntry) -> None:
    msgs: list[str] = []
    path = catalog.ensure(parts_entry, msgs.append)
    assert path == catalog.cache_dir() / "models" / "tiny.gguf"
    assert catalog.sha256_file(path) == parts_entry.sha256 and path.read_bytes().startswith(b"GGUF")
    assert any("assembling tiny" in m for m in msgs)
    assert catalog.installed(parts_entry)
    msgs.clear()
    assert catalog.ensure(parts_entry, msgs.append) == path and msgs == []  # second time: no work
    path.write_bytes(b"GGUF truncated")  # damaged cache (size differs): assembled again
    assert (
        catalog.ensure(parts_entry, msgs.append) == path and catalog.sha256_file(path) == parts_entry.sha256
    )


def test_checksum_mismatch_is_refused(parts_entry: catalog.CatalogEntry) -> None:
    bad = catalog.CatalogEntry(**{**parts_entry.__dict__, "sha256": "0" * 64})
    with pytest.raises(PrereviewError, match="sha256 check.*ci_model tiny"):
        catalog.ensure(bad)
    models = catalog.cache_dir() / "models"
    assert not (models / "tiny.gguf").exists() and not list(models.glob("*.partial"))


def test_missing_parts_name_the_fix(parts_entry: catalog.CatalogEntry) -> None:
    missing = catalog.CatalogEntry(**{**parts_entry.__dict__, "parts": ("tinyparts_p1", "no_such_part_pkg")})
    assert not catalog.installed(missing)
    fix = r"1 of 2 parts missing.*python -m bot.cli.ci_model tiny`"
    with pytest.raises(PrereviewError, match=fix) as exc:
        catalog.ensure(missing)
    assert "pip install" not in str(exc.value)  # `prereview` on an index is not ours


def test_resolve_paths(tmp_path: Path) -> None:
    good = tmp_path / "m.gguf"
    good.write_bytes(gguf_bytes({"general.architecture": "qwen2", "qwen2.context_length": 4096}))
    assert catalog.resolve(str(good)) == good
    with pytest.raises(PrereviewError, match="does not exist"):
        catalog.resolve(str(tmp_path / "nope.gguf"))
    (tmp_path / "bad.gguf").write_bytes(b"PK\x03\x04 a zip file")
    with pytest.raises(PrereviewError, match="not a GGUF file"):
        catalog.resolve(str(tmp_path / "bad.gguf"))
    (tmp_path / "empty.gguf").write_bytes(b"")
    with pytest.raises(PrereviewError, match="not a GGUF file"):
        catalog.resolve(str(tmp_path / "empty.gguf"))
    with pytest.raises(PrereviewError, match="unknown model 'gpt-17'.*prereview models list"):
        catalog.resolve("gpt-17")
    with pytest.raises(PrereviewError, match="hf:OWNER/REPO/FILE.gguf"):
        catalog.resolve("hf:just-a-repo")


def test_gguf_context_length_header_reader(tmp_path: Path) -> None:
    p = tmp_path / "m.gguf"
    p.write_bytes(
        gguf_bytes(
            {"general.architecture": "qwen2", "general.name": "x" * 300, "qwen2.context_length": 32768}
        )
    )
    assert catalog.gguf_context_length(p) == 32768
    p.write_bytes(gguf_bytes({"general.architecture": "qwen2"}))
    assert catalog.gguf_context_length(p) is None
    # corrupt headers: absurd lengths and truncation give None, never a MemoryError or a hang
    p.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 5) + struct.pack("<Q", 2**62) + b"key")
    assert catalog.gguf_context_length(p) is None
    p.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 2**40))
    assert catalog.gguf_context_length(p) is None
    p.write_bytes(gguf_bytes({"general.architecture": "qwen2"})[:-3])
    assert catalog.gguf_context_length(p) is None


def test_models_cli(capsys: pytest.CaptureFixture[str]) -> None:
    main(["models", "list"])
    out = capsys.readouterr().out
    assert f"{catalog.DEFAULT_MODEL} (default)" in out and catalog.TEST_MODEL in out and "sha256" in out
    with pytest.raises(SystemExit) as info:
        main(["models", "path", "no-such-model"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith("prereview: error: unknown model") and err.count("\n") == 1


def test_models_path_of_installed_test_model(capsys: pytest.CaptureFixture[str]) -> None:
    entry = catalog.CATALOG[catalog.TEST_MODEL]
    if not catalog.installed(entry):
        pytest.skip("test model not installed: pip install -e '.[testmodel]'")
    main(["models", "path", catalog.TEST_MODEL])
    path = Path(capsys.readouterr().out.strip())
    assert path.is_file() and path.stat().st_size == entry.size and path.name == entry.filename


def test_unreadable_gguf_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "dir.gguf").mkdir()
    with pytest.raises(PrereviewError, match="cannot read .*dir.gguf"):
        catalog.check_gguf(tmp_path / "dir.gguf")


def test_a_corrupted_cached_model_is_never_loaded(parts_entry: catalog.CatalogEntry) -> None:
    """Same size, other bytes (a bad disk, a partial copy over it): hashed again because its mtime moved,
    and assembled again from the parts."""
    path = catalog.ensure(parts_entry)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    assert catalog.ensure(parts_entry) == path
    assert catalog.sha256_file(path) == parts_entry.sha256


def test_a_touched_but_intact_model_is_hashed_again_once(parts_entry: catalog.CatalogEntry) -> None:
    path = catalog.ensure(parts_entry)
    os.utime(path, ns=(1, 1))
    msgs: list[str] = []
    assert catalog.ensure(parts_entry, msgs.append) == path and msgs == []  # not assembled again
    stamp = path.with_suffix(".verified").read_text().split()
    assert stamp[0] == parts_entry.sha256 and stamp[2] == "1"


def test_concurrent_first_use_assembles_once(parts_entry: catalog.CatalogEntry, tmp_path: Path) -> None:
    """Three processes asking for the model at once all get the verified file."""
    code = (
        "import sys, json; from bot.models import catalog; "
        "e = catalog.CatalogEntry(**json.loads(sys.argv[1])); "
        "p = catalog.ensure(e, lambda m: print(m, flush=True)); "
        "assert catalog.sha256_file(p) == e.sha256"
    )
    entry = json.dumps({**parts_entry.__dict__, "parts": list(parts_entry.parts)})
    site = str(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), site])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, entry], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [o[1][-500:] for o in outs]
    assert sum(b"assembling" in o[0] for o in outs) == 1
