"""The tests stage beyond Python: mocha, vitest and `node --test` results per test (from real output
captured with node 20, mocha 10 and vitest 1), the failing assertion quoted, notes in the project's own
terms, npm's error whole, and Go modules below the root found."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from bot.cli.root import cli
from bot.config import Config
from bot.evidence import envnotes, layouts, nodepm, projectenv, runners
from bot.evidence.breakage import compare
from bot.evidence.detect import detect_command
from bot.evidence.envbase import first_build_error
from bot.evidence.testrun import TestRun, parse_output
from bot.evidence.toolchains import _go_argv, npm_bound

DATA = Path(__file__).parent.parent / "data" / "runners"
STRICT = "Expected values to be strictly equal: -1 !== 5"

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap not installed (apt-get install bubblewrap)"
)


@pytest.mark.parametrize(
    ("sample", "failing", "quoted"),
    [
        ("mocha_spec", "calc > adds numbers", f"AssertionError [ERR_ASSERTION]: {STRICT}"),
        ("mocha_tap", "calc adds numbers", f"AssertionError [ERR_ASSERTION]: {STRICT}"),
        ("node_test", "calc > adds numbers", f"{STRICT} expected: 5 actual: -1"),
        ("node_test_spec", "adds numbers", f"AssertionError [ERR_ASSERTION]: {STRICT}"),
        (
            "vitest",
            "vt/calc.test.mjs > calc > adds numbers",
            "AssertionError: expected -1 to be 5 // Object.is equality",
        ),
    ],
)
def test_javascript_runners_are_parsed_per_test_with_the_assertion(sample, failing, quoted):
    out = (DATA / f"{sample}.txt").read_text()
    got = parse_output(out)
    assert (got["passed"], got["failed"], got["failing"]) == (2, 1, (failing,))
    assert runners.assertion(out, failing) == quoted


def test_a_mocha_base_with_one_failing_test_is_a_baseline_and_breakage_names_the_test():
    base_out = (DATA / "mocha_spec.txt").read_text()
    base = TestRun(("npm", "test"), 1, **_counts(base_out), output=base_out)
    assert projectenv.unusable(base) is None  # before: "no test ran (exit code 1: …)"
    head_out = base_out.replace("    ✔ multiplies", "    2) multiplies").replace(
        "  2 passing (6ms)\n  1 failing",
        "  1 passing (6ms)\n  2 failing",
    ) + (
        "  2) calc\n       multiplies:\n\n"
        "      AssertionError [ERR_ASSERTION]: 6 == 8\n      at Context.<anonymous>\n"
    )
    head = TestRun(("npm", "test"), 1, **_counts(head_out), output=head_out)
    broke = compare(base, head)
    assert broke is not None and broke.tests == ("calc > multiplies",)
    assert broke.describe() == "calc > multiplies: AssertionError [ERR_ASSERTION]: 6 == 8"


def _counts(out: str) -> dict:
    got = parse_output(out)
    return {k: got[k] for k in ("passed", "failed", "errors", "skipped", "failing")}


def test_go_and_pytest_failures_are_quoted_from_their_own_reports(tmp_path):
    go = (
        "=== RUN   TestAdd\n--- FAIL: TestAdd (0.00s)\n    calc_test.go:8: Add(2, 3) = -1, want 5\n"
        "=== RUN   TestMul\n--- PASS: TestMul (0.00s)\nFAIL\nFAIL\texample.com/calc\t0.002s\n"
    )
    assert parse_output(go)["failing"] == ("TestAdd",)
    assert runners.assertion(go, "TestAdd") == "calc_test.go:8: Add(2, 3) = -1, want 5"
    (tmp_path / "test_calc.py").write_text(
        "def add(a, b):\n    return a - b\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=short", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    assert runners.assertion(out, "test_calc.py::test_add") == "assert -1 == 5 / + where -1 = add(2, 3)"


def test_npm_errors_are_kept_whole():
    out = (  # npm 10, offline with an empty cache, captured
        "npm error code ENOTCACHED\nnpm error request to https://registry.npmjs.org/left-pad failed: cache "
        "mode is 'only-if-cached' but no cached response is available.\nnpm error A complete log of this run "
        "can be found in: /root/.npm/_logs/2026-12-02T11_20_12_106Z-debug-0.log\n"
    )
    assert first_build_error(out) == (
        "npm ENOTCACHED: request to https://registry.npmjs.org/left-pad failed: cache mode is "
        "'only-if-cached' but no cached response is available."
    )
    e404 = "npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.example/x - Not found\n"
    e404 += "npm ERR! 404\n"
    assert first_build_error(e404) == "npm E404: 404 Not Found - GET https://registry.example/x - Not found"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["npm", "test", "--silent"], "npx mocha"),
        (["go", "test", "./..."], "go test ./..."),
        (["cargo", "test"], "cargo test --offline"),
        (["make", "test"], "the command that runs the tests"),
    ],
)
def test_notes_give_advice_in_the_projects_own_terms(argv, says):
    note = envnotes.cannot_test_note("no test ran (exit code 1: sh: 1: mocha: not found)", argv=argv)
    assert says in note and "uv run" not in note and "tox" not in note and "tests.python" not in note
    assert "uv run pytest" in envnotes.cannot_test_note("collection failed", argv=["python", "-m", "pytest"])


def test_go_modules_below_the_root_get_their_tests_found():
    files = {"api/go.mod": "module a\n", "api/a.go": "", "cli/go.mod": "module c\n", "vendor/x/go.mod": ""}
    argv = detect_command(list(files), files.get, Config())
    assert argv == ["go", "test", "./api/...", "./cli/..."]
    tc = layouts.toolchain(argv, list(files))
    assert tc is not None and tc.kind == "go" and "api/go.mod" in tc.lockfiles
    run = _go_argv("go", argv)
    assert run[:2] == ("sh", "-c") and run[-1] == "sh" and "for d in api cli" in run[2]
    assert detect_command(["go.mod", "sub/go.mod"], {}.get, Config()) == ["go", "test", "./..."]


def test_go_runs_verbose_so_each_passing_test_counts():
    assert _go_argv("go", ["go", "test", "./..."]) == ("go", "test", "-v", "./...")
    assert _go_argv("go", ["go", "test", "-json", "./..."]) == ("go", "test", "-json", "./...")
    assert "go test -v ./..." in _go_argv("go", ["go", "test", "./api/..."])[2]
    out = "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n    b_test.go:9: got 1 want 2\n"
    out += "--- FAIL: TestB (0.00s)\n=== RUN   TestC\n=== RUN   TestC/x\n--- PASS: TestC (0.00s)\n"
    out += "    --- PASS: TestC/x (0.00s)\nFAIL\nFAIL\tex\t0.01s\n"
    parsed = parse_output(out)
    assert (parsed["passed"], parsed["failed"], parsed["failing"]) == (3, 1, ("TestB",))


# ---------------------------------------------------------------- end to end: `prereview review`


def _review(repo: Path, tmp_path: Path, monkeypatch) -> dict:
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PREREVIEW_ENV_DIR", str(tmp_path / "envs"))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [], "default": {"findings": []}}))
    path = tmp_path / "cfg.yml"
    data = {"model": {"backend": "scripted", "script": str(script)}, "patches": {"enabled": False}}
    path.write_text(yaml.safe_dump(data))
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(path), "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.parametrize(
    ("files", "says"),
    [
        (
            {"mux.go": "package mux\n", "mux_test.go": "package mux\n"},
            "Go tests but no go.mod (it predates Go modules)",
        ),
        ({"index.html": "<p>hi</p>\n", "README.md": "docs\n"}, "no test command found"),
    ],
)
def test_a_tree_with_no_test_command_found_says_so(files, says, make_repo, tmp_path, monkeypatch):
    """Nothing detected is a note naming the fix, never silence (a review with no tests behind it
    must not read like one whose tests agreed)."""
    changed = {k: v + "// x\n" if k.endswith(".go") else v + "more\n" for k, v in files.items()}
    data = _review(make_repo(files, changed), tmp_path, monkeypatch)
    notes = [n for n in data["notes"] if n.startswith("Tests not run")]
    assert len(notes) == 1 and says in notes[0] and "test_command" in notes[0], data["notes"]


NODE_TESTS = """const { describe, it } = require('node:test');
const assert = require('node:assert');
const { add, mul } = require('../calc');
describe('calc', () => {
  it('adds numbers', () => { assert.strictEqual(add(2, 3), 5); });
  it('multiplies', () => { assert.strictEqual(mul(2, 3), 6); });
  it('is still a todo at base', () => { assert.strictEqual(1, 2); });
});
"""


@needs_bwrap
def test_a_node_test_project_with_a_failing_base_test_gets_the_broken_test_named(
    make_repo, tmp_path, monkeypatch
):
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("node/npm not installed")
    pkg = {"name": "calc", "version": "1.0.0", "scripts": {"test": "node --test test/"}}
    lock = {"name": "calc", "version": "1.0.0", "lockfileVersion": 3, "requires": True, "packages": {"": {}}}
    calc = "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n"
    repo = make_repo(
        {
            "package.json": json.dumps(pkg),
            "package-lock.json": json.dumps(lock),
            "test/calc.test.js": NODE_TESTS,
            "calc.js": calc,
        },
        {"calc.js": calc.replace("a + b", "a - b")},
    )
    data = _review(repo, tmp_path, monkeypatch)
    broken = [f for f in data["findings"] if f["rule_id"] == "tests/broken"]
    assert [(f["path"], f["line"]) for f in broken] == [("calc.js", 1)], data
    assert "calc > adds numbers: Expected values to be strictly equal: -1 !== 5" in broken[0]["message"]
    assert "1 failed" in broken[0]["message"] and "is still a todo" not in broken[0]["message"]
    assert not any("Tests not" in n for n in data["notes"]), data["notes"]


def _packed(tmp_path: Path, name: str, manifest: dict) -> str:
    """A local npm package tarball (`npm pack`): installed as a real package, peer checks and all."""
    d = tmp_path / "pkgs" / name
    d.mkdir(parents=True)
    (d / "package.json").write_text(json.dumps({"name": name, "version": "1.0.0", **manifest}))
    subprocess.run(["npm", "pack", "-q"], cwd=d, check=True, capture_output=True, timeout=120)
    return f"file:{d / f'{name}-1.0.0.tgz'}"


@needs_bwrap
def test_conflicting_peer_dependencies_install_with_npm_6_rules_and_say_so(make_repo, tmp_path, monkeypatch):
    """npm 7+ refuses (ERESOLVE) an old tree whose devDependencies' peers conflict; the environment is
    installed again with --legacy-peer-deps, the tests run, and a note says how it was installed."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("node/npm not installed")
    dev = {
        "plugin": _packed(tmp_path, "plugin", {"peerDependencies": {"host": "^2.0.0"}}),
        "host": _packed(tmp_path, "host", {}),
    }
    pkg = {
        "name": "calc",
        "version": "1.0.0",
        "scripts": {"test": "node --test test/"},
        "devDependencies": dev,
    }
    calc = "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n"
    repo = make_repo(
        {"package.json": json.dumps(pkg), "test/calc.test.js": NODE_TESTS, "calc.js": calc},
        {"calc.js": calc.replace("a + b", "a - b")},
    )
    data = _review(repo, tmp_path, monkeypatch)
    assert any(f["rule_id"] == "tests/broken" for f in data["findings"]), data
    peer = [n for n in data["notes"] if "--legacy-peer-deps" in n]
    assert len(peer) == 1 and "ERESOLVE" in peer[0], data["notes"]
    assert not any("Tests not" in n for n in data["notes"]), data["notes"]


