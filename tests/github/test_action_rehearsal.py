"""action.yml rehearsed as a runner runs it (tests/ci/runner.py) against the emulated GitHub.

What is real: every `run:` step (plan, install with pip into a fresh venv, semgrep's own venv, the model
step, the sandbox check, the review), bubblewrap, the pip installs, the emulated GitHub API. What is
emulated: actions/setup-python (this machine's interpreter), actions/cache (a directory store). What is
pre-seeded, as a previous run would have left it in the cache: the llama-cpp-python wheel (the one pip
built for this machine's venv, so nothing is compiled) and the model cache (the review uses the scripted
model, so the GGUF's bytes are never read). pip's download cache is shared with the machine's, so a
second test run downloads nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.models import catalog
from bot.render.markdown import SUMMARY_MARKER
from tests.ci.runner import CacheStore, Composite, base_python

from .conftest import REPO, Action

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
LLAMA_VERSION = "0.3.36"
TEST_COMMAND = "python -c 'from python_programs.gcd import gcd; assert gcd(35, 21) == 7'"
RISKY = (
    "import hashlib\nimport subprocess\n\n\ndef digest(data):\n    return hashlib.md5(data).hexdigest()\n\n\n"
    "def run(cmd):\n    return subprocess.call(cmd, shell=True)\n\n\n"
    'def serve(server):\n    server.bind(("0.0.0.0", 8080))\n'  # bandit B104 only: no semgrep rule for it
)


def llama_wheel() -> Path | None:
    """The llama-cpp-python wheel pip built on this machine (make install-dev), or PREREVIEW_LLAMA_WHEEL."""
    if os.environ.get("PREREVIEW_LLAMA_WHEEL"):
        return Path(os.environ["PREREVIEW_LLAMA_WHEEL"])
    roots = [
        Path(os.environ.get("PIP_CACHE_DIR", Path.home() / ".cache" / "pip")) / "wheels",
        Path("/opt/wheels"),
    ]
    for root in roots:
        found = sorted(root.rglob(f"llama_cpp_python-{LLAMA_VERSION}-*.whl")) if root.is_dir() else []
        if found:
            return found[-1]
    return None


def rehearsal_env() -> dict[str, str]:
    """pip's download cache is the machine's (nothing downloaded twice); a semgrep that `make install-dev`
    put beside this interpreter is linked (PREREVIEW_SEMGREP) instead of installed again. Without one, the
    install step installs semgrep into its own venv, as on a hosted runner (CI)."""
    env = {"PIP_CACHE_DIR": str(Path(os.environ.get("PIP_CACHE_DIR", Path.home() / ".cache" / "pip")))}
    semgrep = shutil.which("semgrep") or shutil.which("semgrep", path=str(Path(sys.executable).parent))
    if semgrep and os.environ.get("PREREVIEW_REHEARSAL_INSTALL_SEMGREP") != "1":
        env["PREREVIEW_SEMGREP"] = os.path.realpath(semgrep)
    return env


def copy_action(dest: Path) -> Path:
    """The action as the runner downloads it: the repository's files, no .git, no build leftovers."""
    files = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"],
        capture_output=True,
        check=True,
        text=True,
    ).stdout.split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file() and not name.startswith("tests/"):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes(src.read_bytes())
            os.chmod(dest / name, src.stat().st_mode)
    return dest


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CacheStore, Path]:
    """One runner "image" for the module: the action's files, HOME's path and the cache store are shared,
    so the first test installs and the others restore the venv from the cache (same path, like
    /home/runner on every hosted runner)."""
    wheel = llama_wheel()
    if wheel is None:
        pytest.skip(
            f"no llama-cpp-python {LLAMA_VERSION} wheel in pip's cache to pre-seed (run make install-dev, "
            "or set PREREVIEW_LLAMA_WHEEL); the rehearsal never compiles it"
        )
    root = tmp_path_factory.mktemp("runner")
    store = CacheStore(root / "cache-store")
    store.seed_prefix("prereview-wheel-", {wheel.name: wheel})
    return copy_action(root / "_actions" / "prereview"), store, root / "home"


@pytest.fixture
def rehearsal(
    action: Action, tmp_path: Path, machine: tuple[Path, CacheStore, Path]
) -> tuple[Action, Composite, Path]:
    action_dir, store, home = machine
    action.commit({"python_programs/run.py": RISKY})
    store.saved.clear()
    store.restored.clear()
    entry = catalog.CATALOG[catalog.TEST_MODEL]
    gguf = catalog.cache_dir() / "models" / entry.filename
    if not (gguf.is_file() and gguf.stat().st_size == entry.size):
        gguf = tmp_path / "sparse" / entry.filename  # never read: the review uses the scripted model
        gguf.parent.mkdir()
        with gguf.open("wb") as fh:
            fh.truncate(entry.size)
    store.seed_prefix(  # re-seeded per test: the GGUF it links may live in this test's tmp_path
        "prereview-model-",
        {entry.filename: gguf, Path(entry.filename).with_suffix(".verified").name: entry.sha256.encode()},
    )
    cfg_dir = tmp_path / "my config"  # a space: `args` must keep the quoted path one word
    cfg_dir.mkdir()
    # The test command needs nothing but Python (prereview's venv has no pytest): it passes at the base and
    # fails at the head (the PR's gcd recurses forever), so a finding from the tests proves they ran.
    config = dict(action.config, tests="auto", sandbox={"backend": "auto"}, test_command=TEST_COMMAND)
    (cfg_dir / "prereview.yml").write_text(yaml.safe_dump(config))
    event = tmp_path / "event.json"
    event.write_text(json.dumps(action.opened()))
    runner = Composite(
        action_dir=action_dir,
        home=home,
        workspace=action.repo,
        cache=store,
        python=base_python(),
        github_env={
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_API_URL": action.gh.url,
            "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary.md"),
        },
        extra_env=rehearsal_env(),
    )
    return action, runner, cfg_dir / "prereview.yml"


