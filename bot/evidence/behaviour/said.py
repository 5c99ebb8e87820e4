"""What the behaviour engine says of the changed callables it found no difference in: compared and alike,
reached only by failing tests, or not called at all, and why. "Nothing found" is never silent."""

from __future__ import annotations

from collections.abc import Sequence

from ...types import Finding
from . import crossed, replays, seeded, steer
from .callables import Changed
from .compare import AIMED, OUTER, Call, Difference
from .generate import Input


def unreached_words(unrecorded: bool) -> str:
    """How a callable with no recorded test call is described: reached by no test, or not recorded (the
    tests ran without the tracer: runs.TestRuns.untraced says why)."""
    return "its calls in the tests not recorded" if unrecorded else "reached by no test"


def calling(inputs: list[Input], again: list[Input], steered: list[Input]) -> str:
    """The progress line before the stage makes its own calls."""
    return (
        f"behaviour: calling {len({i.callable for i in inputs})} changed function(s) "
        f"at base and head on {len(inputs)} input(s)"
        + (f" ({len(again)} replayed from the base run's tests)" if again else "")
        + (f" ({len(steered)} of the tests' calls steered at the change)" if steered else "")
    )


def after_calls(
    targets: list[Changed],
    unreached: list[Changed],
    planned_out: Sequence[tuple[Changed, str]],
    given: tuple[list[Input], list[Input], list[Input]],
    calls: list[Call],
    diffs: Sequence[Difference],
    words: str,
) -> tuple[list[str], list[str]]:
    """What the stage says once its own calls were made: (what was not compared and why, notes). `given`:
    the replayed, the steered and all inputs; `planned_out`: the callables no input could be planned for."""
    again, steered, inputs = given
    replayed = replays.replayed(again, calls)
    skipped = [f"{c.qualname} ({words}; {why})" for c, why in planned_out if c.key not in replayed]
    told = {c.key for c, _ in planned_out}
    skipped += not_called([c for c in unreached if c.key not in told], inputs, calls, words)
    differing = {d.callable for d in diffs}
    notes = replays.note(targets, replayed)
    notes += generated_alike([c for c in unreached if c.key not in replayed], calls, differing, words)
    notes += steer.note(targets, steered, calls, diffs) + seeded.note(targets, steered, calls, diffs)
    return skipped, notes + crossed.note(targets, steered, calls, diffs)


def alike(same: list[Changed], calls: list[Call], failing: set[str]) -> list[str]:
    """Notes for the callables the tests reach with no difference: compared and alike, or reached only by
    tests that fail at head (their evidence is the tests stage's). So "nothing found" is never silent.
    Of the variants in `calls`, the tests' outer calls made again varied (prereview_outer.py) are told."""
    counts = {c.key: 0 for c in same}
    outer = 0
    for x in calls:
        if (
            x.callable in counts
            and x.origin not in failing
            and x.variant.startswith(OUTER) == bool(x.variant)
        ):
            counts[x.callable] += not x.variant
            outer += bool(x.variant)
    alike = [c for c in same if counts[c.key]]
    only = [c for c in same if not counts[c.key]]
    out = []
    if alike:
        names = ", ".join(f"`{c.qualname}`" for c in alike[:5]) + (" …" if len(alike) > 5 else "")
        n = sum(counts[c.key] for c in alike)
        more = f", and on {outer} of their outer calls made again varied" if outer else ""
        out.append(
            f"behaviour: {names} gave the same results at base and head on {n} call(s) from the tests "
            f"that pass at head{more}"
        )
    if only:
        names = ", ".join(f"`{c.qualname}`" for c in only[:5]) + (" …" if len(only) > 5 else "")
        out.append(f"behaviour: {names} not compared: only tests that fail at head reach it")
    return out


def not_called(
    unreached: list[Changed], inputs: list[Input], calls: list[Call], words: str = "reached by no test"
) -> list[str]:
    """What was not compared, and why, for each callable no test reaches whose generated calls gave no
    result either (its class could not be built, its calls did not run): said every time, never silent."""
    out = []
    planned = {i.callable for i in inputs}
    for c in unreached:
        mine = [x for x in calls if x.callable == c.key]
        if any(x.result.get("kind") != "unavailable" for x in mine):
            continue
        if mine:
            r = mine[0].result
            why = f"it could not be called: {r.get('message') or r.get('type')}"
        elif c.key in planned:
            why = "its generated calls did not run"
        else:
            why = "no input could be built"
        out.append(f"{c.qualname} ({words}; {why})")
    return out


def generated_alike(
    unreached: list[Changed], calls: list[Call], differing: set[str], words: str = "reached by no test"
) -> list[str]:
    """A note for the callables no test reaches whose generated calls (docstring examples, Hypothesis,
    boundary values, the model's: not the tests' calls replayed) ran and gave the same results at base
    and head: what was compared, with one call as the example. Without it such a callable was silent
    (python-dotenv's click command `run`, tuning: no note, no finding, nothing said)."""
    out = []
    for c in unreached:
        if c.key in differing:
            continue
        ran = [
            x
            for x in calls
            if x.callable == c.key
            and (x.replay is None or not x.replay.pickled)
            and x.result.get("kind") != "unavailable"
        ]
        if ran:
            kinds = sorted({x.origin for x in ran})
            shown = _short(ran[0].text(), 80)
            out.append(
                f"behaviour: `{c.qualname}` ({words}) gave the same results at base and head on "
                f"{len(ran)} generated call(s) ({', '.join(kinds)}; e.g. `{shown}`)"
            )
    return out


def untaken(c: Changed, diffs: Sequence[Difference], findings: Sequence[Finding]) -> list[str]:
    """A note for a callable with no finding whose tests' calls made again varied (an edge, a line break,
    a proxy, the outer call varied: judged by the rules alone) differ at head: what differed, that no
    rule takes it as a bug, and one example. Without it such a difference was dropped without a word."""
    varied = [d for d in diffs if d.variant and not d.variant.startswith(AIMED)]
    if findings or not varied:
        return []
    kinds = ", ".join(dict.fromkeys(f"`{d.variant}`" for d in varied[:20]))
    shown = _short(varied[0].example(), 120)
    return [
        f"behaviour: `{c.qualname}`: {len(varied)} of the tests' calls made again varied ({kinds}) differ at "
        f"head, which no rule takes as a bug; not reported (e.g. {shown})"
    ]


def _short(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"
