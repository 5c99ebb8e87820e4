"""A test that failed at head and passed at base counts only when it does so again: it is re-run alone
(the whole command where the runner cannot select one test and the budget allows), a few times at head
and at base, in fresh scratch trees. One that passes on a head rerun or fails on a
base rerun is flaky — reported once in the notes, never as `tests/broken`. A confirmed failure of a
pytest test is re-run under a line tracer too, so the finding can say whether the failing test executes
the changed lines at all (a test that never reaches them is not evidence against those lines).
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from .. import wording
from ..change.diff import Diff
from ..sandbox.exchange import BACK, GIVEN
from .breakage import Breakage, changed_lines

if TYPE_CHECKING:
    from .testrun import RunHook, TestRun, TestRunner

RERUNS = 2  # per side: a test must fail 1 + 2 times at head and pass 1 + 2 times at base to count


@dataclass
class Recheck:
    """What the reruns showed."""

    breakage: Breakage | None  # the confirmed part of the breakage (None: everything flipped)
    flaky: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    reruns: int = 0  # sandbox runs made
    seconds: float = 0.0


def only(argv: Sequence[str], tests: Sequence[str]) -> list[str] | None:
    """Arguments that run just `tests` with this command; None when the runner cannot select tests."""
    if _is_pytest(argv):
        return [t for t in tests if not t.startswith("-")]
    if list(argv[:2]) == ["go", "test"] or (argv and Path(argv[0]).name == "go" and argv[1:2] == ["test"]):
        names = sorted({re.escape(t.split("/", 1)[0]) for t in tests if re.match(r"^\w+(/|$)", t)})
        return ["-count=1", "-run", f"^({'|'.join(names)})$"] if names else None
    if argv and Path(argv[0]).name == "cargo" and argv[1:2] == ["test"]:
        return None  # cargo takes one filter only; a run of the whole suite is not "only that test"
    return None


def _is_pytest(argv: Sequence[str]) -> bool:
    return any(Path(a).name in ("pytest", "py.test") for a in argv)


def outcome(run: TestRun, test: str) -> str:
    """ "fail", "pass" or "unknown" (the rerun did not run it: an id the runner did not take, a crash)."""
    if test in run.failing:
        return "fail"
    if run.timed_out:
        return "unknown"
    if run.passed > 0 and (run.ok or run.failing):
        return "pass"
    return "unknown"


def recheck(
    runner: TestRunner,
    repo: Path,
    base_sha: str,
    head_sha: str,
    breakage: Breakage,
    diff: Diff | None,
    *,
    reruns: int = RERUNS,
    budget: float = 120.0,
) -> Recheck:
    """Re-run the tests the change seems to break (alone, `reruns` times per side, within `budget`
    seconds); the confirmed ones stay in the breakage, the others are flaky."""
    from .testrun import RunHook

    t0 = time.monotonic()
    tests = [t for t in breakage.tests if t != "(test run)"]
    if not tests:
        return Recheck(breakage)
    select = only(runner.argv, tests)
    if select is None:  # npm scripts, cargo: the whole command again, when the budget allows it
        if breakage.head.seconds * 2 * reruns > budget:
            return Recheck(breakage)
        select = []
    deadline = t0 + budget
    head_fail = {t: 1 for t in tests}  # the first head run failed each, the base run passed each
    head_seen = {t: 1 for t in tests}
    base_fail = {t: 0 for t in tests}
    reach_spec = _reach_spec(diff) if _is_pytest(runner.argv) else None
    reached: dict[str, list[list[object]]] = {}
    made = 0
    for i in range(reruns):
        if time.monotonic() > deadline:
            break
        # the last head rerun also records which changed lines each test executes (pytest only)
        hook = (
            _reach_hook(reach_spec, select) if reach_spec and i == reruns - 1 else RunHook(args=tuple(select))
        )
        run, collected = _fresh_run(runner, repo, head_sha, hook)
        made += 1
        if collected:
            try:
                reached = json.loads(collected)
            except ValueError:
                reached = {}
        for t in tests:
            got = outcome(run, t)
            if got != "unknown":
                head_seen[t] += 1
                head_fail[t] += got == "fail"
    still = [t for t in tests if head_fail[t] == head_seen[t]]
    base_seen = {t: 1 for t in tests}
    if still:
        base_select = only(runner.argv, still) or select
        for _ in range(reruns):
            if time.monotonic() > deadline:
                break
            run, _ = _fresh_run(runner, repo, base_sha, RunHook(args=tuple(base_select)))
            made += 1
            for t in still:
                got = outcome(run, t)
                if got != "unknown":
                    base_seen[t] += 1
                    base_fail[t] += got == "fail"
    flaky = tuple(t for t in tests if head_fail[t] < head_seen[t] or base_fail[t] > 0)
    confirmed = tuple(t for t in tests if t not in flaky)
    notes = [_flaky_note(flaky, head_fail, head_seen, base_fail, base_seen)] if flaky else []
    reach = None
    if confirmed and reach_spec is not None and reached:
        per_test = {t: _reach_of((t,), reached, reach_spec) for t in confirmed}
        if diff is not None and _traced_all(diff, reach_spec):  # every changed code line was watched
            unrelated = tuple(t for t in confirmed if per_test[t] == ())
            if unrelated:
                notes.append(_unrelated_note(unrelated))
                confirmed = tuple(t for t in confirmed if t not in unrelated)
        known = [r for t in confirmed if (r := per_test[t]) is not None]
        reach = tuple(sorted({x for r in known for x in r})) if known else None
    kept = replace(breakage, tests=confirmed, reach=reach) if confirmed else None
    return Recheck(kept, flaky, notes, made, round(time.monotonic() - t0, 2))


def _traced_all(diff: Diff, spec: dict[str, list[int]]) -> bool:
    """Did the tracer watch every code line the change touched? (No deleted module, no changed data,
    configuration or non-Python file: those break tests without a changed line running.)"""
    for f in diff.files:
        if f.path.endswith((".md", ".rst")) or f.path.startswith("docs/"):
            continue
        if f.status == "deleted" or (changed_lines(f) and f.path not in spec):
            return False
    return True


def _unrelated_note(tests: Sequence[str]) -> str:
    shown = wording.first_few(tests)
    return (
        f"Not counted as broken by this change: {shown} failed at head and passed at base on every rerun "
        "but never ran a changed line, not even at import (traced) — a flaky or environment-dependent test."
    )


def _flaky_note(
    flaky: Sequence[str],
    head_fail: dict[str, int],
    head_seen: dict[str, int],
    base_fail: dict[str, int],
    base_seen: dict[str, int],
) -> str:
    parts = []
    for t in flaky[:3]:
        at_base = f"{base_fail[t]} of {base_seen[t]} at base"
        parts.append(f"{t} (failed {head_fail[t]} of {head_seen[t]} runs at head, {at_base})")
    more = f" and {len(flaky) - 3} more" if len(flaky) > 3 else ""
    return (
        f"Flaky test{'s' if len(flaky) > 1 else ''}, not a finding: {', '.join(parts)}{more} — "
        "its outcome changes between runs of the same code, so it says nothing about this change."
    )


def _fresh_run(runner: TestRunner, repo: Path, commit: str, hook: RunHook) -> tuple[TestRun, str]:
    """One uncached run in a fresh scratch tree, and the hook's file read back."""
    from .testrun import export_tree

    with tempfile.TemporaryDirectory(prefix="prereview-rerun-") as tmp:
        root = export_tree(repo, commit, Path(tmp) / "work")
        return runner.in_tree_collect(root, hook)


