"""Differences -> findings or intended behaviour changes, by the rules of rules.py (one row each, tried in
the table's order) and, for a difference no rule decides, the model.

Deterministic first: head raising, hanging or crashing where base returned is a high-severity finding with
the input, no model asked. Every other difference goes to the model with the concrete examples (call,
before, after) and the change's own words (title, description, commit messages, added docs), and it is asked
the question it can answer: do those words account for this difference (accounts.py)? Accounted for -> an
info-level behaviour change in the summary, with the words that do; not -> an inline finding on the
callable's changed line, the example in its message and in `evidence` with the judge's reasons, asking "is
this intended?" (`medium`; `low` when no model read the words), named a bug when blind comparisons in both
orders also prefer base's results. With `behaviour.judge: probabilities` each version's result is put to the
model alone and the two compared by the probability of "yes" (`decide`). A new callable has no base: only
its failing doctests and hangs/crashes count. The tests' calls (and the tests' outer calls that reach the
callable) made again with a varied argument (prereview_trace.py, prereview_outer.py) and a context manager
used inside itself are judged by rules alone (rules.py, varied.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ... import prompts
from ...findings.language import instruction as language_instruction
from ...models import Model
from ...models.answer import ask_object
from ...types import BehaviourChange, Finding, severity_rank
from . import accounts, addedtests, oracles, plausibility, rules
from .accounts import Words
from .callables import Changed
from .compare import AIMED, OUTER, Call, Difference, clearest, describe
from .generate import Input, call_params

CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "correct": {"enum": ["first", "second", "unsure"]},
        "reason": {"type": "string", "maxLength": 240},
    },
    "required": ["correct", "reason"],
}


@dataclass(frozen=True)
class Example:
    """A concrete input whose base result a patch must restore (see bot/verify.py)."""

    callable: str  # Changed.key
    call: str
    origin: str
    args: tuple[tuple[str, str], ...]
    base: dict[str, Any]
    replay: Input | None = None  # the generated input (a doctest with its setup, built objects), if any
    before: str = ""  # base's outcome as told, with what the call changed (a constructor's `self`)


@dataclass
class Judgement:
    findings: list[Finding] = field(default_factory=list)
    changes: list[BehaviourChange] = field(default_factory=list)
    examples: dict[str, list[Example]] = field(default_factory=dict)  # finding fingerprint -> examples
    seconds_model: float = 0.0


_HOW = {
    "wrapped": "`{}` in a forwarding proxy",
    "edge": "`{}` at an edge of its type",
    "steered": "`{}` set to a value the model aimed at the changed lines",
    "seeded": "`{}` set to a literal of the changed lines",
    "crossed": "`{}` set to a value another of the tests' calls gave it",
    "case": "`{}` in another letter case",
    "amplified": "one literal or keyword of the test changed",
}


def _where(d: Difference) -> str:
    if d.variant == "probe expression":
        return f" (an expression the model wrote from test `{d.origin}` to reach the changed lines)"
    if d.variant:  # "wrapped x" | "line break x" | "edge x" | "steered x" | "seeded x" | "amplified vN"
        kind, arg = d.variant.rsplit(" ", 1)
        how = _HOW.get(kind.removeprefix(OUTER), "a line break at the end of `{}`").format(arg)
        by = "the call that reached it" if "outer" in kind else "a call"
        return f" ({by} in test `{d.origin}`, made again with {how})"
    if "::" in d.origin or d.origin.startswith("test"):
        return f" (in test `{d.origin}`)"
    return {
        "doctest": " (its docstring example)",
        "hypothesis": " (input drawn from its type hints)",
        "boundary": " (an edge-case input)",
        "model": " (an input the model proposed)",
        "nesting": " (used inside itself)",
    }.get(d.origin, "")


def _sentence(d: Difference, first: bool = True) -> str:
    return f"`{d.call}` {_was(d)}{' before this change' if first else ''} and now {_now(d)}{_where(d)}"


def _was(d: Difference) -> str:
    if d.base.get("kind") == "raise":
        return f"raised `{d.before.removeprefix('raises ')}`"
    return f"returned `{d.before}`"


def _now(d: Difference) -> str:
    kind = d.head.get("kind")
    if kind == "return":
        return f"returns `{d.after}`"
    return f"`{d.after}`" if kind == "raise" else d.after


def _finding(
    c: Changed, shown: Sequence[Difference], severity: str, rule: str, why: str, quote: str | None
) -> Finding:
    through = f" (it depends on `{c.via}`, which this change edits)" if c.via else ""
    said = "; ".join(_sentence(d, i == 0) for i, d in enumerate(shown))
    msg = f"Behaviour change in `{c.qualname}`{through}: {said}." + (f" {why}" if why else "")
    return Finding(
        path=c.finding_path,
        line=c.anchor,
        message=msg,
        severity=severity,
        category="bug",
        source="behaviour",
        rule_id=rule,
        evidence=" | ".join(d.example() for d in shown),
        quote=quote,
    )


def _report(
    out: Judgement,
    c: Changed,
    shown: Sequence[Difference],
    severity: str,
    rule: str,
    why: str,
    quote: str | None,
    examples: Sequence[Difference] | None = None,
    **fields: Any,
) -> None:
    """Add the finding that shows `shown` (other Finding fields in `fields`), with the examples a patch
    must give base's result on again (`examples`, else the shown ones)."""
    f = replace(_finding(c, shown, severity, rule, why, quote), **fields)
    out.findings.append(f)
    out.examples[f.fingerprint] = _examples(shown if examples is None else examples)


