"""The judge's probabilities path (`behaviour.judge: probabilities`, judge.decide): each version's result
put to the model alone, "is this result right for this function?", and base's and head's compared by how
much likelier "yes" is than "no" (bench/judge.py measures the margin)."""

from __future__ import annotations

from collections.abc import Sequence

from ... import prompts
from ...models import Message, Model, ModelError
from .callables import Changed
from .compare import Difference

BUG_MARGIN = 1.0  # mean log-odds by which base's results beat head's (bench/judge.py measures it)


def margin(
    c: Changed, diffs: Sequence[Difference], m: Model, title: str, body: str, function: str
) -> tuple[float, float] | None:
    """(mean over the differences of log-odds("yes") for base's result minus head's, seconds); None when
    the backend gives no token probabilities."""
    score = getattr(m, "score", None)
    if score is None or not diffs:
        return None
    told = title.strip() or body.strip()
    said = f"The change under review is titled: {title[:200]}\n{body[:400]}\n\n" if told else ""
    margins, seconds = [], 0.0
    for d in diffs:
        odds = []
        for result in (d.before, d.after):
            prompt = f"{function}{said}{states(d.call, result)}\n\nIs this result right for this function?"
            try:
                got = score(
                    [Message("system", prompts.load("behaviour_score")), Message("user", prompt)],
                    ["yes", "no"],
                )
            except ModelError:
                got = None
            if got is None:
                return None
            seconds += got.seconds
            odds.append(got.logprobs["yes"] - got.logprobs["no"])
        margins.append(odds[0] - odds[1])
    return sum(margins) / len(margins), seconds


def states(call: str, result: str) -> str:
    """One call and its result, told the same way whichever version gave it."""
    value, changes, rest = result.partition(" and changes ")
    told = f"`{call}` {value}" if value.startswith(_NOT_RETURNED) else f"`{call}` returns `{value}`"
    return f"{told} and changes {rest}." if changes else f"{told}."


_NOT_RETURNED = ("raises ", "hangs ", "crashes ", "cannot be called")
