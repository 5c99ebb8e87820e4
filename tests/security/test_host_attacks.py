"""Hostile pull requests against the host running prereview (issue 12), each rebuilt here by code.

Every repository below is what an attacker could push: symlinks out of the tree for the patch writer and
the fix agent, tests that allocate and write beyond the sandbox's bounds, a shallow clone, a huge file.
The scripted model plays along with the attacker (it proposes the patch on the symlink), so each attack
is really tried; the assertions are about the host afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from bot import fsguard
from bot.cli.root import cli
from bot.config import Config, SandboxConfig
from bot.evidence.testrun import Breakage, TestRun
from bot.forges.local import LocalForge
from bot.models.scripted import ScriptedModel
from bot.patches import agent
from bot.pipeline.run import LazyModel, review_change
from bot.types import ChangeRef, PrereviewError

PYTEST = "python -m pytest -q -p no:cacheprovider"
NO_SLOW_SCANNERS = {"bandit": False, "patterns": False}  # semgrep/bandit start-up is beside the point here


@dataclass(frozen=True)
class Link:
    """A symlink in a commit (git stores the target as the blob)."""

    target: str


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _put(repo: Path, files: dict[str, str | Link | None]) -> None:
    for name, content in files.items():
        p = repo / name
        if content is None:
            p.unlink()
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.is_symlink() or p.exists():
            p.unlink()
        if isinstance(content, Link):
            p.symlink_to(content.target)
        else:
            p.write_text(content)


def hostile_repo(where: Path, base: dict[str, str | Link | None], head: dict[str, str | Link | None]) -> Path:
    """A two-commit repository: `base`, then the attacker's `head` on top."""
    where.mkdir(parents=True)
    git(where, "init", "-q", "-b", "main")
    _put(where, base)
    git(where, "add", "-A")
    git(where, "commit", "-q", "--allow-empty", "-m", "base")
    _put(where, head)
    git(where, "add", "-A")
    git(where, "commit", "-q", "--allow-empty", "-m", "head: the pull request")
    return where


CALC = "def add(a, b):\n    return a + b\n"
TEST_OK = "from calc import add\n\n\ndef test_add():\n    assert add(1, 1) == 2\n"
TEST_BROKEN = "from calc import add\n\n\ndef test_add():\n    assert add(1, 1) == 3\n"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A host file outside every tree prereview works in: what the attacker wants to overwrite or read."""
    host = tmp_path / "host"
    host.mkdir()
    v = host / "victim.txt"
    v.write_text("precious host data\n")
    return v


def symlink_patch_repo(tmp_path: Path, victim: Path) -> Path:
    """The change adds `0link.py -> victim` and breaks a test: the breakage lands on 0link.py (the only
    changed non-test file), so the patch stage writes the model's fix to 0link.py."""
    return hostile_repo(
        tmp_path / "repo",
        {"calc.py": CALC, "test_calc.py": TEST_OK},
        {"0link.py": Link(str(victim)), "test_calc.py": TEST_BROKEN},
    )


def scripted_config(tmp_path: Path, replies: list[dict], **extra) -> Path:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": replies}))
    cfg = {
        "model": {"backend": "scripted", "script": str(script)},
        "test_command": PYTEST,
        # the attack is on the host-side write, not the sandbox: run the (harmless) fixture tests anywhere
        "sandbox": {"backend": "none", "timeout": 120},
        "scanners": NO_SLOW_SCANNERS,
        **extra,
    }
    path = tmp_path / "cfg.yml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def patch_onto(victim: Path) -> dict:
    """The model's answer: replace 0link.py's only line (the link target, as git shows it) with a payload."""
    return {
        "match": "Return the fix as JSON",
        "text": json.dumps({"faulty": str(victim), "fixed": "pwned = 1"}),
    }


# ---------------------------------------------------------------- 1. patches written through a symlink


