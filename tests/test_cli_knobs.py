"""The review knobs on the command line (issue 29, item 11): --filter-mode, --min-severity,
--include/--exclude, --language and --quick, each replacing its config value for one run."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from bot.cli.options import config_options
from bot.config import build
from tests.test_cli import run_cli


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    """The scripted model (a medium bug on the first added line of each chunk, or `script`), scanners
    and the self-check off."""
    path = tmp_path / "cfg.yml"
    path.write_text(
        yaml.safe_dump(
            {
                "model": {"backend": "scripted"},
                "scanners": {"secrets": False, "bandit": False, "patterns": False, "self_verify": False},
            }
        )
    )
    return path


def review_json(repo: Path, cfg: Path, capsys, *flags: str) -> dict:
    argv = ["review", "--repo", str(repo), "--base", "HEAD~", "--format", "json", "--config", str(cfg)]
    code, out, err = run_cli([*argv, *flags], capsys)
    assert code == 0, err
    return json.loads(out)


def test_min_severity_drops_findings_below_it(make_repo, cfg, capsys) -> None:
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    assert [f["severity"] for f in review_json(repo, cfg, capsys)["findings"]] == ["medium"]
    assert review_json(repo, cfg, capsys, "--min-severity", "high")["findings"] == []


def test_include_and_exclude_choose_the_files(make_repo, cfg, capsys) -> None:
    repo = make_repo({"a.py": "a = 1\n", "b.py": "b = 1\n"}, {"a.py": "a = 2\n", "b.py": "b = 2\n"})
    doc = review_json(repo, cfg, capsys, "--exclude", "b.py")
    assert doc["coverage"]["reviewed"] == ["a.py"]
    assert {"path": "b.py", "reason": "matches review.exclude"} in doc["coverage"]["skipped"]
    doc = review_json(repo, cfg, capsys, "--include", "b.py", "--include", "c.py")
    assert doc["coverage"]["reviewed"] == ["b.py"]


def test_filter_mode_shows_what_reviewdog_would(make_repo, cfg, capsys, tmp_path) -> None:
    """A finding on a context line of the hunk: shown by diff_context (and by default), hidden by added
    with a note saying so."""
    script = tmp_path / "script.json"
    context = {"quote": "x = 1", "line": 1, "message": "x is shadowed", "category": "bug", "cwe": ""}
    script.write_text(json.dumps({"replies": [], "default": {"findings": [context | {"severity": "high"}]}}))
    data = yaml.safe_load(cfg.read_text())
    data["model"]["script"] = str(script)
    cfg.write_text(yaml.safe_dump(data))
    repo = make_repo({"a.py": "x = 1\ny = 2\n"}, {"a.py": "x = 1\ny = 3\n"})
    assert [f["line"] for f in review_json(repo, cfg, capsys)["findings"]] == [1]
    assert [
        f["line"] for f in review_json(repo, cfg, capsys, "--filter-mode", "diff_context")["findings"]
    ] == [1]
    doc = review_json(repo, cfg, capsys, "--filter-mode", "added")
    assert doc["findings"] == []
    assert any("--filter-mode added: 1 finding(s) outside it not shown" in n for n in doc["notes"])
    assert len(review_json(repo, cfg, capsys, "--filter-mode", "nofilter")["findings"]) == 1


def test_quick_skips_the_slow_evidence_stages(make_repo, cfg, capsys) -> None:
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    assert "tests" in review_json(repo, cfg, capsys)["stats"]["stages"]
    stages = review_json(repo, cfg, capsys, "--quick")["stats"]["stages"]
    assert not {"tests", "behaviour", "patches"} & set(stages) and "model" in stages


def test_each_knob_becomes_its_config_key() -> None:
    @click.command()
    @config_options("config")
    def show(config_file, overrides) -> None:
        click.echo(json.dumps(build({}, env={}, overrides=overrides).review.model_dump()))
        click.echo(json.dumps({k: v for k, v in overrides.items() if v is not None and "." in k}))

    flags = ["--language", "de", "--filter-mode", "file", "--min-severity", "high", "--quick"]
    res = CliRunner().invoke(show, [*flags, "--exclude", "gen/*", "--exclude", "*.pb.py"])
    assert res.exit_code == 0, res.output
    review, given = (json.loads(line) for line in res.output.splitlines())
    assert (review["language"], review["filter_mode"], review["min_severity"]) == ("de", "file", "high")
    assert review["exclude"] == ["gen/*", "*.pb.py"] and review["include"] == []
    assert given["tests.enabled"] is False and given["behaviour.enabled"] is False
    assert given["patches.enabled"] is False
