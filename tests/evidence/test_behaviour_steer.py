"""The tests' own calls steered at the change (steer.py): where the tests' calls of a changed function
behave the same at base and head, the model proposes one argument's value aimed at the changed lines; the
call is made again on both sides with that argument replaced (the rest, `self` included, as the tests
built it) and a difference is judged by the "steered" rules, then by the change's words."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from bot.cli.root import cli
from bot.evidence.behaviour import expressions, steer
from bot.evidence.behaviour.callables import Changed, Param
from bot.evidence.behaviour.compare import Call
from bot.models.scripted import ScriptedModel

# the same bubblewrap mark, review schema and per-test cache as the other behaviour tests
from .test_behaviour_objects import NOT_ACCOUNTED, SCHEMA, _own_cache, needs_bwrap  # noqa: F401

NAMES = '''class Name:
    def __init__(self, dotted):
        self.dotted = dotted

    def real_name(self, sep="."):
        """The last part of the name."""
        parts = self.dotted.split(sep)
        return parts[-1]


def last_part(dotted):
    parts = dotted.split(".")
    return parts[-1]
'''
# the bug the regression test would have caught: right for one or two parts, wrong for three
NAMES_BUG = NAMES.replace(
    "        parts = self.dotted.split(sep)\n        return parts[-1]",
    "        parts = self.dotted.split(sep)\n        return parts[1] if len(parts) > 1 else parts[0]",
).replace(
    '    parts = dotted.split(".")\n    return parts[-1]',
    '    parts = dotted.split(".")\n    return parts[1] if len(parts) > 1 else parts[0]',
)
NAMES_FAIL = NAMES.replace(  # only a private name (no edge of a str) reaches the broken line
    '    parts = dotted.split(".")\n    return parts[-1]',
    '    parts = dotted.split(".")\n    if dotted.startswith("_"):\n        return parts[len(parts)]\n'
    "    return parts[-1]",
)
NAMES_TEST = """from names import Name, last_part


def test_real_name():
    assert Name("a.b").real_name() == "b"
    assert Name("x").real_name() == "x"


def test_last_part():
    assert last_part("a.b") == "b"
"""


def _steer(call: int, param: str, value: str, name: str = "") -> dict:
    """The model's steering answer, to the steering question about `name` only."""
    match = f"{name}[\\s\\S]*take the changed lines"
    return {"match": match, "text": json.dumps({"calls": [{"call": call, "param": param, "value": value}]})}


def _review(repo: Path, tmp_path: Path, replies: list[dict], **extra) -> dict:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": replies, "default": {"findings": []}}))
    cfg = tmp_path / "cfg.yml"
    given = extra.setdefault("behaviour", {"steer": True})  # off by default (docs/quality.md)
    given.setdefault("amplified_tests", 0)  # the tests' variants (amplify.py) reach these too: kept apart
    cfg.write_text(yaml.safe_dump({"model": {"backend": "scripted", "script": str(script)}, **extra}))
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    jsonschema.validate(data, SCHEMA)
    return data


def _changed(**kw) -> Changed:
    fields = dict(
        path="names.py",
        qualname="last_part",
        kind="modified",
        head_span=(1, 3),
        base_span=(1, 3),
        anchor=3,
        signature="def last_part(dotted):",
        docstring="",
        params=(Param("dotted", None, False, "positional"),),
        is_method=False,
        is_async=False,
        is_generator=False,
        head_source="def last_part(dotted):\n    return dotted.split('.')[1]\n",
        base_source="def last_part(dotted):\n    return dotted.split('.')[-1]\n",
    )
    fields.update(kw)
    return Changed(**fields)


def _call(args, origin="tests/t.py::test_x", pickled=("eJx",), **kw) -> Call:
    return Call(
        "names.py::last_part", origin, tuple(args), {"kind": "return", "repr": "'b'"}, pickled=pickled, **kw
    )


def test_the_models_value_replaces_one_argument_of_a_shown_call() -> None:
    c = _changed()
    calls = [_call([("dotted", "'a.b'")])]
    model = ScriptedModel({"replies": [_steer(1, "dotted", "'a.b.c'")], "default": {"raise": "asked twice"}})
    got, _ = steer.propose(c, calls, model)
    assert len(got) == 1
    assert got[0].swap == (("dotted", "'a.b.c'"),) and got[0].pickled == ("eJx",)
    assert got[0].shown == (("dotted", "'a.b.c'"),) and got[0].origin == "tests/t.py::test_x"
    asked = model.requests[0][-1].content
    assert "`last_part(dotted='a.b')`" in asked and "-    return dotted.split('.')[-1]" in asked


