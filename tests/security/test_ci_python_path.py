"""`python -m NAME` puts the working directory first on sys.path, and a CI job's working directory is the
change's checkout: a `bot/`, `pip/`, `venv/` or `bandit/` package the change commits there would be what
runs, on the host, with the token in its environment (`python -c` too, for any import but a builtin).
Every such run of the GitLab template, the Gitea example, the Action's scripts and prereview's host side
is isolated (`-I`: no working directory on sys.path, no PYTHON* variables)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from bot.cli import ci_model
from bot.config import ScannersConfig
from bot.findings.scanners import ScannerMissing, bandit
from bot.models import catalog
from bot.types import PrereviewError
from tests.ci.image import IMAGE, seed_model
from tests.ci.runner import CacheStore, Image, gitlab_job, load_component, workflow_job

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "templates" / "prereview.yml"
WORKFLOW = ROOT / "examples" / "gitea" / ".gitea" / "workflows" / "prereview.yml"
HOSTILE = ("bot", "pip", "venv", "bandit")  # what a change can shadow in its checkout


def _hostile(where: Path, marker: Path) -> Path:
    """Packages that, imported, record it in `marker`; a git checkout, as a CI job's is."""
    for name in HOSTILE:
        (where / name).mkdir(parents=True)
        code = f"open({str(marker)!r}, 'a').write({name!r} + ' ran\\n')\n"
        (where / name / "__init__.py").write_text(code)
        (where / name / "__main__.py").write_text(code)
    (where / "bot" / "cli").mkdir()
    (where / "bot" / "cli" / "__init__.py").write_text("")
    subprocess.run(["git", "init", "-q", str(where)], check=True)
    git = ["git", "-C", str(where), "-c", "user.name=mr", "-c", "user.email=mr@example.com"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "the change"], check=True)
    return where


def _image(tmp_path: Path) -> Image:
    """The prereview image: a venv where prereview (this checkout) and its dependencies are installed
    (a .pth file: -I ignores PYTHONPATH, not site-packages), a `prereview` that says it ran, a bwrap (no
    apt-get here) and the baked default model."""
    venv = tmp_path / "image-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [site] = venv.glob("lib/python*/site-packages")
    (site / "prereview.pth").write_text(f"{ROOT}\n{sysconfig.get_paths()['purelib']}\n")
    (venv / "bin" / "prereview").write_text('#!/bin/sh\necho "prereview $* ran"\n')
    (venv / "bin" / "bwrap").write_text("#!/bin/sh\n")
    for f in ("prereview", "bwrap"):
        (venv / "bin" / f).chmod(0o755)
    seed_model(tmp_path / "baked", catalog.DEFAULT_MODEL, tmp_path)
    return Image(path=[str(venv / "bin")], env={"PREREVIEW_CACHE_DIR": str(tmp_path / "baked")})


SHIPPED = [TEMPLATE, WORKFLOW, *sorted((ROOT / "scripts" / "ci").glob("*.sh"))]
# a python (python, python3, "$py", "$PREREVIEW_PYTHON", ".../bin/python"), its flags, then -m or -c
RUN = re.compile(r"(?:python3?|\$py|PYTHON)\"?((?:\s+-\w+)*)\s+-[mc]\s")


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_python_run_is_isolated(path: Path) -> None:
    """The template, the Gitea example and the Action's scripts run in (or mount) the change's checkout."""
    runs = RUN.findall(path.read_text())
    assert all("-I" in flags.split() for flags in runs), runs


def test_the_isolation_check_sees_every_python_run() -> None:
    found = {p.name for p in SHIPPED if RUN.search(p.read_text())}
    assert {"prereview.yml", "install.sh", "review.sh", "model.sh", "image-model.sh", "plan.sh"} <= found
    assert RUN.findall('"$py" -I -c x') == [" -I"] and RUN.findall('"$py" -c x') == [""]


def test_gitlab_never_imports_the_checkouts_packages(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    repo = _hostile(tmp_path / "checkout", marker)
    run = gitlab_job(
        load_component(TEMPLATE),
        "prereview",
        project_dir=repo,
        home=tmp_path / "home",
        cache=CacheStore(tmp_path / "cache-store"),
        ci_env={"CI_MERGE_REQUEST_IID": "7", "PREREVIEW_GITLAB_TOKEN": "glpat-secret"},
        images={IMAGE: _image(tmp_path)},
    )
    assert not marker.exists(), marker.read_text()
    assert run.ok, run.log
    assert "already in the cache" in run.log and "prereview gitlab ran" in run.log, run.log


def test_gitea_never_imports_the_checkouts_packages(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    repo = _hostile(tmp_path / "checkout", marker)
    run = workflow_job(
        yaml.safe_load(WORKFLOW.read_text()),
        "review",
        workspace=repo,
        env={"HOME": str(tmp_path / "home")},
        secrets={"PREREVIEW_GITEA_TOKEN": "t"},
        images={IMAGE: _image(tmp_path)},
        cache=CacheStore(tmp_path / "cache-store"),
    )
    assert not marker.exists(), marker.read_text()
    assert run.ok, run.log
    assert "prereview gitea ran" in run.log, run.log


def test_host_side_python_runs_never_import_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bandit (a scanner, run on the host over the change's files) and ci_model's pip (assembling a
    model), started in the change's checkout as a CI job starts them."""
    marker = tmp_path / "marker"
    monkeypatch.chdir(_hostile(tmp_path / "checkout", marker))
    (tmp_path / "a.py").write_text("import subprocess\nsubprocess.call('x', shell=True)\n")
    found = []
    with contextlib.suppress(ScannerMissing):  # the change's `bandit` gives no JSON
        found = bandit.scan({"a.py": ""}, tmp_path, ScannersConfig())
    with contextlib.suppress(PrereviewError):  # no requirement given: pip refuses, after starting
        ci_model._pip_install("m", [], str(tmp_path / "scratch"))
    assert not marker.exists(), marker.read_text()
    assert any(f.rule_id.startswith("B602") for f in found), found  # the installed bandit ran
