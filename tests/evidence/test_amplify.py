"""The tests that reach a quiet changed callable, run again with one literal of their own code changed
(amplify.py, testvariants.py): the variants made, the tests chosen, and a review that finds a difference
only a variant of the test shows (the test builds the object the change reads from a string)."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import time
from types import SimpleNamespace

import pytest
import yaml
from click.testing import CliRunner

from bot.cli.root import cli
from bot.evidence.behaviour import amplify, testvariants
from bot.evidence.behaviour.compare import Call

MODULE = '''import pytest
from names import real_name


def test_real_name():
    """A doc."""
    got = real_name("db.tbl", strict=True)
    assert got == "tbl"


class TestMore:
    @pytest.mark.parametrize("text, want", [("a.b", "b")])
    def test_more(self, text, want):
        assert real_name(text) == want
'''


def _functions(text: str) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef)}


def test_variants_change_one_literal_each_the_changed_lines_literals_first() -> None:
    text, made = testvariants.amplified_module(MODULE, {"tests/test_n.py::test_real_name": ["."]}, 12)
    whats = [v.what for v in made]
    assert whats[0] == "'db.tbl' -> 'db.x.tbl'"  # one more part at the changed line's "."
    assert "keyword `strict` left out" in whats and "True -> False" in whats and "'db.tbl' -> ''" in whats
    fns = _functions(text)
    assert set(fns) == {
        "test_real_name",
        "test_more",
        *(f"test_real_name__prereview_v{k}" for k in range(len(made))),
    }
    first = ast.unparse(fns["test_real_name__prereview_v0"])
    assert "'db.x.tbl'" in first and "assert got == 'tbl'" in first and "A doc." in first
    assert ast.unparse(fns["test_real_name"]) == ast.unparse(_functions(MODULE)["test_real_name"])


def test_a_method_is_varied_in_its_class_its_parametrize_values_not_its_names_nor_asserts() -> None:
    text, made = testvariants.amplified_module(
        MODULE, {"tests/test_n.py::TestMore::test_more[a.b-b]": []}, 12
    )
    assert made and all(v.test == "tests/test_n.py::TestMore::test_more" for v in made)
    cls = next(n for n in ast.parse(text).body if isinstance(n, ast.ClassDef))
    names = [n.name for n in cls.body if isinstance(n, ast.FunctionDef)]
    assert names[0] == "test_more" and all(n.startswith("test_more__prereview_v") for n in names[1:])
    assert all("'text, want'" in ast.unparse(n) for n in cls.body)  # the argument names stay
    assert {v.what for v in made} == {"'a.b' -> ''", "'b' -> ''"}  # `want` in the assert is not a site
    assert testvariants.amplified_module("def test_x(:\n", {"t.py::test_x": []}, 12) == ("", [])
    assert testvariants.amplified_module(MODULE, {"tests/test_n.py::test_gone": []}, 12) == ("", [])


def test_the_tests_chosen_reach_the_callable_at_base_and_are_neither_failing_nor_edited() -> None:
    class C:  # the little of `Changed` that chosen_tests reads
        key, is_class, kind = "names.py::real_name", False, "modified"
        base_source = 'def real_name(s):\n    return s.split(".")[1]\n'
        head_source = 'def real_name(s):\n    return s.rsplit(".", 1)[1]\n'

    def call(origin: str, variant: str = "") -> Call:
        return Call(
            "names.py::real_name",
            origin,
            (("s", "'a.b'"),),
            {"kind": "return", "repr": "'b'"},
            variant=variant,
        )

    calls = [
        call("tests/test_n.py::test_a[x]"),
        call("tests/test_n.py::test_a[y]"),
        call("tests/test_n.py::test_failing"),
        call("tests/test_m.py::test_b", variant="edge s"),
        call("doctest"),
        *(call(f"tests/test_m.py::test_{k}") for k in range(5)),
    ]
    got = amplify.chosen_tests(amplify.varied([C()]), calls, lambda x: x.origin.endswith("failing"))  # type: ignore[list-item]
    assert got == {
        "tests/test_n.py": {"tests/test_n.py::test_a": [".", 1]},
        "tests/test_m.py": {"tests/test_m.py::test_0": [".", 1], "tests/test_m.py::test_1": [".", 1]},
    }


# the object the change reads is built by the test from a string: no argument or literal attribute to vary
NAMES = (
    "class Name:\n    def __init__(self, text):\n        self.parts = text.split('.')\n\n"
    "    def real(self):\n        return self.parts[-1]\n"
)
TESTS = "from names import Name\n\n\ndef test_two_parts():\n    assert Name('db.tbl').real() == 'tbl'\n"


def _review(repo, tmp_path, amplified: int) -> dict:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [], "default": {"findings": []}}))
    cfg = tmp_path / "cfg.yml"
    given = {"model": {"backend": "scripted", "script": str(script)}, "patches": {"enabled": False}}
    cfg.write_text(yaml.safe_dump({**given, "behaviour": {"amplified_tests": amplified}}))
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_a_difference_only_a_variant_of_the_test_shows_is_found_with_its_example(
    make_repo, tmp_path, monkeypatch
):
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))
    head = NAMES.replace("self.parts[-1]", "self.parts[1]")  # right for two parts only
    repo = make_repo({"names.py": NAMES, "tests/test_names.py": TESTS, "pytest.ini": ""}, {"names.py": head})
    data = _review(repo, tmp_path, 36)
    found = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert [(f["path"], f["line"], f["rule_id"]) for f in found] == [
        ("names.py", 6, "behaviour/steered-failure")
    ], data["notes"]
    assert "IndexError" in found[0]["message"], found[0]["message"]
    assert "test `tests/test_names.py::test_two_parts ('db.tbl' -> '')`" in found[0]["message"]
    assert any(n.startswith("behaviour: ") and "variant(s) of 1 test(s)" in n for n in data["notes"])
    off = _review(repo, tmp_path, 0)  # without the variants nothing shows the difference
    assert [f for f in off["findings"] if f["source"] == "behaviour"] == [], off["notes"]


def test_variants_that_record_no_call_say_so_not_no_difference(make_repo) -> None:
    """A variant file that is not collected (or a budget spent) leaves nothing to compare: the note says
    that, not "no difference"."""
    repo = make_repo({"names.py": NAMES, "tests/test_names.py": TESTS}, {"names.py": NAMES})

    def sha(rev: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), "rev-parse", rev], capture_output=True, text=True, check=True
        ).stdout.strip()

    ran: list[list[str]] = []

    class Runner:  # records what it was asked to run; the run records no call
        def in_tree_collect(self, root, hook, timeout):
            ran.append([a for a in hook.args if "::" in a])
            assert (root / "tests/test_names_prereview_amplified.py").is_file()
            return None, ""

    c = SimpleNamespace(
        key="names.py::Name.real",
        qualname="Name.real",
        name="real",
        path="names.py",
        is_class=False,
        kind="modified",
        base_source="def real(self):\n    return self.parts[-1]\n",
        head_source="def real(self):\n    return self.parts[1]\n",
    )
    calls = [
        Call(
            c.key,
            "tests/test_names.py::test_two_parts",
            (("self", "<Name>"),),
            {"kind": "return", "repr": "'tbl'"},
        )
    ]
    change = SimpleNamespace(base_sha=sha("HEAD^"), head_sha=sha("HEAD"), workdir=repo)
    got = amplify.differences(
        Runner(),
        change,
        [c],
        calls,
        lambda x: False,
        {"tests/test_names.py": TESTS}.get,
        36,
        time.monotonic() + 60,  # type: ignore[arg-type]
    )
    assert got.diffs == [] and len(ran) == 2 and ran[0] and ran[0] == ran[1]
    assert got.notes == [
        f"behaviour: {len(ran[0])} variant(s) of 1 test(s) reaching `Name.real` (one literal or keyword of "
        "the test changed) ran at base and head: no call of it recorded at head (not collected, or the "
        "budget)"
    ]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_the_recorded_calls_made_again_run_before_the_test_variants(make_repo, tmp_path, monkeypatch):
    """Test variants are whole test runs: made first, they could spend the budget that the deleted test's
    recorded call, made again at head, needs (the surest evidence). They run after it."""
    from bot.evidence.behaviour.engine import BehaviourEvidence

    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))
    order: list[str] = []
    generated, differences = BehaviourEvidence._generated, amplify.differences

    def made_again(self, *args, **kwargs):  # noqa: ANN001, ANN202
        order.append("calls")
        return generated(self, *args, **kwargs)

    def varied(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        order.append("variants")
        return differences(*args, **kwargs)

    monkeypatch.setattr(BehaviourEvidence, "_generated", made_again)
    monkeypatch.setattr(amplify, "differences", varied)
    regression = "\n\ndef test_three_parts():\n    assert Name('a.b.c').real() == 'c'\n"
    head = NAMES.replace("self.parts[-1]", "self.parts[1]")
    repo = make_repo(
        {"names.py": NAMES, "tests/test_names.py": TESTS + regression, "pytest.ini": ""},
        {"names.py": head, "tests/test_names.py": TESTS},
    )
    data = _review(repo, tmp_path, 36)
    assert order == ["calls", "variants"], data["notes"]
    found = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert found and all(f["line"] == 6 for f in found), found
