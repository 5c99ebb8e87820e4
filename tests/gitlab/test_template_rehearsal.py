"""The GitLab component (templates/prereview.yml) rehearsed as a runner runs it (tests/ci/runner.py) against
the emulated GitLab.

Real: the job's script with the component's inputs interpolated and its variables expanded as GitLab
does, the pip installs, semgrep, the model step, bubblewrap, the review, the emulated GitLab API.
Emulated: the images (the prereview image: tests/ci/image.py, built from this checkout as the Dockerfile
does; a python image: this machine's Python first on a clean PATH) and GitLab's cache (a directory store
keyed by the expanded `cache:key`). Pre-seeded: the llama-cpp-python wheel pip built for this machine
(nothing is compiled) and the model (sparse: the review uses the scripted model, never the GGUF's bytes).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.models import catalog
from bot.render.markdown import SUMMARY_MARKER
from tests.ci.image import IMAGE, seed_model
from tests.ci.runner import CacheStore, Image, base_python, gitlab_job, load_component
from tests.github.test_action_rehearsal import (
    LLAMA_VERSION,
    RISKY,
    TEST_COMMAND,
    copy_action,
    llama_wheel,
    rehearsal_env,
)
from tests.test_models_http import Stub

from .conftest import MR, SCRIPTED

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "templates" / "prereview.yml"
PYTHON = Image(path=[str(base_python().parent)])  # python:3.x: a Python, no prereview


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CacheStore, Path]:
    wheel = llama_wheel()
    if wheel is None:
        pytest.skip(
            f"no llama-cpp-python {LLAMA_VERSION} wheel in pip's cache to pre-seed (run make install-dev, "
            "or set PREREVIEW_LLAMA_WHEEL); the rehearsal never compiles it"
        )
    root = tmp_path_factory.mktemp("gitlab-runner")
    store = CacheStore(root / "cache-store")
    store.seed_prefix("prereview-wheel-", {wheel.name: wheel})
    return copy_action(root / "prereview-src"), store, root / "home"


def _config(tmp_path: Path) -> Path:
    cfg_dir = tmp_path / "my config"
    cfg_dir.mkdir()
    config = dict(
        SCRIPTED,
        scanners={"secrets": True, "bandit": True, "patterns": True, "self_verify": False},
        tests="auto",
        sandbox={"backend": "auto"},
        test_command=TEST_COMMAND,
    )
    (cfg_dir / "c.yml").write_text(yaml.safe_dump(config))
    return cfg_dir / "c.yml"


def _job(mr: MR, fake: Any, machine: tuple, inputs: dict[str, str], images: dict[str, Image]):
    _, store, home = machine
    env = {k: v for k, v in mr.env(fake).items() if k not in ("PATH", "HOME")}
    return gitlab_job(
        load_component(TEMPLATE, inputs),
        "prereview",
        project_dir=mr.repo,
        home=home,
        cache=store,
        ci_env=env,
        extra_env=rehearsal_env(),
        images=images,
    )


def _posted_review(fake: Any) -> str:
    bodies = "\n".join(n["body"] for n in fake.notes)
    assert "· semgrep `py-subprocess-shell-true`" in bodies, bodies
    assert "· bandit `B104" in bodies, bodies
    assert "This change breaks" in bodies and "· tests" in bodies, bodies  # ran inside bwrap
    assert "not installed" not in bodies and "Sandbox off" not in bodies
    assert sum(SUMMARY_MARKER in n.get("body", "") for n in fake.notes) == 1
    assert fake.violations == []
    return bodies


def test_the_defaults_review_in_the_prereview_image(bug_mr: MR, machine, prereview_image, tmp_path) -> None:
    """Only `args` (the test config) is given: the image, the source and the model are the defaults."""
    bug_mr.commit({"python_programs/run.py": RISKY})
    inputs = {"args": f'--config "{_config(tmp_path)}" --fail-level none'}
    images = {IMAGE: prereview_image, "python:*": PYTHON}
    with bug_mr.fake() as fake:
        first = _job(bug_mr, fake, machine, inputs, images)
        print(first.log)  # the job's seconds, shown with -s
        assert first.ok, first.log
        out = first.steps[0].out
        assert "using the image's prereview" in out and "installing" not in out, out
        assert f"{catalog.DEFAULT_MODEL} already in the cache" in out, out  # the image's baked model
        assert "not baked into the image" not in out, out  # used in place, not fetched again
        _posted_review(fake)
        assert (bug_mr.repo / "gl-code-quality-report.json").is_file()
        posted = len(fake.diff_notes)
        second = _job(bug_mr, fake, machine, inputs, images)
        print(second.log)
        assert second.ok, second.log
        assert len(fake.diff_notes) == posted, "nothing posted twice"


def test_a_nomodel_image_keeps_the_model_in_the_projects_cache(
    bug_mr: MR, machine, prereview_image, tmp_path: Path
) -> None:
    """The -nomodel image: its cache dir (its ENV) holds no model, so the model goes to the project's cache
    dir, which the job's cache keeps (here as an earlier run saved it), not into the image's, where every
    job would fetch it again."""
    image_cache = tmp_path / "opt-prereview-cache"
    (image_cache / "models").mkdir(parents=True)
    nomodel = Image(path=prereview_image.path, env={"PREREVIEW_CACHE_DIR": str(image_cache)})
    seed_model(tmp_path / "seed", catalog.DEFAULT_MODEL, tmp_path)
    store = CacheStore(tmp_path / "cache-store")  # a project whose cache holds only the model
    store.seed_prefix(
        f"prereview-model-{catalog.DEFAULT_MODEL}-",
        {p.name: p.resolve() if p.is_symlink() else p for p in (tmp_path / "seed" / "models").iterdir()},
    )
    bug_mr.commit({"python_programs/run.py": RISKY})
    inputs = {"image": f"{IMAGE}-nomodel", "args": f'--config "{_config(tmp_path)}" --fail-level none'}
    with bug_mr.fake() as fake:
        project = (machine[0], store, tmp_path / "home")
        run = _job(bug_mr, fake, project, inputs, {f"{IMAGE}-nomodel": nomodel})
        print(run.log)
        assert run.ok, run.log
        _posted_review(fake)
    out = run.steps[0].out
    assert "using the image's prereview" in out and "not baked into the image" in out, out
    project_models = bug_mr.repo / ".cache" / "prereview" / "models"
    assert f"{catalog.DEFAULT_MODEL} already in the cache ({project_models}" in out, out
    assert "assembling" not in out and list((image_cache / "models").iterdir()) == []
    assert [k.split("::")[0] for k in store.restored if k.startswith("prereview-model-")] == [
        f"prereview-model-{catalog.DEFAULT_MODEL}-prereview0.1.0"
    ], store.restored


def test_a_python_image_installs_from_the_pinned_source_then_runs_from_the_cache(
    bug_mr: MR, machine, tmp_path: Path
) -> None:
    src, store, _ = machine
    seed_model(tmp_path / "seed", catalog.TEST_MODEL, tmp_path)
    store.seed_prefix(
        "prereview-model-",
        {p.name: p.resolve() if p.is_symlink() else p for p in (tmp_path / "seed" / "models").iterdir()},
    )
    bug_mr.commit({"python_programs/run.py": RISKY})
    inputs = {
        "image": "python:3.11",
        "source": f"file://{src}",
        "model": catalog.TEST_MODEL,
        "args": f'--config "{_config(tmp_path)}" --fail-level none',
    }
    with bug_mr.fake() as fake:
        first = _job(bug_mr, fake, machine, inputs, {"python:*": PYTHON})
        print(first.log)  # the job's seconds, shown with -s
        assert first.ok, first.log
        out = first.steps[0].out
        assert f"installing prereview from file://{src}" in out and "already in the cache" in out, out
        _posted_review(fake)
        assert any(k.startswith("prereview-venv-llama") for k in store.saved), store.saved
        posted = len(fake.diff_notes)
        second = _job(bug_mr, fake, machine, inputs, {"python:*": PYTHON})
        print(second.log)
        assert second.ok, second.log
        assert "venv restored from the cache" in second.steps[0].out
        assert "installing" not in second.steps[0].out
        assert len(fake.diff_notes) == posted, "nothing posted twice"


def test_a_python_image_without_a_source_is_one_line_naming_the_fix(bug_mr: MR, machine) -> None:
    with bug_mr.fake() as fake:
        run = _job(bug_mr, fake, machine, {"image": "python:3.11"}, {"python:*": PYTHON})
    assert not run.ok
    assert "has no prereview and the input 'source' is empty" in run.steps[0].out
    assert "pip install" not in run.steps[0].out and "Traceback" not in run.steps[0].out


def test_with_a_model_server_nothing_is_compiled_or_downloaded(bug_mr: MR, machine, tmp_path: Path) -> None:
    src = machine[0]
    fresh = (src, CacheStore(tmp_path / "empty-cache"), tmp_path / "home")  # a new project: nothing cached
    stub = Stub()
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    cfg = tmp_path / "c.yml"
    cfg.write_text(yaml.safe_dump({k: v for k, v in SCRIPTED.items() if k != "model"}))  # the server's
    inputs = {
        "image": "python:3.11",
        "source": f"file://{src}",
        "api-base": f"{stub.base}/ok/v1",
        "args": f"--config {cfg}",
    }
    try:
        with bug_mr.fake() as fake:
            run = _job(bug_mr, fake, fresh, inputs, {"python:*": PYTHON})
            assert run.ok, run.log
            assert any(SUMMARY_MARKER in n.get("body", "") for n in fake.notes)
    finally:
        stub.shutdown()
    out = run.steps[0].out
    assert "installing prereview from" in out, out
    assert "bot.cli.ci_model" not in out and "CMAKE_ARGS" not in out, out  # no model step, no compile
    assert not list((bug_mr.repo / ".cache" / "prereview-venv").glob("lib/python*/site-packages/llama_cpp"))
    assert stub.requests, "the review asked the model server"


def test_drafts_are_skipped_by_default() -> None:
    rule = load_component(TEMPLATE)["prereview"]["rules"][0]["if"]
    assert '$CI_MERGE_REQUEST_DRAFT != "true"' in rule and '$PREREVIEW_REVIEW_DRAFTS == "true"' in rule
