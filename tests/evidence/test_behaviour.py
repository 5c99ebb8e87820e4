"""Behaviour evidence: changed callables, the tracer in a real pytest run, base/head comparison, generated
inputs, the judge, and whole reviews where the tests pass at head but a function's result changed."""

from __future__ import annotations

import ast
import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from bot.change.diff import is_test_path, parse
from bot.cli.root import cli
from bot.config import Config, SandboxConfig
from bot.evidence import testrun
from bot.evidence.behaviour import compare, generate, harness, judge, oracles, plausibility
from bot.evidence.behaviour.callables import Changed, Param, changed_callables
from bot.evidence.behaviour.engine import BehaviourEvidence
from bot.evidence.behaviour.testfiles import ChangedTests, changed_test_files, changed_tests
from bot.evidence.detect import PYTEST
from bot.models.scripted import ScriptedModel
from bot.sandbox.bubblewrap import BubblewrapSandbox

from ..conftest import git

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap not installed (apt-get install bubblewrap)"
)
SCHEMA = json.loads((Path(__file__).parents[2] / "bot/schemas/review.schema.json").read_text())

SIEVE = '''def sieve(limit):
    """The primes up to limit."""
    primes = []
    for n in range(2, limit + 1):
        if all(n % p > 0 for p in primes):
            primes.append(n)
    return primes
'''
SIEVE_BUG = SIEVE.replace("n % p > 0", "n % p >= 0")
SIEVE_TEST = "from primes import sieve\n\n\ndef test_two_is_prime():\n    assert 2 in sieve(10)\n"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))


def _diff(repo: Path) -> str:
    return git(repo, "diff", "HEAD~1", "HEAD")


def _callables(repo: Path) -> list[Changed]:
    return changed_callables(
        parse(_diff(repo)),
        lambda p: _show(repo, "HEAD~1", p),
        lambda p: _show(repo, "HEAD", p),
        is_test=is_test_path,
    )


def _show(repo: Path, rev: str, path: str) -> str | None:
    proc = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else None


# ---------------------------------------------------------------- changed callables


BASE_MOD = """import os


class Store:
    def get(self, key):
        value = self.data[key]
        return value

    def close(self):
        self.handle.flush()
        self.handle.close()


def untouched(x):
    return x


def check(x):
    if x is None:
        raise ValueError("x")
    return x * 2
"""


def test_modified_added_and_lost_lines_are_mapped_from_the_hunks(make_repo) -> None:
    head = (
        BASE_MOD.replace("        value = self.data[key]\n", "        value = self.data.get(key)\n")
        .replace("        self.handle.close()\n", "")
        .replace('    if x is None:\n        raise ValueError("x")\n', "")
        + "\n\ndef added(n: int) -> int:\n    return n + 1\n"
    )
    repo = make_repo(
        {"store.py": BASE_MOD, "test_store.py": "def test_x():\n    pass\n"},
        {"store.py": head, "test_store.py": "def test_x():\n    assert 1\n"},
    )
    found = {c.qualname: c for c in _callables(repo)}
    assert set(found) == {"Store.get", "Store.close", "check", "added"}  # test files and untouched left out
    assert found["Store.get"].kind == "modified" and found["Store.get"].is_method
    assert found["Store.close"].kind == "lost-lines"  # a removed close() counts
    assert found["check"].kind == "lost-lines" and found["check"].base_span != found["check"].head_span
    assert found["added"].kind == "added" and found["added"].base_span is None
    head_lines = head.splitlines()
    assert head_lines[found["Store.get"].anchor - 1].strip() == "value = self.data.get(key)"
    assert head_lines[found["Store.close"].anchor - 1].strip() == "self.handle.flush()"  # above the removal
    assert head_lines[found["check"].anchor - 1].startswith("def check")
    assert found["added"].params[0].annotation == "int"


CLASSES = """class Limits:
    \"\"\"Limits.\"\"\"

    size = 10

    def get(self):
        return self.size

    def __str__(self):
        return "limits"


class Quiet:
    \"\"\"Said once.\"\"\"

    def show(self):
        return 1
"""


@pytest.mark.parametrize("resized", [True, False])
def test_a_class_counts_when_its_own_code_changes_or_it_loses_a_method(make_repo, resized: bool) -> None:
    head = (
        CLASSES.replace("    size = 10\n", "    size = 12\n" if resized else "    size = 10\n")
        .replace('    def __str__(self):\n        return "limits"\n', "")
        .replace('"""Said once."""', '"""Said twice."""')  # a docstring is not code
        + "\n\nclass New:\n    x = 1\n"  # a new class is new code: its methods count, not it
    )
    repo = make_repo({"lim.py": CLASSES}, {"lim.py": head})
    found = {c.qualname: c for c in _callables(repo)}
    assert set(found) == {"Limits"}, found
    c = found["Limits"]
    assert c.is_class and c.params == () and not c.is_method
    if resized:
        assert c.kind == "modified" and head.splitlines()[c.anchor - 1].strip() == "size = 12"
    else:  # only the removed method: above the removal
        assert c.kind == "lost-lines" and head.splitlines()[c.anchor - 1].strip() == "return self.size"
    # called as `Limits()`, never put to the model for calls, and not traced: with no function among the
    # targets the test runs get no tracer at all
    asked: list[int] = []
    plan = generate.plan([c], max_calls=4, model=lambda: asked.append(1) or ScriptedModel({"replies": []}))
    assert [(i.args, i.instance) for i in plan.inputs] == [((), False)] and not asked
    assert plan.inputs[0].expr(c.qualname) == "" and not plan.skipped
    sized = dataclasses.replace(
        c, params=(Param("size", None, True, "positional"),)
    )  # __init__(self, size=10)
    generate.plan([sized], max_calls=4, model=lambda: asked.append(1) or ScriptedModel({"replies": []}))
    assert not asked
    stage = BehaviourEvidence(None, Config(), lambda p: None, lambda p: None, targets=[c])  # type: ignore[arg-type]
    assert stage.trace_hook(["python", "-m", "pytest"]) is None


EXC = """class FrozenError(AttributeError):
    \"\"\"A frozen instance was changed.\"\"\"

    def __init__(self):
        msg = "can't set attribute"
        super().__init__(msg)
        self.msg = msg
"""
EXC_BUG = """class FrozenError(AttributeError):
    \"\"\"A frozen instance was changed.\"\"\"

    msg = "can't set attribute"
    args = [msg]
"""


@needs_bwrap
def test_an_exception_class_that_loses_its_message_is_a_finding_on_its_changed_line(
    make_repo, tmp_path
) -> None:
    """No function changes: the class's own code does (its __init__ is gone, class attributes instead).
    Built at base and head, `str(FrozenError())` said "can't set attribute" and now says nothing."""
    repo = make_repo({"pkg/__init__.py": "", "pkg/errors.py": EXC}, {"pkg/errors.py": EXC_BUG})
    data = _review_json(repo, tmp_path)
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert (f["path"], f["line"], f["severity"]) == ("pkg/errors.py", 4, "medium"), f
    assert f["rule_id"] == "behaviour/lost-message", f
    assert 'FrozenError(): before FrozenError("can\'t set attribute")' in f["evidence"], f
    assert "after FrozenError()" in f["evidence"], f


@pytest.mark.parametrize(
    ("before", "after", "rule"),
    [
        (
            {"kind": "raise", "type": "KeyError", "message": "'id'"},
            {"kind": "raise", "type": "KeyError", "message": ""},
            "behaviour/lost-message",
        ),
        (
            {"kind": "return", "repr": "E('x')", "message": "x"},
            {"kind": "return", "repr": "E()", "message": ""},
            "behaviour/lost-message",
        ),
        (
            {"kind": "raise", "type": "KeyError", "message": ""},
            {"kind": "raise", "type": "KeyError", "message": "'id'"},
            None,
        ),  # a message gained: the model is asked
        (
            {"kind": "raise", "type": "KeyError", "message": "'id'"},
            {"kind": "raise", "type": "ValueError", "message": ""},
            None,
        ),  # another exception: not the same error losing its words
        ({"kind": "return", "repr": "'x'"}, {"kind": "return", "repr": "''"}, None),  # not an exception
    ],
)
def test_an_error_with_a_message_at_base_and_none_at_head_is_a_finding_without_the_model(
    before: dict, after: dict, rule: str | None
) -> None:
    model = ScriptedModel(
        {"replies": [], "default": {"text": json.dumps({"verdict": "intended", "reason": "x"})}}
    )
    j = judge.judge(
        _target("def f(x):\n    return x\n"),
        [_diff_of(before, after)],
        model=lambda: model,
        title="",
        body="",
        head_line="return x",
    )
    # no rule decides: the change's (empty) words account for nothing, so the reviewer is asked
    assert [f.rule_id for f in j.findings] == [rule or "behaviour/unexplained"]
    assert bool(model.requests) == (rule is None)


# ---------------------------------------------------------------- the tracer in a real pytest run


TRACED = """def grow(xs, n):
    xs.append(n)
    return len(xs)


def fails(x):
    try:
        int("nope")
    except ValueError:
        pass
    if x < 0:
        raise ValueError(f"negative: {x}")
    return Plain()


class Plain:
    def __init__(self):
        self.keys = ["new", "old"]
"""
TRACED_TEST = """import pytest
from mod import grow, fails


def test_grow():
    for i in range(5):
        grow([0], i)


def test_grow_again():
    grow([7], 1)
    grow([0], 1)


def test_fails():
    fails(1)
    with pytest.raises(ValueError):
        fails(-2)
"""


