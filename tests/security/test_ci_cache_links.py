"""The GitLab template and the Gitea example keep their caches in the checkout (GitLab caches nothing
outside it), where a merge request can commit files and links. What it puts at a cache path is removed
before the job runs, reads or restores anything there: the host never runs the merge request's
`.cache/prereview-venv/bin/python`, never installs its wheel, never follows its `.cache -> ~/.ssh`, and
never saves its files as the cache of the next job.

The jobs run as a runner runs them (tests/ci/runner.py); the images are stubs: a `python` and a
`prereview` that log what they were asked and write where a real one would (the model into
PREREVIEW_CACHE_DIR), so nothing is installed or downloaded."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.ci.image import IMAGE
from tests.ci.runner import CacheStore, Image, JobResult, gitlab_job, load_component, workflow_job

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "templates" / "prereview.yml"
WORKFLOW = ROOT / "examples" / "gitea" / ".gitea" / "workflows" / "prereview.yml"
SOURCE = "file:///trusted/prereview"
PYTHON_V = "Python 3.11.9"

# What the merge request commits: run on the host, it leaves a marker.
EVIL = '#!/bin/sh\necho "$0 $*" >> {marker}\n'

# A venv's python/prereview/semgrep: log the call; `-m bot.cli.ci_model` puts the model in the cache dir
# (`--cached`: not there) as the real one does.
STUB = """#!/bin/sh
echo "$(basename "$0") $*" >> {calls}
[ "$1" = -I ] && shift
case "$1 $2 $3" in
  "-m bot.cli.ci_model --cached") exit 1 ;;
  "-m bot.cli.ci_model "*) m="$PREREVIEW_CACHE_DIR/models" && mkdir -p "$m" && echo built > "$m/m.gguf" ;;
esac
[ "$1" = --version ] && echo "prereview 0.1.0"
[ "$(basename "$0")" = prereview ] && echo "prereview $* cache=$PREREVIEW_CACHE_DIR"
exit 0
"""

# A python:3.x image's python3: `-m venv DIR` makes a venv of stubs.
PYTHON3 = """#!/bin/sh
[ "$1" = -I ] && shift
case "$1" in
  -V) echo "{version}" ;;
  -c) echo cp311 ;;
  -m) mkdir -p "$3/bin" && for t in python prereview semgrep; do cp {stub} "$3/bin/$t"; done ;;
esac
"""


def _exe(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _checkout(root: Path, files: dict[str, str], links: dict[str, Path]) -> Path:
    """A merge request's checkout: `files` (executable) and `links` committed, nothing else."""
    repo = root / "checkout"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for name, text in files.items():
        _exe(repo / name, text)
    for name, target in links.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).symlink_to(target)
    git = ["git", "-C", str(repo), "-c", "user.name=mr", "-c", "user.email=mr@example.com"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "the merge request", "--allow-empty"], check=True)
    return repo


def _outside(tmp_path: Path) -> Path:
    """A host directory a link in the checkout points at (~/.ssh, the runner's own cache)."""
    outside = tmp_path / "host-dir"
    (outside / "prereview-venv").mkdir(parents=True)
    (outside / "prereview-venv" / "keep").write_text("the host's\n")
    (outside / "models").mkdir()
    (outside / "models" / "keep").write_text("the host's\n")
    return outside


def _said(out: str, path: str, change: str) -> int:
    """How often the job's log says that `path` was removed (bash -x's traces of the echo not counted)."""
    return out.splitlines().count(
        f"prereview: {path} is tracked by the {change} (or a link): not used; rebuilt"
    )


def _host_files(outside: Path) -> list[str]:
    return sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))


# --- GitLab ------------------------------------------------------------------------------------------------


def _gitlab(tmp_path: Path, repo: Path, inputs: dict[str, str], image: Image) -> tuple[JobResult, CacheStore]:
    store = CacheStore(tmp_path / "cache-store")  # a new cache key: nothing restored over the checkout
    run = gitlab_job(
        load_component(TEMPLATE, inputs),
        "prereview",
        project_dir=repo,
        home=tmp_path / "home",
        cache=store,
        ci_env={"CI_MERGE_REQUEST_IID": "7", "PREREVIEW_GITLAB_TOKEN": "glpat-secret"},
        images={inputs.get("image", IMAGE): image},
    )
    return run, store


def _stub_bin(tmp_path: Path, calls: Path) -> Path:
    bin_dir = tmp_path / "image" / "bin"
    for name in ("python", "prereview", "bwrap"):  # bwrap: no apt-get install on this machine
        _exe(bin_dir / name, STUB.format(calls=calls))
    return bin_dir


def test_gitlab_never_runs_installs_or_saves_what_the_merge_request_tracks(tmp_path: Path) -> None:
    """A python image installing from `source`, every cache empty: the merge request has committed a venv
    that passes the cache check (its `.prereview-source` is what the job expects), a llama-cpp-python
    wheel, a model and a test environment."""
    marker, calls = tmp_path / "marker", tmp_path / "calls"
    evil = EVIL.format(marker=marker)
    repo = _checkout(
        tmp_path,
        {
            **{f".cache/prereview-venv/bin/{t}": evil for t in ("python", "prereview", "semgrep")},
            ".cache/prereview-venv/.prereview-source": f"{SOURCE} {PYTHON_V}\n",
            ".cache/prereview-wheels/llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl": evil,
            ".cache/prereview/models/qwen2.5-coder-1.5b-instruct-q8_0.gguf": evil,
            ".cache/prereview-envs/0123abcd/bin/python": evil,
        },
        {},
    )
    stub = _exe(tmp_path / "stub", STUB.format(calls=calls))
    image = Image(
        path=[str(_exe(tmp_path / "py" / "python3", PYTHON3.format(version=PYTHON_V, stub=stub)).parent)]
    )
    _exe(tmp_path / "py" / "bwrap", "#!/bin/sh\n")
    run, store = _gitlab(tmp_path, repo, {"image": "python:3.11", "source": SOURCE}, image)
    out = run.steps[0].out
    assert run.ok, run.log
    assert not marker.exists(), f"the merge request's file ran on the host:\n{marker.read_text()}"
    for path in (
        ".cache/prereview-venv",
        ".cache/prereview-wheels",
        ".cache/prereview",
        ".cache/prereview-envs",
    ):
        assert _said(out, path, "merge request") == 1, out
    assert f"installing prereview from {SOURCE}" in out, out
    assert "-m pip wheel" in calls.read_text(), "the wheel is built, not taken from the merge request"
    saved = [p for p in store.root.rglob("*") if p.is_file()]
    assert saved and not any(str(marker) in p.read_text() for p in saved), "its files are never cached"