def test_review_never_writes_a_patch_through_a_symlink_the_change_adds(tmp_path, victim):
    repo = symlink_patch_repo(tmp_path, victim)
    cfg = scripted_config(tmp_path, [patch_onto(victim)], patches={"candidates": 1})
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    findings = json.loads(res.stdout)["findings"]
    broken = [f for f in findings if f["rule_id"] == "tests/broken"]
    assert broken and broken[0]["path"] == "0link.py"  # the attack was really tried
    assert victim.read_text() == "precious host data\n"
    assert all(not f["verified"] for f in findings)


def test_fix_and_server_fix_never_write_through_the_symlink(tmp_path, victim):
    """`prereview fix` and the server's `/fix` share find_fix: the candidate is refused, the host intact."""
    repo = symlink_patch_repo(tmp_path, victim)
    cfg = scripted_config(tmp_path, [patch_onto(victim)], patches={"candidates": 1, "agent_steps": 0})
    out = CliRunner().invoke(cli, ["fix", "--repo", str(repo), "--config", str(cfg), "--apply"])
    assert out.exit_code == 1, out.output
    assert "broken: 0link.py:1" in out.stderr
    assert victim.read_text() == "precious host data\n"


def test_fix_apply_refuses_a_symlink_in_the_working_tree(tmp_path, victim):
    """The working tree's calc.py was swapped for a link to a host file with the same text: --apply must
    not follow it (the local-changes check alone would pass)."""
    from bot.jobs.fix import apply_files

    repo = hostile_repo(tmp_path / "repo", {"calc.py": CALC}, {"calc.py": CALC.replace("+", "-")})
    head = git(repo, "rev-parse", "HEAD").strip()
    victim.write_text(CALC.replace("+", "-"))
    (repo / "calc.py").unlink()
    (repo / "calc.py").symlink_to(victim)
    with pytest.raises(fsguard.UnsafePath, match="symlink"):
        apply_files(repo, head, {"calc.py": CALC})
    assert victim.read_text() == CALC.replace("+", "-")


def test_fix_branch_never_commits_over_a_symlink(tmp_path, victim):
    from bot.jobs import fix_branch

    repo = symlink_patch_repo(tmp_path, victim)
    head = git(repo, "rev-parse", "HEAD").strip()
    with pytest.raises(PrereviewError, match="not a regular file"):
        fix_branch.commit(repo, head, {"0link.py": "pwned = 1\n"}, "fix")


@pytest.mark.parametrize(
    "rel",
    ["link.py", "linkdir/mod.py", "../outside.py", "/etc/passwd", "sub/../../outside.py", "fifo", ""],
)
def test_safe_write_refuses_every_way_out_of_the_tree(tmp_path, victim, rel):
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    (root / "link.py").symlink_to(victim)
    (root / "linkdir").symlink_to(victim.parent)
    (victim.parent / "mod.py").write_text("host module\n")
    os.mkfifo(root / "fifo")  # opening a FIFO for writing would block: it must fail at once
    with pytest.raises(fsguard.UnsafePath):
        fsguard.write_text(root, rel, "pwned\n")
    with pytest.raises(fsguard.UnsafePath):
        fsguard.read_bytes(root, rel)
    assert victim.read_text() == "precious host data\n"
    assert (victim.parent / "mod.py").read_text() == "host module\n"
    fsguard.write_text(root, "sub/ok.py", "fine\n", create=True)  # an ordinary file still works
    assert fsguard.read_text(root, "sub/ok.py") == "fine\n"


# ---------------------------------------------------------------- 2. the fix agent's tools


