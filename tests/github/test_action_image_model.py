"""action.yml's image mode and the model: one baked into the image is used where it is (nothing cached); a
-nomodel image's is assembled once into the workspace's .cache/prereview, which the action's cache steps
save and the next run restores, and the review container gets that dir mounted (PREREVIEW_CACHE_DIR).
Rehearsed with tests/fakes/docker.py and a stub image: this checkout's `python` (so `ci_model --cached` is
the real one; its fetch lays the model down as ci_model leaves it, without pip), and a `prereview` that
says which cache dir it was given and whether the model is in it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from bot.models import catalog
from tests.ci.image import IMAGE, seed_model
from tests.ci.runner import CacheStore, Composite, JobResult

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "fakes" / "docker.py"
FETCH = (
    "import sys, pathlib; from bot.models import catalog; from tests.ci.image import seed_model; "
    "seed_model(catalog.cache_dir(), sys.argv[1] or catalog.DEFAULT_MODEL, pathlib.Path('/tmp')); "
    "print('prereview-model: assembled (stub)')"
)


class Rig:
    def __init__(self, tmp_path: Path, image_cache: Path) -> None:
        self.tmp = tmp_path
        self.fetches = tmp_path / "fetches.log"
        self.docker_log = tmp_path / "docker.log"
        self.store = CacheStore(tmp_path / "cache-store")
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir()
        image_bin, runner_bin = tmp_path / "image-bin", tmp_path / "runner-bin"
        image_bin.mkdir()
        runner_bin.mkdir()
        py = sys.executable
        (image_bin / "python").write_text(
            f'#!/bin/sh\nexport PYTHONPATH="{ROOT}"\n'  # installed in the image; `-I` would ignore it
            '[ "$1" = -I ] && shift\n'
            'if [ "$1 $2" = "-m bot.cli.ci_model" ] && [ "$3" != --cached ] && '
            f'! "{py}" -m bot.cli.ci_model --cached "$3"; then\n'
            f'  echo fetched >> "{self.fetches}"\n'
            f'  exec "{py}" -c "{FETCH}" "$3"\n'
            f'fi\nexec "{py}" "$@"\n'
        )
        (image_bin / "prereview").write_text(
            '#!/bin/sh\necho "prereview $* cache=$PREREVIEW_CACHE_DIR"\n'
            'python -m bot.cli.ci_model --cached "" && echo "the review sees the model" || true\n'
        )
        (runner_bin / "docker").write_text(f'#!/bin/sh\nexec "{py}" "{FAKE}" "$@"\n')
        for f in (*image_bin.iterdir(), *runner_bin.iterdir()):
            f.chmod(0o755)
        event = tmp_path / "event.json"
        event.write_text(json.dumps({"pull_request": {"number": 1}}))
        images = {IMAGE: {"path": [str(image_bin)], "env": {"PREREVIEW_CACHE_DIR": str(image_cache)}}}
        self.runner = Composite(
            action_dir=ROOT,
            home=tmp_path / "home",
            workspace=self.workspace,
            cache=self.store,
            python=Path(py),
            github_env={"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)},
            extra_env={"FAKE_DOCKER_IMAGES": json.dumps(images), "FAKE_DOCKER_LOG": str(self.docker_log)},
            extra_path=[str(runner_bin)],
        )

    def run(self, **inputs: str) -> JobResult:
        shutil.rmtree(self.workspace / ".cache", ignore_errors=True)  # a fresh runner: only caches carry over
        self.docker_log.write_text("")
        run = self.runner.run({"image": IMAGE, **inputs})
        assert run.ok, run.log
        return run

    def argvs(self) -> list[list[str]]:
        return [json.loads(line) for line in self.docker_log.read_text().splitlines()]


MODEL_STEPS = ("Restore the image's model", "Model (image)", "Save the image's model")


def test_a_baked_model_is_used_in_place_and_nothing_is_cached(tmp_path: Path) -> None:
    seed_model(tmp_path / "baked", catalog.DEFAULT_MODEL, tmp_path)
    rig = Rig(tmp_path, tmp_path / "baked")
    run = rig.run()
    check = run.step("Check the image's model")
    assert check.ran and check.outputs["baked"] == "true", run.log
    for step in MODEL_STEPS:
        assert not run.step(step).ran, step
    review = run.step("Review").out
    assert f"cache={tmp_path / 'baked'}" in review and "the review sees the model" in review, run.log
    assert rig.store.saved == [] and not (rig.workspace / ".cache").exists()
    check_argv, review_argv = rig.argvs()
    assert check_argv[-3:] == ["bot.cli.ci_model", "--cached", ""] and IMAGE in check_argv
    assert "PREREVIEW_CACHE_DIR" not in " ".join(review_argv), "the image's own cache dir is kept"


def test_a_nomodel_image_fetches_once_into_the_workspace_cache_then_restores_it(tmp_path: Path) -> None:
    (tmp_path / "image-cache" / "models").mkdir(parents=True)
    rig = Rig(tmp_path, tmp_path / "image-cache")
    cache_dir = rig.workspace / ".cache" / "prereview"

    first = rig.run()
    assert first.step("Check the image's model").outputs["baked"] == "false", first.log
    assert first.step("Restore the image's model").outputs["cache-hit"] == "false"
    assert "assembled (stub)" in first.step("Model (image)").out, first.log
    assert first.step("Save the image's model").ran
    [key] = rig.store.saved
    assert key.startswith("prereview-image-model-default-"), key
    review = first.step("Review").out
    assert f"cache={cache_dir}" in review and "the review sees the model" in review, first.log
    review_argv = rig.argvs()[-1]
    assert f"{cache_dir}:{cache_dir}" in review_argv and "PREREVIEW_CACHE_DIR" in review_argv, review_argv
    assert list((tmp_path / "image-cache" / "models").iterdir()) == [], "nothing written into the image"
    assert (cache_dir / ".gitignore").read_text() == "*\n", "a later `git add -A` leaves the model out"

    second = rig.run()  # a fresh runner: the workspace's cache comes back from the cache store
    assert key in rig.store.restored, second.log
    assert "already in the cache" in second.step("Model (image)").out, second.log
    assert not second.step("Save the image's model").ran, "restored: nothing saved again"
    assert rig.fetches.read_text().splitlines() == ["fetched"], "the model was fetched once"
    review = second.step("Review").out
    assert f"cache={cache_dir}" in review and "the review sees the model" in review, second.log


def test_a_model_server_needs_no_model_check(tmp_path: Path) -> None:
    rig = Rig(tmp_path, tmp_path / "image-cache")
    run = rig.run(**{"api-base": "http://127.0.0.1:9/v1"})
    for step in ("Check the image's model", *MODEL_STEPS):
        assert not run.step(step).ran, step
    assert len(rig.argvs()) == 1, "only the review's container"


def test_the_image_model_cache_steps_pair_up_and_are_pinned() -> None:
    import yaml

    steps = {s.get("name"): s for s in yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]}
    restore, save = steps["Restore the image's model"], steps["Save the image's model"]
    assert restore["with"] == save["with"]
    for s, action in ((restore, "actions/cache/restore"), (save, "actions/cache/save")):
        name, _, sha = s["uses"].partition("@")
        assert name == action and len(sha) == 40, "pinned by commit SHA"
    assert "always()" in save["if"] and "cache-hit != 'true'" in save["if"]
    assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / "ci" / "image-model.sh")]).returncode == 0