def _commit_at(tmp_path: Path, when: str | None) -> tuple[Path, str]:
    repo = tmp_path / "dated"
    repo.mkdir(parents=True)
    env = {**os.environ, **({"GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when} if when else {})}
    for cmd in (
        ["init", "-q"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"],
    ):
        subprocess.run(["git", "-C", str(repo), *cmd], check=True, env=env)
    sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    return repo, sha.stdout.strip()


def test_an_old_unlocked_npm_tree_installs_the_releases_of_its_date(tmp_path):
    """No lockfile and a base commit from 2020: the retry installs `--before` the day after it (what its
    tests ran with then); a lockfile, another package manager or a recent commit: no bound."""
    repo, sha = _commit_at(tmp_path, "2020-09-19T21:15:17-07:00")
    files = {"package.json": '{"devDependencies": {"typescript": "^4.0.0"}}'}
    assert npm_bound(files.get, repo, sha) == "2020-09-21T04:15:17Z"
    locked = {**files, "package-lock.json": "{}"}
    assert npm_bound(locked.get, repo, sha) is None
    pnpm = {**files, "pnpm-lock.yaml": "lockfileVersion: '9.0'\n"}
    assert npm_bound(pnpm.get, repo, sha) is None
    assert npm_bound(files.get, repo, "0" * 40) is None  # no such commit: no bound
    fresh, now = _commit_at(tmp_path / "new", None)
    assert npm_bound(files.get, fresh, now) is None


PNPM_LOCK = """lockfileVersion: '9.0'

settings:
  autoInstallPeers: true
  excludeLinksFromLockfile: false

importers:

  .: {}
"""


@pytest.mark.parametrize(
    ("files", "want"),
    [
        ({"package.json": '{"packageManager": "pnpm@9.15.0+sha512.abc"}'}, ("pnpm", "pnpm@9.15.0")),
        ({"package.json": "{}", "pnpm-lock.yaml": "lockfileVersion: '6.0'\n"}, ("pnpm", "pnpm@8")),
        ({"package.json": "{}", "yarn.lock": "# yarn lockfile v1\n"}, ("yarn", "yarn@1")),
        ({"package.json": "{}", "yarn.lock": "__metadata:\n  version: 6\n"}, ("npm", "")),
        ({"package.json": '{"packageManager": "yarn@4.1.0"}'}, ("npm", "")),
        ({"package.json": '{"packageManager": "npm@10.2.0"}', "yarn.lock": ""}, ("npm", "")),
        ({"package.json": "{}"}, ("npm", "")),
    ],
)
def test_the_projects_own_package_manager_is_the_one_used(files, want):
    m = nodepm.manager(files.get)
    assert (m.name, m.spec) == want
    assert ("Plug'n'Play" in m.note) == (
        "yarn" in json.dumps(files) and want[0] == "npm" and "npm@" not in json.dumps(files)
    )


@needs_bwrap
def test_a_pnpm_project_whose_test_script_calls_pnpm_runs_its_tests(make_repo, tmp_path, monkeypatch):
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("node/npm not installed")
    probe = subprocess.run(
        ["npm", "view", "pnpm@9.15.0", "version"], capture_output=True, text=True, timeout=60
    )
    if probe.returncode != 0:
        pytest.skip("the npm registry is not reachable (pnpm is fetched from it)")
    pkg = {
        "name": "calc",
        "version": "1.0.0",
        "packageManager": "pnpm@9.15.0",
        "scripts": {"test": "pnpm run unit", "unit": "node --test test/"},
    }
    calc = "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n"
    repo = make_repo(
        {
            "package.json": json.dumps(pkg),
            "pnpm-lock.yaml": PNPM_LOCK,
            "test/calc.test.js": NODE_TESTS,
            "calc.js": calc,
        },
        {"calc.js": calc.replace("a + b", "a - b")},
    )
    data = _review(repo, tmp_path, monkeypatch)
    broken = [f for f in data["findings"] if f["rule_id"] == "tests/broken"]
    assert [(f["path"], f["line"]) for f in broken] == [("calc.js", 1)], data
    assert "calc > adds numbers" in broken[0]["message"], broken[0]["message"]
    assert not any("Tests not" in n or "pnpm: not found" in n for n in data["notes"]), data["notes"]


def test_a_go_tree_with_modules_below_the_root_is_tested_or_says_why(make_repo, tmp_path, monkeypatch):
    calc = "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
    test = (
        'package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n'
        "\tif got := Add(2, 3); got != 5 {\n"
        '\t\tt.Errorf("Add(2, 3) = %d, want 5", got)\n\t}\n}\n'
    )
    files = {
        "calc/go.mod": "module example.com/calc\n\ngo 1.19\n",
        "calc/calc.go": calc,
        "calc/calc_test.go": test,
    }
    repo = make_repo(files, {"calc/calc.go": calc.replace("a + b", "a - b")})
    data = _review(repo, tmp_path, monkeypatch)
    broken = [f for f in data["findings"] if f["rule_id"] == "tests/broken"]
    if (
        shutil.which("go") is None or shutil.which("bwrap") is None
    ):  # still found, and the note says why not run
        notes = [n for n in data["notes"] if n.startswith("Tests not run")]
        assert len(notes) == 1 and "`go` is not installed here" in notes[0], data["notes"]
        assert "go test ./..." in notes[0] and "uv run" not in notes[0] and "tox" not in notes[0]
        assert broken == []
    else:
        assert [(f["path"], f["line"]) for f in broken] == [("calc/calc.go", 4)], data
        assert "TestAdd: calc_test.go:7: Add(2, 3) = -1, want 5" in broken[0]["message"]


def test_builds_see_the_hosts_node_ca_bundle_and_never_its_tokens(monkeypatch):
    from bot.evidence.envbase import build_env

    monkeypatch.setenv("NODE_EXTRA_CA_CERTS", "/etc/ssl/certs/corp.pem")  # a TLS-intercepting proxy's CA
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    env = build_env()
    assert env["NODE_EXTRA_CA_CERTS"] == "/etc/ssl/certs/corp.pem" and "GITHUB_TOKEN" not in env


PYTEST_UNCOLLECTED = (
    """\
==================================== ERRORS ====================================
_________________ ERROR collecting dateutil/test/test_utils.py _________________
ImportError while importing test module '/tmp/x/dateutil/test/test_utils.py'.
Traceback:
dateutil/test/test_utils.py:4: in <module>
    from freezegun import freeze_time
E   ModuleNotFoundError: No module named 'freezegun'
=================================== FAILURES ===================================
"""
    + "".join(f"___ test_{i} ___\nE   AssertionError: {i}\n" for i in range(2000))
    + """\
=========================== short test summary info ============================
FAILED dateutil/test/test_a.py::test_1 - AssertionError
ERROR dateutil/test/test_utils.py
3 failed, 692 passed, 1 error in 12.3s
"""
)


def test_a_test_module_that_did_not_import_is_named_with_why_though_the_output_is_cut():
    got = parse_output(PYTEST_UNCOLLECTED)
    assert (got["passed"], got["errors"]) == (692, 1)
    assert got["uncollected"] == (
        "dateutil/test/test_utils.py: ModuleNotFoundError: No module named 'freezegun'",
    )
    assert "freezegun" not in PYTEST_UNCOLLECTED[-20_000:]  # the kept tail alone would not say why
    assert parse_output("1 passed in 0.1s\n")["uncollected"] == ()
