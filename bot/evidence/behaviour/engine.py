"""The behaviour-evidence engine (its pipeline stage: bot/evidence/behaviour_stage.py): changed callables
-> observed and generated calls at base and head -> differences -> findings (bugs) and behaviour changes
(intended), within a time budget.

Python only for now. The language seam is `LANGUAGES`: a language contributes a way to find its changed
callables and to run them (tracer for its test runner, harness for generated calls).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ...change.diff import Diff, is_test_path
from ...config import Config
from ...models import Model
from ...progress import Progress, Quiet
from ...sandbox import Sandbox
from ...sandbox import create as create_sandbox
from ...types import BehaviourChange, ChangeRequest, Finding, PrereviewError
from .. import testrun
from ..projectenv import ProjectEnv
from ..runs import TestRuns
from . import (
    accounts,
    addedtests,
    amplify,
    compare,
    crossed,
    generate,
    harness,
    judge,
    objects,
    replays,
    said,
    steer,
)
from .callables import Changed, Reader, changed_callables
from .compare import Call, Difference
from .dependents import reached_callables
from .generate import Input
from .headfiles import HeadFiles
from .languages import other_language_sources
from .replays import as_input, replayable
from .testfiles import ChangedTests, changed_test_files, changed_tests

ModelFactory = Callable[[], Model]
LANGUAGES = {"python": (".py",)}  # the seam: JS/TS (".js", ".ts") and Go (".go") are not covered yet


@dataclass
class BehaviourEvidence:
    change: ChangeRequest
    cfg: Config
    read_base: Reader
    read_head: Reader
    targets: list[Changed] = field(default_factory=list)
    edited_tests: ChangedTests = field(default_factory=ChangedTests)  # their calls are not compared
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # what was not compared, and why
    changes: list[BehaviourChange] = field(default_factory=list)
    examples: dict[str, list[judge.Example]] = field(default_factory=dict)  # fingerprint -> inputs to restore
    seconds: float = 0.0
    seconds_prepare: float = 0.0  # finding the changed callables (counted in the stage's budget)
    seconds_model: float = 0.0
    sandbox: Sandbox | None = None
    env: ProjectEnv | None = None  # the tests' environment: generated calls run with the same interpreter
    _hook: testrun.RunHook | None = None
    _files: HeadFiles | None = None  # the files at head, listed once (folders and packages)
    words: accounts.Words | None = None  # what the change's author says it does (the judge reads it)

    @classmethod
    def prepare(
        cls, change: ChangeRequest, cfg: Config, diff: Diff, read_base: Reader, read_head: Reader
    ) -> BehaviourEvidence | None:
        """None when the stage is off or has nothing to look at (no changed Python callable, no checkout)."""
        if not cfg.behaviour.enabled or change.workdir is None:
            return None
        t0 = time.monotonic()
        stage = cls(change, cfg, read_base, read_head)
        stage.targets = changed_callables(diff, read_base, read_head, is_test=is_test_path)
        stage.targets += reached_callables(
            diff, read_head, stage.files.package, is_test=is_test_path, changed=stage.targets
        )
        tests = changed_test_files(diff, read_base, read_head, is_test_path)  # parsed once for both uses
        stage.edited_tests = changed_tests(diff, tests)
        if others := other_language_sources(diff):
            stage.skipped.append(f"{len(others)} JavaScript/TypeScript/Go file(s) (only Python so far)")
        if not stage.targets and not stage.skipped:
            return None
        stage.words = accounts.gather(change, diff, addedtests.added_tests(tests))
        stage.seconds_prepare = time.monotonic() - t0
        return stage

    # -------------------------------------------------------------- observing the test runs

    def trace_hook(self, argv: list[str]) -> testrun.RunHook | None:
        """Extras for the tests stage's runs at base and head: the tracer plugin, for pytest commands; none
        when no target is a function (a class body's code runs once, at import: classes are not traced, and
        a tracer with nothing to record would still slow every test down)."""
        traced = [c for c in self.targets if not c.is_class]
        if not traced:
            return None
        if not harness.is_pytest(argv):
            self.notes.append("behaviour: the test command is not pytest, so its calls were not recorded")
            return None
        self._hook = harness.trace_hook(
            traced,
            max_calls=self.cfg.behaviour.max_traced_calls,
            variants=self.cfg.behaviour.wrapped_inputs,
            edges=self.cfg.behaviour.edge_calls,
            outer=self.cfg.behaviour.outer_calls,
            replays=replays.REPLAYS_PER_CALLABLE,
            edited=self.edited_tests,
        )
        return self._hook

    def _traced(self, tests: TestRuns | None) -> tuple[list[Call], list[Call]]:
        runner = tests.runner if tests is not None else None
        if self._hook is None or runner is None or tests is None or tests.head is None:
            return [], []
        if tests.untraced:  # the runs were made without the tracer: nothing the tests called is known
            self.notes.append(f"behaviour: {tests.untraced}; only generated calls were compared")
            return [], []
        base, _ = compare.from_trace(runner.collected_at(self.change.base_sha, self._hook))
        head, dropped = compare.from_trace(runner.collected_at(self.change.head_sha, self._hook))
        for key, n in dropped.items():
            self.notes.append(
                f"behaviour: {n} more call(s) of {key.split('::')[-1]} in the tests not recorded "
                "(behaviour.max_traced_calls)"
            )
        return base, head

    # -------------------------------------------------------------- the stage

    def run(
        self,
        findings: list[Finding],
        *,
        tests: TestRuns | None = None,
        model: ModelFactory | None = None,
        progress: Progress | None = None,
    ) -> list[Finding]:
        """Findings plus the stage's own; intended changes collect in `self.changes`. The budget counts
        from the stage's start: finding the changed callables (`prepare`) took part of it already."""
        progress = progress or Quiet()
        t0 = time.monotonic()
        deadline = t0 + self.cfg.behaviour.budget_seconds - self.seconds_prepare
        try:
            return findings + self._run(tests, model, progress, deadline)
        finally:
            self.seconds = round(time.monotonic() - t0, 3)

    def _run(
        self, tests: TestRuns | None, model: ModelFactory | None, progress: Progress, deadline: float
    ) -> list[Finding]:
        if not self.targets:
            return []
        base_calls, head_calls = self._traced(tests)
        runs = tests or TestRuns()
        self.sandbox = self.sandbox or runs.sandbox  # where patches of its findings rerun
        self.env = self.env or runs.env
        # calls made by tests that fail at head are the tests stage's evidence already
        failing = set(runs.head.failing if runs.head is not None else ())
        diffs = [d for d in compare.differences(base_calls, head_calls) if d.origin not in failing]
        # a test whose own code the change edits had other inputs at base and head: not compared, and a
        # callable only such tests (say the deleted regression test) reach gets generated inputs instead;
        # its call's variants are compared (same arguments both sides; the edit cannot account for them)
        edited = self.edited_tests.covers
        compared = [d for d in diffs if d.variant or not edited(d.origin)]
        # ... but what those tests' base run called is recorded: made again at both sides on base's
        # arguments (the pickled ones), the inputs are the same and the difference is the code's
        redo = compare.differing(base_calls, head_calls, edited)
        # base calls head's tests did not make with the same inputs (their test is gone or edited, or head
        # built `self` differently): the recorded arguments, `self` included, given to head's code too
        again = replays.inputs(redo + compare.unmatched(base_calls, head_calls), self.targets, failing)
        self.notes += replays.edited_note(len(diffs) - len(compared), redo, again)
        diffs = compared
        seen = compare.reached(c for c in base_calls if not edited(c.origin)) & compare.reached(
            c for c in head_calls if not edited(c.origin)
        )
        unreached = [c for c in self.targets if c.key not in seen]
        # the docstring's examples are the spec: run them even where the tests reach the callable
        most = self.cfg.behaviour.max_calls
        documented = [
            i
            for c in self.targets
            if c.key in seen
            for i in [*generate.doctests(c)[:most], *generate.nesting(c)]
        ]

        def skip(x: Call) -> bool:  # a failing or edited test's call: not one to vary
            return x.origin in failing or edited(x.origin)

        differing = {d.callable for d in diffs if not d.variant}  # a varied call's: judged by rules alone
        quiet = [c for c in self.targets if c.key in seen and c.key not in differing]
        steered = self._steered(quiet, base_calls, model, deadline, skip)
        new_calls: list[Call] = []
        if unreached or documented or again or steered:
            sandbox = self._sandbox(runs.sandbox)
            if sandbox is None:
                self.skipped += [f"{c.qualname} (no sandbox)" for c in unreached]
            else:
                plan = generate.plan(
                    unreached,
                    max_calls=self.cfg.behaviour.max_calls,
                    model=model if self.cfg.behaviour.model_inputs else None,
                    language=self.cfg.review.language,
                    classes=objects.project_classes(self.files.nearby(unreached), self.read_head),
                    deadline=deadline,
                )
                if plan.late:
                    self._left_out(
                        plan.late,
                        f"before {len(plan.late)} of {len(unreached)} changed function(s) got inputs; "
                        "not compared",
                    )
                inputs = documented + plan.inputs + again + steered
                if inputs:
                    progress.message(said.calling(inputs, again, steered))
                    more, new_calls = self._generated(sandbox, inputs, deadline)
                    diffs += [d for d in more if not replays.lacks_new_attribute(d)]
                skipped, notes = said.after_calls(
                    self.targets,
                    unreached,
                    plan.skipped,
                    (again, steered, inputs),
                    new_calls,
                    diffs,
                    said.unreached_words(bool(runs.untraced)),
                )
                self.skipped, self.notes = self.skipped + skipped, self.notes + notes
        if self.cfg.behaviour.amplified_tests and runs.runner is not None:  # tests varied (amplify.py), last:
            limit = self.cfg.behaviour.amplified_tests  # whole test runs, the budget's biggest spender
            amp = amplify.differences(
                runs.runner, self.change, quiet, base_calls, skip, self.read_head, limit, deadline
            )
            self.notes, diffs = self.notes + amp.notes, diffs + amp.diffs
        self.notes += said.alike(
            [c for c in self.targets if c.key in seen and not any(d.callable == c.key for d in diffs)],
            [x for x in head_calls if not edited(x.origin)],
            failing,
        )
        out: list[Finding] = []
        unjudged: list[Changed] = []
        by_key: dict[str, list[Difference]] = {}  # grouped once: targets × calls is big on big changes
        for d in diffs:
            by_key.setdefault(d.callable, []).append(d)
        calls_of: dict[str, list[Call]] = {}
        for x in new_calls:
            calls_of.setdefault(x.callable, []).append(x)
        for c in self.targets:
            mine = by_key.get(c.key, [])
            late = time.monotonic() > deadline  # the rules still decide; the model is not asked
            if late and mine and c.kind != "added":
                unjudged.append(c)
            line = self._head_line(c)
            if c.kind == "added":
                j = judge.judge_new(c, calls_of.get(c.key, []), line)
            else:
                j = judge.judge(
                    c,
                    mine,
                    model=None if late else model,
                    title=self.change.title,
                    body=self.change.body,
                    head_line=line,
                    language=self.cfg.review.language,
                    how=self.cfg.behaviour.judge,
                    words=self.words,
                )
            out += j.findings
            self.changes += j.changes
            self.notes += said.untaken(c, mine, j.findings)
            self.examples.update(j.examples)
            self.seconds_model += j.seconds_model
        if unjudged:
            what = f"before the model judged the differences of {len(unjudged)} function(s); reported"
            self._left_out(unjudged, what + " unchecked against the change's text")
        return out

    def _steered(
        self,
        quiet: list[Changed],
        base_calls: list[Call],
        model: ModelFactory | None,
        deadline: float,
        skip: Callable[[Call], bool],
    ) -> list[Input]:
        """Seeded, crossed (crossed.py) and model-steered (steer.py) inputs for the callables left quiet."""
        out = crossed.with_seeded(quiet, base_calls, skip, self.cfg.behaviour.seeded_calls)
        if model is None or not self.cfg.behaviour.steer or time.monotonic() > deadline:
            return out
        lang = self.cfg.review.language
        got, seconds = steer.inputs(
            quiet, base_calls, skip, model, self.read_head, language=lang, deadline=deadline
        )
        self.seconds_model += seconds
        return out + got

    @property
    def files(self) -> HeadFiles:
        if self._files is None:
            assert self.change.workdir is not None
            self._files = HeadFiles(self.change.workdir, self.change.head_sha)
        return self._files

    def _left_out(self, left: list[Changed], what: str) -> None:
        """The note for what the budget left out: what, and which callables (the first few by name)."""
        names = [c.qualname for c in left]
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        budget = self.cfg.behaviour.budget_seconds
        self.notes.append(f"behaviour: budget_seconds ({budget:g}s) spent {what}: {shown}")

    def _head_line(self, c: Changed) -> str | None:
        text = self.read_head(c.finding_path)
        lines = text.splitlines() if text else []
        return lines[c.anchor - 1].strip() if 0 < c.anchor <= len(lines) else None

    def _sandbox(self, shared: Sandbox | None) -> Sandbox | None:
        if self.sandbox is None:
            try:
                self.sandbox = shared or create_sandbox(self.cfg.sandbox)
            except PrereviewError as exc:
                self.notes.append(f"behaviour not compared: {exc}")
                return None
        if self.sandbox.name == "none" and not self.cfg.behaviour.allow_unsandboxed:
            self.notes.append(
                "behaviour not compared: the change's code runs only in a sandbox (sandbox.backend is none; "
                "set behaviour.allow_unsandboxed: true to run it anyway)"
            )
            return None
        return self.sandbox

    def _generated(
        self, sandbox: Sandbox, inputs: list[Input], deadline: float
    ) -> tuple[list[Difference], list[Call]]:
        """Inputs at base and head -> differences (confirmed by a second base run) and head's calls."""
        assert self.change.workdir is not None
        repo, b = self.change.workdir, self.cfg.behaviour
        existing = {c.key for c in self.targets if c.kind != "added"}  # once: inputs × targets is big
        old = [i for i in inputs if i.callable in existing]

        def side(commit: str, which: list[Input]) -> list[Call]:
            left = deadline - time.monotonic()
            if left <= 1 or not which:
                if which:
                    self.notes.append("behaviour: budget_seconds spent before every call was made")
                return []
            calls, note = harness.run_inputs(
                sandbox, repo, commit, which, call_timeout=b.call_timeout, budget=left, env=self.env
            )
            if note:
                self.notes.append(f"behaviour: {note}")
            return [c for c in calls if c is not None]

        head = side(self.change.head_sha, inputs)
        base = side(self.change.base_sha, old)
        diffs = compare.differences(base, head)
        if diffs:  # same inputs again at base: a result that changes there is noise, not evidence
            keys = {d.callable for d in diffs}
            again = compare.differences(
                base, side(self.change.base_sha, [i for i in old if i.callable in keys])
            )
            noisy = {(d.callable, d.call) for d in again}
            diffs = [d for d in diffs if (d.callable, d.call) not in noisy]
        return diffs, head

    def all_notes(self) -> list[str]:
        skipped = [f"behaviour not compared for {', '.join(self.skipped)}"] if self.skipped else []
        return [*self.notes, *skipped]

    # -------------------------------------------------------------- patches

    def patch_check(self, finding: Finding) -> Callable[[Path], tuple[bool, str]] | None:
        """For a behaviour finding: a check that a patched head tree gives base's results on its inputs
        (a generated input is given again as it was, a doctest with its setup lines, built objects
        rebuilt; a traced call's literal arguments are called directly)."""
        examples = [e for e in self.examples.get(finding.fingerprint, []) if e.replay or replayable(e)]
        if not examples or self.sandbox is None:
            return None
        given = [e.replay or as_input(e) for e in examples]
        inputs = list(dict.fromkeys(given))  # a doctest's examples share their input: run it once

        def check(root: Path) -> tuple[bool, str]:
            assert self.sandbox is not None
            calls, _ = harness.run_inputs_in(
                self.sandbox,
                root,
                inputs,
                call_timeout=self.cfg.behaviour.call_timeout,
                budget=30.0,
                label="patched head",
                env=self.env,
            )
            for e, inp in zip(examples, given, strict=True):
                got = next((c for c in calls if c and c.replay == inp and c.text() == e.call), None)
                want = e.before or compare.describe(e.base)  # with what it changed (a constructor's self)
                have = compare.describe(got.result, got.mutated) if got else "no result"
                if got is None or have != want:
                    return False, f"with the patch `{e.call}` gives {have}, not base's {want}"
            return True, f"{len(examples)} example(s) give base's result again"

        return check