@needs_bwrap
def test_tracer_records_calls_results_exceptions_and_mutation_in_the_sandbox(make_repo, tmp_path) -> None:
    repo = make_repo({"mod.py": TRACED, "test_mod.py": TRACED_TEST}, {"mod.py": TRACED + "\n# touched\n"})
    targets = [
        Changed("mod.py", q, "modified", (1, 3), (1, 3), 1, "", "", (), False, False, False)
        for q in ("grow", "fails")
    ]
    hook = harness.trace_hook(targets, max_calls=5, per_test=3)
    runner = testrun.TestRunner(BubblewrapSandbox(SandboxConfig()), list(PYTEST), 120, tmp_path / "c")
    run = runner.at_commit(repo, git(repo, "rev-parse", "HEAD").strip(), hook)
    assert run.passed == 3, run.output
    text = runner.collected_at(git(repo, "rev-parse", "HEAD").strip(), hook)
    calls, dropped = compare.from_trace(text)
    grow = [c for c in calls if c.callable == "mod.py::grow"]
    # 3 per test (the loop's last two are thinned out), so the next test's calls are seen too, until the
    # callable's cap of 5; in the order they were made
    assert [(c.origin.split("::")[1], c.args) for c in grow] == [
        *[("test_grow", (("xs", "[0]"), ("n", str(i)))) for i in range(3)],
        ("test_grow_again", (("xs", "[7]"), ("n", "1"))),
        ("test_grow_again", (("xs", "[0]"), ("n", "1"))),
    ]
    assert dropped == {} and '"thinned": {"mod.py::grow": 2}' in text
    assert grow[1].mutated == (("xs", "[0, 1]"),) and grow[1].result == {"kind": "return", "repr": "2"}
    # the same inputs and outcome in two tests are one line of the file, with both places
    assert sum('"[0]"' in line and '"n": "1"' in line for line in text.splitlines()) == 1
    assert grow[4].origin.endswith("test_grow_again") and grow[4].mutated == grow[1].mutated
    fails = [c for c in calls if c.callable == "mod.py::fails"]
    assert fails[0].result == {"kind": "return", "repr": "Plain(keys=['new', 'old'])"}  # fields, not address
    assert fails[1].result == {"kind": "raise", "type": "ValueError", "message": "negative: -2"}
    assert fails[0].origin == "test_mod.py::test_fails"
    # the cache key holds the hook: the same commit without it is a separate run
    assert runner._key("x", hook) != runner._key("x") and runner.runs == 1


# ---------------------------------------------------------------- compare


def _call(args: str, result: dict, origin: str = "t::a", mutated: tuple = ()) -> compare.Call:
    return compare.Call("p.py::f", origin, (("x", args),), result, mutated)


def test_same_inputs_different_results_are_differences_matched_call_by_call() -> None:
    ret = lambda r: {"kind": "return", "repr": r}  # noqa: E731
    base = [_call("1", ret("1")), _call("2", ret("4")), _call("3", ret("9")), _call("5", ret("0"), "t::b")]
    head = [
        _call("0", ret("0")),  # an extra call at head shifts nothing
        _call("1", ret("1")),
        _call("2", ret("5")),
        _call("3", {"kind": "raise", "type": "KeyError", "message": "'x'"}),
        _call("5", ret("0"), "t::other"),  # another test: not comparable
    ]
    diffs = compare.differences(base, head)
    assert [(d.call, d.before, d.after) for d in diffs] == [
        ("f(3)", "9", "raises KeyError: 'x'"),  # head failures first
        ("f(2)", "4", "5"),
    ]
    assert diffs[0].head_failed and not diffs[1].head_failed
    mutated = compare.differences(
        [_call("[1]", ret("1"))], [_call("[1]", ret("1"), mutated=(("x", "[1, 2]"),))]
    )
    assert mutated and mutated[0].after == "1 and changes x to [1, 2]"


# ---------------------------------------------------------------- generated inputs


def _target(source: str, kind: str = "modified") -> Changed:
    from bot.evidence.behaviour import callables as cm

    tree = cm.parse(source)
    d = cm.definitions(tree)[0]
    return cm._record(
        "m.py",
        d,
        d if kind != "added" else None,
        kind,
        d.span[0],
        source.splitlines(),
        source.splitlines(),
        cm.module_docs(tree),
    )


def test_hypothesis_inputs_from_type_hints_are_identical_for_base_and_head() -> None:
    c = _target("def f(xs: list[int], name: str, k: int | None = None) -> int:\n    return 0\n")
    a, b = generate.hypothesis_inputs(c, 12), generate.hypothesis_inputs(c, 12)
    assert a == b and len(a) >= 5
    for inp in a:
        xs, name = (ast.literal_eval(x) for x in inp.args)
        assert isinstance(xs, list) and all(isinstance(v, int) for v in xs) and isinstance(name, str)
    assert generate.hypothesis_inputs(_target("def f(conn: Connection):\n    pass\n"), 5) == []


def test_boundary_values_come_from_the_codes_literals_and_doctests_are_kept() -> None:
    src = 'def f(n):\n    """\n    >>> f(3)\n    4\n    """\n'
    src += "    if n > 40:\n        return 0\n    return n + 1\n"
    c = _target(src)
    values = {x.args[0] for x in generate.boundary_inputs(c, 50)}
    assert {"39", "40", "41", "0"} <= values
    assert generate.doctests(c)[0].doctest == (("f(3)", "4\n"),)


def test_model_proposals_are_literals_only() -> None:
    c = _target("def f(a, b=1):\n    return a\n")
    reply = {
        "calls": [{"args": ["[1, 2]"]}, {"args": ["__import__('os').system('x')"]}, {"args": ["1", "2", "3"]}]
    }
    model = ScriptedModel({"replies": [], "default": {"text": json.dumps(reply)}})
    got, _ = generate.model_inputs(c, model)
    assert [i.args for i in got] == [("[1, 2]",)]


# ---------------------------------------------------------------- judge


def _diff_of(before: dict, after: dict) -> compare.Difference:
    return compare.Difference(
        "m.py::f",
        "f(10)",
        "boundary",
        compare.describe(before),
        compare.describe(after),
        before,
        after,
        (("0", "10"),),
    )


def test_judge_new_failure_is_high_without_asking_the_model() -> None:
    c = _target("def f(n):\n    return n\n")
    boom = ScriptedModel({"replies": [], "default": {"raise": "must not be asked"}})
    j = judge.judge(
        c,
        [
            _diff_of(
                {"kind": "return", "repr": "1"},
                {"kind": "raise", "type": "ZeroDivisionError", "message": "division by zero"},
            )
        ],
        model=lambda: boom,
        title="",
        body="",
        head_line="return n",
    )
    assert [f.severity for f in j.findings] == ["high"] and not boom.requests
    assert "f(10)" in j.findings[0].message and "ZeroDivisionError" in j.findings[0].evidence


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        ({"accounted": "yes", "quote": "f returns 2n now"}, "intended"),
        ({"accounted": "yes", "quote": "f squares faster"}, "unexplained"),  # a quote the text lacks
        ({"accounted": "yes", "quote": ""}, "unexplained"),
        ({"accounted": "no", "quote": ""}, "unexplained"),
        ({}, "unchecked"),  # no usable answer: the words were not read
    ],
)
def test_the_model_is_asked_whether_the_changes_words_account_for_the_difference(
    answer: dict, outcome: str
) -> None:
    """The question a small model can answer: does the author's text say the code now does this? A yes
    must quote that text; anything else asks the reviewer "is this intended?" at medium severity (low
    when the model gave no usable answer, so the words went unread), the judge's reasons in the evidence."""
    c = _target('def f(n):\n    """Square n."""\n    return n * n\n')
    model = ScriptedModel(
        {
            "replies": [{"match": "account for this difference", "text": json.dumps(answer)}],
            "default": {"text": json.dumps({"correct": "unsure", "reason": "x"})},
        }
    )
    words = judge.Words("Speed up f", "", "f returns 2n now, as the spec says", "")
    j = judge.judge(
        c,
        [_diff_of({"kind": "return", "repr": "100"}, {"kind": "return", "repr": "20"})],
        model=lambda: model,
        title="Speed up f",
        body="",
        head_line="return n * n",
        words=words,
    )
    prompt = model.requests[0][-1].content
    for part in ("f(10)", "100", "20", "Square n.", "Speed up f", "Commit messages: f returns 2n now"):
        assert part in prompt
    if outcome == "intended":
        assert not j.findings and [(b.call, b.before, b.after) for b in j.changes] == [("f(10)", "100", "20")]
        assert j.changes[0].reason == 'the change says so: "f returns 2n now"' and len(model.requests) == 1
    else:
        (f,) = j.findings
        expected = ("medium", "behaviour/unexplained") if answer else ("low", "behaviour/unchecked")
        assert (f.severity, f.rule_id, f.source) == (*expected, "behaviour")
        assert "is this intended?" in f.message and "`f(10)` returned `100`" in f.message
        assert f.evidence.startswith("f(10): before 100; after 20 | judge: ") and not j.changes
        if answer.get("quote") == "f squares faster":
            assert "is not in the change's text" in f.evidence


