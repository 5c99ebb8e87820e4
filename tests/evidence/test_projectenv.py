"""The project's own test environment: layouts, resolution, the built venv, and saying when tests cannot run.

The end-to-end cases review a src-layout project whose package is named like one of prereview's own
dependencies (`unidiff`), so running its tests with prereview's interpreter would import the wrong code.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from bot import config as config_mod
from bot.cli.root import cli
from bot.evidence import envnotes, layouts, projectenv, setuppy
from bot.evidence.testrun import TestRun

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap not installed (apt-get install bubblewrap)"
)


# ---------------------------------------------------------------- layouts (read, never executed)


def layout(files: dict[str, str]) -> layouts.PythonLayout:
    return layouts.python_layout(list(files), files.get)


def test_src_and_flat_layouts_and_pytest_pythonpath():
    assert layout({"src/pkg/__init__.py": "", "tests/test_a.py": ""}).roots == ("src", ".")
    assert layout({"pkg/__init__.py": "", "test_a.py": ""}).roots == (".",)
    pyproject = (
        '[tool.pytest.ini_options]\npythonpath = ["lib"]\n[tool.setuptools.packages.find]\nwhere = ["py"]\n'
    )
    assert layout({"pyproject.toml": pyproject}).roots == ("lib", "py", ".")
    cfg = "[options]\npackage_dir =\n    =source\n"
    assert layout({"setup.cfg": cfg}).roots == ("source", ".")
    assert layout({"pyproject.toml": '[tool.pytest.ini_options]\npythonpath = "../../etc"\n'}).roots == (".",)


def test_test_dependencies_from_pyproject_requirements_setup_cfg_tox_and_nox():
    pyproject = """
[project]
name = "My_Pkg"
dependencies = ["attrs>=22", "my-pkg-helpers"]
[project.optional-dependencies]
test = ["pytest-mock", "my_pkg[extra]"]
docs = ["sphinx"]
[dependency-groups]
dev = [{include-group = "lint"}, "hypothesis"]
lint = ["ruff"]
"""
    got = layout(
        {
            "pyproject.toml": pyproject,
            "requirements/tests.txt": "-r base.txt\n-e .[speedups]\nfreezegun==1.5  # pinned\n",
            "requirements/base.txt": "--index-url https://example.invalid\nidna\n",
            "requirements/docs.txt": "furo\n",
            "tox.ini": "[testenv]\ndeps =\n    coverage\n    {[base]deps}\n"
            "    min: -r requirements/docs.txt\n    py38, !dev: oldlib\nextras = fast\n",
            "noxfile.py": "def t(session):\n    session.install('-r', 'requirements/base.txt')\n"
            "    session.install('responses', '.')\n",
        }
    )
    assert got.name == "my-pkg"
    assert set(got.requirements) >= {
        "attrs>=22",
        "my-pkg-helpers",
        "pytest-mock",
        "hypothesis",
        "ruff",
        "freezegun==1.5",
        "idna",
        "coverage",
        "responses",
    }
    # docs, never the project, and not tox's factor-conditional deps (flask: `min: -r tests-min.txt`)
    assert not {"sphinx", "furo", "my_pkg[extra]", "oldlib"} & set(got.requirements)
    assert not any(":" in r.split("@")[0] for r in got.requirements)
    assert "requirements/tests.txt" in got.dep_files and "requirements/base.txt" in got.dep_files
    cfg = (
        "[metadata]\nname = pkg\n[options]\ninstall_requires =\n    six\n"
        "[options.extras_require]\ntest =\n    mock\n"
    )
    assert layout({"setup.cfg": cfg}).requirements == ("six", "mock")


def test_uv_lock_pins_become_constraints_without_the_project():
    lock = """
version = 1
[[package]]
name = "click"
version = "8.5.0.dev0"
source = { editable = "." }
[[package]]
name = "Pytest"
version = "9.0.2"
source = { registry = "https://pypi.org/simple" }
[[package]]
name = "numpy"
version = "2.2.0"
source = { registry = "https://pypi.org/simple" }
[[package]]
name = "numpy"
version = "2.3.1"
source = { registry = "https://pypi.org/simple" }
"""
    assert layouts.uv_lock_pins(lock, "click") == ("pytest==9.0.2",)  # forked pins are left to pip
    assert layouts.uv_lock_pins("not toml [", None) == ()


def test_a_lock_forked_by_python_version_pins_the_version_for_this_interpreter():
    lock = """
