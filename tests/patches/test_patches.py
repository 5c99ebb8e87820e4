"""Propose -> verify: constrained patches, acceptance rules, the review stage, `prereview fix`, the agent."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from bot.cli.root import cli
from bot.evidence.breakage import Breakage
from bot.evidence.testrun import TestRun
from bot.models import Completion
from bot.patches import propose
from bot.patches.verify import judge

GCD_FIX = {"faulty": "return gcd(a % b, b)", "fixed": "return gcd(b, a % b)"}
GCD_WRONG = {"faulty": "        return gcd(a % b, b)", "fixed": "        return gcd(a % b, b) + 0"}

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap not installed (apt-get install bubblewrap)"
)


# ---------------------------------------------------------------- locating a quoted patch

TEXT = "def f(x):\n    if x:\n        return x - 1\n    return 0\n\n\ndef g(x):\n    return x - 1\n"


def loc(old: str, new: str, line: int = 3) -> propose.Patch | None:
    return propose.locate(propose.Problem("m.py", line, "bug"), TEXT, old, new)


def test_locates_exact_lines_nearest_the_problem():
    p = loc("    return x - 1", "    return x + 1", line=8)
    assert (p.start, p.end, p.new_lines) == (8, 8, ("    return x + 1",))
    assert p.apply(TEXT).split("\n")[7] == "    return x + 1" and p.apply(TEXT).count("x - 1") == 1
    p3 = loc("        return x - 1", "        return x + 1", line=3)
    assert (p3.start, p3.end) == (3, 3)


def test_reindents_a_quote_without_indentation():
    p = loc("return x - 1\n", "return x + 1\n", line=3)
    assert p.new_lines == ("        return x + 1",) and p.old_lines == ("        return x - 1",)


def test_multi_line_and_fragment_quotes():
    p = loc("    if x:\n        return x - 1", "    if x > 0:\n        return x - 1")
    assert (p.start, p.end, p.new_lines[0]) == (2, 3, "    if x > 0:")
    frag = loc("x - 1", "x + 1", line=3)
    assert (frag.start, frag.new_lines) == (3, ("        return x + 1",))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("    return x * 7", "    return x"),
        ("    return x - 1", "    return x - 1"),
        ("", "x"),
        ("\n".join(["a"] * 20), "b"),
    ],
)
def test_unusable_answers_give_no_patch(old, new):
    assert loc(old, new) is None


class Recorder:
    """A Model that answers from a list and records the temperatures it was asked for."""

    name, n_ctx = "recorder", 4096

    def __init__(self, answers: list[str]) -> None:
        self.answers, self.temperatures, self.prompts = list(answers), [], []

    def count_tokens(self, text: str) -> int:
        return len(text) // 4

    def complete(self, messages, *, schema=None, max_tokens, temperature=0.0):
        assert schema in (propose.patch_schema(), propose.insert_schema())
        self.temperatures.append(temperature)
        self.prompts.append(list(messages))
        return Completion(self.answers.pop(0), "stop", 1, 1, 0.0)


def test_candidates_climb_the_temperature_ladder_and_skip_duplicates():
    same = json.dumps({"faulty": "    return x - 1", "fixed": "    return x + 1"})
    other = json.dumps({"faulty": "    return x - 1", "fixed": "    return 1 - x"})
    model = Recorder([same, "not json", same, other])
    got = list(propose.candidates(model, propose.Problem("m.py", 8, "bug"), TEXT, k=2))
    assert [c.new_lines for c in got] == [("    return x + 1",), ("    return 1 - x",)]
    # unusable answers and repeats cost a request, not a candidate; k=2 allows 4 requests
    assert model.temperatures == list(propose.LADDER[:4])
    assert [c.temperature for c in got] == [propose.LADDER[0], propose.LADDER[3]]


def test_at_most_asks_per_candidate_requests():
    noop = json.dumps({"faulty": "    return x - 1", "fixed": "    return x - 1"})
    model = Recorder([noop] * 10)
    assert list(propose.candidates(model, propose.Problem("m.py", 8, "bug"), TEXT, k=3)) == []
    assert len(model.prompts) == propose.ASKS_PER_CANDIDATE * 3


def test_later_requests_list_the_fixes_the_tests_rejected():
    first = json.dumps({"faulty": "    return x - 1", "fixed": "    return x + 1"})
    bad_quote = json.dumps({"faulty": "    return y", "fixed": "    return z"})
    second = json.dumps({"faulty": "    return x - 1", "fixed": "    return x"})
    model = Recorder([first, bad_quote, second])
    got = list(
        propose.candidates(
            model, propose.Problem("m.py", 8, "bug"), TEXT, k=2, feedback=lambda p: "tests still failing"
        )
    )
    assert [c.suggestion for c in got] == ["    return x + 1", "    return x"]
    assert all(len(p) == 2 for p in model.prompts)  # independent requests: system + task
    assert "Already tried" not in model.prompts[0][1].content
    for prompt in model.prompts[1:]:
        assert "- `return x + 1`: tests still failing" in prompt[1].content
        assert prompt[1].content.endswith(propose.ASK)


GAP = "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x)\n\n    return out\n"


def test_code_removed_below_the_line_alternates_insertions_and_replacements():
    # the change deleted a line after the blank line 5: ask for the missing line(s) there, too
    echo = json.dumps({"missing": "        out.append(x)"})  # the line above the gap: unusable
    insert = json.dumps({"missing": "out.append(0)"})  # unindented: aligned with the code above
    replace = json.dumps({"faulty": "        out.append(x)", "fixed": "        out.append(x + 1)"})
    model = Recorder([echo, replace, insert])
    problem = propose.Problem("m.py", 5, "bug", gap=True)
    got = list(propose.candidates(model, problem, GAP, k=2, feedback=lambda p: "tests failed"))
    assert [(c.start, c.new_lines) for c in got] == [
        (4, ("        out.append(x + 1)",)),
        (5, ("", "        out.append(0)")),
    ]
    assert got[1].apply(GAP).split("\n")[4:7] == ["", "        out.append(0)", "    return out"]
    assert 'missing right after the line "out.append(x)"' in model.prompts[0][1].content
    assert model.temperatures == [0.0, 0.0, propose.LADDER[1]]


def test_prompt_marks_untrusted_text_and_the_problem_line():
    prompt = propose.user_prompt(propose.Problem("m.py", 3, "off by one", failure="E assert 1 == 2"), TEXT)
    assert prompt.startswith("<untrusted>") and "</untrusted>" in prompt
    assert "The problem is at this line: return x - 1" in prompt and "E assert 1 == 2" in prompt


def test_prompt_shows_the_changes_edit_and_a_swapped_answer_is_read_the_right_way():
    problem = propose.Problem(
        "m.py", 3, "tests broke", removed=("        return x + 1",), added=("        return x - 1",)
    )
    prompt = propose.user_prompt(problem, TEXT)
    assert "removed these line(s) there:\n```\n        return x + 1\n```" in prompt
    assert "and put these in their place:\n```\n        return x - 1\n```" in prompt
    # "faulty" is the line as it was before the change (not in the file), "fixed" the line as it is now
    swapped = json.dumps({"faulty": "        return x + 1", "fixed": "        return x - 1"})
    p = propose.ask(Recorder([swapped]), problem, TEXT, 0.0)
    assert p is not None and (p.start, p.old_lines, p.new_lines) == (
        3,
        ("        return x - 1",),
        ("        return x + 1",),
    )


# ---------------------------------------------------------------- the acceptance rule


def tr(passed=0, failed=0, failing=(), timed_out=False) -> TestRun:
    return TestRun(
        ("pytest",),
        1 if failed or timed_out else 0,
        passed=passed,
        failed=failed,
        failing=tuple(failing),
        timed_out=timed_out,
    )


BASE = tr(passed=12)
HEAD = tr(passed=11, failed=1, failing=["t::a"])
BROKE = Breakage(("t::a",), BASE, HEAD)


@pytest.mark.parametrize(
    ("after", "breakage", "ok", "text"),
    [
        (tr(passed=12), BROKE, True, "tests: 12 passed, was 1 failed"),
        (tr(passed=11, failed=1, failing=["t::a"]), BROKE, False, "still failing"),
        (tr(passed=11, failed=1, failing=["t::b"]), BROKE, False, "makes passing tests fail: t::b"),
        (tr(timed_out=True), BROKE, False, "timed out"),
        (tr(passed=5), BROKE, False, "fewer tests pass"),
        (tr(passed=12), None, True, "none broken by the fix"),
        (tr(passed=0), None, False, "no test ran"),
    ],
)
def test_judge(after, breakage, ok, text):
    head = HEAD if breakage else tr(passed=after.passed and 12)
    got_ok, why = judge(after, head, breakage)
    assert got_ok is ok and text in why


# ---------------------------------------------------------------- end to end with the scripted model


def write_config(tmp_path: Path, replies: list[dict], test_cmd: str, **extra) -> Path:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": replies}))
    cfg = {"model": {"backend": "scripted", "script": str(script)}, "test_command": test_cmd, **extra}
    path = tmp_path / "cfg.yml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def patch_reply(answer: dict) -> dict:
    return {"match": "Return the fix as JSON", "text": json.dumps(answer)}


def pytest_passes(repo: Path, test_cmd: str) -> bool:
    argv = test_cmd.replace("python", sys.executable, 1).split()
    return subprocess.run(argv, cwd=repo, capture_output=True).returncode == 0


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))


@needs_bwrap
def test_review_json_carries_a_verified_suggestion_and_fix_applies_it(bench_repo, tmp_path):
    case = bench_repo("quixbugs", "gcd")
    repo = Path(case["repo"])
    cfg = write_config(tmp_path, [patch_reply(GCD_WRONG), patch_reply(GCD_FIX)], case["test_cmd"])
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    verified = [f for f in data["findings"] if f["verified"]]
    assert len(verified) == 1
    f = verified[0]
    assert (f["path"], f["line"], f["end_line"]) == ("python_programs/gcd.py", 5, 5)
    assert f["suggestion"] == "        return gcd(b, a % b)" and f["rule_id"] == "tests/broken"
    assert f["evidence"] == "tests: 6 passed, was 5 failed"
    assert not pytest_passes(repo, case["test_cmd"])

    fix_cfg = write_config(tmp_path, [patch_reply(GCD_FIX)], case["test_cmd"])
    out = CliRunner().invoke(cli, ["fix", "--repo", str(repo), "--config", str(fix_cfg)])
    assert out.exit_code == 0, out.output
    assert "-        return gcd(a % b, b)\n+        return gcd(b, a % b)\n" in out.stdout
    assert not pytest_passes(repo, case["test_cmd"])  # printing changes nothing
    out = CliRunner().invoke(
        cli,
        [
            "fix",
            "--repo",
            str(repo),
            "--config",
            str(fix_cfg),
            "--apply",
            "--output",
            str(tmp_path / "fix.patch"),
        ],
    )
    assert out.exit_code == 0, out.output
    assert pytest_passes(repo, case["test_cmd"])
    assert (tmp_path / "fix.patch").read_text().startswith("--- a/python_programs/gcd.py")


@needs_bwrap
def test_unverified_patches_are_never_suggestions(bench_repo, tmp_path):
    case = bench_repo("quixbugs", "gcd")
    touch_test = {"faulty": "    assert gcd(*input_data) == expected", "fixed": "    pass"}
    cfg = write_config(
        tmp_path,
        [patch_reply(GCD_WRONG), patch_reply(touch_test), patch_reply(GCD_WRONG)],
        case["test_cmd"],
        patches={"candidates": 3},
    )
    res = CliRunner().invoke(
        cli, ["review", "--repo", case["repo"], "--config", str(cfg), "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    findings = json.loads(res.stdout)["findings"]
    broken = [f for f in findings if f["rule_id"] == "tests/broken"]
    assert len(broken) == 1 and "RecursionError" in broken[0]["message"]
    assert all(not f["verified"] and f["suggestion"] is None for f in findings)


@needs_bwrap
def test_fix_falls_back_to_the_agent_loop(bench_repo, tmp_path):
    case = bench_repo("quixbugs", "gcd")
    repo = Path(case["repo"])
    steps = [
        patch_reply(GCD_WRONG),
        {
            "match": "first tool call",
            "text": json.dumps({"tool": "search", "path": "", "query": "def gcd", "old": "", "new": ""}),
        },
        {
            "match": "Result:",
            "text": json.dumps(
                {"tool": "read_file", "path": "python_programs/gcd.py", "query": "", "old": "", "new": ""}
            ),
        },
        {
            "match": "Result:",
            "text": json.dumps(
                {"tool": "edit", "path": "python_testcases/test_gcd.py", "query": "", "old": "x", "new": "y"}
            ),
        },
        {
            "match": "Result:",
            "text": json.dumps(
                {"tool": "edit", "path": "../outside.py", "query": "", "old": "x", "new": "y"}
            ),
        },
        {
            "match": "Result:",
            "text": json.dumps(
                {
                    "tool": "edit",
                    "path": "python_programs/gcd.py",
                    "query": "",
                    "old": GCD_FIX["faulty"],
                    "new": GCD_FIX["fixed"],
                }
            ),
        },
    ]
    cfg = write_config(tmp_path, steps, case["test_cmd"], patches={"candidates": 1, "agent_steps": 6})
    out = CliRunner().invoke(cli, ["fix", "--repo", str(repo), "--config", str(cfg), "--apply"])
    assert out.exit_code == 0, out.output
    log = [ln for ln in out.stderr.splitlines() if ln.startswith("agent ")]
    assert log[0] == "agent step 1: search(query='def gcd')"
    assert (
        "refused: test files may not be edited" in out.stderr and "no such file: ../outside.py" in out.stderr
    )
    assert "verified: tests: 6 passed, was 5 failed" in out.stderr
    assert pytest_passes(repo, case["test_cmd"])


@needs_bwrap
def test_fix_without_a_verified_patch_exits_1_and_changes_nothing(bench_repo, tmp_path):
    case = bench_repo("quixbugs", "gcd")
    repo = Path(case["repo"])
    cfg = write_config(
        tmp_path, [patch_reply(GCD_WRONG)], case["test_cmd"], patches={"candidates": 1, "agent_steps": 0}
    )
    out = CliRunner().invoke(cli, ["fix", "--repo", str(repo), "--config", str(cfg), "--apply"])
    assert out.exit_code == 1 and "no single-shot patch verified" in out.stderr
    assert (
        subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True
        ).stdout
        == ""
    )


@needs_bwrap
def test_fix_when_nothing_is_broken_and_without_tests(make_repo, tmp_path):
    repo = make_repo(
        {
            "calc.py": "def add(a, b):\n    return a + b\n",
            "test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(1, 1) == 2\n",
        },
        {"calc.py": "def add(a, b):\n    return b + a\n"},
    )
    here = write_config(tmp_path, [], "", tests={"python": sys.executable})  # detected, no venv to build
    out = CliRunner().invoke(cli, ["fix", "--repo", str(repo), "--config", str(here)])
    assert out.exit_code == 0 and "breaks no test, nothing to fix" in out.stderr and out.stdout == ""
    off = write_config(tmp_path, [], "", tests="off")
    out = CliRunner().invoke(cli, ["fix", "--repo", str(repo), "--config", str(off)])
    assert out.exit_code != 0 and "no tests to run" in str(out.exception)


# ---------------------------------------------------------------- reviews without tests are left alone


def test_review_without_tests_or_with_tests_off_is_unchanged(make_repo, tmp_path):
    repo = make_repo({"a.py": "x = 1\n"}, {"a.py": "x = 2\ny = 3\n"})
    cfg = write_config(tmp_path, [], "")
    plain = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    off = write_config(tmp_path, [], "", tests="off", patches={"enabled": False})
    none = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(off), "--format", "json"])
    a, b = json.loads(plain.stdout), json.loads(none.stdout)
    assert a["findings"] == b["findings"]
    # the one difference: a tree with no test command says so (with tests off, nothing was looked for)
    said = [n for n in a["notes"] if n.startswith("Tests not run: no test command found")]
    assert len(said) == 1 and [n for n in a["notes"] if n not in said] == b["notes"]
    assert all(f["source"] != "tests" and not f["verified"] for f in a["findings"])


# ---------------------------------------------------------------- a hostile change is contained and reported

EVIL = """\
import os, pathlib, socket