def _list(out: Judgement, c: Changed, diffs: Sequence[Difference], reason: str) -> None:
    """Add the differences as intended behaviour changes (the summary's list), with why they look so."""
    out.changes += [
        BehaviourChange(c.finding_path, c.anchor, c.qualname, d.call, d.before, d.after, reason, d.origin)
        for d in diffs
    ]


def _examples(diffs: Sequence[Difference]) -> list[Example]:
    return [
        Example(d.callable, d.call, d.origin, d.args, d.base, d.replay, d.before)
        for d in diffs
        if not d.call.startswith(">>>") and not d.variant.startswith(OUTER)  # not calls of `callable`
    ]


def judge(
    c: Changed,
    diffs: Sequence[Difference],
    *,
    model: Callable[[], Model] | None,
    title: str,
    body: str,
    head_line: str | None,
    language: str = "",
    how: str = "verdict",
    words: Words | None = None,
) -> Judgement:
    diffs = [d for d in diffs if not _guessed_wrong_type(c, d)]
    plain = [d for d in diffs if not d.variant]
    out = _judge_plain(c, plain, model, title, body, head_line, language, how, words)
    # the tests' calls aimed at the change: the "steered" rules, then the words, where plain gave < medium
    steered = [d for d in diffs if d.variant.startswith(AIMED)]
    if steered and _strongest(out) < severity_rank("medium"):
        more = _judge_plain(c, steered, model, title, body, head_line, language, how, words, kind="steered")
        if _strongest(more) > _strongest(out):
            out.findings, out.examples = more.findings, more.examples
        out.changes += more.changes
        out.seconds_model += more.seconds_model
    # the tests' calls made again with an argument varied: a finding only where none as severe was made
    # already (a rule's oracle outranks a weaker "is this intended?", which it then replaces)
    for kind in ("line break", "wrapped", "edge", "outer"):
        varied = [d for d in diffs if d.variant.startswith(kind + " ")]
        for rule in rules.applicable(kind):
            if not (rule.oracle and varied) or _strongest(out) >= severity_rank(rule.severity):
                continue
            hits = rule.oracle(c, varied)
            if hits:  # every finding made so far is weaker: this one replaces them
                out.findings, out.examples = [], {}
                _apply(out, c, rule, hits, head_line)
    return out


def _strongest(out: Judgement) -> float:
    """The rank of the most severe finding made so far (-1: none); the model's "is this intended?" counts
    half a rank less, so a rule's oracle at the same severity replaces it."""
    asked = ("behaviour/unexplained", "behaviour/unchecked")
    return max((severity_rank(f.severity) - 0.5 * (f.rule_id in asked) for f in out.findings), default=-1)


def _apply(
    out: Judgement, c: Changed, rule: rules.Rule, hits: Sequence[Difference], quote: str | None
) -> None:
    """A rule that fired: its finding, with its row's severity, why, category and CWE, or its listing."""
    if rule.action == "list":
        _list(out, c, hits[: rule.show], rule.why)
        return
    why = rule.why.format(want=(hits[0].want or "").strip()) if "{want}" in rule.why else rule.why
    extra: dict[str, Any] = {"category": rule.category}
    if rule.cwe:
        extra["cwe"] = rule.cwe
    _report(out, c, hits[: rule.show], rule.severity, rule.id, why, quote, **extra)


