"""What the behaviour engine says of the changed callables it found no difference in: compared and alike,
reached only by failing tests, or not called at all, and why. "Nothing found" is never silent."""

from __future__ import annotations

from .callables import Changed
from .compare import OUTER, Call
from .generate import Input


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


def not_called(unreached: list[Changed], inputs: list[Input], calls: list[Call]) -> list[str]:
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
        out.append(f"{c.qualname} (reached by no test; {why})")
    return out


def generated_alike(unreached: list[Changed], calls: list[Call], differing: set[str]) -> list[str]:
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
            shown = ran[0].text()
            shown = shown if len(shown) <= 80 else shown[:79] + "…"
            out.append(
                f"behaviour: `{c.qualname}` (reached by no test) gave the same results at base and head on "
                f"{len(ran)} generated call(s) ({', '.join(kinds)}; e.g. `{shown}`)"
            )
    return out
