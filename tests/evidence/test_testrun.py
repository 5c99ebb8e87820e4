"""The reviewed project's tests: command detection, output parsing, base/head comparison, localization."""

from __future__ import annotations

import shutil

import pytest

from bot.change import git
from bot.change.diff import is_test_path, parse
from bot.config import Config, SandboxConfig
from bot.evidence.breakage import Breakage, breakage_finding, compare, failure_excerpt, frames, localize
from bot.evidence.detect import PYTEST, detect_at, detect_command
from bot.evidence.testrun import TestRun, TestRunner, parse_output
from bot.sandbox import create


def detect(files: dict[str, str], **cfg) -> list[str] | None:
    return detect_command(list(files), files.get, Config(**cfg))


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"pytest.ini": "", "a.py": ""}, list(PYTEST)),
        ({"pyproject.toml": "[tool.pytest.ini_options]\n"}, list(PYTEST)),
        ({"setup.cfg": "[tool:pytest]\n"}, list(PYTEST)),
        ({"src/x.py": "", "tests/test_x.py": ""}, list(PYTEST)),
        ({"package.json": '{"scripts": {"test": "jest"}}'}, ["npm", "test", "--silent"]),
        ({"package.json": '{"scripts": {"build": "tsc"}}'}, None),
        ({"go.mod": "module x\n"}, ["go", "test", "./..."]),
        ({"Cargo.toml": "[package]\n"}, ["cargo", "test"]),
        ({"pom.xml": "<project/>"}, ["mvn", "-q", "test"]),
        ({"Makefile": "all:\n\techo\ntest: all\n\t./run\n"}, ["make", "test"]),
        ({"Makefile": "all:\n\techo\n"}, None),
        ({"README.md": "hi", "pyproject.toml": "[project]\n"}, None),
    ],
)
def test_detects_the_test_command(files, expected):
    assert detect(files) == expected


def test_config_command_wins_and_off_disables():
    files = {"pytest.ini": ""}
    assert detect(files, test_command="tox -e py311 -- -k 'not slow'") == [
        "tox",
        "-e",
        "py311",
        "--",
        "-k",
        "not slow",
    ]
    assert detect(files, tests="off") is None
    assert detect(files, tests="off", test_command="make test") is None


def test_bad_test_command_quoting_is_a_user_error():
    from bot.types import PrereviewError

    with pytest.raises(PrereviewError, match="test_command"):
        detect({}, test_command="pytest -k 'unclosed")


@pytest.mark.parametrize(
    ("path", "is_test"),
    [
        ("tests/test_a.py", True),
        ("src/test_a.py", True),
        ("a_test.go", True),
        ("web/app.spec.ts", True),
        ("web/app.test.js", True),
        ("conftest.py", True),
        ("src/FooTest.java", True),
        ("python_testcases/load_testdata.py", True),
        ("src/app.py", False),
        ("python_programs/gcd.py", False),
        ("src/contest.py", False),
    ],
)
def test_test_paths(path, is_test):
    assert is_test_path(path) is is_test


PYTEST_OUT = """\
.FF.s                                                                    [100%]
=================================== FAILURES ===================================
____________________________ test_add[1-2] _____________________________
tests/test_calc.py:7: in test_add
    assert add(1, 2) == 3
src/calc.py:3: in add
    return a - b
E   assert -1 == 3
____________________________ test_div ____________________________
tests/test_calc.py:11: in test_div
    assert div(4, 2) == 2
E   ZeroDivisionError: division by zero
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_add[1-2] - assert -1 == 3
FAILED tests/test_calc.py::test_div - ZeroDivisionError
ERROR tests/test_io.py - ImportError: no module
2 failed, 2 passed, 1 skipped, 1 error in 0.12s
"""


def test_parses_pytest_output():
    p = parse_output(PYTEST_OUT)
    assert (p["passed"], p["failed"], p["errors"], p["skipped"]) == (2, 2, 1, 1)
    assert p["failing"] == (
        "tests/test_calc.py::test_add[1-2]",
        "tests/test_calc.py::test_div",
        "tests/test_io.py",
    )


