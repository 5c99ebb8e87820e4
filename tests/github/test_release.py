"""The release workflow (.github/workflows/release.yml) checked as data, and its steps' scripts run with
fake `docker`, `gh` and `python -m build` on PATH: which images it builds, which tags it pushes, what it
attaches, and that everything it pulls is pinned.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot import __version__
from bot.models.catalog import DEFAULT_MODEL

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
TAG = "v1.2.3"

# A fake CLI: each call is one line of its argv in $CALLS; stdin is read (and dropped) for `login`.
FAKE = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "$CALLS"
case "$*" in
  *password-stdin*) cat > /dev/null ;;
  "release view"*) exit 1 ;;
  "run "*) echo "${FAKE_STDOUT:-}" ;;
esac
"""
# `python -m build` writes a wheel and an sdist; anything else is the real interpreter.
FAKE_PYTHON = f"""#!/usr/bin/env bash
if [ "$*" = "-m build" ]; then
  mkdir -p dist
  echo wheel > dist/prereview-1.2.3-py3-none-any.whl
  echo sdist > dist/prereview-1.2.3.tar.gz
  exit 0
fi
case "$*" in *"pip install"*) exit 0 ;; esac
exec {sys.executable} "$@"
"""


def workflow() -> dict[str, Any]:
    return dict(yaml.safe_load(RELEASE.read_text()))


def step(job: str, name: str) -> dict[str, Any]:
    [found] = [s for s in workflow()["jobs"][job]["steps"] if name in s.get("name", "")]
    return dict(found)


def variants() -> list[dict[str, Any]]:
    return list(workflow()["jobs"]["image"]["strategy"]["matrix"]["include"])