def _judge_plain(
    c: Changed,
    diffs: Sequence[Difference],
    model: Callable[[], Model] | None,
    title: str,
    body: str,
    head_line: str | None,
    language: str,
    how: str,
    words: Words | None = None,
    kind: str = "plain",
) -> Judgement:
    out = Judgement()
    if not diffs:
        return out
    for rule in rules.applicable(kind):  # the first rule that fires decides, no model asked
        hits = rule.oracle(c, diffs) if rule.oracle else []
        if hits:
            _apply(out, c, rule, hits, head_line)
            return out
    shown = clearest(diffs)[:3]
    verdict, reason, seconds = decide(c, shown, model, title, body, language, how, words=words)
    out.seconds_model = seconds
    if verdict != "intended":  # the model's rows of the table: changed-result, unexplained, unchecked
        ids = {"bug": "behaviour/changed-result", "unchecked": "behaviour/unchecked"}
        rule = rules.BY_ID[ids.get(verdict, "behaviour/unexplained")]
        why = (
            f"Judged a bug: {reason.rstrip('.')}."
            if verdict == "bug"
            else f"{rule.why} ({reason.rstrip('.')}.)"
        )
        evidence = _judged(shown[: rule.show], reason)
        _report(out, c, shown[: rule.show], rule.severity, rule.id, why, head_line, shown, evidence=evidence)
    else:
        _list(out, c, shown, reason)
    return out


def _judged(shown: Sequence[Difference], reason: str) -> str:
    """The finding's evidence: its examples, then why the judge decided as it did."""
    return " | ".join(d.example() for d in shown) + f" | judge: {reason}"


def decide(
    c: Changed,
    diffs: Sequence[Difference],
    model: Callable[[], Model] | None,
    title: str,
    body: str,
    language: str = "",
    how: str = "verdict",
    *,
    words: Words | None = None,
) -> tuple[str, str, float]:
    """The verdict on differences no rule decides: "bug" | "unexplained" | "unchecked" | "intended", why, s.

    First a test the change adds that uses the callable accounts for it (addedtests.py). Then, with
    `how="verdict"` (the default), the model says whether the change's own words (`words`: title,
    description, commit messages, added docs) account for the examples, its quote checked (accounts.py):
    intended; if not, "bug" when a blind comparison in both orders prefers base's results, "unexplained"
    ("is this intended?") otherwise; "unchecked" (the same, lower) when no model read the words.
    `how="probabilities"`: each result is put to the model alone ("`f(x)` returns `y`: is this right?");
    base's likelier by `BUG_MARGIN` is a bug (the same question for both, neither labelled; a backend
    without token probabilities gets the verdict question). At 1.5B neither separates bugs from intended
    changes on the dev set
    (docs/quality.md, bench/judge.py); the verdict path is the default: it flagged none of the intended."""
    tested = addedtests.account(c, words.tests) if words is not None else None
    if tested:  # the author's own account, in code: no model asked
        return "intended", tested, 0.0
    if model is None:
        return "unchecked", "not checked against the change's text (no model)", 0.0
    scored = (
        plausibility.margin(c, diffs, model(), title, body, _function(c)) if how == "probabilities" else None
    )
    if scored is not None:
        margin, seconds = scored
        if margin >= plausibility.BUG_MARGIN:
            why = f"the old results read as right for `{c.name}` and the new ones do not ({margin:+.1f})"
            return "bug", why, seconds
        if margin <= -plausibility.BUG_MARGIN:
            return "intended", f"the new results read as right for `{c.name}` ({margin:+.1f})", seconds
        return "intended", f"not clearly a bug (the old and new results read alike, {margin:+.1f})", seconds
    told = words or Words(title, body)
    answer = accounts.ask(_function(c), diffs, model(), told, language)
    if answer.accounted:
        return "intended", answer.why, answer.seconds
    # not accounted for: a blind comparison in both orders preferring base's results makes it a bug
    confirmed, more = _confirm(c, diffs, model, language)
    seconds = answer.seconds + more
    if confirmed:
        return "bug", f"{answer.why}, and blind comparisons in both orders prefer the old results", seconds
    why = f"{answer.why}; blind comparisons did not both prefer the old results"
    return "unexplained" if answer.read else "unchecked", why, seconds


