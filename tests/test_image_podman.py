"""The container image itself (the Dockerfile, built by scripts/image-local.sh) run with podman: a non-root
user, tini as PID 1 reaping orphaned zombies, llama.cpp and the baked model load and generate, and the
Gitea example's step (`docker://IMAGE` with `args: prereview gitea`, run as Actions runs a container step:
the workspace and the event file mounted, the image's own user) posts a review against the emulated Gitea
from inside the container.

Skipped, with the reason, where podman or the built image is absent (CI's `image` job builds and runs the
image with docker instead). PREREVIEW_TEST_IMAGE names the image (default localhost/prereview:local),
PREREVIEW_TEST_IMAGE_NOMODEL the -nomodel one (default localhost/prereview:local-nomodel);
PREREVIEW_PODMAN_FLAGS adds `podman run` flags a host needs (podman inside a container without
CAP_SYS_RESOURCE and with hybrid cgroups: `--runtime runc --ulimit nofile=N:N --ulimit nproc=M:M`).
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.render.markdown import SUMMARY_MARKER
from tests.gitea.conftest import BASE, HEAD, PR, SCRIPTED, rev

IMAGE = os.environ.get("PREREVIEW_TEST_IMAGE", "localhost/prereview:local")
NOMODEL = os.environ.get("PREREVIEW_TEST_IMAGE_NOMODEL", "localhost/prereview:local-nomodel")
WORKFLOW = (
    Path(__file__).resolve().parents[1] / "examples" / "gitea" / ".gitea" / "workflows" / "prereview.yml"
)

pytestmark = pytest.mark.docker


def _podman(image: str = IMAGE) -> list[str]:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (apt-get install podman); the image is tested by CI's image job")
    if subprocess.run(["podman", "image", "exists", image], capture_output=True).returncode != 0:
        how = "PREREVIEW_MODEL= scripts/image-local.sh" if image == NOMODEL else "scripts/image-local.sh"
        pytest.skip(f"image {image} is not built here: {how}")
    argv = ["podman", "run", "--rm", *shlex.split(os.environ.get("PREREVIEW_PODMAN_FLAGS", ""))]
    if why := _cannot_start(tuple(argv), image):
        pytest.skip(
            f"podman cannot start a container on this host ({why}); set PREREVIEW_PODMAN_FLAGS, e.g. "
            "'--runtime runc --ulimit nofile=20000:20000 --ulimit nproc=4096:4096'"
        )
    return argv


@functools.cache
def _cannot_start(argv: tuple[str, ...], image: str) -> str:
    """Why the host's podman cannot run the image at all ("" when it can): a host setting, not the image."""
    proc = subprocess.run([*argv, image, "true"], capture_output=True, text=True, timeout=120)
    return "" if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]


def run(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_podman(), *args], capture_output=True, text=True, timeout=timeout)


def test_the_image_runs_as_its_non_root_user() -> None:
    proc = run(IMAGE, "sh", "-c", "id -u; id -g; echo $PREREVIEW_CACHE_DIR; prereview --version")
    assert proc.returncode == 0, proc.stderr
    uid, gid, cache, _version = proc.stdout.split("\n", 3)
    assert (uid, gid, cache) == ("10001", "10001", "/opt/prereview-cache")


# Leaves an orphan (sh backgrounds `sleep 0.3` and exits: the sleep is reparented to PID 1), waits until it
# has exited, and prints how many zombies remain and PID 1's first four arguments.
ORPHAN = """
import glob, os, time
os.system("sh -c 'sleep 0.3 &'")
time.sleep(2)
def state(path):
    try:
        return open(path).read()
    except OSError:
        return ""
print(sum("State:\\tZ" in state(p) for p in glob.glob("/proc/[0-9]*/status")))
print(" ".join(open("/proc/1/cmdline").read().split("\\0")[:4]))
"""


def test_pid_1_is_tini_and_reaps_orphaned_zombies() -> None:
    proc = run(IMAGE, "python", "-c", ORPHAN)
    assert proc.returncode == 0, proc.stderr
    zombies, pid1 = proc.stdout.splitlines()
    assert pid1 == "/usr/bin/tini -g -- python" and zombies == "0", proc.stdout
    # the check itself: without tini, python is PID 1, never waits for the orphan, and it stays a zombie
    bare = run("--entrypoint", "", IMAGE, "python", "-c", ORPHAN)
    assert bare.returncode == 0, bare.stderr
    assert bare.stdout.splitlines()[0] == "1", bare.stdout