@pytest.mark.parametrize(
    "row",
    [
        {"call": 2, "param": "dotted", "value": "'a'"},  # no such shown call
        {"call": 1, "param": "other", "value": "'a'"},  # no such parameter
        {"call": 1, "param": "dotted", "value": "os.system('x')"},  # not a literal
        {"call": 1, "param": "dotted", "value": "'a.b'"},  # the value the test gave: nothing steered
    ],
)
def test_a_value_that_is_not_a_new_literal_for_a_shown_call_is_dropped(row) -> None:
    model = ScriptedModel({"replies": [], "default": {"text": json.dumps({"calls": [row]})}})
    got, _ = steer.propose(_changed(), [_call([("dotted", "'a.b'")])], model)
    assert got == []


def test_only_changed_callables_with_replayable_test_calls_are_steered() -> None:
    c = _changed()
    base = [
        _call([("dotted", "'a.b'")]),
        _call([("dotted", "'a.b'")]),  # the same arguments: shown once
        _call([("dotted", "'x'")], origin="tests/t.py::test_failing"),
        _call([("dotted", "'y'")], pickled=()),  # not pickled: cannot be made again
    ]
    chosen = steer.candidates([c], base, lambda x: x.origin.endswith("failing"))
    assert [(k.key, [x.args for x in calls]) for k, calls in chosen] == [
        ("names.py::last_part", [(("dotted", "'a.b'"),)])
    ]
    assert steer.candidates([_changed(kind="added")], base, lambda x: False) == []
    assert steer.candidates([_changed(head_source=_changed().base_source)], base, lambda x: False) == []


@needs_bwrap
def test_a_steered_call_that_now_fails_is_a_finding_with_its_example(make_repo, tmp_path) -> None:
    """The tests pass at base and head; the model's private name makes head raise IndexError where
    base returned: a medium `behaviour/steered-failure` on the changed line, the call in the example."""
    repo = make_repo({"names.py": NAMES, "test_names.py": NAMES_TEST}, {"names.py": NAMES_FAIL})
    data = _review(repo, tmp_path, [_steer(1, "dotted", "'_a.b'", name="def last_part")])
    found = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert [f["rule_id"] for f in found] == ["behaviour/steered-failure"], data
    f = found[0]
    assert f["severity"] == "medium" and f["path"] == "names.py"
    assert "last_part('_a.b'): before 'b'; after raises IndexError" in f["evidence"]
    assert "set to a value the model aimed at the changed lines" in f["message"]


@needs_bwrap
def test_a_steered_method_call_keeps_the_tests_own_self(make_repo, tmp_path) -> None:
    """A method's steered call keeps the tests' `self` (`Name("a.b")`) and sets `sep`: the same result on
    both sides, told in a note. A function's steered call that returns another value is put to the change's
    words (not accounted for: "is this intended?", with the example)."""
    repo = make_repo({"names.py": NAMES, "test_names.py": NAMES_TEST}, {"names.py": NAMES_BUG})
    replies = [
        _steer(1, "sep", "'/'", name="def real_name"),
        _steer(1, "dotted", "'a.b.c'", name="def last_part"),
        NOT_ACCOUNTED,
        NOT_ACCOUNTED,
    ]
    data = _review(repo, tmp_path, replies)
    found = {f["message"].split("`")[1]: f for f in data["findings"] if f["source"] == "behaviour"}
    assert set(found) == {"last_part"}, data
    assert found["last_part"]["rule_id"] == "behaviour/unexplained"
    assert "last_part('a.b.c'): before 'c'; after 'b'" in found["last_part"]["evidence"]
    notes = " ".join(data.get("notes") or [])
    assert (
        "`Name.real_name`: no difference on the inputs the model aimed at the changed lines "
        "(1 of 1 test call(s) with `sep='/'` ran" in notes
    ), notes