version = 1
[[package]]
name = "pytest"
version = "8.4.2"
source = { registry = "https://pypi.org/simple" }
resolution-markers = ["python_full_version < '3.10'"]
[[package]]
name = "pytest"
version = "9.0.2"
source = { registry = "https://pypi.org/simple" }
resolution-markers = ["python_full_version >= '3.12'", "python_full_version == '3.11.*'"]
[[package]]
name = "odd"
version = "1"
source = { registry = "https://pypi.org/simple" }
resolution-markers = ["python_full_version <<< nonsense"]
[[package]]
name = "odd"
version = "2"
source = { registry = "https://pypi.org/simple" }
resolution-markers = ["python_full_version >= '3.12'"]
"""
    on = {"python_full_version": "3.11.4", "python_version": "3.11"}
    assert layouts.uv_lock_pins(lock, None, on) == ("pytest==9.0.2",)  # odd: a marker is unreadable
    old = {"python_full_version": "3.9.18", "python_version": "3.9"}
    assert layouts.uv_lock_pins(lock, None, old) == ("pytest==8.4.2",)
    new = {"python_full_version": "3.12.1", "python_version": "3.12"}
    assert layouts.uv_lock_pins(lock, None, new) == ("pytest==9.0.2",)
    assert layouts.uv_lock_pins(lock, None) in (("pytest==9.0.2",), ("pytest==8.4.2",), ())


def test_setup_py_literal_requirements_are_read_without_running_it():
    setup_py = """from setuptools import setup
import os
setup(
    name="Flask",
    install_requires=["Werkzeug >= 2.2.2", "click >= 8.0"],
    extras_require={"test": ["pytest-mock"], "async": ["asgiref"], "test:python_version<'3.8'": ["mock"]},
    tests_require=os.environ["NEVER_READ"],
)
"""
    got = layout({"setup.py": setup_py, "src/flask/__init__.py": ""})
    assert got.requirements == (
        "Werkzeug >= 2.2.2",
        "click >= 8.0",
        "pytest-mock",
        "mock; python_version<'3.8'",
    )
    assert "setup.py" in got.dep_files
    assert setuppy.requirements("setup(install_requires=deps())") == ([], {})
    assert setuppy.requirements("def (") == ([], {})
    assert setuppy.requirements("setup(" * 100_000) == ([], {})
    marked = "setup(extras_require={\"test:sys_platform == 'linux'\": [\"a; python_version > '3'\"]})"
    assert setuppy.requirements(marked)[1] == {
        "test": ["a; (python_version > '3') and (sys_platform == 'linux')"]
    }


def test_setup_py_requirements_bound_to_names_before_the_setup_call_are_read():
    """marshmallow 3.x (a tuning case): the test extra lives in a module-level dict that a later line
    extends; without it `simplejson` was never installed and every test module failed at collection."""
    setup_py = """
from setuptools import setup, find_packages

EXTRAS_REQUIRE = {
    "tests": ["pytest", "pytz", "simplejson"],
    "lint": ["flake8==6.0.0", "pre-commit~=2.4"],
    "docs": ["sphinx==7.0.1"],
}
EXTRAS_REQUIRE["dev"] = EXTRAS_REQUIRE["tests"] + EXTRAS_REQUIRE["lint"] + ["tox"]
requires: list = ["packaging>=17.0"]
if __name__ == "__main__":
    setup(name="marshmallow", install_requires=requires, extras_require=EXTRAS_REQUIRE)
