"""Flaky tests are not findings: a test that failed at head and passed at base is re-run alone, at head
and at base, before it counts; one that flips is one note line, never `tests/broken`. A confirmed failure
says whether the failing test runs the changed lines (traced)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from bot.change import git
from bot.change.diff import parse
from bot.cli.root import cli
from bot.config import SandboxConfig
from bot.evidence import flaky
from bot.evidence.breakage import Breakage, breakage_finding
from bot.evidence.detect import PYTEST
from bot.evidence.testrun import TestRun, TestRunner
from bot.sandbox import create

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap not installed (apt-get install bubblewrap)"
)


def test_only_the_failing_tests_are_selected_where_the_runner_can():
    ids = ["tests/test_a.py::test_x", "tests/test_a.py::TestC::test_y[1-2]"]
    assert flaky.only(list(PYTEST), ids) == ids
    assert flaky.only(["go", "test", "./..."], ["TestParse/empty", "TestRender"]) == [
        "-count=1",
        "-run",
        "^(TestParse|TestRender)$",
    ]
    assert flaky.only(["npm", "test", "--silent"], ["adds numbers"]) is None
    assert flaky.only(["make", "test"], ["x"]) is None


def test_an_outcome_is_unknown_when_the_rerun_did_not_run_the_test():
    run = TestRun(("pytest",), 1, passed=1, failed=1, failing=("t::a",))
    assert (flaky.outcome(run, "t::a"), flaky.outcome(run, "t::b")) == ("fail", "pass")
    not_found = TestRun(("pytest",), 4, output="ERROR: not found: t::a")
    assert flaky.outcome(not_found, "t::a") == "unknown"
    assert flaky.outcome(TestRun(("pytest",), 0, passed=1), "t::a") == "pass"


# ---------------------------------------------------------------- real reruns in the real sandbox

CALC = "def add(a, b):\n    return a + b\n\n\ndef scale(x):\n    return 2 * x\n"
CALC_BROKEN = CALC.replace("a + b", "a - b")
TESTS = """import os
import random

from calc import add, scale


def test_add():
    assert add(2, 3) == 5


def test_pager():
    # fails now and then, whatever the code: about one run in ten (seeded per run)
    assert random.Random(os.urandom(16)).random() >= 0.1


def test_scale_reads_its_data():
    with open("data/factor.txt") as fh:
        assert scale(int(fh.read())) == 6
"""


@pytest.fixture
def calc_repo(make_repo) -> Path:
    return make_repo(
        {"calc.py": CALC, "tests/test_calc.py": TESTS, "data/factor.txt": "3\n", "pytest.ini": ""},
        {"calc.py": CALC_BROKEN, "data/factor.txt": "4\n"},
    )


def _runner() -> TestRunner:
    sandbox = create(SandboxConfig(backend="bubblewrap"))
    return TestRunner(sandbox, [sys.executable, *PYTEST[1:]], 120)


def _breakage(tests: tuple[str, ...]) -> Breakage:
    """What compare() reports when these tests failed at head and passed at base."""
    base = TestRun(tuple(PYTEST), 0, passed=3)
    head = TestRun(tuple(PYTEST), 1, passed=3 - len(tests), failed=len(tests), failing=tests)
    return Breakage(tests, base, head)


@needs_bwrap
def test_a_test_that_flips_on_a_rerun_is_flaky_and_a_real_failure_stays(calc_repo):
    diff = parse(git.git(calc_repo, "diff", "HEAD~1", "HEAD"))
    seen = _breakage(("tests/test_calc.py::test_add", "tests/test_calc.py::test_pager"))
    got = flaky.recheck(_runner(), calc_repo, "HEAD~1", "HEAD", seen, diff, reruns=4)
    assert got.flaky == ("tests/test_calc.py::test_pager",)  # fails ~1 run in 10: passes on a rerun
    assert got.breakage is not None and got.breakage.tests == ("tests/test_calc.py::test_add",)
    assert got.breakage.reach == (("calc.py", 2),)  # the failing test runs the changed line
    assert len(got.notes) == 1 and "\n" not in got.notes[0]
    assert got.notes[0].startswith("Flaky test, not a finding: tests/test_calc.py::test_pager (failed ")
    finding = breakage_finding(got.breakage, diff, CALC_BROKEN)
    assert (finding.path, finding.line, finding.severity) == ("calc.py", 2, "high")
    assert "runs the changed line calc.py:2" in finding.message and "test_pager" not in finding.message


@needs_bwrap
def test_a_failure_that_never_runs_the_changed_lines_says_so(calc_repo):
    diff = parse(git.git(calc_repo, "diff", "HEAD~1", "HEAD"))
    seen = _breakage(("tests/test_calc.py::test_scale_reads_its_data",))
    got = flaky.recheck(_runner(), calc_repo, "HEAD~1", "HEAD", seen, diff)
    assert got.flaky == () and got.breakage is not None
    assert got.breakage.reach == ()  # scale() ran, but no changed line of calc.py did
    finding = breakage_finding(got.breakage, diff, CALC_BROKEN)
    assert finding.severity == "medium" and "does not run any changed line" in finding.message


# ---------------------------------------------------------------- end to end: `prereview review`

PAGER = """from pathlib import Path

from calc import add

COUNTER = Path({counter!r})


def test_add():
    assert add(2, 3) == 5


def test_pager():
    # fails on the second run of the suite only (the first run at head), as a test under load would
    n = int(COUNTER.read_text()) + 1 if COUNTER.exists() else 1
    COUNTER.write_text(str(n))
    assert n != 2