@needs_bwrap
def test_steering_off_compares_only_the_tests_calls(make_repo, tmp_path) -> None:
    """Off (the default): the model is not asked; only the tests' calls and their variants are compared
    (the changed lines' own literals too, seeded.py: off here, so what is left is the tests' calls)."""
    repo = make_repo({"names.py": NAMES, "test_names.py": NAMES_TEST}, {"names.py": NAMES_FAIL})
    replies = [_steer(1, "dotted", "'_a.b'", name="def last_part")]
    data = _review(repo, tmp_path, replies, behaviour={"seeded_calls": 0})
    assert not [f for f in data["findings"] if f["source"] == "behaviour"], data


@needs_bwrap
def test_with_steering_off_the_changed_lines_literal_reaches_what_the_model_was_asked_for(
    make_repo, tmp_path
) -> None:
    """The same change with the defaults: the changed line's own `"_"` (seeded.py) makes the call the
    model was asked for above, no model asked, and head fails on it where base returned."""
    repo = make_repo({"names.py": NAMES, "test_names.py": NAMES_TEST}, {"names.py": NAMES_FAIL})
    data = _review(repo, tmp_path, [], behaviour={})
    found = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert [f["rule_id"] for f in found] == ["behaviour/steered-failure"], (found, data["notes"])
    assert "last_part('_')" in found[0]["evidence"] and found[0]["severity"] == "medium", found[0]


QUERY = """class Query:
    def __init__(self, text):
        self.words = text.split()

    def has_alias(self):
        for word in self.words:
            if word.upper() == "AS":
                return True
        return False
"""
QUERY_BUG = QUERY.replace('if word.upper() == "AS":', 'if word == "AS":')
QUERY_TEST = """import query
from query import Query
from .helpers import nothing


class TestQuery:
    def test_alias(self):
        assert Query("select x AS y").has_alias()
"""


QUERY_TESTS = {
    "tests/__init__.py": "",
    "tests/test_query.py": QUERY_TEST,
    "tests/helpers.py": "nothing = None\n",
}


def _expressions(*texts: str) -> dict:
    return {"match": "Write up to", "text": json.dumps({"expressions": list(texts)})}


def test_a_tests_source_and_its_module_imports_are_read_for_the_expressions() -> None:
    files = {"tests/test_query.py": QUERY_TEST}
    got = expressions.test_of("tests/test_query.py::TestQuery::test_alias", files.get)
    assert got is not None
    imports, source = got
    assert imports == "import query\nfrom query import Query"  # the relative import left out
    assert source.startswith("def test_alias(self):") and "has_alias()" in source
    assert expressions.test_of("tests/test_query.py::TestQuery::test_gone", files.get) is None
    assert expressions.test_of("tests/missing.py::test_x", files.get) is None


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ('Query("a as b").has_alias()', True),
        ("query.Query('x').words", True),
        ("open('/etc/passwd').read()", False),
        ("Query.__init__.__globals__", False),
        ("(lambda: 1)()", False),
        ("x = 1", False),
    ],
)
def test_only_an_expression_that_computes_a_value_is_run(text, ok) -> None:
    assert expressions.usable(text) is ok


@needs_bwrap
def test_an_expression_written_from_the_test_reaches_a_method_of_self_alone(make_repo, tmp_path) -> None:
    """`has_alias` takes only `self`: no argument to steer. The model writes an expression in the test's
    terms; it runs `has_alias` and gives another value at head. The change's words do not account for it
    and blind comparisons in both orders prefer the old result: a medium `behaviour/changed-result` with
    the expression as its example. An expression that does not run the changed method is dropped."""
    repo = make_repo(
        {"query.py": QUERY, **QUERY_TESTS},
        {"query.py": QUERY_BUG},
    )
    replies = [
        _expressions('Query("select x as y").has_alias()', "str(1)"),
        NOT_ACCOUNTED,
        {"match": "Which version", "text": json.dumps({"correct": "second", "reason": "r"})},
        {"match": "Which version", "text": json.dumps({"correct": "first", "reason": "r"})},
    ]
    data = _review(repo, tmp_path, replies)
    found = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert [(f["rule_id"], f["severity"]) for f in found] == [("behaviour/changed-result", "medium")], data
    assert 'Query("select x as y").has_alias(): before True; after False' in found[0]["evidence"]
    assert (
        "an expression the model wrote from test `tests/test_query.py::TestQuery::test_alias`"
        in found[0]["message"]
    )