"""
    install, extras = setuppy.requirements(setup_py)
    assert install == ["packaging>=17.0"]
    assert extras["tests"] == ["pytest", "pytz", "simplejson"]
    assert extras["dev"] == ["pytest", "pytz", "simplejson", "flake8==6.0.0", "pre-commit~=2.4", "tox"]
    got = layout({"setup.py": setup_py, "tox.ini": "[testenv]\nextras = tests\n", "src/marshmallow/a.py": ""})
    assert got.requirements == ("packaging>=17.0", "pytest", "pytz", "simplejson")
    computed = "DEPS = open('r.txt').read().split()\nsetup(install_requires=DEPS + ['x'])"
    assert setuppy.requirements(computed) == ([], {})  # a file read: unknown, left out as before
    grows = "A = ['a']\n" + "A = A + A\n" * 40 + "setup(install_requires=A)"
    assert len(setuppy.requirements(grows)[0]) <= 2_000  # doubling does not grow without end


def test_alternative_requirement_files_are_left_out():
    flask = [  # flask 2.2: tox picks tests-pallets-min / -dev by factor; -dev fetches github branches
        *(
            f"requirements/{n}.{x}"
            for n in ("dev", "docs", "tests", "tests-pallets-dev", "tests-pallets-min")
            for x in ("in", "txt")
        ),
        "src/flask/__init__.py",
    ]
    assert layouts.requirement_files(flask) == ["requirements/tests.txt"]  # the test set, not dev
    root = ["requirements.txt", "requirements-test.txt", "requirements-test-min.txt", "requirements/ci.in"]
    assert layouts.requirement_files(root) == [
        "requirements-test.txt",
        "requirements.txt",
    ]  # ci: not a test set
    files = {
        "requirements/tests.txt": "-r tests-extra.txt\npytest==8\n",
        "requirements/tests-extra.txt": "freezegun\n",
        "requirements/tests-min.txt": "pytest==6\n",
    }
    got = layout(files)
    assert got.requirements == ("freezegun", "pytest==8")  # a variant the kept file names is still read


def test_toolchains_are_found_from_the_command_and_manifests():
    files = ["package.json", "package-lock.json", "web/package.json"]
    tc = layouts.toolchain(["npm", "test"], files)
    assert tc is not None and tc.kind == "node" and tc.lockfiles == tuple(sorted(files))
    assert layouts.toolchain(["cargo", "test"], ["Cargo.toml", "Cargo.lock"]).kind == "rust"
    assert layouts.toolchain(["make", "test"], ["Makefile"]) is None


# ---------------------------------------------------------------- a usable baseline, and the note


def tr(rc: int, output: str, passed: int = 0, failed: int = 0, errors: int = 0) -> TestRun:
    return TestRun(("pytest",), rc, passed=passed, failed=failed, errors=errors, output=output)


def test_a_base_run_that_tested_nothing_is_unusable_with_its_first_error():
    collect = (
        "ImportError while importing test module 'tests/test_a.py'.\n"
        "E   ModuleNotFoundError: No module named 'attr'\n"
        "!!! Interrupted: 1 error during collection !!!\n1 error in 0.1s\n"
    )
    why = projectenv.unusable(tr(2, collect, errors=1))
    assert why == "collection failed: ModuleNotFoundError: No module named 'attr'"
    assert projectenv.unusable(tr(5, "no tests ran in 0.01s\n")).startswith("collection failed")
    assert "did not start" in projectenv.unusable(tr(127, "env: 'pytest': No such file or directory\n"))
    assert projectenv.unusable(tr(1, "FAILED t::a\n1 failed, 3 passed in 1s", passed=3, failed=1)) is None
    tsc = "Found 3 errors in the same file, starting at: lib/p.ts\x1b[90m:665\x1b[0m\n"
    assert (
        projectenv.unusable(tr(1, tsc))
        == "no test ran (exit code 1: Found 3 errors in the same file, starting at: lib/p.ts:665)"
    )
    assert projectenv.unusable(tr(0, "4 passed", passed=4)) is None
    slow = TestRun(("pytest",), -9, timed_out=True, seconds=5.0)
    assert projectenv.unusable(slow) == "timed out after 5s"
    assert "sandbox.timeout" in envnotes.cannot_test_note("timed out after 5s")
    note = envnotes.cannot_test_note(why)
    assert "\n" not in note and "test_command" in note and "tests.python" in note and "attr" in note
    # a run cut short because building the environment used the tests budget: that is the cause named
    short = envnotes.cannot_test_note("timed out after 1s", argv=["npm", "test"], env_took=(599.0, 600.0))
    assert "took 599s of `tests.budget_seconds` (600s)" in short and "next review" in short
    assert "sandbox.timeout" not in short and "\n" not in short
    assert "sandbox.timeout" in envnotes.cannot_test_note("timed out after 300s", env_took=None)


# ---------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("data", "enabled"),
    [({"tests": "off"}, False), ({"tests": False}, False), ({"tests": "on"}, True), ({}, True)],
)
def test_tests_config_keeps_the_scalar_forms(data, enabled):
    cfg = config_mod.build(data, env={})
    assert cfg.tests.enabled is enabled


def test_tests_config_mapping_and_environment():
    cfg = config_mod.build(
        {"tests": {"python": ".venv/bin/python", "budget_seconds": 60}, "test_command": "make test"}, env={}
    )
    assert (cfg.tests.python, cfg.tests.budget_seconds, cfg.test_cmd) == (".venv/bin/python", 60, "make test")
    env = {"PREREVIEW_TESTS_PYTHON": "/opt/py/bin/python3", "PREREVIEW_TEST_COMMAND": "tox -e py312"}
    cfg = config_mod.build({"tests": "on"}, env=env)
    assert (cfg.tests.python, cfg.test_cmd, cfg.tests.enabled) == (
        "/opt/py/bin/python3",
        "tox -e py312",
        True,
    )
    with pytest.raises(config_mod.PrereviewError, match="tests"):
        config_mod.build({"tests": "sometimes"}, env={})
    with pytest.raises(config_mod.PrereviewError, match="tests.budget_seconds"):
        config_mod.build({"tests": {"budget_seconds": 0}}, env={})


# ---------------------------------------------------------------- end to end: `prereview review`

PKG = 'VERSION = "local"\n\n\ndef add(a, b):\n    return a + b\n'
PKG_BROKEN = 'VERSION = "local"\n\n\ndef add(a, b):\n    return a - b\n'
TESTS = (
    "from unidiff import VERSION, add\n\n\ndef test_this_is_the_repositorys_code():\n"
    '    assert VERSION == "local"\n\n\ndef test_add():\n    assert add(2, 3) == 5\n'
)
SRC_PROJECT = {
    "src/unidiff/__init__.py": PKG,
    "tests/test_add.py": TESTS,
    "requirements.txt": "pytest\n",
    "pyproject.toml": '[project]\nname = "unidiff"\nversion = "0.0.1"\n\n[tool.pytest.ini_options]\n'
    'testpaths = ["tests"]\nfilterwarnings = ["error"]\n',
}


@pytest.fixture(scope="session")
def env_dir(tmp_path_factory) -> Path:
    """One built environment for the whole session (a venv with pytest, from the index)."""
    return tmp_path_factory.mktemp("envs")


def review(repo: Path, tmp_path: Path, monkeypatch, env_dir: Path, **cfg) -> dict:
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PREREVIEW_ENV_DIR", str(env_dir))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [], "default": {"findings": []}}))
    path = tmp_path / "cfg.yml"
    data = {"model": {"backend": "scripted", "script": str(script)}, "patches": {"enabled": False}, **cfg}
    path.write_text(yaml.safe_dump(data))
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(path), "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def broken(data: dict) -> list[dict]:
    return [f for f in data["findings"] if f["rule_id"] == "tests/broken"]


@pytest.mark.slow
@needs_bwrap
def test_a_src_layout_project_is_tested_against_its_own_code(make_repo, tmp_path, monkeypatch, env_dir):
    import unidiff  # prereview's own dependency: the project's package has the same name

    assert not hasattr(unidiff, "add")
    repo = make_repo(SRC_PROJECT, {"src/unidiff/__init__.py": PKG_BROKEN})
    data = review(repo, tmp_path, monkeypatch, env_dir)
    found = broken(data)
    assert len(found) == 1, data
    f = found[0]
    assert (f["path"], f["line"]) == ("src/unidiff/__init__.py", 5)
    assert "test_add" in f["message"] and "2 passed at base" in f["message"]
    assert "test_this_is_the_repositorys_code" not in f["message"]  # passed at head too: the local code ran
    assert not any("Tests not" in n for n in data["notes"])
    venvs = [p for p in env_dir.iterdir() if p.is_dir()]
    assert len(venvs) == 1 and not list(venvs[0].glob("lib/python*/site-packages/unidiff/"))


@pytest.mark.slow
@needs_bwrap
def test_tests_that_cannot_run_at_base_are_one_note_line(make_repo, tmp_path, monkeypatch, env_dir):
    files = {**SRC_PROJECT, "tests/test_add.py": "import not_a_dependency_xyz\n" + TESTS}
    repo = make_repo(files, {"src/unidiff/__init__.py": PKG_BROKEN})
    data = review(repo, tmp_path, monkeypatch, env_dir)
    assert broken(data) == [] and all(f["source"] != "tests" for f in data["findings"])
    notes = [n for n in data["notes"] if "Tests not" in n]
    assert len(notes) == 1, data["notes"]
    assert "ModuleNotFoundError: No module named 'not_a_dependency_xyz'" in notes[0]
    assert "test_command" in notes[0] and "tests.python" in notes[0] and "\n" not in notes[0]
    skipped = data["coverage"]["skipped"]
    assert [s["path"] for s in skipped if s["path"] == "(tests)"] == ["(tests)"]


@needs_bwrap
def test_a_test_module_that_does_not_import_leaves_the_others_running(make_repo, tmp_path, monkeypatch):
    """One test module imports a package the tree never declares (dateutil's `test_utils.py` and
    freezegun): pytest used to stop before any test ran. The other modules run and are compared, and one
    note names the module left out and why."""
    files = {
        **SRC_PROJECT,
        "tests/test_extra.py": "import not_a_dependency_xyz\n\n\ndef test_x():\n    pass\n",
    }
    repo = make_repo(files, {"src/unidiff/__init__.py": PKG_BROKEN})
    data = review(repo, tmp_path, monkeypatch, tmp_path / "envs", tests={"python": sys.executable})
    found = broken(data)
    assert len(found) == 1 and found[0]["path"] == "src/unidiff/__init__.py", data
    assert "test_add" in found[0]["message"] and "test_extra" not in found[0]["message"]
    notes = [n for n in data["notes"] if "could not be collected" in n]
    assert len(notes) == 1 and "\n" not in notes[0], data["notes"]
    assert "`tests/test_extra.py`: ModuleNotFoundError: No module named 'not_a_dependency_xyz'" in notes[0]
    assert not [n for n in data["notes"] if "Tests not" in n]


@needs_bwrap
def test_tests_python_runs_the_repositorys_code_first(make_repo, tmp_path, monkeypatch):
    """`tests.python` (here prereview's own interpreter, which has another `unidiff` installed): the
    scratch tree's src/ still comes first, so the repository's code is what the tests import."""
    repo = make_repo(SRC_PROJECT, {"src/unidiff/__init__.py": PKG_BROKEN})
    data = review(repo, tmp_path, monkeypatch, tmp_path / "envs", tests={"python": sys.executable})
    found = broken(data)
    assert len(found) == 1 and found[0]["path"] == "src/unidiff/__init__.py", data
    assert not (tmp_path / "envs").exists()  # nothing built


@pytest.mark.slow
@needs_bwrap
def test_a_node_project_gets_its_own_node_modules(make_repo, tmp_path, monkeypatch, env_dir):
    if shutil.which("npm") is None:
        pytest.skip("npm not installed")
    pkg = {"name": "calc", "version": "1.0.0", "scripts": {"test": "node test.js"}}
    lock = {
        "name": "calc",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {"": {"name": "calc", "version": "1.0.0"}},
    }
    test_js = (
        "const assert = require('assert');\nconst { add } = require('./calc');\n"
        "assert.strictEqual(add(2, 3), 5);\nconsole.log('ok');\n"
    )
    repo = make_repo(
        {
            "package.json": json.dumps(pkg),
            "package-lock.json": json.dumps(lock),
            "test.js": test_js,
            "calc.js": "exports.add = (a, b) => a + b;\n",
        },
        {"calc.js": "exports.add = (a, b) => a - b;\n"},
    )
    data = review(repo, tmp_path, monkeypatch, env_dir)
    assert [f["path"] for f in broken(data)] == ["calc.js"], data
    assert any(p.name.startswith("node-") and (p / "node_modules").is_dir() for p in env_dir.iterdir())


@pytest.mark.slow
@needs_bwrap
def test_a_rust_project_runs_cargo_offline_in_the_sandbox(make_repo, tmp_path, monkeypatch, env_dir):
    if shutil.which("cargo") is None or shutil.which("rustc") is None:
        pytest.skip("cargo/rustc not installed")
    lib = (
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n"
        "    fn adds() {\n        assert_eq!(super::add(2, 3), 5);\n    }\n}\n"
    )
    repo = make_repo(
        {"Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n', "src/lib.rs": lib},
        {"src/lib.rs": lib.replace("a + b", "a - b")},
    )
    data = review(repo, tmp_path, monkeypatch, env_dir)
    assert [(f["path"], f["line"]) for f in broken(data)] == [("src/lib.rs", 2)], data
    assert any(p.name.startswith("rust-") for p in env_dir.iterdir())
