"""Configuration: precise errors, env/CLI overrides, and the config read from the BASE revision."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bot import config as config_mod
from bot.cli.root import main
from bot.pipeline.run import load_config
from bot.types import PrereviewError


def _err(path: Path, text: str) -> str:
    path.write_text(text)
    with pytest.raises(PrereviewError) as info:
        config_mod.build(config_mod.load_file(path), source=str(path), env={})
    msg = str(info.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize(
    ("text", "key", "hint"),
    [
        ("modle: {name: x}\n", "modle", "unknown key"),
        ("review:\n  max_findngs: 3\n", "review.max_findngs", "unknown key"),
        ("model:\n  backend: llama_cpp\n  colour: red\n", "model.colour", "unknown key"),
        ("review:\n  max_findings: many\n", "review.max_findings", "integer"),
        ("review:\n  fail_level: severe\n", "review.fail_level", "'none'"),
        ("review:\n  include: 3\n", "review.include", "list"),
        ("model: qwen\n", "model", "ModelConfig"),
        ("sandbox:\n  timeout: [1]\n", "sandbox.timeout", "number"),
        ("model:\n  n_ctx: 16\n", "model.n_ctx", "greater than or equal to 512"),
        ("model:\n  threads: 0\n", "model.threads", "greater than or equal to 1"),
        ("model:\n  timeout: 0\n", "model.timeout", "greater than 0"),
        ("model:\n  retries: -1\n", "model.retries", "greater than or equal to 0"),
        ("review:\n  max_new_tokens: 0\n", "review.max_new_tokens", "greater than or equal to 32"),
        ("review:\n  chunk_tokens: 1\n", "review.chunk_tokens", "greater than or equal to 64"),
    ],
)
def test_bad_config_names_file_and_key(tmp_path: Path, text: str, key: str, hint: str) -> None:
    msg = _err(tmp_path / "cfg.yml", text)
    assert msg.startswith(f"{tmp_path / 'cfg.yml'}: ")
    assert key in msg and hint in msg


def test_yaml_syntax_and_shape_errors(tmp_path: Path) -> None:
    msg = _err(tmp_path / "c.yml", "review:\n  include: [a\n  exclude: b\n")
    assert "line" in msg and "not valid YAML" in msg
    assert "top level must be a mapping" in _err(tmp_path / "d.yml", "- a\n- b\n")
    with pytest.raises(PrereviewError, match="not found"):
        config_mod.load_file(tmp_path / "missing.yml")


@pytest.mark.parametrize(
    ("text", "expected"), [("tests: off", False), ("tests: on", True), ("tests: auto", True)]
)
def test_yaml_on_off_for_tests(text: str, expected: bool) -> None:
    assert config_mod.build(config_mod.parse_yaml(text, "x.yml"), env={}).tests.enabled is expected


def test_empty_file_is_defaults(tmp_path: Path) -> None:
    (tmp_path / "e.yml").write_text("# nothing\n")
    cfg = config_mod.build(config_mod.load_file(tmp_path / "e.yml"), env={})
    assert cfg == config_mod.Config()


def test_env_and_cli_override_the_file() -> None:
    data = {"model": {"name": "from-file", "n_ctx": 2048}, "review": {"fail_level": "low"}}
    env = {"PREREVIEW_MODEL": "from-env", "PREREVIEW_N_CTX": "4096", "PREREVIEW_FAIL_LEVEL": "high"}
    cfg = config_mod.build(data, env=env)
    assert (cfg.model.name, cfg.model.n_ctx, cfg.review.fail_level) == ("from-env", 4096, "high")
    cfg = config_mod.build(data, env=env, overrides={"model.name": "from-cli", "review.fail_level": None})
    assert (cfg.model.name, cfg.review.fail_level) == ("from-cli", "high")  # None = flag not given
    assert data["model"]["name"] == "from-file"  # the caller's mapping is not mutated


def test_bad_env_value_names_the_variable() -> None:
    with pytest.raises(PrereviewError) as info:
        config_mod.build({}, env={"PREREVIEW_N_CTX": "lots"})
    assert "PREREVIEW_N_CTX" in str(info.value) and "model.n_ctx" in str(info.value)
    with pytest.raises(PrereviewError, match="command line: review.fail_level"):
        config_mod.build({}, env={}, overrides={"review.fail_level": "severe"})


def test_file_error_is_reported_before_overrides_hide_it(tmp_path: Path) -> None:
    with pytest.raises(PrereviewError, match="unknown key 'model.nmae'"):
        config_mod.build({"model": {"nmae": "x"}}, source="x.yml", env={"PREREVIEW_MODEL": "y"})


# ---------------------------------------------------------------------------- config from the BASE
BASE_CFG = {
    "model": {"backend": "scripted"},
    "review": {"max_findings": 7, "instructions": "Mind the SQL."},
    "scanners": {"secrets": False, "bandit": False, "patterns": False},
}


def _repo_with_config_change(make_repo, head_cfg: str | None) -> Path:
    head: dict[str, str | None] = {"app.py": "x = 1\ny = 2\n"}
    head[".prereview.yml"] = head_cfg
    return make_repo({"app.py": "x = 1\n", ".prereview.yml": yaml.safe_dump(BASE_CFG)}, head)


def test_config_comes_from_the_base_revision(make_repo) -> None:
    evil = "model: {backend: openai_http, api_base: 'http://127.0.0.1:1/v1'}\nreview: {max_findings: 0}\n"
    repo = _repo_with_config_change(make_repo, evil)
    from bot.change import git

    base = git.resolve(repo, "HEAD~")
    cfg = load_config(repo, base, env={})
    assert cfg.model.backend == "scripted" and cfg.review.max_findings == 7
    assert cfg.review.instructions == "Mind the SQL."
    # the change's own version (and the working tree) are ignored
    (repo / ".prereview.yml").write_text("not: [valid\n")
    assert load_config(repo, base, env={}) == cfg
    # --config FILE wins over the base revision
    other = repo.parent / "other.yml"
    other.write_text("review: {max_findings: 1}\n")
    assert load_config(repo, base, config_file=other, env={}).review.max_findings == 1


def test_a_pr_cannot_change_how_it_is_reviewed(make_repo, capsys, monkeypatch) -> None:
    """End to end: the PR rewrites .prereview.yml to a dead server with broken keys; the review still
    runs with the base's scripted model and exits 0."""
    monkeypatch.delenv("PREREVIEW_BACKEND", raising=False)
    monkeypatch.delenv("PREREVIEW_API_BASE", raising=False)
    repo = _repo_with_config_change(
        make_repo, "model: {backend: openai_http, api_base: 'http://127.0.0.1:1/v1'}\nbogus_key: 1\n"
    )
    with pytest.raises(SystemExit) as info:
        main(["review", "--repo", str(repo), "--base", "HEAD~", "--format", "json"])
    out = capsys.readouterr()
    assert info.value.code == 0, out.err
    assert '"model": "scripted"' in out.out