"""


def _review(repo: Path, tmp_path: Path, monkeypatch) -> dict:
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [], "default": {"findings": []}}))
    cfg = {
        "model": {"backend": "scripted", "script": str(script)},
        "patches": {"enabled": False},
        "tests": {"python": sys.executable},
        "sandbox": {"backend": "none"},  # the counter file must outlive one run
    }
    path = tmp_path / "cfg.yml"
    path.write_text(yaml.safe_dump(cfg))
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(path), "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_a_flaky_test_is_never_reported_as_broken(make_repo, tmp_path, monkeypatch):
    counter = tmp_path / "pager-runs"
    files = {"calc.py": CALC, "tests/test_calc.py": PAGER.format(counter=str(counter)), "pytest.ini": ""}
    repo = make_repo(files, {"calc.py": CALC + "\n# a neutral change\n"})
    data = _review(repo, tmp_path, monkeypatch)
    assert [f for f in data["findings"] if f["rule_id"] == "tests/broken"] == [], data["findings"]
    notes = [n for n in data["notes"] if n.startswith("Flaky test")]
    assert len(notes) == 1 and "tests/test_calc.py::test_pager (failed 1 of 3 runs at head" in notes[0]
    assert int(counter.read_text()) == 4  # base, head, two reruns of test_pager alone at head


def test_a_real_regression_next_to_a_flaky_test_is_still_found(make_repo, tmp_path, monkeypatch):
    counter = tmp_path / "pager-runs"
    files = {"calc.py": CALC, "tests/test_calc.py": PAGER.format(counter=str(counter)), "pytest.ini": ""}
    repo = make_repo(files, {"calc.py": CALC_BROKEN})
    data = _review(repo, tmp_path, monkeypatch)
    broken = [f for f in data["findings"] if f["rule_id"] == "tests/broken"]
    assert len(broken) == 1 and (broken[0]["path"], broken[0]["line"]) == ("calc.py", 2), data["findings"]
    assert "1 test that passed" in broken[0]["message"] and "test_add" in broken[0]["message"]
    assert (
        "test_pager" not in broken[0]["message"] and "runs the changed line calc.py:2" in broken[0]["message"]
    )
    assert sum(n.startswith("Flaky test") for n in data["notes"]) == 1


NODE_FLAKY = """const { test } = require('node:test');
const assert = require('node:assert');
const crypto = require('node:crypto');
const { add } = require('../calc');
test('adds numbers', () => { assert.strictEqual(add(2, 3), 5); });
// fails now and then, whatever the code: about one run in ten
test('pager redraws', () => { assert.ok(crypto.randomInt(10) !== 0); });
"""


@needs_bwrap
def test_a_node_runner_that_cannot_select_a_test_is_rerun_whole(make_repo):
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("node/npm not installed")
    pkg = {"name": "calc", "version": "1.0.0", "scripts": {"test": "node --test test/"}}
    calc = "exports.add = (a, b) => a + b;\n"
    repo = make_repo(
        {"package.json": json.dumps(pkg), "test/calc.test.js": NODE_FLAKY, "calc.js": calc},
        {"calc.js": calc.replace("a + b", "a - b")},
    )
    runner = TestRunner(create(SandboxConfig(backend="bubblewrap")), ["npm", "test", "--silent"], 120)
    seen = _breakage(("adds numbers", "pager redraws"))
    got = flaky.recheck(runner, repo, "HEAD~1", "HEAD", seen, None, reruns=4)
    assert got.flaky == ("pager redraws",) and got.reruns >= 4
    assert got.breakage is not None and got.breakage.tests == ("adds numbers",)
    assert got.breakage.reach is None  # not traced: nothing said either way


UNLUCKY = PAGER.replace("assert n != 2", "assert n not in (2, 3, 4)").replace(
    "fails on the second run of the suite only (the first run at head)",
    "fails on every run at head, passes on every run at base, and never calls add()",
)


def test_a_failure_that_never_runs_a_changed_line_is_not_blamed_on_the_change(
    make_repo, tmp_path, monkeypatch
):
    """The worst case of a flaky test: it failed on all three head runs and passed on all three base runs.
    The tracer shows it never ran a changed line (nor did any module body at import): a note, no finding."""
    counter = tmp_path / "pager-runs"
    files = {"calc.py": CALC, "tests/test_calc.py": UNLUCKY.format(counter=str(counter)), "pytest.ini": ""}
    repo = make_repo(files, {"calc.py": CALC.replace("2 * x", "x + x")})
    data = _review(repo, tmp_path, monkeypatch)
    assert [f for f in data["findings"] if f["source"] == "tests"] == [], data["findings"]
    notes = [n for n in data["notes"] if n.startswith("Not counted as broken")]
    assert (
        len(notes) == 1
        and "tests/test_calc.py::test_pager" in notes[0]
        and "never ran a changed line" in notes[0]
    )
    assert int(counter.read_text()) == 6


@needs_bwrap
def test_a_changed_constant_reaches_its_tests_at_import(make_repo):
    """A module-level line runs at import (during collection), outside any test: it counts as reached,
    so a test broken by a changed constant is still the change's."""
    scale = "FACTOR = 2\n\n\ndef scale(x):\n    return FACTOR * x\n"
    tests = "from calc import scale\n\n\ndef test_scale():\n    assert scale(3) == 6\n"
    repo = make_repo(
        {"calc.py": scale, "tests/test_calc.py": tests, "pytest.ini": ""},
        {"calc.py": scale.replace("2", "3")},
    )
    diff = parse(git.git(repo, "diff", "HEAD~1", "HEAD"))
    got = flaky.recheck(
        _runner(), repo, "HEAD~1", "HEAD", _breakage(("tests/test_calc.py::test_scale",)), diff
    )
    assert got.notes == [] and got.breakage is not None and got.breakage.reach == (("calc.py", 1),)
