"""bench/realworld.py: commit selection, case repos and scoring, on a synthetic git history (offline)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load() -> Any:
    spec = importlib.util.spec_from_file_location("bench_realworld", ROOT / "bench" / "realworld.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_realworld"] = mod
    spec.loader.exec_module(mod)
    return mod


rw = _load()

TEST_ADD = "from requests.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
CORE = "def add(a, b):\n    return a + b\n\n\ndef name(x):\n    return str(x)\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _commit(repo: Path, message: str, files: dict[str, str | None]) -> str:
    for path, text in files.items():
        p = repo / path
        if text is None:
            p.unlink()
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def history(tmp_path: Path) -> dict[str, Any]:
    repo = tmp_path / "clone"
    repo.mkdir()
    _git(repo, "init", "-q")
    shas = {}
    shas["init"] = _commit(
        repo,
        "initial",
        {
            "src/requests/core.py": CORE.replace("a + b", "a + b + 1"),
            "tests/test_core.py": "def test_name():\n    pass\n",
        },
    )
    shas["fix"] = _commit(
        repo,
        "Fix off-by-one in add (#12)",
        {
            "src/requests/core.py": CORE,
            "tests/test_add.py": TEST_ADD,
            "tests/test_core.py": "def test_name():\n    assert True\n",
            "HISTORY.md": "- fixed add\n",
        },
    )
    shas["ordinary"] = _commit(
        repo,
        "Add a greeting helper",
        {"src/requests/core.py": CORE + "\n\ndef greet(who):\n    return 'hi ' + who\n"},
    )
    shas["typo"] = _commit(
        repo,
        "Fix typo in a comment",
        {
            "src/requests/core.py": CORE + "\n\ndef greet(who):  # hi\n    return 'hi ' + who\n",
            "tests/test_core.py": "def test_name():\n    assert 1\n",
        },
    )
    shas["release"] = _commit(repo, "v2.0.1", {"src/requests/__version__.py": "__version__ = '2.0.1'\n"})
    shas["ci"] = _commit(
        repo, "Add greeting again", {"src/requests/core.py": CORE, ".github/ci.yml": "x: 1\n"}
    )
    return {"repo": repo, "shas": shas}


def test_selects_fix_and_ordinary_commits_by_the_rules(history: dict[str, Any]) -> None:
    cases = rw.select("requests", history["repo"], per_project=3)
    by_kind = {k: [c for c in cases if c["kind"] == k] for k in ("hidden", "kept", "ordinary")}
    shas = history["shas"]
    assert [c["commit"] for c in by_kind["hidden"]] == [shas["fix"]]
    assert [c["commit"] for c in by_kind["kept"]] == [shas["fix"]]
    # the typo fix, the version bump and the commit touching CI files are neither kind
    assert [c["commit"] for c in by_kind["ordinary"]] == [shas["ordinary"]]
    hidden = by_kind["hidden"][0]
    assert hidden["files"] == ["src/requests/core.py"]
    assert hidden["test_files"] == ["tests/test_add.py", "tests/test_core.py"]
    assert hidden["truth_lines"] == [2]  # `return a + b + 1`, the line the revert puts back


def test_case_repos_put_back_the_source_and_for_hidden_the_tests(
    history: dict[str, Any], tmp_path: Path
) -> None:
    cases = {c["kind"]: c for c in rw.select("requests", history["repo"], per_project=1)}
    hidden = rw.materialize(cases["hidden"], history["repo"], tmp_path / "hidden")
    kept = rw.materialize(cases["kept"], history["repo"], tmp_path / "kept")
    ordinary = rw.materialize(cases["ordinary"], history["repo"], tmp_path / "ordinary")
    for repo in (hidden, kept):
        assert _git(repo, "rev-parse", "HEAD^").strip() == history["shas"]["fix"]
        assert "a + b + 1" in _git(repo, "show", "HEAD:src/requests/core.py")
    assert _git(hidden, "diff", "--name-only", "HEAD^", "HEAD").split() == [
        "src/requests/core.py",
        "tests/test_add.py",
        "tests/test_core.py",
    ]
    assert "test_add.py" not in _git(hidden, "ls-tree", "-r", "--name-only", "HEAD")
    assert _git(kept, "diff", "--name-only", "HEAD^", "HEAD").split() == ["src/requests/core.py"]
    assert _git(ordinary, "rev-parse", "HEAD").strip() == history["shas"]["ordinary"]
    # the fix's regression tests, which head deletes: a hit seen only through them is the corpus's leak
    assert rw.removed_tests(cases["hidden"], hidden) == sorted(
        set(re.findall(r"def (test\w*)", _git(hidden, "show", "HEAD^:tests/test_add.py")))
    )
    assert rw.removed_tests(cases["hidden"], hidden) and not rw.removed_tests(cases["kept"], kept)


def _f(line: int, severity_rank: int = 2, **kw: Any) -> dict[str, Any]:
    return {"path": "src/requests/core.py", "line": line, "rank": severity_rank, **kw}


def test_scoring() -> None:
    case = {"kind": "hidden", "files": ["src/requests/core.py"], "truth_lines": [10], "test_files": []}
    assert rw.score(case, [_f(12, source="model")], [])["detected"]
    assert not rw.score(case, [_f(13, source="model")], [])["detected"]  # outside +-2
    assert not rw.score(case, [_f(10, severity_rank=1, source="model")], [])["detected"]  # low
    no_example = _f(10, source="behaviour", evidence="")
    assert not rw.score(case, [no_example], [])["detected"]
    example = _f(10, source="behaviour", evidence="add(1, 2): base 3, head 4")
    got = rw.score(case, [example], [])
    assert got["detected"] and got["with_example"] and got["detected_by"] == ["behaviour"]
    leaked = {**case, "removed_tests": ["test_add_one"]}
    one = "`add(1, 2)` returned `3` and now returns `4` (in test `t.py::test_add_one`)."
    assert rw.score(leaked, [{**example, "message": one}], [])["via_removed_test"]
    other = one.replace("test_add_one", "test_add")
    assert not rw.score(leaked, [{**example, "message": other}], [])["via_removed_test"]
    two = {**example, "message": one, "evidence": "add(1, 2): base 3, head 4 | add(0, 0): base 1, head 0"}
    assert not rw.score(leaked, [two], [])["via_removed_test"]  # one example from elsewhere

    kept = {**case, "kind": "kept", "test_files": ["tests/test_add.py"]}
    runs = [
        {"which": "base", "ok": True, "passed": 3, "timed_out": False, "summary": "3 passed", "failing": []},
        {
            "which": "head",
            "ok": False,
            "passed": 2,
            "timed_out": False,
            "summary": "1 failed",
            "failing": ["tests/test_add.py::test_add"],
        },
    ]
    got = rw.score(kept, [_f(10, rule_id="tests/broken", source="tests")], runs)
    assert got["tests_flagged"] and got["base_usable"] and got["regression_fails_at_head"]
    broken_base = [{**runs[0], "ok": False, "passed": 0, "summary": "failed (exit code 4)"}, runs[1]]
    got = rw.score(kept, [], broken_base)
    assert not got["tests_flagged"] and not got["base_usable"]


def test_a_rule_rescored_at_another_severity_changes_only_its_findings() -> None:
    case = {"kind": "hidden", "files": ["src/requests/core.py"], "truth_lines": [10], "test_files": []}
    low = _f(
        10, severity_rank=1, source="behaviour", rule_id="behaviour/unexplained", evidence="f(1): 2 -> 3"
    )
    other = _f(10, severity_rank=1, source="model", rule_id="model")
    row = {**case, "findings": [low, other]}
    assert not rw.score(row, row["findings"], [])["detected"]
    (moved,) = rw.reranked([row], {"behaviour/unexplained": "medium"})
    assert rw.score(moved, moved["findings"], [])["detected"]
    assert moved["findings"][1] == other and row["findings"][0] == low  # others and the input untouched
    assert rw.reranked([row], {}) == [row]


def _cases(projects: dict[str, tuple[int, int]]) -> list[dict[str, Any]]:
    """Synthetic cases: per project, (fix commits, ordinary commits); a fix gives a hidden and a kept case."""
    out = []
    for p, (fixes, ordinary) in projects.items():
        for i in range(fixes):
            for kind in ("hidden", "kept"):
                out.append({"id": f"{p}-{kind}-{i}", "project": p, "commit": f"{p}fix{i:04d}", "kind": kind})
        for i in range(ordinary):
            out.append(
                {"id": f"{p}-ordinary-{i}", "project": p, "commit": f"{p}ord{i:04d}", "kind": "ordinary"}
            )
    return out


def test_split_is_deterministic_balanced_and_keeps_a_fix_commit_in_one_half() -> None:
    from bench_realworld import rwcorpus

    cases = _cases({"a": (8, 5), "b": (7, 5), "c": (8, 3), "d": (1, 0)})
    got = rwcorpus.assign_halves(cases, studied=frozenset())
    assert [c["id"] for c in got] == [c["id"] for c in cases]  # order kept
    assert rwcorpus.assign_halves(list(reversed(cases)), studied=frozenset()) == list(reversed(got))
    assert {c["half"] for c in got} == {"tuning", "check"}
    by_commit: dict[str, set[str]] = {}
    for c in got:
        by_commit.setdefault(c["commit"], set()).add(c["half"])
    assert all(len(h) == 1 for h in by_commit.values())  # no commit (so no case) in both halves
    for kind in ("hidden", "kept", "ordinary"):
        totals = {h: sum(c["kind"] == kind and c["half"] == h for c in got) for h in rwcorpus.HALVES}
        assert abs(totals["tuning"] - totals["check"]) <= 1, (kind, totals)
        for p in "abcd":
            n = {
                h: sum(c["project"] == p and c["kind"] == kind and c["half"] == h for c in got)
                for h in rwcorpus.HALVES
            }
            assert abs(n["tuning"] - n["check"]) <= 1, (p, kind, n)
    # the hash decides, not the input order or the commit's position in the log
    renamed = rwcorpus.assign_halves(
        [{**c, "project": "z" + c["project"]} for c in cases], studied=frozenset()
    )
    assert [c["half"] for c in renamed] != [c["half"] for c in got]


def test_split_puts_studied_commits_in_tuning_and_the_committed_corpus_follows_the_rule() -> None:
    from bench_realworld import rwcorpus

    cases = _cases({"a": (4, 3)})
    plain = rwcorpus.assign_halves(cases, studied=frozenset())
    checked = sorted({c["commit"] for c in plain if c["half"] == "check"})
    got = rwcorpus.assign_halves(cases, studied=frozenset(checked))
    assert all(c["half"] == "tuning" for c in got if c["commit"] in checked)

    doc = json.loads(rw.DATA.read_text())
    data = doc["cases"]
    assert rwcorpus.assign_halves([{k: v for k, v in c.items() if k != "half"} for c in data]) == data
    hidden = [c for c in data if c["kind"] == "hidden"]
    assert len(hidden) >= 60 and sum(c["kind"] == "ordinary" for c in data) >= 30
    assert len({c["project"] for c in data}) >= 6 and "click" not in {c["project"] for c in data}
    assert not {c["id"] for c in data if c["half"] == "tuning"} & {
        c["id"] for c in data if c["half"] == "check"
    }
    assert all(c["half"] == "tuning" for c in data if c["commit"] in rwcorpus.STUDIED)


def test_report_prints_each_half_and_the_misses_by_cause(tmp_path: Path) -> None:
    base = {
        "which": "base",
        "ok": True,
        "passed": 3,
        "timed_out": False,
        "summary": "3 passed",
        "failing": [],
    }
    case = {"project": "a", "files": ["a/x.py"], "truth_lines": [5], "test_files": [], "runs": [base]}
    rows = [
        {
            **case,
            "id": "h1",
            "kind": "hidden",
            "half": "tuning",
            "findings": [],
            "skipped": ["f (reached by no test; x)"],
        },
        {**case, "id": "h2", "kind": "hidden", "half": "tuning", "findings": [], "runs": []},
        {
            **case,
            "id": "h3",
            "kind": "hidden",
            "half": "check",
            "findings": [],
            "behaviour": [{"path": "a/x.py", "line": 5}],
        },
        {**case, "id": "o1", "kind": "ordinary", "half": "check", "findings": [], "truth_lines": []},
        {  # a hit through a variant of a test (amplify.py), on the right lines
            **case,
            "id": "h5",
            "kind": "hidden",
            "half": "check",
            "findings": [{"path": "a/x.py", "line": 6, "rank": 2, "message": f"x ({rw.AMPLIFIED})"}],
        },
        {**case, "id": "h4", "kind": "hidden", "half": "check", "findings": [], "files": ["flag.go"]},
    ]
    for r in rows:
        r.update({"seconds": 1.0, "seconds_model": 0.5, "seconds_tests": 0.2, "notes": []})
    out = rw.report(rows, "all", data=tmp_path / "none.json")
    tuning, check = out.split("== check half")
    assert "== tuning half: 2 case(s)" in tuning and "check half: 4 case(s)" in "== check half" + check
    assert "not reached  50.0% (1/2)" in tuning and "no environment  50.0% (1/2)" in tuning
    assert (
        "hidden cases flagged on the right lines through one 1 of 3; ordinary >=medium findings through one 0"
        in check
    )
    assert "judged intended  50.0% (1/2)" in check and "not compared (not Python)  50.0% (1/2)" in check
    assert "ordinary >=medium findings per commit 0.00" in check
    assert "h3" not in out  # aggregate figures only
    assert "== tuning" not in rw.report(rows, "check", data=tmp_path / "none.json")


def test_test_and_source_files_per_language() -> None:
    from bench_realworld import rwcorpus

    assert rwcorpus.is_test("flag_test.go", "go") and rwcorpus.is_test("x/testdata/a.txt", "go")
    assert not rwcorpus.is_test("flag.go", "go") and rwcorpus.is_source("flag.go", ("",), "go")
    assert not rwcorpus.is_source("flag_test.go", ("",), "go")
    assert not rwcorpus.is_source("vendor/x/a.go", ("",), "go")
    for path in ("test/serialize.js", "src/index.spec.ts", "test/base.test.ts", "src/__snapshots__/a.snap"):
        assert rwcorpus.is_test(path, "typescript"), path
    assert rwcorpus.is_source("src/utils.ts", ("src/",), "typescript")
    assert rwcorpus.is_source("index.js", ("index.js", "src/"), "javascript")
    for path in ("src/index.d.ts", "src/index.bench.ts", "src/index.spec.ts", "docs/a.ts"):
        assert not rwcorpus.is_source(path, ("src/",), "typescript"), path
    # a Python project's JavaScript test folder is no test of it (its corpus stays as built)
    assert not rwcorpus.is_test("tests/a.js") and rwcorpus.is_test("tests/test_a.py")


def test_selects_a_go_fix_and_scores_its_tests_by_name(tmp_path: Path) -> None:
    repo = tmp_path / "clone"
    repo.mkdir()
    _git(repo, "init", "-q")
    src = "package m\n\nfunc Add(a, b int) int {\n\treturn a + b + 1\n}\n"
    _commit(repo, "initial", {"go.mod": "module m\n", "m.go": src, "m_test.go": "package m\n"})
    fix = _commit(
        repo,
        "fix: Add counts one too many",
        {"m.go": src.replace(" + 1", ""), "m_test.go": "package m\n\nfunc TestAdd(t *testing.T) {}\n"},
    )
    rw.rwcorpus.PROJECTS["gotoy"] = {"slug": "t/gotoy", "language": "go", "package": [""], "import": "m"}
    try:
        cases = rw.select("gotoy", repo, per_project=2)
    finally:
        del rw.rwcorpus.PROJECTS["gotoy"]
    kept = next(c for c in cases if c["kind"] == "kept")
    assert (kept["commit"], kept["files"], kept["test_files"]) == (fix, ["m.go"], ["m_test.go"])
    assert kept["language"] == "go" and kept["truth_lines"] == [4]
    base = {
        "which": "base",
        "ok": True,
        "passed": 3,
        "timed_out": False,
        "summary": "3 passed",
        "failing": [],
    }
    head = {**base, "which": "head", "ok": False, "summary": "1 failed", "failing": ["TestAdd"]}
    named = {"path": "m.go", "line": 4, "rank": 3, "rule_id": "tests/broken", "message": "breaks TestAdd"}
    got = rw.score(kept, [named], [base, head])
    assert got["regression_fails_at_head"] and got["tests_named"] and got["tests_flagged"]
    assert not rw.score(kept, [{**named, "message": "breaks the test run"}], [base, head])["tests_named"]


def test_adding_projects_keeps_the_other_cases_and_their_halves() -> None:
    from bench_realworld import rwcorpus

    old_cases = rwcorpus.assign_halves(_cases({"a": (4, 3), "b": (3, 2)}))
    old = {"heads": {"a": "1", "b": "2"}, "projects": {}, "split": "", "cases": old_cases}
    new_cases = [{**c, "language": "go"} for c in _cases({"b": (2, 1), "g": (3, 2)})]
    new = {"heads": {"b": "3", "g": "4"}, "projects": {}, "split": "s", "per_project": 2}
    got = rw.add_projects(old, {**new, "ordinary_per_project": 1}, new_cases)
    assert [c for c in got["cases"] if c["project"] == "a"] == [c for c in old_cases if c["project"] == "a"]
    assert {c["project"] for c in got["cases"]} == {"a", "b", "g"}
    assert all(c.get("language") == "go" for c in got["cases"] if c["project"] == "b")
    assert got["heads"] == {"a": "1", "b": "3", "g": "4"} and got["added"][0]["projects"] == ["b", "g"]
    go = [c for c in got["cases"] if c.get("language") == "go"]
    for kind in ("hidden", "ordinary"):
        n = {h: sum(c["kind"] == kind and c["half"] == h for c in go) for h in rwcorpus.HALVES}
        assert abs(n["tuning"] - n["check"]) <= 1, (kind, n)