@pytest.mark.parametrize(
    ("out", "counts", "failing"),
    [
        (
            "running 3 tests\ntest a ... ok\ntest b::c ... FAILED\ntest d ... ok\n"
            "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured\n",
            (2, 1),
            ("b::c",),
        ),
        ("  ● Calc › adds\nTests:       1 failed, 4 passed, 5 total\n", (4, 1), ("Calc › adds",)),
        ("--- FAIL: TestAdd (0.00s)\n--- PASS: TestSub (0.00s)\nFAIL\tx\t0.01s\n", (1, 1), ("TestAdd",)),
        ("[ERROR] Tests run: 5, Failures: 1, Errors: 1, Skipped: 1\n", (2, 1), ()),
    ],
)
def test_parses_other_runners(out, counts, failing):
    p = parse_output(out)
    assert (p["passed"], p["failed"]) == counts
    assert p["failing"] == failing


def run(passed=0, failed=0, failing=(), rc=None, timed_out=False, output="") -> TestRun:
    code = rc if rc is not None else (1 if failed else 0)
    return TestRun(
        ("pytest",),
        code,
        passed=passed,
        failed=failed,
        failing=tuple(failing),
        timed_out=timed_out,
        output=output,
    )


def test_compare_finds_what_the_change_broke():
    base = run(passed=3, failed=1, failing=["t::old"])
    head = run(passed=1, failed=3, failing=["t::old", "t::a", "t::b"])
    assert compare(base, head).tests == ("t::a", "t::b")
    assert compare(base, run(passed=3, failed=1, failing=["t::old"])) is None  # already failing at base
    assert compare(run(passed=4), run(passed=4)) is None
    assert compare(run(passed=4), run(timed_out=True, rc=-9)).tests == ("(test run)",)
    assert compare(run(rc=2), run(rc=2)) is None  # base broken as a whole: nothing to compare
    # tests passed and the run still exited non-zero (vitest: a cache dir it could not make): comparable
    tail = run(passed=476, rc=1)
    assert compare(tail, run(passed=475, failed=1, rc=1, failing=["p.test.ts > f > works"])).tests == (
        "p.test.ts > f > works",
    )
    assert compare(tail, run(passed=476, rc=1)) is None  # failing the same way at base


DIFF = """\
diff --git a/src/calc.py b/src/calc.py
--- a/src/calc.py
+++ b/src/calc.py
@@ -1,4 +1,4 @@
 def add(a, b):
-    return a + b
+    return a - b
 def div(a, b):
-    return a / b
+    return a // b
diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1,1 +1,2 @@
 import calc
+import os
"""


def test_frames_and_localize_to_the_deepest_changed_line():
    assert ("src/calc.py", 3) in frames(PYTEST_OUT)
    b = Breakage(("tests/test_calc.py::test_add[1-2]",), run(passed=4), run(failed=1, output=PYTEST_OUT))
    assert localize(b, parse(DIFF)) == ("src/calc.py", 2)  # frame line 3 -> nearest added line 2
    tb = 'Traceback:\n  File "/tmp/x/work/src/calc.py", line 5, in div\nZeroDivisionError\n'
    b2 = Breakage(("t",), run(passed=1), run(failed=1, output=tb))
    assert localize(b2, parse(DIFF)) == ("src/calc.py", 4)
    b3 = Breakage(("(test run)",), run(passed=1), run(timed_out=True, rc=-9, output=""))
    assert localize(b3, parse(DIFF)) == ("src/calc.py", 2)  # no frame: first added non-test line


