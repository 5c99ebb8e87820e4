"""Hostile dependencies and interpreters against the host that builds the project's test environment
(issue 25, items 2, 5 and 6), each rebuilt here by code.

The environment builder is the one step that runs outside the sandbox with network: it must read the
PR's real base only, never start the change's own files, and with `tests.wheels_only` never run package
code. Every package below writes a marker file on the host when its code runs; the assertions are about
that marker. Nothing is fetched: a local wheelhouse stands in for the index (`PIP_NO_INDEX`), and its
`pytest` is a stand-in wheel (these tests build environments, they do not need pytest to work).
"""

from __future__ import annotations

import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from bot import config as config_mod
from bot.config import Config
from bot.evidence import projectenv
from bot.jobs import workspace
from bot.patches.verify import PatchStage
from bot.types import ChangeRef, ChangeRequest, EnvSource
from tests.conftest import git

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

PROJECT = {
    "pyproject.toml": '[project]\nname = "victim"\nversion = "1.0"\n',
    "victim.py": "def add(a, b):\n    return a + b\n",
    "tests/test_victim.py": "from victim import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}


def commits(where: Path, *trees: dict[str, str | None]) -> list[str]:
    """One commit per dict of changes (None deletes; a value starting `-> ` is a symlink); their shas."""
    where.mkdir(parents=True)
    git(where, "init", "-q", "-b", "main")
    shas = []
    for files in trees:
        for name, text in files.items():
            p = where / name
            if p.is_symlink() or p.exists():
                p.unlink()
            if text is None:
                continue
            p.parent.mkdir(parents=True, exist_ok=True)
            if text.startswith("-> "):
                p.symlink_to(text[3:])
            else:
                p.write_text(text)
                if text.startswith("#!"):
                    p.chmod(0o755)
        git(where, "add", "-A")
        git(where, "commit", "-q", "--allow-empty", "-m", f"commit {len(shas)}")
        shas.append(git(where, "rev-parse", "HEAD").strip())
    return shas


def wheel(house: Path, name: str, files: dict[str, str], requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel written by hand (no build tool runs)."""
    house.mkdir(parents=True, exist_ok=True)
    info = f"{name}-1.0.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    files = {
        **files,
        f"{info}/METADATA": meta,
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    path = house / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for n, text in files.items():
            z.writestr(n, text)
        z.writestr(f"{info}/RECORD", "".join(f"{n},,\n" for n in [*files, f"{info}/RECORD"]))
    return path


def writes_marker(marker: Path) -> str:
    return f"import os; open({str(marker)!r}, 'w').write('ran on the host')\n"


def evil_sdist(where: Path, marker: Path) -> Path:
    """A source package whose build backend (in-tree, no build requirements) writes the marker."""
    where.mkdir(parents=True)
    (where / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
        '[project]\nname = "evil"\nversion = "1.0"\n'
    )
    body = f"    {writes_marker(marker).strip()}\n    raise SystemExit(1)\n\n\n"
    (where / "backend.py").write_text(
        f"def get_requires_for_build_wheel(config_settings=None):\n{body}"
        f"def prepare_metadata_for_build_wheel(d, config_settings=None):\n{body}"
        f"def build_wheel(d, config_settings=None, metadata_directory=None):\n{body}"
    )
    return where


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The local wheelhouse every build reads instead of the index (pip and uv)."""
    house = tmp_path / "wheelhouse"
    wheel(house, "pytest", {"pytest/__init__.py": "", "pytest/__main__.py": "raise SystemExit(5)\n"})
    for k, v in {
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(house),
        "PIP_NO_CACHE_DIR": "1",
        "UV_NO_INDEX": "1",
        "UV_FIND_LINKS": str(house),
        "UV_NO_CACHE": "1",
    }.items():
        monkeypatch.setenv(k, v)
    return house


def build(repo: Path, source: str, cfg: Config, envs: Path, head: str = "HEAD") -> projectenv.ProjectEnv:
    return projectenv.resolve(
        ["python", "-m", "pytest"],
        cfg=cfg,
        repo=repo,
        source=EnvSource(source),
        sandbox_name="bubblewrap",
        env_dir=envs,
        head_sha=head,
    )


# ---------------------------------------------------------------- item 2: /review -i and the environment


@needs_bwrap
def test_an_incremental_review_builds_the_environment_from_the_real_base(tmp_path, offline):
    """`/review -i` compares the head with the last reviewed head — a commit the PR author made, whose
    requirements name a package with build code. The host-side build must read the PR's base instead."""
    marker = tmp_path / "marker"
    evil = evil_sdist(tmp_path / "evil", marker)
    base, last, head = commits(
        tmp_path / "repo",
        {**PROJECT, "requirements.txt": "pytest\n"},
        {"requirements.txt": f"pytest\nevil @ file://{evil}\n"},  # the PR's first push, reviewed
        {"victim.py": "def add(a, b):\n    return a - b\n"},  # pushed since: `/review -i`
    )
    repo = tmp_path / "repo"
    change = ChangeRequest(ChangeRef("github", "o/r", number=1), base, head, "diff", workdir=repo)
    reviewed, notes = workspace.since(change, last, "PR")
    assert (reviewed.base_sha, reviewed.env_source, notes) == (last, EnvSource(base), ())

    envs = tmp_path / "envs"
    stage = PatchStage(reviewed, Config(), cache_dir=tmp_path / "cache", env_dir=envs)
    stage.start()

    assert not marker.exists(), "the PR's own requirement ran its build code on the host"
    assert stage.env is not None and stage.env.error is None, stage.env
    built = [p for p in envs.iterdir() if p.is_dir()]
    assert len(built) == 1 and (built[0] / "requirements.txt").read_text() == "pytest\n"


def test_the_comparison_base_is_never_the_environment_source():
    change = ChangeRequest(ChangeRef("github", "o/r", number=1), "b" * 40, "h" * 40, "diff")
    assert change.env_source == EnvSource("b" * 40)
    moved = change.compared_with("l" * 40).compared_with("m" * 40)  # two incremental steps
    assert (moved.base_sha, moved.env_source) == ("m" * 40, EnvSource("b" * 40))
    assert change.compared_with("b" * 40) is change


# ---------------------------------------------------------------- item 5: a relative tests.python


@pytest.mark.parametrize(
    "planted",
    [
        {".venv/bin/python": "#!/bin/sh\n{hook}"},  # the documented example, committed by the PR
        {"tools/env/bin/python": "#!/bin/sh\n{hook}", ".venv": "-> tools/env"},  # a tracked link on the way
    ],
    ids=["file", "link"],
)
def test_a_tests_python_the_change_commits_is_never_started(tmp_path, planted):
    marker = tmp_path / "marker"
    files = {k: v.format(hook=f"echo ran > {marker}\n") for k, v in planted.items()}
    base, head = commits(tmp_path / "repo", PROJECT, files)
    repo = tmp_path / "repo"
    # the Action's `tests-python` input and GitLab's variable arrive as this environment variable
    cfg = config_mod.build({}, env={"PREREVIEW_TESTS_PYTHON": ".venv/bin/python"})
    env = build(repo, base, cfg, tmp_path / "envs", head)
    assert not marker.exists(), "the change's own file ran on the host as the interpreter"
    assert env.error is not None and "\n" not in env.error
    assert "head commit" in env.error and "outside the checkout" in env.error, env.error
    assert not (tmp_path / "envs").exists()
    # an interpreter the workflow made in the checkout (untracked) is still used
    (repo / "made" / "bin").mkdir(parents=True)
    (repo / "made" / "bin" / "python").symlink_to(sys.executable)
    cfg = config_mod.build({"tests": {"python": "made/bin/python"}}, env={})
    env = build(repo, base, cfg, tmp_path / "envs", head)
    assert env.error is None and env.kind == "python", env.error


# ---------------------------------------------------------------- item 6: tests.wheels_only


def test_wheels_only_never_runs_a_wheels_pth_on_the_host(tmp_path, offline):
    """A dependency ships a `.pth` (run by `site` whenever the venv's interpreter starts) and pulls the
    project itself in from the index, so the builder removes that copy after installing."""
    marker = tmp_path / "marker"
    wheel(offline, "victim", {"victim.py": "STALE = True\n"})
    wheel(offline, "evilpth", {"evilpth.pth": writes_marker(marker)}, requires=("victim",))
    (base,) = commits(tmp_path / "repo", {**PROJECT, "requirements.txt": "evilpth\n"})
    cfg = config_mod.build({"tests": {"wheels_only": True}}, env={})
    env = build(tmp_path / "repo", base, cfg, tmp_path / "envs")
    assert env.error is None, env.error
    site = next((tmp_path / "envs").glob("py*/lib/python*/site-packages"))
    assert (site / "evilpth.pth").is_file()  # installed, so every later start of the venv would run it
    assert not marker.exists(), "a wheel's .pth ran on the host"
    assert not (site / "victim.py").exists()  # the index's copy of the project was still removed
    own = [p.name for p in site.glob("victim-*.dist-info")]
    assert own == ["victim-1.0.dist-info"] and (site / own[0] / "INSTALLER").read_text() == "prereview\n"


def test_wheels_only_builds_no_source_package_even_one_named_by_url(tmp_path, offline):
    marker = tmp_path / "marker"
    evil = evil_sdist(tmp_path / "evil", marker)
    (base,) = commits(tmp_path / "repo", {**PROJECT, "requirements.txt": f"evil @ file://{evil}\n"})
    cfg = config_mod.build({"tests": {"wheels_only": True}}, env={})
    env = build(tmp_path / "repo", base, cfg, tmp_path / "envs")
    assert not marker.exists(), "a source package's build code ran on the host"
    assert env.error is not None and "\n" not in env.error


def test_the_built_interpreter_is_only_started_isolated(tmp_path, offline, monkeypatch):
    """Every command the builder runs that starts the built venv's python has `-I -S`."""
    from bot.evidence import envbase, pyvenv

    seen: list[list[str]] = []
    real = envbase.run_build

    def spy(argv, **kw):  # type: ignore[no-untyped-def]
        seen.append(list(argv))
        return real(argv, **kw)

    monkeypatch.setattr(pyvenv, "run_build", spy)
    fake = tmp_path / "bin"  # a uv on PATH is not used: it would start the venv's python normally
    fake.mkdir()
    (fake / "uv").write_text(f"#!/bin/sh\necho used > {tmp_path / 'uv-used'}\nexit 1\n")
    (fake / "uv").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    wheel(offline, "victim", {"victim.py": ""})
    wheel(offline, "dep", {"dep.py": ""}, requires=("victim",))  # pulls the project in: removed after
    (base,) = commits(tmp_path / "repo", {**PROJECT, "requirements.txt": "dep\n"})
    cfg = config_mod.build({"tests": {"wheels_only": True}}, env={})
    env = build(tmp_path / "repo", base, cfg, tmp_path / "envs")
    assert env.error is None, env.error
    venv_python = [a for a in seen if a[0].startswith(str(tmp_path / "envs"))]
    assert len(venv_python) >= 2  # the install and the removal of the project's own copy
    assert all(a[1:3] == ["-I", "-S"] for a in venv_python), venv_python
    assert not (tmp_path / "uv-used").exists()


def test_an_incremental_review_fetches_node_dependencies_from_the_real_base(tmp_path, monkeypatch):
    """The other toolchains' fetch (here npm, a stand-in on PATH that records what it was given)."""
    record = tmp_path / "fetched-package.json"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(
        '#!/bin/sh\nif [ "$1" = "--version" ]; then echo 10.0.0; exit 0; fi\n'
        f"cat package.json > {record}\nmkdir -p node_modules\n"
    )
    (bin_dir / "npm").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    pkg = '{"name": "calc", "version": "1.0.0", "scripts": {"test": "node test.js"}}'
    hostile = '{"name": "calc", "dependencies": {"evil": "git+https://example.invalid/evil.git"}}'
    base, last, head = commits(
        tmp_path / "repo",
        {
            "package.json": pkg,
            "test.js": "require('./calc');\n",
            "calc.js": "exports.add = (a, b) => a + b;\n",
        },
        {"package.json": hostile},
        {"calc.js": "exports.add = (a, b) => a - b;\n"},
    )
    repo = tmp_path / "repo"
    change = ChangeRequest(ChangeRef("github", "o/r", number=1), base, head, "diff", workdir=repo)
    reviewed, _ = workspace.since(change, last, "PR")
    env = projectenv.resolve(
        ["npm", "test"],
        cfg=Config(),
        repo=repo,
        source=reviewed.env_source,
        sandbox_name="bubblewrap",
        env_dir=tmp_path / "envs",
        head_sha=reviewed.head_sha,
    )
    assert env.error is None, env.error
    assert record.read_text() == pkg  # the base's manifest, not the PR's earlier commit's


def test_the_build_sees_no_token_of_the_host(monkeypatch):
    """Dependency builds run on the host: the environment they get is filtered (proxies, index settings)."""
    from bot.evidence.envbase import run_build

    for k in ("GITHUB_TOKEN", "PREREVIEW_GITLAB_TOKEN", "PREREVIEW_WEBHOOK_SECRET", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(k, "secret-value-123456")
    monkeypatch.setenv("PIP_INDEX_URL", "https://index.example.invalid/simple")
    out = run_build([sys.executable, "-c", "import os; print(sorted(os.environ))"], cwd=None, timeout=60)
    assert "PIP_INDEX_URL" in out and "TOKEN" not in out and "SECRET" not in out, out


def test_without_wheels_only_a_source_package_of_the_base_runs_its_build_code_on_the_host(tmp_path, offline):
    """What `tests.wheels_only` (on by default on the server) is for: with it off, whoever controls the
    base branch's requirements — or a package on the index — runs code on the host when the venv is built."""
    marker = tmp_path / "marker"
    evil = evil_sdist(tmp_path / "evil", marker)
    (base,) = commits(tmp_path / "repo", {**PROJECT, "requirements.txt": f"evil @ file://{evil}\n"})
    build(tmp_path / "repo", base, config_mod.build({}, env={}), tmp_path / "envs")
    assert marker.exists()