def test_a_change_without_words_is_not_put_to_the_verdict_question_and_without_a_model_is_unchecked() -> None:
    """No words: nothing accounts for the difference (medium, the model asked only the blind questions).
    No model: the words were not read, so the same question is asked at low severity."""
    c = _target('def f(n):\n    """Square n."""\n    return n * n\n')
    model = ScriptedModel(
        {"replies": [], "default": {"text": json.dumps({"correct": "unsure", "reason": ""})}}
    )
    d = _diff_of({"kind": "return", "repr": "100"}, {"kind": "return", "repr": "20"})
    kw = {"title": "", "body": "", "head_line": None}
    (f,) = judge.judge(c, [d], model=lambda: model, **kw).findings
    assert "no title, description, commit message" in f.evidence
    assert (f.rule_id, f.severity) == ("behaviour/unexplained", "medium")
    assert all("account for" not in m[-1].content for m in model.requests)  # only the blind questions
    (g,) = judge.judge(c, [d], model=None, **kw).findings
    assert (g.rule_id, g.severity) == ("behaviour/unchecked", "low") and "no model" in g.evidence


@pytest.mark.parametrize(
    ("head_first", "base_first", "stands"),
    [
        ("second", "first", True),
        ("second", "second", False),
        ("first", "first", False),
        ("unsure", "x", False),
    ],
)
def test_a_bug_verdict_stands_only_when_blind_comparisons_in_both_orders_prefer_base(
    head_first: str, base_first: str, stands: bool
) -> None:
    """A difference the change's words do not account for is asked again without labels in both orders;
    a model that picks a position (always 'second', as the 1.5B model did on the dev set) is unsure, and
    only 'base's result is right' both times makes it `behaviour/changed-result` (else the
    'is this intended?' question, `behaviour/unexplained`)."""
    c = _target('def f(n):\n    """Square n."""\n    return n * n\n')
    model = ScriptedModel(
        {
            "replies": [
                {"match": "account for this", "text": json.dumps({"accounted": "no", "quote": ""})},
                {
                    "match": "first version 20; second",
                    "text": json.dumps({"correct": head_first, "reason": "y"}),
                },
                {
                    "match": "first version 100; second",
                    "text": json.dumps({"correct": base_first, "reason": "z"}),
                },
            ],
            "default": {"text": "{}"},
        }
    )
    j = judge.judge(
        c,
        [_diff_of({"kind": "return", "repr": "100"}, {"kind": "return", "repr": "20"})],
        model=lambda: model,
        title="Speed up f",
        body="",
        head_line="return n * n",
    )
    blind = model.requests[1][-1].content
    assert "first version 20; second version 100" in blind and "before" not in blind
    assert "Speed up f" not in blind  # the author's claims are not in the blind question
    if stands:
        assert [f.rule_id for f in j.findings] == ["behaviour/changed-result"] and len(model.requests) == 3
        assert [f.severity for f in j.findings] == ["medium"] and "prefer the old results" in j.findings[
            0
        ].evidence
    else:
        assert [(f.rule_id, f.severity) for f in j.findings] == [("behaviour/unexplained", "medium")]
        assert "blind comparisons did not both prefer" in j.findings[0].evidence and not j.changes


@pytest.mark.parametrize(
    ("base_yes", "head_yes", "outcome"),
    [(-0.1, -3.0, "bug"), (-3.0, -0.1, "right"), (-0.7, -0.9, "alike")],
)
def test_with_token_probabilities_each_result_is_put_to_the_model_alone(
    base_yes: float, head_yes: float, outcome: str
) -> None:
    """With `behaviour.judge: probabilities`, the model is asked about each version's result on its own
    ("`f(10)` returns `100`: right?"), the same question for both, so a lean to "yes" cancels out; base's
    results reading clearly likelier is a bug, and no verdict question is asked."""
    c = _target('def f(n):\n    """Square n."""\n    return n * n\n')
    model = ScriptedModel(
        {
            "replies": [],
            "default": {"raise": "the verdict question must not be asked"},
            "scores": [
                {"match": "returns `100`", "logprobs": {"yes": base_yes, "no": -1.0}},
                {"match": "returns `20`", "logprobs": {"yes": head_yes, "no": -1.0}},
            ],
        }
    )
    j = judge.judge(
        c,
        [_diff_of({"kind": "return", "repr": "100"}, {"kind": "return", "repr": "20"})],
        model=lambda: model,
        title="Speed up f",
        body="",
        head_line="return n * n",
        how="probabilities",
    )
    asked = [m[-1].content for m in model.scored]
    assert (
        not model.requests and len(asked) == 2 and all("Square n." in a and "Speed up f" in a for a in asked)
    )
    assert not any("before" in a or "after" in a for a in asked)  # neither result is labelled
    assert ("100" in asked[0]) != ("100" in asked[1])  # one result per question
    if outcome == "bug":
        (f,) = j.findings
        assert f.rule_id == "behaviour/changed-result" and "read as right" in f.message
        assert "before 100; after 20" in f.evidence
    else:
        assert not j.findings and [(b.call, b.before, b.after) for b in j.changes] == [("f(10)", "100", "20")]
        assert ("new results read as right" if outcome == "right" else "read alike") in j.changes[0].reason


def test_a_result_that_changes_an_argument_is_told_as_such() -> None:
    assert (
        plausibility.states("f(xs)", "None and changes xs to [1]")
        == "`f(xs)` returns `None` and changes xs to [1]."
    )
    assert plausibility.states("f(0)", "raises ValueError: no") == "`f(0)` raises ValueError: no."


@pytest.mark.parametrize(
    ("doc", "rule"),
    [('"""The next permutation."""', "behaviour/lost-result"), ('"""The next one, or None."""', None)],
)
def test_none_where_base_returned_a_value_is_a_finding_without_the_model(doc: str, rule: str | None) -> None:
    c = _target(f"def f(xs):\n    {doc}\n    return xs\n")
    model = ScriptedModel(
        {"replies": [], "default": {"text": json.dumps({"verdict": "intended", "reason": "x"})}}
    )
    j = judge.judge(
        c,
        [_diff_of({"kind": "return", "repr": "[1, 3, 2]"}, {"kind": "return", "repr": "None"})],
        model=lambda: model,
        title="",
        body="",
        head_line="return xs",
    )
    # no rule decides: the change's (empty) words account for nothing, so the reviewer is asked
    assert [f.rule_id for f in j.findings] == [rule or "behaviour/unexplained"]
    assert bool(model.requests) == (rule is None)


def test_informal_docstring_examples_are_the_spec_too() -> None:
    doc = (
        "Examples:\n* sort_array([]) => []\n* sort_array([2, 1]) -> [1, 2]\n"
        'decimal(15)   # returns "db1111db"\nsort_array([3]) == 1 + 2 = 3\nresort_array([1]) -> [9]\n'
        "sort_array(xs) -> [1]\nsort_array([1]) ➞ [1]."
    )
    assert generate.informal_examples("sort_array", doc) == [
        ("sort_array([])", "[]"),
        ("sort_array([2, 1])", "[1, 2]"),
        ("sort_array([3])", "3"),  # `== 1 + 2 = 3` expects its last value
        ("sort_array([1])", "[1]"),
    ]  # not another function's, not a non-literal argument
    assert generate.informal_examples("decimal", doc) == [("decimal(15)", "'db1111db'")]
    given = (
        'For s = "abcde", c = "ae", the result should be (\'bcd\',False)\n'
        'For num = "AB" the output should be 1.\n'
        "Example:\n    Input: s = 'ab', c = 'b'\n\n    Output: true # a comment\n"
        "For example, the output should be 3\nFor x = 1 the result should be 2\n"
        "is_ok([1, 2]) ==> false\n"
    )
    assert generate.informal_examples("is_ok", given, ("s", "c")) == [
        ("is_ok(s='abcde', c='ae')", "('bcd', False)"),
        ("is_ok(s='ab', c='b')", "True"),  # the `Output:` line below, JSON-style spelling
        ("is_ok([1, 2])", "False"),
    ]  # not `num` or `x` (not its parameters), not "For example"
    assert generate.informal_examples("is_ok", given) == [("is_ok([1, 2])", "False")]  # names unknown
    # a doctest's expected output compares as a value: quotes and wrapping do not matter
    assert oracles.holds('["a b",\n "c"]', {"kind": "return", "repr": "['a b', 'c']"})
    assert not oracles.holds("[1]", {"kind": "return", "repr": "[2]"})


@pytest.mark.parametrize(
    ("doc", "listed"),
    [('"""The next permutation."""', True), ('"""The next one, or None at the end."""', False)],
)
def test_a_value_where_base_returned_none_is_listed_not_judged(doc: str, listed: bool) -> None:
    """None before and a value now is the new code finishing what the old one left undone, unless the
    docstring speaks of returning None (then None may have been right, and the model is asked)."""
    c = _target(f"def f(xs):\n    {doc}\n    return xs\n")
    model = ScriptedModel({"replies": [], "default": {"text": json.dumps({"verdict": "bug", "reason": "x"})}})
    j = judge.judge(
        c,
        [_diff_of({"kind": "return", "repr": "None"}, {"kind": "return", "repr": "[1, 3, 2]"})],
        model=lambda: model,
        title="",
        body="",
        head_line="return xs",
    )
    if listed:
        assert not j.findings and not model.requests and "returns a value now" in j.changes[0].reason
    else:
        assert model.requests and j.findings