def _posted(action: Action) -> str:
    return "\n".join([c["body"] for c in action.gh.comments] + [c["body"] for c in action.gh.issue_comments])


def test_the_action_installs_the_pipeline_reviews_and_then_runs_from_the_cache(rehearsal) -> None:
    action, runner, cfg = rehearsal
    inputs = {"model": catalog.TEST_MODEL, "args": f'--config "{cfg}"'}
    first = runner.run(inputs)
    print(first.log)  # step timings, shown with -s
    assert first.ok, first.log
    install = first.step("Install prereview")
    assert install.ran and "wheel found" in install.out and "compiling" not in install.out, install.out
    assert first.step("Sandbox").out.strip().splitlines()[-1] == "ok", first.log
    posted = _posted(action)
    assert "This change breaks" in posted and "· tests" in posted, posted  # they ran, inside bwrap
    assert "· semgrep `py-subprocess-shell-true`" in posted, posted
    assert "· bandit `B104" in posted, posted
    assert "not installed" not in posted and "not found" not in posted and "Sandbox off" not in posted
    assert len(action.gh.reviews) == 1 and any(SUMMARY_MARKER in c["body"] for c in action.gh.issue_comments)
    assert action.gh.schema_errors == []
    assert int(first.outputs["findings"]) >= 3 and first.outputs["highest-severity"] in ("high", "critical")
    assert set(first.outputs) == {"findings", "highest-severity", "verified-fixes"}
    venv_key = next(k for k in runner.cache.saved if k.startswith("prereview-venv-"))
    assert "-py3." in venv_key and f"llama{LLAMA_VERSION}-cpu" in venv_key

    second = runner.run(inputs)  # a fresh machine: HOME is wiped, only the caches carry over
    print(second.log)
    assert second.ok, second.log
    assert not second.step("Install prereview").ran, "the venv came from the cache: nothing installed"
    assert venv_key in runner.cache.restored
    assert "already in the cache" in second.step("Model").out
    assert second.outputs["findings"] == first.outputs["findings"]
    assert len(action.gh.reviews) == 1, "the second run posted nothing twice"


def test_a_release_changes_the_venv_key(machine, tmp_path: Path) -> None:
    release = tmp_path / "release"
    shutil.copytree(machine[0], release, symlinks=True)
    plan = release / "scripts/ci/plan.sh"
    out = tmp_path / "out"

    def key() -> str:
        out.write_text("")
        env = {
            "ACTION_PATH": str(release),
            "GITHUB_OUTPUT": str(out),
            "HOME": str(tmp_path),
            "PATH": os.environ["PATH"],
            "PYTHON_VERSION": "3.11.7",
        }
        subprocess.run(["bash", str(plan)], env=env, check=True, capture_output=True)
        return next(line for line in out.read_text().splitlines() if line.startswith("venv-key="))

    before = key()
    (release / "bot/__init__.py").write_text("__version__ = '9.9.9'\n")
    assert key() != before
    assert "py3.11.7" in before


def test_without_a_working_sandbox_the_review_says_why(rehearsal, tmp_path: Path) -> None:
    action, runner, cfg = rehearsal
    # A runner image whose bwrap AppArmor blocks (Ubuntu 24.04 without a profile), and no sudo allowed.
    fake = tmp_path / "image-bin"
    fake.mkdir()
    (fake / "bwrap").write_text(
        "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
    )
    (fake / "bwrap").chmod(0o755)
    restrict = tmp_path / "apparmor_restrict_unprivileged_userns"
    restrict.write_text("1\n")
    runner.extra_path = [str(fake)]
    runner.extra_env.update({"PREREVIEW_USERNS_SYSCTL": str(restrict), "PREREVIEW_SANDBOX_SUDO": "0"})
    run = runner.run({"model": catalog.TEST_MODEL, "args": f'--config "{cfg}"'})
    assert run.ok, run.log
    assert run.step("Sandbox").out.strip().splitlines()[-1].startswith("off: AppArmor restricts")
    summary = next(c["body"] for c in action.gh.issue_comments if SUMMARY_MARKER in c["body"])
    notes = [line for line in summary.splitlines() if "Sandbox off on this runner" in line]
    assert len(notes) == 1 and "apparmor_restrict_unprivileged_userns=1" in notes[0], summary
    assert "This change breaks" not in _posted(action)
