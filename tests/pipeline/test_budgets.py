"""Every stage keeps to its budget, counted from the stage's start, and says in a note what it left out
(issue 29, item 2). Big synthetic changes, budgets too small to do anything: the stage must stop and
name what it did not get to. No wall-clock assertions: the notes prove the stages stopped early."""

from __future__ import annotations

import json
from pathlib import Path

from bot.config import build
from bot.evidence.behaviour.engine import BehaviourEvidence
from bot.evidence.behaviour_stage import evidence_for
from bot.evidence.runs import TestRuns
from bot.forges.local import LocalForge
from bot.models import Completion
from bot.patches import propose
from bot.patches.verify import Patcher
from bot.pipeline.run import build_context
from bot.progress import Quiet
from bot.types import ChangeRef, Finding

N = 200  # new typed functions in the synthetic change


def _many_functions(n: int) -> str:
    return "".join(f"def f{i}(x: int, y: int) -> int:\n    return x * {i} + y\n\n\n" for i in range(n))


def _change(repo: Path):
    return LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))


def test_behaviour_stops_preparing_inputs_at_its_deadline_and_names_what_it_left_out(make_repo) -> None:
    repo = make_repo({"mod.py": "A = 1\n"}, {"mod.py": "A = 1\n\n\n" + _many_functions(N)})
    change = _change(repo)
    cfg = build(
        {
            "behaviour": {"budget_seconds": 0.001, "model_inputs": False, "allow_unsandboxed": True},
            "sandbox": {"backend": "none"},  # no code runs: the budget is spent before any call
            "tests": "off",
        },
        env={},
    )
    ctx, _ = build_context(change, cfg, progress=Quiet(), model=lambda: None)
    engine = evidence_for(ctx)
    assert isinstance(engine, BehaviourEvidence) and len(engine.targets) == N
    assert engine.run([]) == []
    [note] = [n for n in engine.notes if "got inputs" in n]
    assert "budget_seconds (0.001s) spent before" in note and f"of {N} changed function(s)" in note
    left = int(note.split("spent before ")[1].split(" of ")[0])
    assert left > N // 2  # it stopped near the start instead of preparing every function
    assert "f199" in note or "more" in note


def test_files_over_max_file_lines_leave_the_model_but_not_the_behaviour_stage(make_repo) -> None:
    """max_file_lines is a limit of the model's prompt: the behaviour stage runs the changed functions and
    needs no prompt of the whole file (its own budget bounds it), so a long file is still compared."""
    repo = make_repo({"mod.py": "A = 1\n"}, {"mod.py": "A = 1\n\n\n" + _many_functions(30)})
    change = _change(repo)
    cfg = build({"review": {"max_file_lines": 50}, "tests": "off"}, env={})
    ctx, _ = build_context(change, cfg, progress=Quiet(), model=lambda: None)
    [skipped] = ctx.selection().skipped  # the model leaves it out, and coverage says why
    assert skipped.path == "mod.py" and "review.max_file_lines" in skipped.reason
    assert not ctx.selection().files
    engine = evidence_for(ctx)
    assert isinstance(engine, BehaviourEvidence)
    assert {c.qualname for c in engine.targets} == {f"f{i}" for i in range(30)}


def test_files_left_out_for_other_reasons_stay_out_of_the_behaviour_stage(make_repo) -> None:
    repo = make_repo({"vendor/mod.py": "A = 1\n"}, {"vendor/mod.py": "A = 1\n\n\n" + _many_functions(3)})
    ctx, _ = build_context(
        _change(repo), build({"tests": "off"}, env={}), progress=Quiet(), model=lambda: None
    )
    assert [s.reason for s in ctx.selection().skipped] == ["vendored"]
    assert evidence_for(ctx) is None


class _Counting:
    """A model that counts its requests (and answers nothing usable)."""

    name, n_ctx = "counting", 4096

    def __init__(self) -> None:
        self.requests = 0

    def count_tokens(self, text: str) -> int:
        return len(text) // 4

    def complete(self, messages, **kw) -> Completion:
        self.requests += 1
        return Completion(json.dumps({"faulty": "x", "fixed": "y"}), "stop", 1, 1, 0.0)


def test_no_patch_request_starts_after_the_deadline() -> None:
    model = _Counting()
    problem = propose.Problem("m.py", 1, "bug")
    assert list(propose.candidates(model, problem, "x = 1\n", k=5, deadline=0.0)) == []
    assert model.requests == 0
    list(propose.candidates(model, problem, "x = 1\n", k=1, deadline=None))
    assert model.requests == propose.ASKS_PER_CANDIDATE  # without a deadline it asks as before