def test_breakage_finding_and_excerpt():
    b = Breakage(
        ("tests/test_calc.py::test_add[1-2]",), run(passed=4), run(passed=3, failed=1, output=PYTEST_OUT)
    )
    head_text = "def add(a, b):\n    return a - b\ndef div(a, b):\n    return a // b\n"
    f = breakage_finding(b, parse(DIFF), head_text)
    assert (f.path, f.line, f.source, f.rule_id, f.severity) == (
        "src/calc.py",
        2,
        "tests",
        "tests/broken",
        "high",
    )
    assert f.quote == "return a - b"
    assert "test_add[1-2]" in f.message and "assert -1 == 3" in f.message and "4 passed at base" in f.message
    assert failure_excerpt(PYTEST_OUT).startswith("tests/test_calc.py:7: in test_add")
    assert "ZeroDivisionError" not in failure_excerpt(PYTEST_OUT)


CALC = "def add(a, b):\n    return a + b\n"
CALC_BROKEN = "def add(a, b):\n    return a - b\n"
TESTS = (
    "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n"
)


@pytest.fixture
def sandbox():
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed (apt-get install bubblewrap)")
    return create(SandboxConfig(backend="bubblewrap"))


def test_runs_base_and_head_in_the_sandbox_and_caches(make_repo, sandbox, tmp_path):
    repo = make_repo({"calc.py": CALC, "test_calc.py": TESTS}, {"calc.py": CALC_BROKEN})
    base, head = git.resolve(repo, "HEAD~1"), git.resolve(repo, "HEAD")
    argv = detect_at(repo, head, Config())
    assert argv == list(PYTEST)
    runner = TestRunner(sandbox, argv, 120, cache_dir=tmp_path / "cache")
    b, h = runner.at_commit(repo, base), runner.at_commit(repo, head)
    assert (b.passed, b.failed, b.ok) == (2, 0, True)
    assert (h.passed, h.failed, h.failing) == (1, 1, ("test_calc.py::test_add",))
    assert runner.at_commit(repo, head) == h and runner.runs == 2  # memo
    again = TestRunner(sandbox, argv, 120, cache_dir=tmp_path / "cache")
    assert again.at_commit(repo, head) == h and again.runs == 0  # disk cache per commit + command
    other = TestRunner(sandbox, [*argv, "-x"], 120, cache_dir=tmp_path / "cache")
    other.at_commit(repo, head)
    assert other.runs == 1  # another command is another cache entry
    diff = parse(git.diff(repo, base, head))
    f = breakage_finding(compare(b, h), diff, CALC_BROKEN)
    assert (f.path, f.line) == ("calc.py", 2)
    assert not (repo / "__pycache__").exists()  # the reviewed repository is never touched


DELETION = """\
diff --git a/wrap.py b/wrap.py
--- a/wrap.py
+++ b/wrap.py
@@ -1,5 +1,4 @@
 def wrap(text):
     lines = []
     lines.append(text[:3])
-    lines.append(text[3:])
     return lines
"""


def test_a_deletion_is_blamed_on_the_line_above_it():
    from bot.evidence.breakage import changed_lines, deleted_after

    f = parse(DELETION).files[0]
    assert changed_lines(f) == [3] and deleted_after(f, 3) and not deleted_after(f, 2)
    b = Breakage(("t::wrap",), run(passed=1), run(failed=1, output="wrap.py:4: in wrap\nE  assert\n"))
    assert localize(b, parse(DELETION)) == ("wrap.py", 3)
    assert changed_lines(parse(DIFF).files[0]) == [2, 4]


def test_a_run_hook_merges_into_a_project_environments_env_prefix():
    """The behaviour tracer's PYTHONPATH joins the project environment's import roots: with two `env`
    prefixes the inner one would win, and the tracer plugin (or the project's src/) would not import."""
    from bot.evidence.testrun import RunHook

    hook = RunHook(args=("-p", "prereview_trace"), env=(("PYTHONPATH", ".trace"), ("SPEC", "s.json")))
    argv = ["env", "PYTHONPATH=/r/src", "PYTHONNOUSERSITE=1", "/venv/bin/python", "-m", "pytest"]
    assert hook.argv(argv) == [
        "env", "PYTHONPATH=.trace:/r/src", "PYTHONNOUSERSITE=1", "SPEC=s.json",
        "/venv/bin/python", "-m", "pytest", "-p", "prereview_trace",
    ]  # fmt: skip
    assert hook.argv(["python", "-m", "pytest"]) == [
        "env", "PYTHONPATH=.trace", "SPEC=s.json", "python", "-m", "pytest", "-p", "prereview_trace",
    ]  # fmt: skip


