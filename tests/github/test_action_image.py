"""action.yml's image mode (input `image`): the review runs in prereview's release image, nothing is
installed on the runner. Rehearsed with the emulated image (tests/ci/image.py) behind a `docker run` that
passes only the mounted paths' checks and the -e variables (tests/fakes/docker.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.ci.image import IMAGE
from tests.github.test_action_rehearsal import _posted, machine, rehearsal  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow
FAKE = Path(__file__).resolve().parents[1] / "fakes" / "docker.py"


def test_the_image_mode_reviews_without_installing_anything(
    rehearsal,  # noqa: F811 (the imported fixture)
    prereview_image,
    tmp_path,
) -> None:
    action, runner, cfg = rehearsal
    bin_dir = tmp_path / "runner-bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    (bin_dir / "docker").chmod(0o755)
    log = tmp_path / "docker.log"
    runner.extra_path = [str(bin_dir)]
    images = {IMAGE: {"path": prereview_image.path, "env": prereview_image.env}}
    runner.extra_env.update(FAKE_DOCKER_IMAGES=json.dumps(images), FAKE_DOCKER_LOG=str(log))
    run = runner.run({"image": IMAGE, "args": f'--config "{cfg}"'})
    assert run.ok, run.log
    skipped = ("Plan the install", "Install prereview", "Model", "Sandbox", "Restore the prereview venv")
    for step in (*skipped, "Restore the image's model", "Model (image)"):  # the image bakes the model
        assert not run.step(step).ran, step
    assert runner.cache.saved == [], "nothing installed, nothing cached"
    posted = _posted(action)
    assert "This change breaks" in posted and "· tests" in posted, posted
    assert "· semgrep `py-subprocess-shell-true`" in posted, posted
    assert int(run.outputs["findings"]) >= 3, run.outputs  # GITHUB_OUTPUT was mounted and written
    check, argv = [json.loads(line) for line in log.read_text().splitlines()]
    assert check[-2:] == ["--cached", ""], check
    assert IMAGE in argv and "ghs_test" not in " ".join(argv), "the token is passed by name only"
    assert "--security-opt" not in argv, "a self-hosted runner's container is not relaxed unless asked"
