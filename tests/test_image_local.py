"""scripts/image-local.sh with fake podman, buildah and mmdebstrap on PATH (the real build: README, image
section): the base made once, and the wheel's base layer (PREREVIEW_LLAMA_WHEEL) made once per wheel and
base, so a rebuild with the same wheel keeps podman's layer cache instead of redoing every stage."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = "localhost/prereview-base:bookworm-py311"

# Images live in $STATE/images as "NAME ID" lines; a new one gets a new ID, as a commit or import does.
PODMAN = """#!/usr/bin/env bash
echo "podman $*" >> "$STATE/calls"
case "$1 $2" in
  "image exists") grep -q "^$3 " "$STATE/images" ;;
  "image inspect") awk -v n="${@: -1}" '$1 == n {print $2}' "$STATE/images" | grep . ;;
  "import "*) echo "${@: -1} id-$RANDOM$RANDOM" >> "$STATE/images" ;;
  "build "*) echo "${@: -2:1} id-$RANDOM" >> "$STATE/images" ;;
esac
"""
BUILDAH = """#!/usr/bin/env bash
echo "buildah $*" >> "$STATE/calls"
case "$1" in
  from) echo ctr-1 ;;
  commit) echo "${@: -1} id-$RANDOM$RANDOM" >> "$STATE/images" ;;
esac
"""
MMDEBSTRAP = """#!/usr/bin/env bash
echo "mmdebstrap $*" >> "$STATE/calls"
touch "${@: -2:1}"
"""


def image_local(tmp_path: Path, wheel: Path) -> list[str]:
    """One run of the script; the fakes' calls, in order."""
    state, bin_dir = tmp_path / "state", tmp_path / "bin"
    for d in (state, bin_dir):
        d.mkdir(exist_ok=True)
    (state / "images").touch()
    (state / "calls").write_text("")
    for name, text in (("podman", PODMAN), ("buildah", BUILDAH), ("mmdebstrap", MMDEBSTRAP)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "STATE": str(state),
        "PREREVIEW_EXTRA_CA": "",
        "PREREVIEW_LLAMA_WHEEL": str(wheel),
        "TMPDIR": str(tmp_path),
    }
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "image-local.sh")], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return (state / "calls").read_text().splitlines()


def build_base(calls: list[str]) -> str:
    [build] = [c for c in calls if c.startswith("podman build ")]
    [arg] = [a for a in build.split() if a.startswith("BUILD_BASE=")]
    return arg.removeprefix("BUILD_BASE=")


def test_the_wheel_base_is_made_once_per_wheel_and_base(tmp_path: Path) -> None:
    wheel = tmp_path / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"
    wheel.write_bytes(b"one build")
    first = image_local(tmp_path, wheel)
    assert sum(c.startswith("mmdebstrap ") for c in first) == 1
    assert any(c.startswith("buildah commit --rm ctr-1 ") for c in first)
    tag = build_base(first)
    assert tag.startswith(f"{BASE}-wheel-") and any(c.endswith(f" {tag}") for c in first if "commit" in c)

    again = image_local(tmp_path, wheel)  # the same wheel: the same tag, nothing made
    assert build_base(again) == tag
    assert not any(c.startswith(("buildah ", "mmdebstrap ")) for c in again), again

    wheel.write_bytes(b"another build")  # another wheel of the same name: another base layer
    other = image_local(tmp_path, wheel)
    assert build_base(other) != tag and any(c.startswith("buildah commit") for c in other)

    images = tmp_path / "state" / "images"  # the base made again (a new ID): the wheel layer too
    images.write_text(
        "".join(line + "\n" for line in images.read_text().splitlines() if line.split()[0] != BASE)
    )
    remade = image_local(tmp_path, wheel)
    assert any(c.startswith("mmdebstrap ") for c in remade)
    assert build_base(remade) not in (tag, build_base(other))