_GUESSED = ("boundary", "model", "hypothesis")


def _guessed_wrong_type(c: Changed, d: Difference) -> bool:
    """A generated input for a parameter without a type hint is a guess at its type; head raising TypeError
    on it says the guess was outside what the function takes (a list given an int), not that head broke.
    Calls from the tests and the docstring's examples are real uses and always count."""
    if d.origin not in _GUESSED or d.head.get("kind") != "raise" or d.head.get("type") != "TypeError":
        return False
    return any(p.annotation is None for p in call_params(c) if p.kind == "positional")  # not `self`


def _function(c: Changed) -> str:
    """The changed function as both questions show it: name, file, signature, docstring."""
    return (
        f"Function `{c.qualname}` in {c.path}:\n```python\n{c.signature}\n```\n"
        f"Docstring: {c.docstring[:600] or '(none)'}\n\n"
    )


def _confirm(
    c: Changed, diffs: Sequence[Difference], model: Callable[[], Model], language: str
) -> tuple[bool, float]:
    """Does the model, shown both results unlabelled (no 'before'/'after', no change description), prefer
    base's in both orders? A small model tends to pick a position, not a version: one that answers by
    position is unsure, and the first verdict does not stand. (confirmed, seconds)"""
    picks, seconds = [], 0.0
    for head_first in (True, False):
        answer, took = _blind(c, diffs, model, language, head_first)
        seconds += took
        if answer is None:
            return False, seconds  # no usable opinion: not confirmed
        picks.append(answer == ("second" if head_first else "first"))  # True: it prefers base's result
        if not picks[-1]:
            break
    return all(picks), seconds


def _blind(
    c: Changed, diffs: Sequence[Difference], model: Callable[[], Model], language: str, head_first: bool
) -> tuple[str | None, float]:
    def row(d: Difference) -> str:
        one, two = (d.after, d.before) if head_first else (d.before, d.after)
        return f"- `{d.call}`: first version {one}; second version {two}"

    prompt = (
        f"{_function(c)}Two versions of it give different results on the same inputs:\n"
        + "\n".join(row(d) for d in diffs)
        + "\n\nWhich version's results are correct for this function?"
    )
    system = prompts.load("behaviour_confirm") + language_instruction(language)
    data, seconds = ask_object(model(), system, prompt, CONFIRM_SCHEMA, max_tokens=120)
    answer = data.get("correct")
    return (answer if answer in ("first", "second", "unsure") else None), seconds


def judge_new(c: Changed, calls: Sequence[Call], head_line: str | None) -> Judgement:
    """A callable the change adds: failing doctest examples, hangs and crashes on its inputs."""
    out = Judgement()
    bad: list[Difference] = []
    for call in calls:
        kind = call.result.get("kind")
        if call.want is not None and not _doctest_ok(call):
            origin, before = "doctest", f"(docstring expects) {call.want.strip() or 'no output'}"
        elif kind in ("timeout", "crash") or (
            kind == "raise" and call.result.get("type") in oracles.ALWAYS_BUGS
        ):
            origin, before = call.origin, "(new function)"
        else:
            continue
        got = describe(call.result)
        bad.append(
            Difference(call.callable, call.text(), origin, before, got, {"kind": "return"}, call.result)
        )
    if bad:
        parts = [
            f"`{d.call}` {d.after}"
            + (f", its docstring expects `{d.before.split(') ', 1)[-1]}`" if d.origin == "doctest" else "")
            + _where(d)
            for d in bad[:2]
        ]
        out.findings.append(
            Finding(
                path=c.path,
                line=c.anchor,
                message=f"New function `{c.qualname}` fails on concrete inputs: " + "; ".join(parts) + ".",
                severity="medium",
                category="bug",
                source="behaviour",
                rule_id="behaviour/new-callable",
                evidence="; ".join(f"{d.call}: {d.after}" for d in bad[:3]),
                quote=head_line,
            )
        )
    return out


def _doctest_ok(call: Call) -> bool:
    return oracles.holds(call.want, call.result)