def test_generated_calls_run_with_the_projects_interpreter_and_import_roots(tmp_path):
    from bot.evidence.projectenv import ProjectEnv, python_command

    built = ProjectEnv("built", ("/venv/bin/python", "-m", "pytest"), vars={"PYTHONPATH": "{root}/src"})
    root = tmp_path / "work"
    root.mkdir()
    assert python_command(built, root, ["h.py"]) == [
        "env",
        f"PYTHONPATH={root}/src",
        "/venv/bin/python",
        "h.py",
    ]
    assert python_command(None, root, ["h.py"]) == ["python", "h.py"]
    assert python_command(ProjectEnv("command", ("make", "test")), root, ["h.py"]) == ["python", "h.py"]


@pytest.mark.parametrize(
    ("output", "quoted"),
    [
        (  # go: a test file that no longer compiles at head (the change removed what it calls)
            "FAIL\tgithub.com/google/uuid [build failed]\nFAIL\n\n"
            "# github.com/google/uuid [github.com/google/uuid.test]\n"
            "./uuid_test.go:924:6: undefined: Compare\n",
            "./uuid_test.go:924:6: undefined: Compare",
        ),
        (
            "> tsc -p tsconfig.test.json\n\nlib/yargs-parser.ts(12,3): error TS2304: Cannot find name 'x'.\n",
            "lib/yargs-parser.ts(12,3): error TS2304: Cannot find name 'x'.",
        ),
        ("src/a.ts:3:1 - error TS2322: Type 'string' is not assignable.\n", "src/a.ts:3:1 - error TS2322: "),
        ("  ok  \tpkg\t0.1s\nsome log line\n", ""),  # nothing that reads as an error
    ],
)
def test_a_test_build_that_failed_is_described_by_its_first_compiler_error(output: str, quoted: str) -> None:
    b = Breakage(("(test run)",), run(passed=1), run(rc=2, output=output))
    described = b.describe()
    if quoted:
        assert described.startswith(f"the test run: {quoted}")
    else:
        assert described == "the test run: failed (exit code 2)"


LEAK_TESTS = """import gc


class Leaky:
    def __del__(self):
        raise RuntimeError("cannot pop this context")


def test_leaks():
    x = Leaky()
    x.me = x  # a cycle: freed by the garbage collector, whenever it next runs
    del x


def test_unrelated():
    gc.collect()
"""


def test_an_exception_the_garbage_collector_finds_fails_no_unrelated_test(make_repo, sandbox, tmp_path):
    """Under `filterwarnings = error`, pytest's unraisable-exception plugin charges `test_leaks`'s
    finaliser to whichever test runs when the collector does (here `test_unrelated`), or ends the session
    in an INTERNALERROR; the default command keeps Python's own hook: both tests pass."""
    toml = '[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n'
    repo = make_repo({"pyproject.toml": toml, "test_leak.py": LEAK_TESTS}, {"README.md": "x\n"})
    head = git.resolve(repo, "HEAD")
    argv = detect_at(repo, head, Config())
    assert argv == list(PYTEST)
    run = TestRunner(sandbox, argv, 120, cache_dir=tmp_path / "cache").at_commit(repo, head)
    assert (run.passed, run.failed, run.failing) == (2, 0, ()), run
    at = argv.index("no:unraisableexception")
    without = argv[: at - 1] + argv[at + 1 :]  # the plugin on
    run = TestRunner(sandbox, without, 120, cache_dir=tmp_path / "c2").at_commit(repo, head)
    assert run.failing == ("test_leak.py::test_unrelated",), run  # the plugin's blame, for contrast