def test_patches_past_their_budget_name_the_findings_not_tried(make_repo) -> None:
    repo = make_repo({"m.py": "x = 1\n"}, {"m.py": "".join(f"x{i} = {i}\n" for i in range(12))})
    change = _change(repo)
    cfg = build({"patches": {"budget_seconds": 0.000001}}, env={})
    stage = Patcher(change, cfg, TestRuns(runner=object(), head=object()))  # type: ignore[arg-type]
    findings = [Finding("m.py", i, f"bug {i}", category="bug", severity="medium") for i in range(1, 11)]
    model = _Counting()
    out = stage.post_findings(findings, lambda: model, Quiet())  # type: ignore[arg-type,return-value]
    assert out == findings and model.requests == 0
    [note] = stage.notes
    assert "spent before a fix was tried for 10 finding(s)" in note
    assert "m.py:1, m.py:2" in note and "and 2 more" in note


class _Proposing(_Counting):
    """A model whose every answer is a usable patch of the line `x1 = 1`."""

    def complete(self, messages, **kw) -> Completion:
        self.requests += 1
        return Completion(
            json.dumps({"faulty": "x1 = 1", "fixed": f"x1 = {self.requests + 1}"}), "stop", 1, 1, 0.0
        )


def test_no_candidate_is_verified_when_its_test_run_would_end_past_the_deadline(make_repo) -> None:
    """Head's test run took 1,000 s and 300 s are left: verifying a candidate would overrun the budget by
    ten minutes, so none is started, and the note says so."""
    from bot.evidence.testrun import TestRun

    repo = make_repo({"m.py": "x0 = 0\n"}, {"m.py": "x0 = 0\nx1 = 1\n"})
    change = _change(repo)
    cfg = build({"patches": {"budget_seconds": 300}}, env={})
    head = TestRun(command=("pytest",), returncode=0, passed=1, seconds=1000.0)
    runs = TestRuns(runner=object(), head=head)  # type: ignore[arg-type]
    stage = Patcher(change, cfg, runs, read_for_prompt=lambda p: "x0 = 0\nx1 = 1\n")
    model = _Proposing()
    finding = Finding("m.py", 2, "x1 should be 2", category="bug", severity="medium")
    out = stage.post_findings([finding], lambda: model, Quiet())  # type: ignore[arg-type,return-value]
    assert out == [finding] and model.requests == 1  # one proposal, never verified (the runner is a stub)
    assert any("spent while fixing m.py:2 (0 candidate(s) verified" in n for n in stage.notes)


def test_past_its_deadline_the_behaviour_stage_asks_the_model_nothing_and_says_so() -> None:
    """Differences no rule decides are the model's to judge; past the deadline they are reported as
    unchecked (low) without asking it, with a note naming the functions."""
    from types import SimpleNamespace

    from bot.evidence.behaviour import callables as cm
    from bot.evidence.behaviour import compare
    from bot.models.scripted import ScriptedModel

    source = 'def f(n):\n    """Square n."""\n    return n * n\n\n\ndef g(n):\n    return n + 1\n'
    tree = cm.parse(source)
    lines = source.splitlines()
    targets = [
        cm._record("m.py", d, d, "modified", d.span[0], lines, lines, cm.module_docs(tree))
        for d in cm.definitions(tree)
    ]
    ret = lambda r: {"kind": "return", "repr": r}  # noqa: E731
    base = [compare.Call(c.key, "t::a", (("n", "10"),), ret("100"), ()) for c in targets]
    head = [compare.Call(c.key, "t::a", (("n", "10"),), ret("20"), ()) for c in targets]
    cfg = build({"behaviour": {"budget_seconds": 0.000001}}, env={})
    change = SimpleNamespace(title="Speed up f", body="", workdir=None)
    engine = BehaviourEvidence(change, cfg, lambda p: source, lambda p: source, targets=targets)  # type: ignore[arg-type]
    engine._traced = lambda tests: (base, head)  # type: ignore[method-assign]
    model = ScriptedModel({"replies": [], "default": {"text": '{"verdict": "bug", "reason": "x"}'}})
    found = engine.run([], model=lambda: model)
    assert model.requests == [] and engine.changes == []
    assert sorted((f.rule_id, f.severity) for f in found) == [("behaviour/unchecked", "low")] * 2
    [note] = [n for n in engine.notes if "budget_seconds" in n]
    assert "before the model judged the differences of 2 function(s)" in note and "f, g" in note