def test_pr_adding_a_config_does_not_apply(make_repo) -> None:
    repo = make_repo(
        {"app.py": "x = 1\n"}, {".prereview.yml": "review: {max_findings: 0}\n", "app.py": "x = 2\n"}
    )
    from bot.change import git

    assert load_config(repo, git.resolve(repo, "HEAD~"), env={}).review.max_findings == 20


def test_invalid_base_config_is_a_precise_error(make_repo) -> None:
    repo = make_repo({".prereview.yml": "review: {max_findigs: 1}\n"}, {"a.py": "a = 1\n"})
    from bot.change import git

    base = git.resolve(repo, "HEAD~")
    with pytest.raises(PrereviewError) as info:
        load_config(repo, base, env={})
    assert f".prereview.yml (at base {base[:12]})" in str(info.value)
    assert "review.max_findigs" in str(info.value)


def test_config_show(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "c.yml"
    cfg.write_text("review: {max_findings: 3}\n")
    main(["config", "show", "--config", str(cfg)])  # success returns (standalone_mode=False)
    assert yaml.safe_load(capsys.readouterr().out)["review"]["max_findings"] == 3
    cfg.write_text("review: {max_findings: x}\n")
    with pytest.raises(SystemExit) as info:
        main(["config", "show", "--config", str(cfg)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1 and "review.max_findings" in err