@pytest.mark.slow
def test_the_image_loads_its_baked_model_and_generates() -> None:
    """The image's own smoke test, run again in a fresh container: llama.cpp and the GGUF from the image's
    cache, nothing downloaded (no network)."""
    if run(IMAGE, "python", "-m", "bot.cli.ci_model", "--cached").returncode != 0:
        pytest.skip(f"{IMAGE} has no model baked in (a -nomodel build): scripts/image-local.sh bakes one")
    proc = run("--network", "none", IMAGE, "python", "-m", "bot.cli.ci_smoke")
    assert proc.returncode == 0, proc.stderr
    assert "generated" in proc.stdout and "error" not in proc.stderr


def test_the_nomodel_image_without_a_model_says_how_in_one_line() -> None:
    """No model baked, none configured, no network: one line naming ci_model or the model settings."""
    commit = "git -c user.name=t -c user.email=t@t commit -q"
    script = (
        f"cd /tmp && git init -q r && cd r && echo 'x = 1' > a.py && git add a.py && {commit} -m a "
        f"&& echo 'x = 2' > a.py && {commit} -am b && prereview review --base HEAD~1"
    )
    proc = subprocess.run(
        [*_podman(NOMODEL), "--network", "none", NOMODEL, "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(
        "prereview: error: model 'qwen2.5-coder-1.5b' is not in /opt/prereview-cache/models"
    )
    assert "python -m bot.cli.ci_model qwen2.5-coder-1.5b" in line and "Traceback" not in proc.stderr


# podman's options that give bubblewrap its user namespaces and an unmasked /proc inside the container
UNCONFINED = ("--security-opt", "seccomp=unconfined", "--security-opt", "systempaths=unconfined")


def gitea_review(repo: Path, tmp_path: Path, *flags: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    """The example's review step as act_runner runs a `docker://` step: the image's user, the runner's
    workspace (owned by another user) mounted at /github/workspace, the event file mounted, the token by
    name; the emulated Gitea on the host's loopback."""
    [step] = [
        s
        for s in yaml.safe_load(WORKFLOW.read_text())["jobs"]["review"]["steps"]
        if "with" in s and "args" in s["with"]
    ]
    assert step["uses"].startswith("docker://")
    pr = PR(repo, rev(repo, "HEAD~1"), rev(repo), tmp_path / "unused.yml", tmp_path)
    podman = _podman()
    with pr.fake() as fake:
        env = pr.env(fake)
        event = Path(env["GITHUB_EVENT_PATH"])
        env.update(GITHUB_WORKSPACE="/github/workspace", GITHUB_EVENT_PATH="/github/workflow/event.json")
        passed = [k for k in env if k.startswith(("GITHUB_", "GITEA_", "CI", "PREREVIEW_"))]
        mounts = ["-v", f"{repo}:/github/workspace", "-v", f"{event}:/github/workflow/event.json:ro"]
        proc = subprocess.run(
            [*podman, "--network", "host", *flags, *mounts, "-w", "/github/workspace"]
            + [a for k in passed for a in ("-e", k)]
            + [IMAGE, *shlex.split(step["with"]["args"])],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=900,
        )
    return proc, fake


def summary(fake: Any) -> str:
    [body] = [c["body"] for c in fake.comments if SUMMARY_MARKER in c["body"]]
    return str(body)


@pytest.mark.slow
def test_the_gitea_example_posts_a_review_from_inside_the_image(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    """The repository's .prereview.yml (at the base) picks the scripted model: the container is what this
    test is about."""
    repo = make_repo({"geometry.py": BASE, ".prereview.yml": yaml.safe_dump(SCRIPTED)}, {"geometry.py": HEAD})
    proc, fake = gitea_review(repo, tmp_path)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert fake.reviews, log
    assert summary(fake) and fake.violations == []


@pytest.mark.slow
@pytest.mark.parametrize("confined", [True, False], ids=["default-podman", "unconfined"])
def test_the_sandbox_in_the_image_runs_or_the_review_says_it_is_off(
    make_repo: Callable[..., Path], tmp_path: Path, confined: bool
) -> None:
    """Tests on, in bubblewrap: a container engine's defaults (masked /proc, its seccomp profile) keep
    bubblewrap from starting, and the review is posted with the one "sandbox off" note; with user
    namespaces and /proc unmasked the sandbox starts and no such note is written."""
    cfg = dict(SCRIPTED, sandbox={"backend": "bubblewrap"}, tests="auto")
    repo = make_repo({"geometry.py": BASE, ".prereview.yml": yaml.safe_dump(cfg)}, {"geometry.py": HEAD})
    proc, fake = gitea_review(repo, tmp_path, *(() if confined else UNCONFINED))
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert fake.reviews and fake.violations == [], log
    assert ("Sandbox off on this runner" in summary(fake)) is confined, summary(fake)
