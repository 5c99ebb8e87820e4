"""The behaviour rules as data: one row per rule (id, severity, oracle, why, origin), in the order the judge
tries them (judge.py iterates over `RULES`; bench/rulehits.py prints each rule's hits per corpus).

An oracle takes the changed callable and its differences (base against head on the same inputs) and
returns the differences it fires on, clearest first, or [] when it does not fire. A `report` rule makes a
finding of them; a `list` rule lists the differences as intended (its `why` is the reason). Among the
plain rules the first that fires decides; the variant rules (calls from the tests made again with an
argument varied) only add a finding where no plain rule or the model made one. Rows without an oracle
are decided elsewhere (the model's question in judge.decide, a new callable in judge.judge_new): they are
here so every rule a finding can carry has its row and its origin.

`origin` says where a rule came from, honestly: a general oracle (a new exception, a lost return value)
holds for any code; a rule shaped by a studied case names it. A rule earns its place when it hits on
cases from at least three projects, or is a general oracle (issue 26); `general` marks the latter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import varied
from .callables import Changed
from .compare import Difference
from .oracles import (
    LOST_CHECK_WHY,
    NESTING_WHY,
    PROGRAMMING_WHY,
    example_broken,
    example_holds,
    gained_result,
    lost_message,
    lost_result,
    nesting_broken,
    nesting_mended,
    new_failure,
    programming_error,
)
from .varied import _BREAK_WHY, _WRAPPED_WHY, edge_failure, lets_break_through, lost_check, wrapped_fails

Oracle = Callable[[Changed, Sequence[Difference]], list[Difference]]


@dataclass(frozen=True)
class Rule:
    id: str  # the finding's rule_id
    severity: str  # of its finding ("info" for a `list` rule)
    oracle: Oracle | None  # None: decided outside the table (see the module docstring)
    why: str  # what it holds, told in the finding (or the listed reason); `{want}`: the docstring's value
    origin: str  # the case or idea it came from
    general: bool = False  # a plain general oracle, true of any code
    action: str = "report"  # "report" | "list"
    kind: str = "plain"  # the differences it sees: "plain" | "wrapped" (argument in a proxy) | "line break"
    # | "edge" (an argument at an edge of its type) | "steered" (an argument the model aimed at the change)
    # | "outer" (the test's call of a function that reaches it, made again with an argument varied)
    show: int = 2  # examples shown in the finding
    category: str = "bug"
    cwe: str | None = None


# ---------------------------------------------------------------- the table

RULES: tuple[Rule, ...] = (
    Rule(
        "behaviour/new-failure",
        "high",
        new_failure,
        "It raises, hangs or crashes now on an input it handled before.",
        "general oracle: a new exception, hang or crash on an input the old code handled",
        general=True,
        show=3,
    ),
    Rule(
        "behaviour/programming-error",
        "medium",
        programming_error,
        PROGRAMMING_WHY,
        "general oracle: an error that is a bug whatever the input (NameError, UnboundLocalError, endless "
        "recursion), new on an input where the old code returned or raised something else",
        general=True,
    ),
    Rule(
        "behaviour/nesting",
        "medium",
        nesting_broken,
        NESTING_WHY,
        "attrs af9c510 (validators.disabled() nested); the idea: a context manager restores what it found",
        show=1,
    ),
    Rule(
        "behaviour/nesting-restored",
        "info",
        nesting_mended,
        "used inside itself, it now puts back the state it found (it did not before)",
        "the reverse of behaviour/nesting",
        action="list",
        show=3,
    ),
    Rule(
        "behaviour/docstring-example",
        "medium",
        example_broken,
        "Its docstring expects `{want}`.",
        "general oracle: the callable's own documented example is its spec",
        general=True,
    ),
    Rule(
        "behaviour/docstring-example-holds",
        "info",
        example_holds,
        "the docstring's example holds now (it did not before the change)",
        "the reverse of behaviour/docstring-example",
        general=True,
        action="list",
        show=3,
    ),
    Rule(
        "behaviour/lost-result",
        "medium",
        lost_result,
        "It returns None now where it returned a value.",
        "general oracle: a lost return value (a missing `return`)",
        general=True,
    ),
    Rule(
        "behaviour/lost-message",
        "medium",
        lost_message,
        "The exception has no message now where it had one.",
        "attrs FrozenError (a class attribute `args` shadowing the message); general: an error that "
        "said what went wrong says nothing now",
        general=True,
    ),
    Rule(
        "behaviour/lost-check",
        "medium",
        lost_check,
        LOST_CHECK_WHY,
        "general oracle: a removed input check (the raise the change deletes rejected this input)",
        general=True,
    ),
    Rule(
        "behaviour/returns-a-value-now",
        "info",
        gained_result,
        "it returns a value now where it returned None before",
        "the reverse of behaviour/lost-result",
        general=True,
        action="list",
        show=3,
    ),
    Rule(
        "behaviour/changed-result",
        "medium",
        None,
        "the change's words do not account for it and blind comparisons in both orders prefer the old "
        "results (judge.decide)",
        "general: any other difference, put to the model",
        general=True,
    ),
    Rule(
        "behaviour/unexplained",
        "medium",
        None,
        "The change's title, description, commit messages and documentation do not say it now does this: "
        "is this intended?",
        "issue 26: the small model can tell whether the change's own words account for a difference; "
        "medium, calibrated on the tuning half's ordinary commits and the dev set (docs/quality.md)",
        general=True,
    ),
    Rule(
        "behaviour/unchecked",
        "low",
        None,
        "It now does this, and no model read the change's words to see whether they say so: is this "
        "intended?",
        "the twin of behaviour/unexplained when the words were not read (no model, or no answer from it)",
        general=True,
    ),
    Rule(
        "behaviour/accepts-line-break",
        "medium",
        lets_break_through,
        _BREAK_WHY,
        "requests bc7dd0f (header regexes `\\Z` -> `$`); the idea: CRLF injection through `$`",
        kind="line break",
        category="security",
        cwe="CWE-93",
    ),
    Rule(
        "behaviour/wrapped-input",
        "medium",
        wrapped_fails,
        _WRAPPED_WHY,
        "requests 6404f34 (stream detection on a proxied iterator); the idea: duck typing lost to isinstance",
        kind="wrapped",
    ),
    Rule(
        "behaviour/edge-failure",
        "medium",
        edge_failure,
        "A call from the tests made again with one argument at an edge of its type (empty, 0, negated) "
        "returned before this change and fails now.",
        "general oracle: a new exception on the tests' own calls one step from their inputs (issue 26: "
        "the bugs tests miss are often an empty input or a negative size away)",
        general=True,
        kind="edge",
    ),
    Rule(
        "behaviour/edge-lost-check",
        "medium",
        lost_check,
        LOST_CHECK_WHY,
        "general oracle: a removed input check, seen on the tests' own calls at an edge of their inputs",
        general=True,
        kind="edge",
    ),
    Rule(
        "behaviour/edge-programming-error",
        "medium",
        programming_error,
        PROGRAMMING_WHY,
        "general oracle: behaviour/programming-error on the tests' own calls at an edge of their inputs",
        general=True,
        kind="edge",
    ),
    Rule(
        "behaviour/steered-failure",
        "medium",
        edge_failure,
        "A call from the tests made again with one argument set to a value aimed at the changed lines "
        "returned before this change and fails now.",
        "general oracle: a new exception on the tests' own call with one argument the model chose from the "
        "diff (issue 26 item 5: the model names the input, running it is the evidence)",
        general=True,
        kind="steered",
    ),
    Rule(
        "behaviour/steered-lost-check",
        "medium",
        lost_check,
        LOST_CHECK_WHY,
        "general oracle: a removed input check, seen on the tests' own call with one argument the model "
        "chose from the diff",
        general=True,
        kind="steered",
    ),
    Rule(
        "behaviour/steered-programming-error",
        "medium",
        programming_error,
        PROGRAMMING_WHY,
        "general oracle: behaviour/programming-error on the tests' own call with one argument the model "
        "chose from the diff",
        general=True,
        kind="steered",
    ),
    Rule(
        "behaviour/outer-failure",
        "medium",
        edge_failure,
        "A test's call of the function that reaches it, made again with one argument varied (another letter "
        "case, a line break at its end, an edge of its type), returned before this change and fails now.",
        "general oracle: a new exception on an input one step from the tests' own, given to the public "
        "function the test called (the changed callable's own arguments are objects it built)",
        general=True,
        kind="outer",
    ),
    Rule(
        "behaviour/outer-invariance",
        "medium",
        varied.lost_invariance,
        "Before this change that variation of the test's input gave the same result as the input itself "
        "(up to the variation); now it gives another one: the result depends on something it ignored.",
        "general oracle (metamorphic testing): a result invariant under letter case, a final line break or "
        "an edge value at base is not at head, on the tests' own public calls; letter case was suggested "
        "by the tuning case sqlparse 111b35c (function grouping lost for a lowercase `as`)",
        general=True,
        kind="outer",
    ),
    Rule(
        "behaviour/new-callable",
        "medium",
        None,
        "a new function fails its own docstring example, hangs, crashes or raises an always-a-bug error",
        "general oracle: a new function's documented example, a hang or crash (judge.judge_new)",
        general=True,
    ),
)

BY_ID = {r.id: r for r in RULES}


def applicable(kind: str) -> list[Rule]:
    """The rules with an oracle for this kind of difference, in the judge's order."""
    return [r for r in RULES if r.oracle is not None and r.kind == kind]