def test_new_callables_count_failing_doctests_only() -> None:
    c = _target('def g(n):\n    """\n    >>> g(2)\n    4\n    """\n    return n + 1\n', kind="added")
    calls = [
        compare.Call("m.py::g", "doctest", (), {"kind": "return", "repr": "3"}, expr="g(2)", want="4\n"),
        compare.Call(
            "m.py::g", "hypothesis", (("0", "-1"),), {"kind": "raise", "type": "ValueError", "message": "x"}
        ),
    ]
    (f,) = judge.judge_new(c, calls, "return n + 1").findings
    assert "g(2)" in f.message and "4" in f.message and "ValueError" not in f.message


# ---------------------------------------------------------------- whole reviews


def _config(tmp_path: Path, replies: list[dict], **extra) -> Path:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": replies, "default": {"findings": []}}))
    path = tmp_path / "cfg.yml"
    path.write_text(yaml.safe_dump({"model": {"backend": "scripted", "script": str(script)}, **extra}))
    return path


def _review_json(repo: Path, tmp_path: Path) -> dict:
    """`prereview review --format json` with a scripted model that answers nothing; schema-checked."""
    res = CliRunner().invoke(
        cli, ["review", "--repo", str(repo), "--config", str(_config(tmp_path, [])), "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    jsonschema.validate(data, SCHEMA)
    return data


BUG = [  # the change's words do not account for it, and blind comparisons in both orders prefer base
    {"match": "account for this difference", "text": json.dumps({"accounted": "no", "quote": ""})},
    {"match": r"first version \[2, 3, 4", "text": json.dumps({"correct": "second", "reason": "4 is 2*2"})},
    {"match": r"first version \[2, 3, 5", "text": json.dumps({"correct": "first", "reason": "4 is 2*2"})},
]


@needs_bwrap
def test_tests_pass_at_head_but_the_traced_result_changed(make_repo, tmp_path) -> None:
    repo = make_repo({"primes.py": SIEVE, "test_primes.py": SIEVE_TEST}, {"primes.py": SIEVE_BUG})
    res = CliRunner().invoke(
        cli, ["review", "--repo", str(repo), "--config", str(_config(tmp_path, BUG)), "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    jsonschema.validate(data, SCHEMA)
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert f["path"] == "primes.py" and f["line"] == 5 and f["severity"] == "medium"
    assert "sieve(10): before [2, 3, 5, 7]; after [2, 3, 4, 5, 6, 7, 8, 9, 10]" in f["evidence"]
    assert "test_primes.py::test_two_is_prime" in f["message"]
    assert not any(f["source"] == "tests" for f in data["findings"])  # the tests themselves pass


@needs_bwrap
def test_intended_changes_are_listed_not_reported(make_repo, tmp_path) -> None:
    repo = make_repo({"primes.py": SIEVE, "test_primes.py": SIEVE_TEST}, {"primes.py": SIEVE_BUG})
    ok = {
        "match": "account for this difference",
        "text": json.dumps({"accounted": "yes", "quote": "head change"}),  # the commit message
    }
    res = CliRunner().invoke(
        cli, ["review", "--repo", str(repo), "--config", str(_config(tmp_path, [ok])), "--format", "json"]
    )
    data = json.loads(res.stdout)
    jsonschema.validate(data, SCHEMA)
    assert not [f for f in data["findings"] if f["source"] == "behaviour"]
    assert data["behaviour"][0]["call"] == "sieve(10)" and data["behaviour"][0]["after"].startswith(
        "[2, 3, 4"
    )
    md = CliRunner().invoke(
        cli, ["review", "--repo", str(repo), "--config", str(_config(tmp_path, [ok])), "--format", "markdown"]
    )
    assert "Behaviour changes" in md.stdout and "sieve(10)" in md.stdout


@needs_bwrap
def test_without_tests_generated_inputs_find_the_demo_arithmetic_bug(tmp_path) -> None:
    res = CliRunner().invoke(
        cli, ["review", "--demo", "--config", str(_config(tmp_path, [])), "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    jsonschema.validate(data, SCHEMA)
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert f["severity"] == "high" and f["line"] == 22  # `return sum(values) / (len(values) - 1)`
    assert "average([1.0]): before 1.0; after raises ZeroDivisionError" in f["evidence"]


@needs_bwrap
def test_sandbox_none_runs_nothing_unless_allowed(tmp_path) -> None:
    cfg = _config(tmp_path, [], sandbox={"backend": "none"})
    data = json.loads(
        CliRunner().invoke(cli, ["review", "--demo", "--config", str(cfg), "--format", "json"]).stdout
    )
    assert not [f for f in data["findings"] if f["source"] == "behaviour"]
    assert any("behaviour.allow_unsandboxed" in n for n in data["notes"])


@pytest.mark.model
@needs_bwrap
def test_real_model_judges_the_sieve_change(make_repo, test_model_path, tmp_path) -> None:
    repo = make_repo({"primes.py": SIEVE, "test_primes.py": SIEVE_TEST}, {"primes.py": SIEVE_BUG})
    cfg = tmp_path / "cfg.yml"
    cfg.write_text(yaml.safe_dump({"model": {"name": str(test_model_path)}, "scanners": {"patterns": False}}))
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    jsonschema.validate(data, SCHEMA)
    found = [f for f in data["findings"] if f["source"] == "behaviour"]
    listed = data.get("behaviour", [])
    assert found or listed  # judged either way, the example is there
    if found:
        assert found[0]["line"] == 5 and "sieve(10)" in found[0]["evidence"]
    else:
        assert listed[0]["call"] == "sieve(10)"


def _patch(faulty: str, fixed: str) -> dict:
    return {"match": "Return the fix as JSON", "text": json.dumps({"faulty": faulty, "fixed": fixed})}


@needs_bwrap
def test_a_patch_must_restore_the_base_result_on_the_example_as_well_as_pass_the_tests(
    make_repo, tmp_path
) -> None:
    repo = make_repo({"primes.py": SIEVE, "test_primes.py": SIEVE_TEST}, {"primes.py": SIEVE_BUG})
    bad = "if all(n % p >= 0 for p in primes):"
    replies = [
        *BUG,
        _patch(bad, "if all(n % p >= 0 for p in primes) or n == 4:"),  # tests pass, the example does not
        _patch(bad, "if all(n % p > 0 for p in primes):"),
    ]
    cfg = _config(tmp_path, replies, patches={"candidates": 2})
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    (f,) = [f for f in json.loads(res.stdout)["findings"] if f["source"] == "behaviour"]
    assert f["verified"] and f["suggestion"].strip() == "if all(n % p > 0 for p in primes):"
    assert "example(s) give base's result again" in f["evidence"]
    assert "sieve(10): before [2, 3, 5, 7]; after [2, 3, 4" in f["evidence"]  # the example stays


def _doctest_diff(before: str, after: str, want: str) -> compare.Difference:
    b, a = {"kind": "return", "repr": before}, {"kind": "return", "repr": after}
    return compare.Difference("m.py::f", ">>> f([])", "doctest", before, after, b, a, (), want)


@pytest.mark.parametrize(
    ("before", "after", "outcome"),
    [("(0, 1)", "(0, 0)", "finding"), ("(0, 0)", "(0, 1)", "intended")],
)
def test_a_docstring_example_is_the_spec_and_decides_without_the_model(before, after, outcome) -> None:
    """Head breaking the docstring's own example is a bug; head making it hold is the change fixing it."""
    c = _target('def f(xs):\n    """>>> f([])\n    (0, 1)\n    """\n    return (0, 1)\n')
    boom = ScriptedModel({"replies": [], "default": {"raise": "must not be asked"}})
    j = judge.judge(
        c, [_doctest_diff(before, after, "(0, 1)\n")], model=lambda: boom, title="", body="", head_line=None
    )
    assert not boom.requests
    if outcome == "finding":
        (f,) = j.findings
        assert f.rule_id == "behaviour/docstring-example" and "expects `(0, 1)`" in f.message
        assert not j.changes
    else:
        assert not j.findings and [(x.before, x.after) for x in j.changes] == [("(0, 0)", "(0, 1)")]
        assert "docstring" in j.changes[0].reason


def test_results_that_differ_only_in_fresh_random_ids_are_not_differences() -> None:
    """A multipart boundary (uuid4 hex) differs between any two runs; the rest of the result must differ."""
    ret = lambda r: {"kind": "return", "repr": r}  # noqa: E731
    body = "(b'--{b}\\r\\nname=\"f\"\\r\\n--{b}--', 'multipart/form-data; boundary={b}')"
    base = [_call("{}", ret(body.format(b="5b01fa6547fe7049021ecfe678293b85")))]
    head = [_call("{}", ret(body.format(b="09f21d6ba6d6b06d1626dd4871d3e75c")))]
    assert compare.differences(base, head) == []
    uuid = [_call("1", ret("'6f1c2b9e-8a3d-4c1e-9b2a-0d4e5f6a7b8c'"))]
    assert compare.differences(uuid, [_call("1", ret("'0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d'"))]) == []
    # a real difference next to a random id still counts
    changed = [_call("{}", ret(body.format(b="09f21d6ba6d6b06d1626dd4871d3e75c").replace('"f"', '"g"')))]
    assert len(compare.differences(base, changed)) == 1


def test_a_type_error_on_a_guessed_input_for_an_untyped_parameter_is_not_evidence() -> None:
    """`f(0)` for an untyped `coins` that the function iterates: TypeError at head says the guess had the
    wrong type. The same error from a typed parameter's input, or from a test's call, still counts."""
    boom = ScriptedModel({"replies": [], "default": {"raise": "must not be asked"}})
    raised = {"kind": "raise", "type": "TypeError", "message": "object of type 'int' has no len()"}
    guess = _diff_of({"kind": "return", "repr": "0"}, raised)  # origin "boundary"
    untyped = _target("def f(coins):\n    return len(coins)\n")
    kw = {"model": lambda: boom, "title": "", "body": "", "head_line": None}
    assert judge.judge(untyped, [guess], **kw).findings == []
    typed = _target("def f(n: int):\n    return len(n)\n")
    assert [f.severity for f in judge.judge(typed, [guess], **kw).findings] == ["high"]
    from_test = compare.Difference(
        "m.py::f", "f(0)", "t.py::test_f", "0", "raises TypeError", guess.base, raised
    )
    assert [f.severity for f in judge.judge(untyped, [from_test], **kw).findings] == ["high"]


PARSER = """import typing as t


class Base:
    def convert(self, value: t.Any, ctx: t.Optional[dict] = None) -> t.Any:
        return str(value)


class Splitter(Base):
    def __init__(self, sep: str = ":") -> None:
        self.sep = sep

    def convert(self, value: t.Any, ctx: "dict | None") -> t.Any:
        items = str(value).split(self.sep)
        return [Base.convert(self, item, ctx) for item in items]


class NeedsArgs:
    def __init__(self, name):
        self.name = name

    def label(self, x: int) -> str:
        return self.name + str(x)
"""


@needs_bwrap
def test_a_changed_method_is_called_on_a_fresh_instance_of_its_class(make_repo, tmp_path) -> None:
    """Only the regression test reaches `Splitter.convert`, and the change deletes it: its class builds
    without arguments, so the harness calls it on a fresh `Splitter()` at base and head with boundary
    values (Any -> a few kinds, `X | None` -> None), and head's new TypeError is a high finding with the
    call as written (`self` has no annotation, but it is not a guessed input). A class that needs arguments
    (`NeedsArgs`) is not comparable and gives nothing, not a false difference."""
    head = PARSER.replace(
        "return [Base.convert(self, item, ctx) for item in items]",
        "return [Base.convert(self, item, ctx) for item in items] + None",
    ).replace("return self.name + str(x)", "return self.name + str(x + 1)")
    regression = "from conv import Splitter\n\n\ndef test_split():\n"
    regression += "    assert Splitter().convert('a:b', None)\n"
    repo = make_repo(
        {"conv.py": PARSER, "test_conv.py": regression, "test_other.py": "def test_x():\n    pass\n"},
        {"conv.py": head, "test_conv.py": None},
    )
    data = _review_json(repo, tmp_path)
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert f["severity"] == "high" and f["line"] == 15, f
    assert "Splitter().convert('', None): before ['']; after raises TypeError" in f["evidence"]
    assert not any("label" in x["call"] for x in data.get("behaviour", []))


def _edited_tests(repo: Path) -> ChangedTests:
    """testfiles.changed_tests of the repository's last commit."""
    diff = parse(_diff(repo))
    tests = changed_test_files(
        diff, lambda p: _show(repo, "HEAD~1", p), lambda p: _show(repo, "HEAD", p), is_test_path
    )
    return changed_tests(diff, tests)


def test_calls_from_tests_the_change_edits_are_not_compared(make_repo) -> None:
    """A test whose own code changed passed other inputs at base and head, even where the reprs agree."""
    t0 = "def test_a():\n    x = 1\n\n\nclass TestB:\n    def test_c(self):\n        y = 2\n"
    t1 = t0.replace("x = 1", "x = 2")
    repo = make_repo(
        {"tests/test_m.py": t0, "tests/test_n.py": "K = 1\n\n\ndef test_d():\n    pass\n", "m.py": "A = 1\n"},
        {"tests/test_m.py": t1, "tests/test_n.py": "K = 2\n\n\ndef test_d():\n    pass\n", "m.py": "A = 2\n"},
    )
    edited = _edited_tests(repo)
    assert edited.covers("tests/test_m.py::test_a") and edited.covers("tests/test_m.py::test_a[1-2]")
    assert not edited.covers("tests/test_m.py::TestB::test_c")
    assert edited.covers("tests/test_n.py::test_d")  # a module-level line of its file changed
    assert not edited.covers("tests/test_other.py::test_e")


def test_a_deleted_test_function_edits_no_other_test_of_its_file(make_repo) -> None:
    """Deleting a test takes its blank lines, a comment and the import it needed along: the file's
    other tests still give the code the same inputs, so their calls are compared as they ran. A
    constant's change still counts for the whole file, and so does a string holding a `#` line."""
    t0 = (
        "import os\nfrom m import (\n    A,\n    B,\n)\n\n\ndef test_a():\n    assert A\n\n\n"
        "# the regression\ndef test_gone():\n    assert B\n\n\nclass TestC:\n    def test_c(self):\n"
        "        pass\n\n    def test_d(self):\n        pass\n"
    )
    t1 = t0.replace("from m import (\n    A,\n    B,\n)", "from m import A")
    t1 = t1.replace("# the regression\ndef test_gone():\n    assert B\n\n\n", "")
    t1 = t1.replace("\n    def test_d(self):\n        pass\n", "")
    const = 'X = """\n# a line of data\n"""\n\n\ndef test_e():\n    pass\n'
    repo = make_repo(
        {"tests/test_m.py": t0, "tests/test_k.py": const, "m.py": "A = B = 1\n"},
        {"tests/test_m.py": t1, "tests/test_k.py": const.replace("# a", "# one"), "m.py": "A = B = 2\n"},
    )
    edited = _edited_tests(repo)
    assert edited.covers("tests/test_m.py::test_gone") and edited.covers("tests/test_m.py::TestC::test_d")
    assert not edited.covers("tests/test_m.py::test_a")
    assert not edited.covers("tests/test_m.py::TestC::test_c")
    assert edited.covers("tests/test_k.py::test_e")  # the string is a statement: a module-level change


LIS = '''"""Longest increasing subsequence.

>>> from lis import lis
>>> data = [4, 1, 5, 3, 7, 6, 2]
>>> lis(data)
3
"""


def lis(arr):
    ends = {}
    longest = 0
    for i, val in enumerate(arr):
        prefix = [j for j in range(1, longest + 1) if arr[ends[j]] < val]
        length = max(prefix) if prefix else 0
        if length == longest or val < arr[ends[length + 1]]:
            ends[length + 1] = i
            longest = max(longest, length + 1)
    return longest


def other(x):
    return x


"""
Documentation kept beside the code, as some projects do:

    >>> lis([1, 2])
    2
    >>> other(1)
    1
"""
'''


def test_examples_in_the_modules_other_documentation_call_the_callable_by_name(make_repo) -> None:
    """The module docstring's examples that call `lis` (with the setup lines before them) and those of a
    documentation string after the code are inputs for `lis`, each run in order; `other` is not named
    before its own example, so a docstring that never calls a callable gives it nothing."""
    head = LIS.replace("longest = max(longest, length + 1)", "longest = length + 1")
    repo = make_repo({"lis.py": LIS}, {"lis.py": head.replace("return x", "return x + 0")})
    found = {c.qualname: c for c in _callables(repo)}
    (mod, trailing) = generate.doctests(found["lis"])
    assert [src for src, _ in mod.doctest] == [
        "from lis import lis",
        "data = [4, 1, 5, 3, 7, 6, 2]",
        "lis(data)",
    ]
    assert mod.report == (2,)  # only the call of `lis` is compared; the lines before it are its setup
    assert trailing.doctest == (("lis([1, 2])", "2\n"),)  # up to the last example that calls it
    (theirs,) = generate.doctests(found["other"])
    assert theirs.doctest == (*trailing.doctest, ("other(1)", "1\n")) and theirs.report == (1,)
    assert generate.doctests(_target("def lis(arr):\n    return 0\n")) == []  # no other docs: nothing


@needs_bwrap
def test_a_module_docstring_example_catches_a_bug_no_test_reaches(make_repo, tmp_path) -> None:
    head = LIS.replace("longest = max(longest, length + 1)", "longest = length + 1")
    repo = make_repo({"lis.py": LIS}, {"lis.py": head})
    data = _review_json(repo, tmp_path)
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert f["path"] == "lis.py" and f["line"] == 18, f
    assert "lis(data): before 3; after 2" in f["evidence"], f["evidence"]


NODE = """class Node:
    def __init__(self, value=None, successor=None):
        self.value = value
        self.successor = successor
"""
REVERSE = """def reverse_linked_list(node):
    prevnode = None
    while node:
        nextnode = node.successor
        node.successor = prevnode
        prevnode = node
        node = nextnode
    return prevnode
"""


def test_parameters_named_or_hinted_after_a_project_class_take_its_instances() -> None:
    from bot.evidence.behaviour import objects
    from bot.evidence.behaviour.callables import Param

    sources = {
        "pkg/node.py": NODE,
        "pkg/graph.py": "class Graph:\n    def __init__(self, a, b):\n        pass\n",
    }
    classes = objects.project_classes(["pkg/node.py", "pkg/graph.py", "pkg/gone.py"], sources.get)
    assert set(classes) == {"Node", "Graph"} and classes["Node"].path == "pkg/node.py"

    def texts(name: str, annotation: str | None = None) -> list[str]:
        return [b.text for b in objects.values(Param(name, annotation, False, "positional"), classes)]

    assert texts("startnode") == [
        "Node()",
        "Node(1)",
        "Node(2)",
        "Node(1, Node(2))",
        "Node(1, Node(2, Node(3)))",
    ]
    assert texts("x", "Optional['Node']") == texts("node")  # the hint names it
    assert texts("nodes") == ["[]", "[Node(1, Node(2, Node(3)))]", "[Node(), Node(1)]"]
    assert texts("graph") == []  # two required arguments to guess: not built
    assert texts("node", "int") == [] and texts("value") == []  # a literal hint, or no class of that name


@needs_bwrap
def test_an_instance_of_the_class_beside_it_shows_a_lost_result(make_repo, tmp_path) -> None:
    """No test and no literal reaches `reverse_linked_list(node)`; the class `Node` in the module beside it
    does: head loses `prevnode = node` and returns None where base returned the reversed list."""
    head = REVERSE.replace("        prevnode = node\n", "")
    repo = make_repo({"algo/node.py": NODE, "algo/rev.py": REVERSE}, {"algo/rev.py": head})
    data = _review_json(repo, tmp_path)
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert f["path"] == "algo/rev.py" and f["severity"] == "medium", f
    assert "reverse_linked_list(Node(1)): before Node(" in f["evidence"] and "after None" in f["evidence"], f


@needs_bwrap
def test_a_patch_for_a_docstring_example_finding_must_make_the_example_hold_again(
    make_repo, tmp_path
) -> None:
    """The test reaches `lis`, yet its docstring examples run too (they are the spec), and the module
    docstring's example breaks. That example is a doctest with a setup line: the patched head runs the
    whole doctest again, so a patch that only passes the (passing) tests is not verified."""
    head = LIS.replace("longest = max(longest, length + 1)", "longest = length + 1")
    test = "from lis import lis\n\n\ndef test_empty():\n    assert lis([]) == 0\n"
    repo = make_repo({"lis.py": LIS, "test_lis.py": test}, {"lis.py": head})
    bad = "            longest = length + 1"
    replies = [
        _patch(bad, "            longest = length + 1 + 0"),  # tests pass, the example does not
        _patch(bad, "            longest = max(longest, length + 1)"),
    ]
    cfg = _config(tmp_path, replies, patches={"candidates": 2})
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    (f,) = [f for f in json.loads(res.stdout)["findings"] if f["source"] == "behaviour"]
    assert f["verified"], f
    assert f["suggestion"].strip() == "longest = max(longest, length + 1)", f
    assert "example(s) give base's result again" in f["evidence"]


def test_unhinted_parameters_take_the_types_their_docstring_examples_pass() -> None:
    """`next_smallest` has no hints; its examples pass lists of numbers, so its edge values are lists of
    floats (one of two elements among them, where head's `< 3` now returns None) instead of integers."""
    c = _target(
        "def next_smallest(lst, k=1):\n"
        '    """\n    next_smallest([1, 2, 3]) == 2\n    next_smallest([]) == None\n'
        '    next_smallest([1.5, 2]) == 2\n    next_smallest(lst=[5], k=2) == None\n    """\n'
        "    return None if len(lst) < 3 else lst[1]\n"
    )
    typed = generate.with_example_types(c, generate.doctests(c))
    assert [(p.name, p.annotation) for p in typed.params] == [("lst", "list[float]"), ("k", "int")]
    assert ("[1.0, 2.0]",) in [i.args for i in generate.boundary_inputs(typed, 20)]
    assert [p.annotation for p in c.params] == [None, None]  # the judge still sees them unhinted
    mixed = _target('def f(x):\n    """\n    f(1) -> 1\n    f("a") -> "a"\n    """\n    return x\n')
    assert generate.with_example_types(mixed, generate.doctests(mixed)) == mixed  # two types: no guess


def test_the_harness_builds_only_the_named_project_classes_from_literals(tmp_path, monkeypatch) -> None:
    """Arguments are literals or calls of the classes in "builds"; any other call, name or attribute is
    refused before anything runs (the harness never evaluates text)."""
    import importlib
    import sys

    scripts = Path(__file__).parents[2] / "bot/evidence/behaviour"
    monkeypatch.syspath_prepend(str(scripts))
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "shapes.py").write_text(NODE)
    h = importlib.import_module("prereview_harness")
    monkeypatch.setattr(h, "ROOT", str(tmp_path))
    builds = {"Node": "shapes.py"}
    n = h._value("Node(1, Node(2))", builds)
    assert (n.value, n.successor.value, n.successor.successor) == (1, 2, None)
    assert h._value("[Node(), 3]", builds)[1] == 3 and h._value("(1, 'a')", {}) == (1, "a")
    for hostile in ("__import__('os').system('true')", "Node.__init__", "print(1)", "Node(x)", "open('f')"):
        with pytest.raises(ValueError):
            h._value(hostile, builds)
    sys.modules.pop("prereview_harness", None)


CACHES = '''class Cache:
    """
    >>> c = Cache()
    >>> c.get("a")
    1
    """

    def get(self, key):
        return 1


class Store:
    """
    >>> Store().get("a")
    2
    """

    def get(self, key):
        return 2


def get(key):
    """Not a method."""
    return 3


"""
>>> get("x")
3
>>> Cache().get("x")
1
"""
'''


def test_a_method_takes_examples_that_call_it_on_something_and_not_another_classs_docstring(
    make_repo,
) -> None:
    """`Store.get` takes its own class's docstring and the module string's `Cache().get(...)` (a call on
    something; which class is not known) but not `Cache`'s docstring; the function `get` takes only the
    bare `get(...)`."""
    head = (
        CACHES.replace("return 1", "return 10")
        .replace("return 2", "return 20")
        .replace("return 3", "return 30")
    )
    repo = make_repo({"caches.py": CACHES}, {"caches.py": head})
    found = {c.qualname: c for c in _callables(repo)}
    assert set(found) == {"Cache.get", "Store.get", "get"}
    compared = [x.doctest[r][0] for x in generate.doctests(found["Store.get"]) for r in x.report]
    assert compared == ['Cache().get("x")', 'Store().get("a")']  # not Cache's docstring's `c.get("a")`
    (mod,) = generate.doctests(found["get"])
    assert mod.report == (0,)  # `get("x")`, not `Cache().get("x")`
    assert len(generate.doctests(found["Cache.get"])) == 2  # its own class's docstring and the module's


# ---------------------------------------------------------------- wrapped variants of the tests' calls

READER = '''import io


def read_all(source):
    """The text of a string or of a readable object."""
    if isinstance(source, str):
        return source
    if hasattr(source, "read"):
        return source.read()
    raise TypeError(f"cannot read {type(source).__name__}")
'''
READER_BUG = READER.replace('hasattr(source, "read")', "isinstance(source, io.IOBase)")
READER_TEST = """import io

from reader import read_all


def test_reads_strings_and_streams():
    assert read_all("abc") == "abc"
    assert read_all(io.StringIO("abc")) == "abc"


def test_reads_an_open_file(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("from a file")
    with open(path) as fh:
        assert read_all(fh) == "from a file"
"""


@needs_bwrap
def test_a_wrapper_base_read_and_head_refuses_is_a_finding_with_the_wrapped_call(make_repo, tmp_path) -> None:
    repo = make_repo({"reader.py": READER, "test_reader.py": READER_TEST}, {"reader.py": READER_BUG})
    data = _review_json(repo, tmp_path)
    assert not any(f["source"] == "tests" for f in data["findings"])  # the tests pass at head
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert f["rule_id"] == "behaviour/wrapped-input" and f["severity"] == "medium" and f["line"] == 8
    example = "read_all(Proxy(<_io.StringIO object at 0x…>)): before 'abc'; after raises TypeError"
    assert example in f["evidence"]
    assert "forwarding proxy" in f["message"]


@needs_bwrap
def test_wrapped_variants_run_in_a_child_that_leaves_the_tests_state_alone(make_repo, tmp_path) -> None:
    """The variant reads the stream and the file in a forked child: the test's own call still reads all
    of it (memory is the child's copy; the shared file offset is put back)."""
    repo = make_repo({"reader.py": READER, "test_reader.py": READER_TEST}, {"reader.py": READER + "\n"})
    targets = [
        Changed("reader.py", "read_all", "modified", (4, 10), (4, 10), 8, "", "", (), False, False, False)
    ]
    hook = harness.trace_hook(targets, max_calls=50, variants=3)
    runner = testrun.TestRunner(BubblewrapSandbox(SandboxConfig()), list(PYTEST), 120, tmp_path / "c")
    sha = git(repo, "rev-parse", "HEAD").strip()
    run = runner.at_commit(repo, sha, hook)
    assert run.passed == 2, run.output
    calls, _ = compare.from_trace(runner.collected_at(sha, hook))
    wrapped = [(c.args, c.result) for c in calls if c.variant == "wrapped source"]
    assert wrapped == [
        ((("source", "Proxy(<_io.StringIO object at 0x…>)"),), {"kind": "return", "repr": "'abc'"}),
        (
            (("source", "Proxy(<_io.TextIOWrapper name='<tmp>' mode='r' encoding='UTF-8'>)"),),
            {"kind": "return", "repr": "'from a file'"},
        ),
    ]  # a str has nothing to wrap
    broken = [(c.args, c.result) for c in calls if c.variant == "line break source"]
    assert broken == [((("source", "'abc\\n'"),), {"kind": "return", "repr": "'abc\\n'"})]
    plain = [c for c in calls if not c.variant]
    assert len(plain) == 3 and all(c.result["kind"] == "return" for c in plain)


# ---------------------------------------------------------------- a context manager inside itself

SWITCH_CONFIG = """_enabled = True


def get_enabled():
    return _enabled


def set_enabled(on):
    global _enabled
    _enabled = on
"""
SWITCH = '''from contextlib import contextmanager

from config import get_enabled, set_enabled


@contextmanager
def disabled():
    """Turn the checks off inside the block."""
    prev = get_enabled()
    set_enabled(False)
    try:
        yield
    finally:
        set_enabled(prev)
'''
SWITCH_BUG = SWITCH.replace("set_enabled(prev)", "set_enabled(True)").replace(
    "    prev = get_enabled()\n", ""
)
SWITCH_TEST = """from config import get_enabled
from switch import disabled


def test_disabled_turns_the_checks_off_and_on_again():
    with disabled():
        assert not get_enabled()
    assert get_enabled()
"""


@needs_bwrap
@pytest.mark.parametrize("with_tests", [True, False])
def test_a_context_manager_that_no_longer_restores_the_state_it_found_when_nested(
    make_repo, tmp_path, with_tests
) -> None:
    files = {"config.py": SWITCH_CONFIG, "switch.py": SWITCH}
    if with_tests:
        files["test_switch.py"] = SWITCH_TEST
    repo = make_repo(files, {"switch.py": SWITCH_BUG})
    data = _review_json(repo, tmp_path)
    assert not any(f["source"] == "tests" for f in data["findings"])
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert f["rule_id"] == "behaviour/nesting" and f["severity"] == "medium" and f["line"] == 13
    assert f["evidence"] == (
        "with disabled(): with disabled(): ...: before _enabled: True -> False -> False -> False -> True; "
        "after _enabled: True -> False -> False -> True -> True"
    )
    assert "(used inside itself)" in f["message"] and "back in the outer block" in f["message"]


@needs_bwrap
def test_a_context_manager_that_restores_the_state_now_is_listed_as_a_fix(make_repo, tmp_path) -> None:
    repo = make_repo({"config.py": SWITCH_CONFIG, "switch.py": SWITCH_BUG}, {"switch.py": SWITCH})
    data = _review_json(repo, tmp_path)
    assert not [f for f in data["findings"] if f["source"] == "behaviour"]
    (change,) = data["behaviour"]
    assert change["callable"] == "disabled" and "puts back the state it found" in change["reason"]


# ---------------------------------------------------------------- a changed module-level value's readers

CHECKS = """import re

_VALUE_RE = re.compile(r"^\\S[^\\r\\n]*\\Z")
VALIDATORS = {"value": _VALUE_RE}
"""
CHECKS_BUG = CHECKS.replace("\\Z", "$")
HEADERS = '''from checks import VALIDATORS


def check_value(value):
    """Raise ValueError unless the header value is safe to send."""
    if not VALIDATORS["value"].match(value):
        raise ValueError(f"invalid header value {value!r}")
'''
HEADERS_TEST = """import pytest

from headers import check_value


def test_values():
    check_value("text/html")
    with pytest.raises(ValueError):
        check_value("bad\\r\\nvalue")
"""


def test_a_changed_module_level_value_reaches_the_functions_that_read_it_in_the_folder(make_repo) -> None:
    from bot.evidence.behaviour.dependents import reached_callables

    repo = make_repo({"checks.py": CHECKS, "headers.py": HEADERS}, {"checks.py": CHECKS_BUG})
    diff = parse(_diff(repo))
    (c,) = reached_callables(
        diff,
        lambda p: _show(repo, "HEAD", p),
        lambda p: ["checks.py", "headers.py"],
        is_test=is_test_path,
    )
    assert (c.key, c.kind, c.via, c.finding_path, c.anchor) == (
        "headers.py::check_value",
        "reached",
        "_VALUE_RE",
        "checks.py",
        3,
    )
    # a function the change itself edits is not repeated
    assert not reached_callables(
        diff,
        lambda p: _show(repo, "HEAD", p),
        lambda p: ["headers.py"],
        is_test=is_test_path,
        changed=[c],
    )


def test_a_changed_value_reaches_readers_elsewhere_in_the_package(make_repo) -> None:
    """flask's layout: `src/flask/sansio/app.py` holds a value, `src/flask/app.py` imports it two ways."""
    from bot.evidence.behaviour.dependents import _imports_from, reached_callables

    consts = 'LIMIT = 10\n\n\ndef fits(n):\n    """Whether n fits."""\n    return n <= LIMIT\n'
    files = {
        "src/pkg/__init__.py": "",
        "src/pkg/sub/__init__.py": "",
        "src/pkg/sub/consts.py": consts,
        "src/pkg/app.py": "from .sub.consts import LIMIT\n\n\ndef cap(n):\n    return min(n, LIMIT)\n",
        "src/pkg/sub/deep/__init__.py": "",
        "src/pkg/sub/deep/use.py": "from ..consts import LIMIT as L\n\n\ndef half():\n    return L // 2\n",
        "src/pkg/cli.py": "from pkg.sub.consts import LIMIT\n\n\ndef show():\n    return str(LIMIT)\n",
        "src/other/consts.py": "LIMIT = 1\n",
        "src/pkg/unrelated.py": "from other.consts import LIMIT\n\n\ndef g():\n    return LIMIT\n",
        # the module imported whole, its value read as an attribute
        "src/pkg/sub/whole.py": "from . import consts\n\n\ndef twice():\n    return consts.LIMIT * 2\n",
        "src/pkg/named.py": "import pkg.sub.consts as c\n\n\ndef lim():\n    return c.LIMIT\n",
        "src/pkg/sub/elsewhere.py": "from . import consts\n\n\ndef g():\n    return consts.fits\n",
    }
    repo = make_repo(files, {"src/pkg/sub/consts.py": consts.replace("10", "12")})
    mods = sorted(p for p in files if p.startswith("src/pkg/") and p.endswith(".py"))
    got = reached_callables(
        parse(_diff(repo)), lambda p: _show(repo, "HEAD", p), lambda p: mods, is_test=is_test_path
    )
    assert sorted(c.key for c in got) == [
        "src/pkg/app.py::cap",
        "src/pkg/cli.py::show",
        "src/pkg/named.py::lim",
        "src/pkg/sub/consts.py::fits",
        "src/pkg/sub/deep/use.py::half",
        "src/pkg/sub/whole.py::twice",
    ]
    assert {(c.finding_path, c.anchor) for c in got} == {("src/pkg/sub/consts.py", 1)}
    assert not _imports_from(3, "", "a/b.py", "a/x.py")  # `from ... import x`: above the tree


def test_an_edited_type_alias_reaches_no_function_it_only_hints(make_repo) -> None:
    from bot.evidence.behaviour.dependents import reached_callables

    src = (
        "JsonType = dict | list\n\n\ndef load(text: str) -> JsonType:\n    x: JsonType = {}\n"
        "    return x\n\n\ndef kind(v):\n    return isinstance(v, JsonType)\n"
    )
    repo = make_repo({"types_.py": src}, {"types_.py": src.replace("dict | list", "dict | list | str")})
    got = reached_callables(
        parse(_diff(repo)), lambda p: _show(repo, "HEAD", p), lambda p: [], is_test=is_test_path
    )
    assert [c.key for c in got] == ["types_.py::kind"]  # reads it at run time; load is only hinted


def test_a_version_bump_is_metadata_and_reaches_no_function(make_repo) -> None:
    from bot.evidence.behaviour.dependents import reached_callables

    bump = make_repo(
        {"meta.py": '__version__ = "1.0"\n\n\ndef agent():\n    return "x/" + __version__\n'},
        {"meta.py": '__version__ = "1.1"\n\n\ndef agent():\n    return "x/" + __version__\n'},
    )
    assert not reached_callables(
        parse(_diff(bump)), lambda p: _show(bump, "HEAD", p), lambda p: [], is_test=is_test_path
    )


@needs_bwrap
def test_a_check_that_lets_a_line_break_through_now_is_a_security_finding_on_the_changed_value(
    make_repo, tmp_path
) -> None:
    repo = make_repo(
        {"checks.py": CHECKS, "headers.py": HEADERS, "test_headers.py": HEADERS_TEST},
        {"checks.py": CHECKS_BUG},
    )
    data = _review_json(repo, tmp_path)
    assert not any(f["source"] == "tests" for f in data["findings"])
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert (f["rule_id"], f["path"], f["line"], f["category"], f["cwe"]) == (
        "behaviour/accepts-line-break",
        "checks.py",
        3,
        "security",
        "CWE-93",
    )
    assert "check_value('text/html\\n'): before raises ValueError" in f["evidence"]
    assert "(it depends on `_VALUE_RE`, which this change edits)" in f["message"]
    assert "`check_value('text/html\\n')` raised `ValueError: invalid header value" in f["message"]


def _plugin_alone(tmp_path: Path, targets: dict, *args: str, **spec) -> list[compare.Call]:
    """The tracer plugin alone (no sandbox: the code is the test's own) on the test files in `tmp_path`
    (or those `args` name), which must pass; the calls recorded in its file so far."""
    scripts = Path(harness.__file__).parent
    for name in harness.SCRIPTS:
        shutil.copy(scripts / name, tmp_path / name)
    (tmp_path / "spec.json").write_text(json.dumps({"targets": targets, "out": "t.jsonl", **spec}))
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "PREREVIEW_TRACE_SPEC": "spec.json"}
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "prereview_trace", "-p", "no:cacheprovider", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return compare.from_trace((tmp_path / "t.jsonl").read_text())[0]


def test_each_process_of_a_run_adds_its_calls_to_the_one_trace_file(tmp_path) -> None:
    """pytest-xdist runs the tests in worker processes that each load the plugin: every one appends its
    records (nothing overwrites another's), and the calls each dropped over its cap add up."""
    (tmp_path / "mod.py").write_text("def f(x):\n    return x + 1\n")
    (tmp_path / "test_a.py").write_text("from mod import f\n\n\ndef test_a():\n    assert f(1) + f(3) == 6\n")
    (tmp_path / "test_b.py").write_text("from mod import f\n\n\ndef test_b():\n    assert f(2) + f(4) == 8\n")
    _plugin_alone(tmp_path, {"mod.py": ["f"]}, "test_a.py", max_calls=1)  # one worker
    calls = _plugin_alone(tmp_path, {"mod.py": ["f"]}, "test_b.py", max_calls=1)  # another
    assert sorted(c.args for c in calls) == [(("x", "1"),), (("x", "2"),)]
    _, dropped = compare.from_trace((tmp_path / "t.jsonl").read_text())
    assert sum(dropped.values()) == 2


def test_a_methods_variants_leave_its_receiver_alone_and_reach_static_and_class_methods(tmp_path) -> None:
    """The plugin alone (no sandbox: the code is this test's own): a method is found through its class's
    mappingproxy, staticmethod and classmethod included; `self` and `cls` are never wrapped."""
    (tmp_path / "box.py").write_text(
        "class Box:\n"
        "    def put(self, item, *more, key=None):\n        return len(item.read())\n\n"
        "    @staticmethod\n    def size(item):\n        return len(item.read())\n\n"
        "    @classmethod\n    def make(cls, item):\n        return len(item.read())\n"
    )
    (tmp_path / "test_box.py").write_text(
        "import io\nfrom box import Box\n\n\ndef test_box():\n"
        "    assert Box().put(io.BytesIO(b'ab'), key=1) == 2\n"
        "    assert Box.size(io.BytesIO(b'abc')) == 3\n"
        "    assert Box.make(io.BytesIO(b'abcd')) == 4\n"
    )
    calls = _plugin_alone(tmp_path, {"box.py": ["Box.put", "Box.size", "Box.make"]}, variants=4)
    varied = sorted((c.callable.split("::")[1], c.variant, c.result["repr"]) for c in calls if c.variant)
    assert varied == [
        ("Box.make", "wrapped item", "4"),
        ("Box.put", "wrapped item", "2"),
        ("Box.size", "wrapped item", "3"),
    ]


@pytest.mark.parametrize(
    ("head", "found"),
    [("None", True), ("True", True), ("<re.Match object; span=(0, 4), match='abc\\n'>", True), ("3", False)],
)
def test_a_line_break_let_through_is_a_finding_only_where_it_is_passed_on(head: str, found: bool) -> None:
    """A check that answers None or True, or a result that still holds the break, lets it through; a
    result without it (head strips the value now) does not."""
    c = _target("def f(value):\n    return value\n")
    d = compare.Difference(
        c.key,
        "f('abc\\n')",
        "t.py::test_f",
        "raises ValueError: bad",
        head,
        {"kind": "raise", "type": "ValueError", "message": "bad"},
        {"kind": "return", "repr": head},
        variant="line break value",
    )
    j = judge.judge(c, [d], model=None, title="", body="", head_line=None)
    assert [f.rule_id for f in j.findings] == (["behaviour/accepts-line-break"] if found else [])
    assert not j.changes  # a variant's other differences are not listed either


def test_variants_stop_after_two_children_hang(tmp_path) -> None:
    """A function that hangs on a wrapper costs the test run at most two variant timeouts."""
    (tmp_path / "slow.py").write_text(
        "import time\n\n\ndef use(pair):\n"
        "    n, obj = pair\n"
        "    if type(obj).__name__ == 'Proxy':\n"
        "        open(f'hung-{n}', 'w').close()\n"  # an empty file: allowed in the child
        "        time.sleep(60)\n"
        "    return 1\n"
    )
    (tmp_path / "test_slow.py").write_text(
        "import io\nfrom slow import use\n\n\ndef test_use():\n"
        "    for i in range(5):\n        assert use((i, io.BytesIO())) == 1\n"
    )
    calls = _plugin_alone(tmp_path, {"slow.py": ["use"]}, variants=5, variant_timeout=1)
    assert [c for c in calls if c.variant] == []  # hung children leave no record
    assert len(calls) == 5
    # two children were made and hung, not five: the run stopped making variants
    assert sorted(p.name for p in tmp_path.glob("hung-*")) == ["hung-0", "hung-1"]


def test_the_files_not_compared_are_other_languages_sources_not_their_tests() -> None:
    from bot.evidence.behaviour.languages import other_language_sources

    def hunk(path: str, status: str = "modified") -> str:
        old = "/dev/null" if status == "added" else f"a/{path}"
        new = "/dev/null" if status == "deleted" else f"b/{path}"
        body = "@@ -0,0 +1 @@\n+x\n" if status == "added" else "@@ -1 +1 @@\n-x\n+y\n"
        if status == "deleted":
            body = "@@ -1 +0,0 @@\n-x\n"
        mode = {"added": "new file mode 100644\n", "deleted": "deleted file mode 100644\n"}.get(status, "")
        return f"diff --git a/{path} b/{path}\n{mode}--- {old}\n+++ {new}\n{body}"

    diff = parse(
        "".join(
            [
                hunk("flag.go"),
                hunk("flag_test.go"),
                hunk("lib/parser.ts"),
                hunk("test/parser.mjs"),
                hunk("src/a.spec.ts"),
                hunk("index.mjs"),
                hunk("old.js", "deleted"),
                hunk("core.py"),
            ]
        )
    )
    assert other_language_sources(diff) == ["flag.go", "index.mjs", "lib/parser.ts"]


BANK = """class Account:
    def __init__(self, owner, balance):
        self.owner = owner
        self.balance = balance

    def withdraw(self, amount):
        if amount > self.balance:
            raise ValueError("insufficient funds")
        self.balance -= amount
        return self.balance

    def history(self, n):
        for k in range(n):
            yield self.balance + k
"""


@needs_bwrap
def test_a_base_call_whose_test_is_gone_at_head_is_replayed_with_its_self(make_repo, tmp_path) -> None:
    """Only the regression test reaches `Account.withdraw`, and the change deletes it. `Account` needs
    arguments, so no fresh instance can be built; the base run's tests recorded the call with its `self`
    (pickled), and the same call is made at head on that object: head raises where base returned, on the
    changed line, with the call and both outcomes as the example."""
    head = BANK.replace("if amount > self.balance:", "if amount >= self.balance:")
    regression = "from bank import Account\n\n\ndef test_withdraw_all():\n"
    regression += "    assert Account('ann', 10).withdraw(10) == 0\n"
    repo = make_repo(
        {"bank.py": BANK, "test_bank.py": regression, "test_other.py": "def test_x():\n    pass\n"},
        {"bank.py": head, "test_bank.py": None},
    )
    data = _review_json(repo, tmp_path)
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert f["path"] == "bank.py" and f["line"] == 7 and f["severity"] == "high", f
    assert "withdraw(10): before 0 and changes self to Account(balance=0, owner='ann')" in f["evidence"]
    assert "after raises ValueError: insufficient funds" in f["evidence"]
    assert any("its base run's tests gave it" in n for n in data["notes"]), data["notes"]


def test_a_replayed_generator_is_compared_on_what_it_yields(tmp_path) -> None:
    """The harness alone: a call the tracer pickled (`self` included) is made again on another side's
    class; an iterator result is compared on its first items, not on its repr."""
    scripts = Path(harness.__file__).parent
    for name in harness.SCRIPTS:
        shutil.copy(scripts / name, tmp_path / name)
    (tmp_path / "bank.py").write_text(BANK)
    (tmp_path / "test_bank.py").write_text(
        "from bank import Account\n\n\ndef test_history():\n    assert list(Account('a', 5).history(3))\n"
    )
    (tmp_path / "spec.json").write_text(
        json.dumps({"targets": {"bank.py": ["Account.history"]}, "out": "t.jsonl", "replays": 8})
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "PREREVIEW_TRACE_SPEC": "spec.json"}
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "prereview_trace", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    [call] = [c for c in compare.from_trace((tmp_path / "t.jsonl").read_text())[0] if c.pickled]
    head = tmp_path / "head"
    head.mkdir()
    (head / "bank.py").write_text(BANK.replace("self.balance + k", "self.balance - k"))
    inp = generate.Input(call.callable, call.origin, pickled=call.pickled, shown=call.args)
    shutil.copy(scripts / "prereview_probe.py", head / "prereview_probe.py")
    spec = {
        "calls": harness._spec_calls([inp], {inp.callable: ("bank.py", "Account.history")}),
        "out": "r.jsonl",
    }
    (head / "spec.json").write_text(json.dumps(spec))
    subprocess.run(
        [sys.executable, str(scripts / "prereview_harness.py"), "spec.json"],
        cwd=head,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(head)},
        check=True,
        timeout=60,
    )
    [rec] = [json.loads(x) for x in (head / "r.jsonl").read_text().splitlines()]
    assert rec["result"] == {"kind": "return", "repr": "iterator of [5, 4, 3]"}
    assert rec["mutated"] == {}