# ---------------------------------------------------------------- does the failing test reach the change?


def _reach_spec(diff: Diff | None) -> dict[str, list[int]] | None:
    """The changed lines of the change's Python files, its tests' too (a test the change rewrote runs
    changed lines of its own); None without any."""
    if diff is None:
        return None
    spec = {f.path: changed_lines(f) for f in diff.files if f.status != "deleted" and f.path.endswith(".py")}
    spec = {p: lines for p, lines in spec.items() if lines}
    return spec or None


def _reach_hook(spec: dict[str, list[int]], select: Sequence[str]) -> RunHook:
    from .testrun import RunHook

    plugin = resources.files(__package__).joinpath("prereview_reach.py").read_text(encoding="utf-8")
    return RunHook(
        files=(("prereview_reach.py", plugin), ("reach-spec.json", json.dumps({"lines": spec}))),
        args=("-p", "prereview_reach", *select),
        env=(
            ("PYTHONPATH", GIVEN),
            ("PREREVIEW_REACH_SPEC", f"{GIVEN}/reach-spec.json"),
            ("PREREVIEW_REACH_OUT", f"{BACK}/reach.json"),
        ),
        collect="reach.json",
    )


def _reach_of(
    tests: Sequence[str], reached: dict[str, list[list[object]]], spec: dict[str, list[int]]
) -> tuple[tuple[str, int], ...] | None:
    """The changed lines the confirmed tests executed (empty: none); None when the tracer said nothing
    about them (it did not run, or the ids differ). The file comes from the sandbox, where the PR's code
    ran: only (path, line) pairs of the spec itself are taken from it."""
    known = [reached[t] for t in tests if isinstance(reached, dict) and isinstance(reached.get(t), list)]
    if not known:
        return None
    at_import = reached.get("<import>")  # module bodies: a changed constant runs there, for every test
    known += [at_import] if isinstance(at_import, list) else []
    lines = {
        (p, n)
        for hits in known
        for hit in hits
        if isinstance(hit, list) and len(hit) == 2
        for p, n in [hit]
        if isinstance(p, str) and isinstance(n, int) and n in spec.get(p, ())
    }
    return tuple(sorted(lines))