@needs_bwrap
def test_expressions_that_do_not_reach_the_change_are_told_in_a_note(make_repo, tmp_path) -> None:
    repo = make_repo(
        {"query.py": QUERY, **QUERY_TESTS},
        {"query.py": QUERY_BUG},
    )
    data = _review(repo, tmp_path, [_expressions("str(1)", "Query('a').words")])
    assert not [f for f in data["findings"] if f["source"] == "behaviour"], data
    notes = " ".join(data.get("notes") or [])
    assert (
        "`Query.has_alias`: no difference on the inputs the model aimed at the changed lines (0 of 2 "
        in notes
    )


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('Query("a as b").has_alias()', 'Query("a as b").has_alias()'),
        ('assert Query("a as b").has_alias()', 'Query("a as b").has_alias()'),  # the assert's test
        ("x = query.Query('x').words", "query.Query('x').words"),  # the assignment's value
        ("import os", None),
        ("assert open('f').read()", None),
        ("a = 1; b = 2", None),
    ],
)
def test_the_expression_is_taken_from_an_assert_or_an_assignment(text, want) -> None:
    assert expressions.expression(text) == want


def test_the_test_chosen_to_write_from_names_the_changed_callable() -> None:
    files = {
        "tests/test_a.py": "import query\n\ndef test_long():\n    x = 1\n    assert x\n\ndef test_other():\n"
        "    assert 1\n",
        "tests/test_b.py": "from query import Query\n\ndef test_named():\n"
        "    assert Query('select x as y').has_alias() and True and True\n",
    }
    c = _changed(path="query.py", qualname="Query.has_alias")
    base = [
        Call(c.key, origin, (("self", "<Query>"),), {"kind": "return", "repr": "True"})
        for origin in (
            "tests/test_a.py::test_other",
            "tests/test_a.py::test_long",
            "tests/test_b.py::test_named",
        )
    ]
    got = expressions.chosen_test(c, base, files.get)
    assert got is not None and got[0] == "tests/test_b.py::test_named"
    assert got[1][0] == "from query import Query"
    # none names it: the shortest
    got = expressions.chosen_test(c, base[:2], files.get)
    assert got is not None and got[0] == "tests/test_a.py::test_other"


def test_without_a_test_naming_it_one_in_the_modules_own_test_file_is_chosen() -> None:
    files = {
        "tests/test_cli.py": "import query\n\ndef test_cli():\n    assert 1\n",
        "tests/test_query.py": "import query\n\ndef test_parse():\n    assert query.parse('select x as y')\n",
    }
    c = _changed(path="src/query.py", qualname="group_aliases")
    base = [
        Call(c.key, origin, (("tlist", "<TokenList>"),), {"kind": "return", "repr": "None"})
        for origin in ("tests/test_cli.py::test_cli", "tests/test_query.py::test_parse")
    ]
    got = expressions.chosen_test(c, base, files.get)
    assert got is not None and got[0] == "tests/test_query.py::test_parse"


def test_the_tests_own_call_of_the_projects_api_is_the_template() -> None:
    src = "def test_op(s):\n    p = sqlparse.parse(s)[0]\n    assert isinstance(p.tokens[0], sql.Operation)\n"
    assert expressions.template(src, "import pytest\nimport sqlparse\nfrom sqlparse import sql") == (
        "sqlparse.parse(s)[0]"
    )
    assert expressions.template("def test_x():\n    pytest.raises(ValueError)\n", "import pytest") is None


PROPERTY = """class Query:
    def __init__(self, text):
        self.words = text.split()

    @property
    def aliased(self):
        return any(word.upper() == "AS" for word in self.words)
"""
PROPERTY_TEST = """from query import Query


def test_aliased():
    assert Query("select x AS y").aliased
"""


@needs_bwrap
def test_an_expression_reading_a_changed_property_reaches_its_getter(make_repo, tmp_path) -> None:
    """A property is reached through its getter: the expression that reads it counts (the property object
    itself has no code to enter, so it was dropped as "did not reach")."""
    bug = PROPERTY.replace('word.upper() == "AS"', 'word == "AS"')
    repo = make_repo({"query.py": PROPERTY, "test_query.py": PROPERTY_TEST}, {"query.py": bug})
    data = _review(repo, tmp_path, [_expressions('Query("select x as y").aliased'), NOT_ACCOUNTED])
    found = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert [f["rule_id"] for f in found] == ["behaviour/unexplained"], data
    assert 'Query("select x as y").aliased: before True; after False' in found[0]["evidence"]
