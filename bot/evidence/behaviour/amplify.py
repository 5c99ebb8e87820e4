"""The tests that reach a quiet changed callable, each run again with one literal of its own code changed.

Where the tests reach a changed callable and every call behaves the same at base and head, the value
that would show the change is often not an argument of the call but something the test builds before it:
the text it parses, the file it writes, the option it passes to a constructor. The calls' arguments are
varied elsewhere (seeded.py, varied.py, prereview_outer.py); here the test's own code is: one literal
of the test function is changed, or one keyword argument of a call in it left out (testvariants.py: the
changed lines' literals first, "a.b" with the changed line's "." becomes "a.x.b").

The variants go into a new test file beside the original (its module copied, each variant a sibling of
the test it varies), run with the tracer at base and at head in fresh scratch trees, only the variants
selected. The changed callable's calls in them are compared as the tests' calls are (compare.py); a
difference seen at head and not again at a second base run is judged like a steered input (rules.py kind
"steered", then the change's own words). The variant's assertions do not matter: only what the changed
callable did is compared.

Origin: a general idea, test amplification (DSpot's literal and call mutations of existing tests),
narrowed to the tests that reach the change; not a corpus case.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import fsguard
from ...types import ChangeRequest, PrereviewError
from .. import testrun
from . import compare, harness, seeded
from .callables import Changed, Reader
from .compare import Call, Difference
from .testvariants import MARK, MAX_PER_TEST, Variant, amplified_module, test_parts

if TYPE_CHECKING:
    from ..testrun import TestRunner

MAX_TESTS = 3  # tests varied per quiet callable
PREFIX = "amplified "  # Call.variant of a call made in a variant (compare.AIMED)


@dataclass
class Amplified:
    diffs: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    runs: int = 0


def varied(quiet: Sequence[Changed]) -> list[Changed]:
    """The quiet callables whose tests' variants are compared: functions that exist at base (a class's
    body runs once, at import; an added callable has no base to compare with)."""
    return [c for c in quiet if not c.is_class and c.kind != "added"]


def chosen_tests(
    targets: Sequence[Changed], base_calls: Sequence[Call], skip: Callable[[Call], bool]
) -> dict[str, dict[str, list[Any]]]:
    """Test file -> test id -> seeds (the changed lines' literals): the first MAX_TESTS distinct tests
    that reached each of `targets` (`varied`) at base, in the order they ran (not a failing or edited one).
    (Ranking them by how many of the changed lines' names their code uses instead was tried on the
    tuning half's misses: it found none of them and lost the one the run order finds.)"""
    keys = {c.key: c for c in targets}
    seen: dict[str, list[str]] = {}
    for x in base_calls:
        if x.callable not in keys or "::" not in x.origin or skip(x) or x.variant:
            continue
        tid = x.origin.split("[", 1)[0]
        if tid not in seen.setdefault(x.callable, []):
            seen[x.callable].append(tid)
    out: dict[str, dict[str, list[Any]]] = {}
    for key, tids in seen.items():
        seeds = seeded.literals(keys[key])
        for tid in tids[:MAX_TESTS]:
            path, _ = test_parts(tid)
            mine = out.setdefault(path, {}).setdefault(tid, [])
            mine += [s for s in seeds if s not in mine]
    return out


# ---------------------------------------------------------------- the runs


def differences(
    runner: TestRunner,
    change: ChangeRequest,
    quiet: Sequence[Changed],
    base_calls: Sequence[Call],
    skip: Callable[[Call], bool],
    read_head: Reader,
    limit: int,
    deadline: float,
) -> Amplified:
    """The quiet callables' differences in variants of the tests that reach them at base (not a failing
    or edited test's: `skip`), at most `limit` variants, and a note on what was run."""
    out = Amplified()
    if change.workdir is None:
        return out
    targets = varied(quiet)
    chosen = chosen_tests(targets, base_calls, skip)
    files: list[tuple[str, str, list[Variant]]] = []
    left = limit
    for path, tests in chosen.items():
        text = read_head(path)
        if not text or left <= 0 or not path.endswith(".py"):
            continue
        source, made = amplified_module(text, tests, min(MAX_PER_TEST, left))
        if made:
            rel = str(Path(path).with_name(f"{Path(path).stem}_prereview_amplified.py"))
            files.append((rel, source, made))
            left -= len(made)
    if not files:
        return out
    hook = harness.trace_hook(targets, max_calls=4000)
    by_id = {f"{rel}::{_node(v)}": v for rel, _, made in files for v in made}
    base_sha, head_sha, repo = change.base_sha, change.head_sha, change.workdir

    def side(commit: str, ids: Sequence[str]) -> list[Call]:
        if time.monotonic() > deadline or not ids:
            return []
        out.runs += 1
        left = max(1.0, deadline - time.monotonic())  # a slow suite's fixtures: the stage's budget holds
        got = _run(runner, repo, commit, files, replace(hook, args=(*hook.args, *ids)), left)
        return [_relabel(c, by_id) for c in got if c.origin.split("[", 1)[0] in by_id]

    head = side(head_sha, list(by_id))
    base = side(base_sha, list(by_id))
    keys = {c.key for c in targets}
    diffs = [d for d in compare.differences(base, head) if d.callable in keys]
    if diffs:  # the same variants at base again: a result that changes there is noise, not evidence
        ids = {_origin(v): i for i, v in by_id.items()}
        again_ids = sorted({ids[d.origin] for d in diffs if d.origin in ids})
        noisy = {(d.callable, d.call, d.origin) for d in compare.differences(base, side(base_sha, again_ids))}
        diffs = [d for d in diffs if (d.callable, d.call, d.origin) not in noisy]
    out.diffs = diffs
    n_tests = len({v.test for v in by_id.values()})
    names = ", ".join(f"`{c.qualname}`" for c in targets[:3])
    found = f"{len(diffs)} difference(s)" if diffs else "no difference"
    if not head or not base:  # nothing to compare is not "no difference"
        found = (
            "no call of it recorded at "
            + ("head" if not head else "base")
            + " (not collected, or the budget)"
        )
    out.notes.append(
        f"behaviour: {len(by_id)} variant(s) of {n_tests} test(s) reaching {names} (one literal or keyword "
        f"of the test changed) ran at base and head: {found}"
    )
    return out


def _node(v: Variant) -> str:
    _, names = test_parts(v.test)
    return "::".join([*names[:-1], v.name])


def _origin(v: Variant) -> str:
    return f"{v.test} ({v.what})"


def _relabel(c: Call, by_id: dict[str, Variant]) -> Call:
    """A variant's call: its origin the original test and what changed, its variant the variant's number
    (judged as an input aimed at the change, judge.py `_where` says how it was made)."""
    v = by_id[c.origin.split("[", 1)[0]]
    return replace(c, origin=_origin(v), variant=f"{PREFIX}{v.name.rsplit(MARK, 1)[1]}")


def _run(
    runner: TestRunner,
    repo: Path,
    commit: str,
    files: Sequence[tuple[str, str, list[Variant]]],
    hook: testrun.RunHook,
    timeout: float,
) -> list[Call]:
    with tempfile.TemporaryDirectory(prefix="prereview-amplify-") as tmp:
        try:
            root = testrun.export_tree(repo, commit, Path(tmp) / "work")
            for rel, text, _ in files:
                fsguard.write_text(root, rel, text, create=True)
        except (PrereviewError, OSError):
            return []
        _, collected = runner.in_tree_collect(root, hook, timeout)
    calls, _ = compare.from_trace(collected)
    return calls