def agent_tree(tmp_path: Path, victim: Path) -> Path:
    """A work copy holding links to host secrets (what the change, or a test run, can plant)."""
    victim.write_text("GITHUB_TOKEN=ghp_hostsecret0123456789abcdefABCDEF0123\n")
    (victim.parent / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nhostkey\n")
    root = tmp_path / "work"
    (root / "src").mkdir(parents=True)
    (root / "src" / "calc.py").write_text(CALC)
    (root / "x.txt").symlink_to(victim)
    (root / "env").symlink_to("/proc/self/environ")
    (root / "ssh").symlink_to(victim.parent)
    return root


def test_agent_tools_never_follow_a_symlink_out_of_the_work_copy(tmp_path, victim, monkeypatch):
    monkeypatch.setenv("PREREVIEW_PROBE_SECRET", "ghp_fromtheenvironment000000000000000")
    ws = agent.Workspace(agent_tree(tmp_path, victim))
    for query in ("ghp_", "GITHUB_TOKEN", "PRIVATE KEY", "PREREVIEW_PROBE_SECRET"):
        assert ws.search(query) == "no match"
    assert ws.search("return a + b") == "src/calc.py:2: return a + b"
    for path in ("x.txt", "env", "ssh/id_rsa"):
        assert ws.read_file(path) == f"no such file: {path}"
    assert ws.list_files("ssh") == "no such directory: ssh"
    assert "ssh@" in ws.list_files("") and "src/" in ws.list_files("")
    assert "GITHUB_TOKEN" not in ws.edit("x.txt", "GITHUB_TOKEN", "y", 1)
    assert victim.read_text().startswith("GITHUB_TOKEN=ghp_hostsecret")


def test_agent_loop_sends_no_host_secret_to_the_model(tmp_path, victim):
    ws = agent.Workspace(agent_tree(tmp_path, victim))

    def call(tool: str, path: str = "", query: str = "") -> dict:
        return {
            "match": "Result:|first tool call",
            "text": json.dumps({"tool": tool, "path": path, "query": query, "old": "", "new": ""}),
        }

    model = ScriptedModel(
        {
            "replies": [
                call("search", query="ghp_"),
                call("read_file", path="x.txt"),
                call("read_file", path="ssh/id_rsa"),
                call("list_files", path="ssh"),
                call("done"),
            ]
        }
    )
    run = TestRun(("pytest",), 1, failed=1, failing=("t::a",))
    result = agent.run(
        model,
        ws,
        runner=None,  # type: ignore[arg-type]  # no edit or run_tests in this script
        head=run,
        breakage=Breakage(("t::a",), TestRun(("pytest",), 0, passed=1), run),
        task="tests broke",
        near=("src/calc.py", 2),
        max_steps=6,
    )
    assert result.steps == 5 and not result.ok
    sent = "\n".join(m.content for request in model.requests for m in request)
    assert "hostsecret" not in sent and "hostkey" not in sent


def test_a_file_replaced_by_a_symlink_after_an_edit_is_not_read_as_the_fix(tmp_path, victim):
    """A test run may swap the edited file for a link to a host file; `changed()` must not return its text."""
    ws = agent.Workspace(agent_tree(tmp_path, victim))
    assert ws.edit("src/calc.py", "    return a + b", "    return b + a", 2).startswith("edited")
    (ws.root / "src" / "calc.py").unlink()
    (ws.root / "src" / "calc.py").symlink_to(victim)
    with pytest.raises(fsguard.UnsafePath):
        ws.changed()


# ---------------------------------------------------------------- 8. sandbox bounds for the run as a whole


def bwrap_sandbox(tmp_path: Path, **limits):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed (apt-get install bubblewrap)")
    from bot.sandbox.bubblewrap import BubblewrapSandbox

    cfg = {"memory_mb": 256, "max_processes": 64, "max_output_bytes": 20_000, "timeout": 60, **limits}
    sb = BubblewrapSandbox(SandboxConfig(backend="bubblewrap", **cfg))
    (tmp_path / "probe").mkdir()
    probe = sb.run(["true"], cwd=tmp_path / "probe", timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"bubblewrap cannot run here (no user namespaces?): {probe.stderr.strip()[:200]}")
    return sb


def run_py(sb, work: Path, code: str, timeout: float = 60):
    work.mkdir(exist_ok=True)
    (work / "attack.py").write_text(code)
    return sb.run(["python", "attack.py"], cwd=work, timeout=timeout)


CHILDREN = """\
import subprocess, sys
child = "b = b'x' * (110 << 20); import time; time.sleep(3); print('child ok', flush=True)"
procs = [subprocess.Popen([sys.executable, '-c', child]) for _ in range(3)]
print('exit codes', [p.wait() for p in procs], flush=True)
"""


def test_memory_is_bounded_for_all_processes_together(tmp_path):
    sb = bwrap_sandbox(tmp_path, memory_mb=256, memory_total_mb=256)
    if getattr(sb, "memory_bound", "") == "rlimit":
        pytest.skip(
            "no writable memory cgroup or systemd user scope here: memory is bounded per process only"
        )
    res = run_py(sb, tmp_path / "work", CHILDREN)
    # each child fits the per-process limit (110 MiB < 256 MiB); three together do not
    assert res.stdout.count("child ok") < 3, res.output
    if sb.memory_bound == "cgroup":
        assert res.killed_reason == "memory" and "sandbox.memory_total_mb" in res.stderr
    assert "256 MiB and 64 processes in all" in sb.bounds and sb.warning is None


def test_without_a_cgroup_the_per_process_bound_is_reported(tmp_path, monkeypatch):
    from bot.sandbox import limits

    sb = bwrap_sandbox(tmp_path)
    monkeypatch.setattr(limits, "CGROUP", tmp_path / "no-cgroup-fs")  # a host without cgroups…
    monkeypatch.setattr(limits, "systemd_scope", lambda *_: [])  # …and without a systemd user manager
    sb.memory_bound = ""
    assert "per process" in (sb.warning or "") and "64 processes × 256 MiB" in (sb.warning or "")
    assert "(rlimit)" in sb.bounds
    assert run_py(sb, tmp_path / "work", "print('ran')\n").stdout.strip() == "ran"


def test_dev_shm_is_small_and_private(tmp_path):
    sb = bwrap_sandbox(tmp_path, shm_mb=16)
    code = (
        "import os\n"
        "try:\n"
        "    with open('/dev/shm/fill', 'wb') as f:\n"
        "        for _ in range(48): f.write(b'x' * (1 << 20)); f.flush()\n"
        "    print('wrote 48 MiB')\n"
        "except OSError as e:\n"
        "    print('full', e.errno)\n"
    )
    res = run_py(sb, tmp_path / "work", code)
    assert "full" in res.stdout and "wrote" not in res.stdout, res.output
    assert not Path("/dev/shm/fill").exists()


def test_work_copy_growth_is_capped(tmp_path):
    sb = bwrap_sandbox(tmp_path, disk_mb=16)
    code = (
        "import time\n"
        "for i in range(50):\n"
        "    open(f'fill{i}.bin', 'wb').write(b'x' * (4 << 20)); time.sleep(0.02)\n"
        "print('done', flush=True)\n"
    )
    work = tmp_path / "work"
    res = run_py(sb, work, code)
    assert res.killed_reason == "disk" and "done" not in res.stdout, res.output
    assert "sandbox.disk_mb" in res.stderr
    left = sum(p.stat().st_size for p in work.iterdir())
    assert left < 80 << 20  # stopped near the cap, not after 200 MiB


# ---------------------------------------------------------------- 11. shallow clones


def test_a_shallow_clone_fails_naming_the_fix(tmp_path):
    origin = hostile_repo(tmp_path / "origin", {"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(clone)],
        check=True,
        capture_output=True,
    )
    with pytest.raises(PrereviewError, match="fetch-depth: 0") as exc:
        LocalForge().fetch(ChangeRef("local", str(clone), None, None))
    assert "\n" not in str(exc.value) and "git fetch --deepen" in str(exc.value)
    res = CliRunner().invoke(cli, ["review", "--repo", str(clone)])
    assert res.exit_code != 0 and "shallow" in res.output + str(res.exception)
    base = git(origin, "rev-parse", "HEAD~1").strip()  # an explicit base the clone does not have
    with pytest.raises(PrereviewError, match="shallow"):
        LocalForge().fetch(ChangeRef("local", str(clone), base, None))


def test_a_root_commit_is_reviewed_whole_with_a_note(tmp_path):
    repo = tmp_path / "root"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    cfg = scripted_config(tmp_path, [], tests="off")
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert any("root commit" in n for n in json.loads(res.stdout)["notes"])


# ---------------------------------------------------------------- 12. size cap and honest time


AWS_KEY = "AKIAZ7QW3RTY5UIO9PLK"


def test_an_oversized_file_is_skipped_before_scanners_and_redaction(tmp_path):
    big = "x = '" + "a" * 1_100_000 + f"'  # {AWS_KEY}\n"  # one line, over the 1,000,000-byte default
    repo = hostile_repo(tmp_path / "repo", {"small.py": "y = 1\n"}, {"small.py": "y = 2\n", "huge.py": big})
    change = LocalForge().fetch(ChangeRef("local", str(repo), None, None))
    cfg = Config.model_validate(
        {"model": {"backend": "scripted"}, "tests": "off", "scanners": NO_SLOW_SCANNERS}
    )
    review = review_change(change, cfg, model=_Fixed(ScriptedModel({"replies": []})))
    skipped = {s.path: s.reason for s in review.coverage.skipped}
    assert "review.max_file_bytes" in skipped.get("huge.py", ""), skipped
    assert all(f.path != "huge.py" for f in review.findings)  # no scanner (secrets) ever read it
    assert review.coverage.reviewed == ("small.py",) and review.stats.files == 2


class _Fixed(LazyModel):
    """The LazyModel review_change takes, holding a model built here."""

    def __init__(self, model) -> None:
        self._model = model

    def __call__(self):
        return self._model


class SlowModel(ScriptedModel):
    """The scripted model taking a fixed time per answer (as a real one does), so stages show in the time."""

    def complete(self, messages, **kw):
        time.sleep(0.4)
        return super().complete(messages, **kw)


def test_seconds_total_counts_the_whole_review(tmp_path):
    """The self-check after the model and the final redaction ran outside the reported time before."""
    repo = hostile_repo(tmp_path / "repo", {"a.py": "x = 1\n"}, {"a.py": "x = 2\nos.system(cmd)\n"})
    change = LocalForge().fetch(ChangeRef("local", str(repo), None, None))
    cfg = Config.model_validate(
        {"model": {"backend": "scripted"}, "tests": "off", "scanners": NO_SLOW_SCANNERS}
    )
    model = SlowModel()  # its default finding (bug, medium) is self-checked: a second, timed request
    t0 = time.monotonic()
    review = review_change(change, cfg, model=_Fixed(model))
    wall = time.monotonic() - t0
    assert len(model.requests) >= 2
    assert review.stats.seconds_total >= 0.9 * wall, (review.stats.seconds_total, wall)
    assert review.stats.seconds_total <= wall + 0.01


def test_a_host_where_bwrap_cannot_start_gets_tests_not_run_with_the_fix(tmp_path):
    """No unprivileged user namespaces: bwrap fails before running anything. That is said once, naming the
    fix, instead of every test run "failing" and the change looking harmless."""
    from bot.sandbox.bubblewrap import BubblewrapSandbox

    fake = tmp_path / "bwrap"  # what bwrap prints on such a host
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    sb = BubblewrapSandbox(SandboxConfig(backend="bubblewrap"))
    sb._bwrap = str(fake)
    (tmp_path / "work").mkdir()
    with pytest.raises(PrereviewError, match="user namespaces.*sandbox.backend: docker") as exc:
        sb.run(["python", "-m", "pytest"], cwd=tmp_path / "work", timeout=30)
    assert "uid map" in str(exc.value)


def test_size_cap_leaves_small_diffs_and_diffs_without_git_headers_alone():
    from bot.change import sizecap

    assert sizecap.cap("", lambda _p: {}, 10) == ("", [])
    plain = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"  # no `diff --git` header: readers still cap
    assert sizecap.cap(plain, lambda _p: {}, 10) == (plain, [])
    small = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-a\n+b\n"
    big = "diff --git a/b.py b/b.py\n--- a/b.py\n+++ b/b.py\n@@ -1 +1 @@\n-a\n+" + "x" * 500 + "\n"
    kept, skipped = sizecap.cap(small + big + small.replace("a.py", "c.py"), lambda _p: {"c.py": 10_000}, 300)
    assert kept == small and [s.path for s in skipped] == ["b.py", "c.py"]