def run_step(s: dict[str, Any], tmp_path: Path, env: dict[str, str]) -> tuple[int, list[str], str]:
    """The step's script as a GitHub runner runs `run:` on Linux (bash -e), the fakes first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("docker", FAKE), ("gh", FAKE), ("python", FAKE_PYTHON)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    calls = tmp_path / "calls"
    calls.write_text("")
    resolved = {k: str(v).replace("${{ github.ref_name }}", TAG) for k, v in s.get("env", {}).items()}
    proc = subprocess.run(
        ["bash", "-e", "-c", s["run"]],
        cwd=tmp_path,
        env={
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "CALLS": str(calls),
            "GITHUB_REPOSITORY": "Owner/Prereview",
            "GITHUB_ACTOR": "someone",
            **resolved,
            **env,
        },
        capture_output=True,
        text=True,
    )
    return proc.returncode, calls.read_text().splitlines(), proc.stdout + proc.stderr


def test_it_runs_on_a_version_tag_only() -> None:
    on = workflow()[True]  # YAML 1.1 reads the key `on` as a boolean
    assert on == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}


def test_four_image_variants_cpu_and_cuda_with_and_without_the_default_model() -> None:
    seen = {(v["suffix"], bool(v["model"]), v["cuda"]) for v in variants()}
    assert seen == {
        ("", True, False),
        ("-nomodel", False, False),
        ("-cuda", True, True),
        ("-cuda-nomodel", False, True),
    }
    assert len(variants()) == 4 and workflow()["jobs"]["image"]["strategy"]["fail-fast"] is False
    baked = {v["model"] for v in variants() if v["model"]}
    dockerfile_default = re.findall(r"(?m)^ARG PREREVIEW_MODEL=(\S*)$", (ROOT / "Dockerfile").read_text())
    assert baked == {DEFAULT_MODEL} and set(dockerfile_default) == {DEFAULT_MODEL}


@pytest.mark.parametrize("variant", variants(), ids=lambda v: v["suffix"] or "cpu")
def test_each_variant_is_built_from_bases_pinned_by_digest(variant: dict[str, Any], tmp_path: Path) -> None:
    env = {"SUFFIX": variant["suffix"], "MODEL": variant["model"], "CUDA": str(variant["cuda"]).lower()}
    code, calls, log = run_step(step("image", "Build"), tmp_path, env)
    assert code == 0, log
    [build] = [c for c in calls if c.startswith("docker build ")]
    args = build.split()
    assert args[-3:] == ["-t", f"prereview:{TAG}{variant['suffix']}", "."]
    assert f"PREREVIEW_MODEL={variant['model']}" in args  # empty for -nomodel: nothing baked
    bases = dict(a.split("=", 1) for a in args if a.startswith(("BASE=", "BUILD_BASE=")))
    if variant["cuda"]:
        assert set(bases) == {"BASE", "BUILD_BASE"} and "LLAMA_BUILD=cuda" in args
        assert all(b.startswith("nvidia/cuda:") and DIGEST.search(b) for b in bases.values()), bases
        assert "-runtime-" in bases["BASE"] and "-devel-" in bases["BUILD_BASE"]
    else:  # the Dockerfile's own default, itself pinned (tests/test_dockerfile.py)
        assert bases == {} and "LLAMA_BUILD=cuda" not in args


def test_the_image_is_labelled_with_its_release_and_says_its_version(tmp_path: Path) -> None:
    env = {"SUFFIX": "", "MODEL": DEFAULT_MODEL, "CUDA": "false", "GITHUB_SHA": "f" * 40}
    _, calls, _ = run_step(
        step("image", "Build"), tmp_path, {**env, "GITHUB_SERVER_URL": "https://github.com"}
    )
    labels = dict(a.split("=", 1) for a in calls[0].split() if a.startswith("org.opencontainers."))
    assert labels == {
        "org.opencontainers.image.version": TAG,  # which release a moving vX is: docker inspect
        "org.opencontainers.image.revision": "f" * 40,
        "org.opencontainers.image.source": "https://github.com/Owner/Prereview",  # ghcr.io links the repo
    }
    smoke = step("image", "Smoke test")
    assert run_step(smoke, tmp_path, {"SUFFIX": "", "FAKE_STDOUT": "prereview, version 1.2.3"})[0] == 0
    code, _, log = run_step(smoke, tmp_path, {"SUFFIX": "", "FAKE_STDOUT": "prereview, version 1.2.2"})
    assert code == 1 and "not v1.2.3" in log


@pytest.mark.parametrize("suffix", ["", "-cuda-nomodel"])
def test_each_variant_pushes_its_version_tag_only(suffix: str, tmp_path: Path) -> None:
    code, calls, log = run_step(step("image", "Push"), tmp_path, {"SUFFIX": suffix, "GH_TOKEN": "tok-123"})
    assert code == 0, log
    pushed = [c.split()[-1] for c in calls if c.startswith("docker push ")]
    assert pushed == [f"ghcr.io/owner/prereview:{TAG}{suffix}"]  # ghcr.io wants the name lowercased
    assert all("tok-123" not in c for c in calls), "the token goes in on stdin, never in argv"
    assert calls[0].startswith("docker login ghcr.io") and calls[-1] == "docker logout ghcr.io"


def tagged(tmp_path: Path, *tags: str) -> Path:
    repo = tmp_path / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "r"], check=True)
    for tag in tags:
        subprocess.run([*git, "tag", tag], check=True)
    return repo


@pytest.mark.parametrize(
    "tags, moves",
    [
        (["v1.0.0", "v1.2.2", TAG, "v2.0.0"], True),  # the newest v1.*: v1 moves (v2 is another major)
        (["v1.2.2", "v1.2.4", TAG], False),  # a backport after v1.2.4: v1 stays on v1.2.4
        (["v1.2.10", TAG], False),  # sorted as versions, not as text
        ([TAG, "v1.2.4-rc1"], True),  # not a release tag
    ],
)
def test_the_major_tag_moves_after_every_variant_and_only_forward(
    tags: list[str], moves: bool, tmp_path: Path
) -> None:
    major = workflow()["jobs"]["major"]
    assert major["needs"] == "image", "vX moves only when every variant's vX.Y.Z is pushed"
    checkout = next(s for s in major["steps"] if "actions/checkout" in s.get("uses", ""))
    assert checkout["with"]["fetch-depth"] == 0, "it compares the repository's tags"
    repo = tagged(tmp_path, *tags)
    code, calls, log = run_step(step("major", "Move"), repo, {"GH_TOKEN": "tok"})
    assert code == 0, log
    copies = [c.split()[-2:] for c in calls if "imagetools create" in c]
    if not moves:
        assert copies == [] and "v1 stays where it is" in log
        return
    image = "ghcr.io/owner/prereview"
    suffixes = [v["suffix"] for v in variants()]
    assert copies == [[f"{image}:v1{s}", f"{image}:{TAG}{s}"] for s in suffixes]
    assert all("--prefer-index=false" in c for c in calls if "imagetools create" in c)  # same digest


def test_the_release_holds_the_wheel_and_sha256sums_of_what_it_holds(tmp_path: Path) -> None:
    code, _, log = run_step(step("wheel", "Build the wheel"), tmp_path, {})
    assert code == 0, log
    dist = tmp_path / "dist"
    sums = (dist / "SHA256SUMS").read_text()
    assert "prereview-1.2.3-py3-none-any.whl" in sums and "prereview-1.2.3.tar.gz" in sums
    assert "SHA256SUMS" not in sums
    check = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=dist, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    code, calls, log = run_step(step("wheel", "Attach"), tmp_path, {"GH_TOKEN": "tok"})
    assert code == 0, log
    [create] = [c for c in calls if c.startswith("gh release create ")]
    attached = {a for a in create.split() if a.startswith("dist/")}
    assert attached == {f"dist/{p.name}" for p in dist.iterdir()} and "dist/SHA256SUMS" in attached
    assert "--verify-tag" in create.split()  # never a release for a tag that does not exist


def test_the_tag_must_be_the_packages_version_and_what_prereview_prints(tmp_path: Path) -> None:
    s = step("wheel", "The tag is the package's version")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "prereview"\nversion = "1.2.3"\n')
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "__init__.py").write_text('"""prereview."""\n\n__version__ = "1.2.3"\n')
    assert run_step(s, tmp_path, {})[0] == 0
    code, _, log = run_step(s, tmp_path, {"TAG": "v1.2.4"})
    assert code == 1 and "tag v1.2.4 but pyproject.toml says 1.2.3" in log
    (tmp_path / "bot" / "__init__.py").write_text('__version__ = "1.2.2"\n')  # `prereview --version`
    code, _, log = run_step(s, tmp_path, {})
    assert code == 1 and "tag v1.2.3 but bot/__init__.py says 1.2.2" in log
    # this repository's own two agree (the check reads them the same way)
    pinned = re.search(r'(?m)^version = "(.*)"$', (ROOT / "pyproject.toml").read_text())
    assert pinned and pinned[1] == __version__


def test_every_action_is_pinned_by_commit_and_every_job_has_a_timeout() -> None:
    jobs = workflow()["jobs"]
    assert set(jobs) >= {"wheel", "image"}
    for name, job in jobs.items():
        assert isinstance(job.get("timeout-minutes"), int), f"job {name} has no timeout-minutes"
        for s in job.get("steps", []):
            if "uses" in s:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+(/[\w.-]+)*@[0-9a-f]{40}", s["uses"]), s["uses"]
    # any image the workflow names outside the Dockerfile is pinned by digest too
    for ref in re.findall(r"\b((?:nvidia|python|docker\.io)/?[\w./-]*:[\w.-]+\S*)", RELEASE.read_text()):
        assert DIGEST.search(ref.rstrip('")')), ref
