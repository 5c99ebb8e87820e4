"""Time to a posted review in the container image (prints figures; no assertions).

Runs the Gitea example's review step (`docker://IMAGE`, `args: prereview gitea`) with podman as act_runner
runs a container step, against the emulated Gitea (tests/fakes/gitea_api.py), on a small Python project
whose pull request breaks a tested function: the image's defaults (its baked model, the sandbox, the
project's tests at base and head). Each run is a fresh container (`--rm`); the first after the image was
built or loaded is the cold one (nothing in the page cache), the later ones are warm. With --cache-volume,
the runs share a volume at the image's cache dir's `envs` (as a CI cache of the test environments would).

usage: python bench/image_review.py [--image localhost/prereview:local] [--runs 2] [--model NAME]
                                    [--cache-volume NAME] [-- extra podman run flags]
PREREVIEW_PODMAN_FLAGS adds `podman run` flags a host needs (see tests/test_image_podman.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.gitea_api import TOKEN, FakeGitea  # noqa: E402

BASE = {
    "geometry.py": "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n",
    "tests/test_geometry.py": (
        "from geometry import area, perimeter\n\n\ndef test_area():\n    assert area(2, 3) == 6\n\n\n"
        "def test_perimeter():\n    assert perimeter(2, 3) == 10\n"
    ),
    "pyproject.toml": '[project]\nname = "geometry"\nversion = "0.1"\n\n[tool.pytest.ini_options]\n'
    'pythonpath = ["."]\n',
}
HEAD = {
    "geometry.py": BASE["geometry.py"].replace("return 2 * (w + h)", "total = w + h\n    return total * 3")
}
EVENT = Path(__file__).resolve().parents[1] / "tests" / "data" / "gitea" / "pull_request.opened.json"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def make_repo(root: Path, config: str | None) -> Path:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "dev")
    files = dict(BASE, **({".prereview.yml": config} if config else {}))
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    for name, text in HEAD.items():
        (repo / name).write_text(text)
    git(repo, "commit", "-q", "-am", "head")
    return repo


def review(args: argparse.Namespace, extra: list[str]) -> tuple[float, int, FakeGitea, str]:
    with tempfile.TemporaryDirectory(prefix="prereview-image-bench-") as tmp:
        root = Path(tmp)
        config = json.dumps({"model": {"name": args.model}}) if args.model else None
        repo = make_repo(root, config)
        base, head = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
        diff = git(repo, "diff", "--no-color", "--src-prefix=a/", "--dst-prefix=b/", base, head)
        with FakeGitea(diff_text=diff, base_sha=base, head_sha=head) as fake:
            event = json.loads(EVENT.read_text())
            event["number"] = event["pull_request"]["number"] = fake.number
            event["pull_request"]["base"]["sha"] = event["pull_request"]["merge_base"] = base
            event["pull_request"]["head"]["sha"] = head
            (root / "event.json").write_text(json.dumps(event))
            env = {
                "CI": "true",
                "GITEA_ACTIONS": "true",
                "GITHUB_ACTIONS": "true",
                "GITHUB_EVENT_NAME": "pull_request",
                "GITHUB_EVENT_PATH": "/github/workflow/event.json",
                "GITHUB_REPOSITORY": fake.repo,
                "GITHUB_SERVER_URL": fake.url,
                "GITHUB_SHA": head,
                "GITHUB_WORKSPACE": "/github/workspace",
                "PREREVIEW_GITEA_TOKEN": TOKEN,
            }
            volume = ["-v", f"{args.cache_volume}:/opt/prereview-cache/envs"] if args.cache_volume else []
            cmd = [
                "podman", "run", "--rm", "--network", "host",
                *shlex.split(os.environ.get("PREREVIEW_PODMAN_FLAGS", "")), *extra, *volume,
                "-v", f"{repo}:/github/workspace",
                "-v", f"{root / 'event.json'}:/github/workflow/event.json:ro",
                "-w", "/github/workspace", *[a for k in env for a in ("-e", k)],
                args.image, "prereview", "gitea",
            ]  # fmt: skip
            t0 = time.monotonic()
            proc = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True)
            return time.monotonic() - t0, proc.returncode, fake, proc.stdout + proc.stderr


def main() -> None:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", default="localhost/prereview:local")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--model", default="", help="a catalog model instead of the image's default")
    ap.add_argument("--cache-volume", default="", help="a podman volume for the test environments")
    ap.add_argument("--log", action="store_true", help="print each run's log")
    args = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    for n in range(1, args.runs + 1):
        seconds, code, fake, log = review(args, extra)
        summary = next((c["body"] for c in fake.comments if "prereview" in c["body"].lower()), "")
        notes = [line.strip() for line in summary.splitlines() if "sandbox" in line.lower()]
        print(
            f"run {n}: exit {code} in {seconds:.1f} s; reviews {len(fake.reviews)}, inline comments "
            f"{len(fake.inline)}, summary {'yes' if summary else 'no'}, API violations "
            f"{len(fake.violations)}"
        )
        for line in notes[:3]:
            print(f"  sandbox: {line[:200]}")
        if args.log or code != 0:
            print(log[-6000:])


if __name__ == "__main__":
    main()