def test_token():
    assert os.environ.get("GITHUB_TOKEN") == "ghp_leak"


def test_ssh_keys():
    assert (pathlib.Path.home() / ".ssh").exists() or pathlib.Path("/root/.ssh").exists()


def test_network():
    socket.create_connection(("1.1.1.1", 443), timeout=3)


def test_write_outside():
    pathlib.Path(OUTSIDE).write_text("pwned")
    assert pathlib.Path(OUTSIDE).read_text() == "pwned"


def test_fork_bomb():
    pids = []
    for _ in range(2000):
        pid = os.fork()
        if pid == 0:
            import time; time.sleep(20); os._exit(0)
        pids.append(pid)


def test_memory():
    hog = []
    while True:
        hog.append(bytearray(50_000_000))
"""


@needs_bwrap
def test_hostile_tests_are_contained_and_reported(make_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_leak")
    outside = tmp_path / "outside.txt"
    repo = make_repo(
        {
            "calc.py": "def add(a, b):\n    return a + b\n",
            "test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(1, 1) == 2\n",
        },
        {
            "calc.py": "def add(a, b):\n    return b + a\n",
            "test_evil.py": EVIL.replace("OUTSIDE", repr(str(outside))),
        },
    )
    cfg = write_config(
        tmp_path,
        [],
        "python -m pytest -q -p no:cacheprovider --tb=line",
        sandbox={"memory_mb": 1024, "max_processes": 64, "timeout": 120},
    )
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    broken = [f for f in json.loads(res.stdout)["findings"] if f["rule_id"] == "tests/broken"]
    assert len(broken) == 1
    msg = broken[0]["message"]
    # all six fail inside the sandbox: no token, no keys, no network, no host paths, no forks, no memory
    assert "This change breaks 6 tests" in msg and "test_token" in msg and "assert None == 'ghp_leak'" in msg
    assert not outside.exists()


@needs_bwrap
def test_a_test_that_loops_forever_is_killed_and_reported(make_repo, tmp_path):
    repo = make_repo(
        {
            "calc.py": "def add(a, b):\n    return a + b\n",
            "test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(1, 1) == 2\n",
        },
        {"calc.py": "def add(a, b):\n    while True:\n        pass\n"},
    )
    cfg = write_config(
        tmp_path,
        [],
        "python -m pytest -q -p no:cacheprovider",
        sandbox={"timeout": 5},
        patches={"enabled": False},
    )
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    broken = [f for f in json.loads(res.stdout)["findings"] if f["rule_id"] == "tests/broken"]
    assert len(broken) == 1 and "timed out after" in broken[0]["message"]
    assert (broken[0]["path"], broken[0]["line"]) == ("calc.py", 2)


def test_no_sandbox_is_a_note_not_a_crash(make_repo, tmp_path, monkeypatch):
    repo = make_repo(
        {"calc.py": "x = 1\n", "test_calc.py": "def test_x():\n    pass\n"}, {"calc.py": "x = 2\n"}
    )
    bin_dir = tmp_path / "bin"  # a PATH with git and tar but no bwrap
    bin_dir.mkdir()
    for tool in ("git", "tar", "sh"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(bin_dir))
    cfg = write_config(tmp_path, [], "")
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert any("tests not run: no sandbox" in n for n in json.loads(res.stdout)["notes"])


def test_sandbox_none_is_opt_in_with_a_warning_note(make_repo, tmp_path):
    repo = make_repo(
        {"calc.py": "x = 1\n", "test_calc.py": "def test_x():\n    pass\n"}, {"calc.py": "x = 2\n"}
    )
    cfg = write_config(
        tmp_path, [], f"{sys.executable} -m pytest -q -p no:cacheprovider", sandbox={"backend": "none"}
    )
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert any("WITHOUT a sandbox" in n for n in json.loads(res.stdout)["notes"])


# ---------------------------------------------------------------- the real (0.5B) model, shapes only


@pytest.mark.model
@needs_bwrap
def test_real_model_patch_round_trip_shapes(bench_repo, test_model_path, tmp_path):
    from bot.config import Config
    from bot.evidence.tests_stage import TestsStage
    from bot.findings.rank import RankStage
    from bot.forges.local import LocalForge
    from bot.patches.stage import PatchesStage
    from bot.pipeline.run import LazyModel, review_change
    from bot.progress import Collect
    from bot.types import ChangeRef

    case = bench_repo("quixbugs", "gcd")
    cfg = Config(
        model={"name": str(test_model_path), "n_ctx": 4096},
        test_command=case["test_cmd"],
        patches={"candidates": 1},
    )
    change = LocalForge().fetch(ChangeRef("local", case["repo"]))
    patches = PatchesStage()
    stages = [TestsStage(), patches, RankStage()]  # the tests and patches stages alone
    review = review_change(
        change,
        cfg,
        model=LazyModel(cfg, Collect()),
        progress=Collect(),
        stages=stages,
        cache_dir=tmp_path / "cache",
    )
    assert [f.rule_id for f in review.findings] == ["tests/broken"]
    f = review.findings[0]
    assert (f.path, f.line) == ("python_programs/gcd.py", 5)
    assert len(patches.verdicts) <= 1
    for v in patches.verdicts:
        assert v.patch.path == "python_programs/gcd.py" and isinstance(v.ok, bool) and v.reason
    if f.verified:
        assert f.suggestion and f.evidence and f.evidence.startswith("tests: ")
    else:
        assert f.suggestion is None and f.evidence is None


def test_unreachable_docker_engine_is_a_note_not_a_crash(make_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    repo = make_repo(
        {"calc.py": "x = 1\n", "test_calc.py": "def test_x():\n    pass\n"}, {"calc.py": "x = 2\n"}
    )
    cfg = write_config(tmp_path, [], "", sandbox={"backend": "docker"})
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert any("tests not run: no Docker engine reachable" in n for n in json.loads(res.stdout)["notes"])


def test_the_patches_stage_counts_its_model_requests_in_the_review_usage(make_repo):
    """stats.prompt_tokens/completion_tokens/seconds_model include proposals (not only the review's)."""
    from bot.change.diff import parse
    from bot.config import Config
    from bot.evidence.runs import TestRuns
    from bot.evidence.testrun import TestRun
    from bot.forges.local import LocalForge
    from bot.models.scripted import ScriptedModel
    from bot.patches.stage import PatchesStage
    from bot.pipeline.context import ReviewContext
    from bot.progress import Quiet
    from bot.types import ChangeRef, Finding

    change = LocalForge().fetch(ChangeRef("local", str(make_repo({"a.py": "x = 1\n"}, {"a.py": "x = 2\n"}))))
    cfg = Config(model={"backend": "scripted"}, patches={"budget_seconds": 300})
    asked = []

    class Recording(ScriptedModel):
        def complete(self, messages, **kw):  # type: ignore[no-untyped-def]
            asked.append(super().complete(messages, **kw))
            return asked[-1]

    model = Recording({"replies": [], "default": {"faulty": "x = 2", "fixed": "x = 3"}})
    ctx = ReviewContext(
        change=change,
        diff=parse(change.diff_text),
        cfg=cfg,
        model=lambda: model,
        progress=Quiet(),
        read_head=lambda p: "x = 2\n",
        read_base=lambda p: None,
    )
    # head's run took 1,000 s: the proposal is made, no verification starts (the runner is a stub)
    head = TestRun(command=("pytest",), returncode=0, passed=1, seconds=1000.0)
    ctx.tests = TestRuns(runner=object(), head=head)  # type: ignore[arg-type]
    PatchesStage().run(ctx, [Finding("a.py", 1, "x should be 3", category="bug", severity="medium")])
    assert asked and all(c.prompt_tokens > 0 and c.completion_tokens > 0 for c in asked)
    assert ctx.usage.prompt_tokens == sum(c.prompt_tokens for c in asked)
    assert ctx.usage.completion_tokens == sum(c.completion_tokens for c in asked)
    assert ctx.usage.seconds_model == pytest.approx(sum(c.seconds for c in asked))