@pytest.mark.parametrize("link", [".cache", ".cache/prereview", ".cache/prereview/models"])
def test_gitlab_removes_a_link_on_a_cache_path_and_never_follows_it(tmp_path: Path, link: str) -> None:
    """The prereview -nomodel image: the model goes to the project's cache dir, which the merge request
    made a link to a host directory."""
    outside, calls = _outside(tmp_path), tmp_path / "calls"
    before = _host_files(outside)
    target = {".cache": outside, ".cache/prereview": outside, ".cache/prereview/models": outside / "models"}
    repo = _checkout(tmp_path, {}, {link: target[link]})
    image_cache = tmp_path / "image-cache"
    image = Image(path=[str(_stub_bin(tmp_path, calls))], env={"PREREVIEW_CACHE_DIR": str(image_cache)})
    run, _ = _gitlab(tmp_path, repo, {"image": f"{IMAGE}-nomodel"}, image)
    out = run.steps[0].out
    assert run.ok, run.log
    assert _host_files(outside) == before, "nothing written or removed through the link"
    removed = ".cache" if link == ".cache" else ".cache/prereview"  # the cache dir the link lies in
    assert _said(out, removed, "merge request") == 1, out
    model = repo / ".cache" / "prereview" / "models" / "m.gguf"
    assert model.is_file() and not any(p.is_symlink() for p in (model, *model.parents)), "a fresh cache dir"


def test_gitlab_leaves_a_clean_checkout_and_its_cache_alone(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    repo = _checkout(tmp_path, {"app.py": "print(1)\n"}, {})
    (repo / ".cache" / "prereview" / "models").mkdir(parents=True)
    (repo / ".cache" / "prereview" / "models" / "m.gguf").write_text("restored\n")  # as the cache left it
    image = Image(path=[str(_stub_bin(tmp_path, calls))], env={"PREREVIEW_CACHE_DIR": str(tmp_path / "ic")})
    run, _ = _gitlab(tmp_path, repo, {"image": f"{IMAGE}-nomodel"}, image)
    assert run.ok, run.log
    assert "not used; rebuilt" not in run.steps[0].out
    assert (repo / ".cache" / "prereview" / "models" / "m.gguf").read_text() == "built\n"  # the stub's run


# --- Gitea / Forgejo Actions -------------------------------------------------------------------------------


def _gitea(tmp_path: Path, repo: Path, store: CacheStore) -> JobResult:
    calls = tmp_path / "calls"
    image = Image(path=[str(_stub_bin(tmp_path, calls))], env={"PREREVIEW_CACHE_DIR": str(tmp_path / "ic")})
    return workflow_job(
        yaml.safe_load(WORKFLOW.read_text()),
        "review",
        workspace=repo,
        env={"HOME": str(tmp_path / "home")},
        secrets={"PREREVIEW_GITEA_TOKEN": "t"},
        images={IMAGE: image},
        cache=store,
    )


def _model_key() -> str:
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["review"]["steps"]
    return str(next(s for s in steps if s.get("id") == "model-cache")["with"]["key"])


@pytest.mark.parametrize("link", [".cache", ".cache/prereview", ".cache/prereview/models"])
def test_gitea_removes_a_link_before_the_cache_is_restored_through_it(tmp_path: Path, link: str) -> None:
    outside = _outside(tmp_path)
    before = _host_files(outside)
    target = {".cache": outside, ".cache/prereview": outside, ".cache/prereview/models": outside / "models"}
    repo = _checkout(tmp_path, {}, {link: target[link]})
    store = CacheStore(tmp_path / "cache-store")
    store.seed(_model_key(), {"m.gguf": b"cached\n"})  # an earlier run's model: restored into the path
    run = _gitea(tmp_path, repo, store)
    assert run.ok, run.log
    assert _host_files(outside) == before, "nothing restored, written or removed through the link"
    removed = ".cache" if link == ".cache" else ".cache/prereview"  # the cache dir the link lies in
    assert _said(run.log, removed, "pull request") == 1, run.log
    model = repo / ".cache" / "prereview" / "models" / "m.gguf"
    assert not any(p.is_symlink() for p in (model, *model.parents)) and model.is_file()


def test_gitea_drops_a_model_the_pull_request_tracks_and_never_saves_it(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    name = ".cache/prereview/models/qwen2.5-coder-1.5b-instruct-q8_0.gguf"
    repo = _checkout(tmp_path, {name: EVIL.format(marker=marker)}, {})
    store = CacheStore(tmp_path / "cache-store")
    run = _gitea(tmp_path, repo, store)
    assert run.ok, run.log
    assert not (repo / name).exists()
    saved = [p for p in store.root.rglob("*") if p.is_file()]
    assert saved and not any(str(marker) in p.read_text() for p in saved), "its files are never cached"
    assert _said(run.log, ".cache/prereview", "pull request") == 1, run.log
