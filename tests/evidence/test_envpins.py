"""The project's test environment, robustly: the smallest set that runs the tests (the test set, not
dev/docs/typing), and a pinned install that fails here retried without its pins, with one note line that
names the requirement and why. The installs are real (a venv, pip, a local index built here; no network).
"""

from __future__ import annotations

import http.server
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from bot.cli.root import cli
from bot.evidence import datebound, layouts, pininstall, pinrelax, toxenvs
from bot.evidence.envbase import EnvError, run_build

DATA = Path(__file__).parent.parent / "data" / "pip"


def layout(files: dict[str, str]) -> layouts.PythonLayout:
    return layouts.python_layout(list(files), files.get)


# ---------------------------------------------------------------- which set (read, never executed)

PIP_COMPILED = {  # a 2021 tree: pip-compile's outputs with their inputs
    "requirements/tests.in": "pytest\nasgiref\n",
    "requirements/tests.txt": "asgiref==3.4.1\nattrs==21.2.0\npytest==6.2.5\nprv-oldpin==1.0\n",
    "requirements/dev.in": "-r docs.in\n-r tests.in\n-r typing.in\npre-commit\ntox\n",
    "requirements/dev.txt": "pre-commit==2.15.0\nsphinx==4.2.0\nmypy==0.812\ntyped-ast==1.4.3\n",
    "requirements/docs.in": "sphinx\n",
    "requirements/docs.txt": "sphinx==4.2.0\n",
    "requirements/typing.in": "mypy\n",
    "requirements/typing.txt": "mypy==0.812\ntyped-ast==1.4.3\n",
    "src/pkg/__init__.py": "",
}


def test_the_test_requirements_are_chosen_over_dev_docs_and_typing():
    got = layout(PIP_COMPILED)
    assert got.requirements == ("asgiref==3.4.1", "attrs==21.2.0", "pytest==6.2.5", "prv-oldpin==1.0")
    assert [f for f in got.dep_files if f.startswith("requirements/")] == ["requirements/tests.txt"]
    root = ["requirements.txt", "requirements-dev.txt", "requirements-test.txt", "requirements-docs.txt"]
    assert layouts.requirement_files(root) == ["requirements-test.txt", "requirements.txt"]
    # without a test set, dev is still the fallback (it usually holds the test tools)
    assert layouts.requirement_files(["requirements/dev.txt", "requirements/docs.txt"]) == [
        "requirements/dev.txt"
    ]


def test_a_test_extra_or_group_is_read_for_itself_and_dev_only_without_one():
    pyproject = """
[project]
name = "pkg"
[project.optional-dependencies]
test = ["pytest-mock"]
dev = ["sphinx", "mypy==0.812"]
[dependency-groups]
dev = ["hypothesis"]
"""
    got = layout({"pyproject.toml": pyproject})
    assert got.requirements == ("pytest-mock", "hypothesis")  # the extras' test set; the groups' dev set
    tox = "[testenv]\nextras = dev\n"  # named explicitly: read
    assert "sphinx" in layout({"pyproject.toml": pyproject, "tox.ini": tox}).requirements
    setup_py = 'setup(extras_require={"tests": ["mock"], "dev": ["black"]})'
    assert layout({"setup.py": setup_py}).requirements == ("mock",)


def test_folders_of_the_tree_in_tox_deps_are_never_requirements():
    """flask 2.0's tox.ini: `examples/tutorial[test]` is a folder of the tree (pip read it as an invalid
    requirement and the whole environment failed)."""
    tox = "[testenv]\ndeps =\n    -r requirements/tests.txt\n    examples/tutorial[docs]\n    -e ./sub\n"
    got = layout({"tox.ini": tox, "requirements/tests.txt": "pytest==6.2.4\n", "setup.cfg": SETUP_CFG})
    assert got.requirements == ("pytest==6.2.4", "six")  # not the folder, and not its extra `docs`


def test_tox_environments_for_other_pythons_are_not_this_pythons_test_set():
    """dateutil's 2020 tox.ini: `[testenv:py33]` installs requirements/3.3/requirements-dev.txt
    (`pytest<3.3`, for Python 3.3) beside the main `[testenv]` set; read together, pytest 3.2.5 was
    installed here and cannot start on Python 3.11. Only this Python's environments are read."""
    tox = (
        "[testenv]\ndeps = -rrequirements-dev.txt\n"
        "[testenv:py33]\ndeps =\n    -rrequirements/3.3/requirements-dev.txt\n"
        "[testenv:pypy3]\ndeps = pypy-only\n[testenv:py3]\ndeps = py3-dep\n"
        f"[testenv:py{sys.version_info[0]}{sys.version_info[1]}-extra]\ndeps = this-python-dep\n"
    )
    got = layout(
        {
            "tox.ini": tox,
            "requirements-dev.txt": "pytest >= 3.0\nfreezegun\n",
            "requirements/3.3/requirements-dev.txt": "pytest<3.3\nfreezegun<0.3.11\n",
        }
    )
    assert got.requirements == ("pytest >= 3.0", "freezegun", "py3-dep", "this-python-dep")
    assert toxenvs.other_python("testenv:py27", (3, 11)) and toxenvs.other_python("testenv:py312", (3, 11))
    assert not toxenvs.other_python("testenv:py311-django", (3, 11))
    assert not toxenvs.other_python("testenv:pytest", (3, 11))  # not a version: read as before


SETUP_CFG = "[metadata]\nname = pkg\n[options]\ninstall_requires =\n    six\n"
SETUP_CFG += "[options.extras_require]\ndocs =\n    sphinx\n"


def test_nox_test_sessions_and_poetry_test_groups_only():
    noxfile = """import nox

@nox.session
def docs(session):
    session.install("sphinx", "furo")

@nox.session(name="unit")
def run_unit_tests(session):
    session.install("pytest", "freezegun")

@nox.session
def lint(session):
    session.install("ruff")
"""
    assert layout({"noxfile.py": noxfile}).requirements == ("pytest", "freezegun")
    plain = 'import nox\n\n@nox.session\ndef check(session):\n    session.install("pytest")\n'
    assert layout({"noxfile.py": plain}).requirements == ("pytest",)  # no test-named session: all of them
    poetry = """
[tool.poetry.dependencies]
python = "^3.8"
attrs = "^21"
[tool.poetry.group.test.dependencies]
pytest = "^7"
[tool.poetry.group.dev.dependencies]
mypy = "0.812"
[tool.poetry.group.docs.dependencies]
sphinx = "*"
"""
    assert layout({"pyproject.toml": poetry}).requirements == ("attrs", "pytest")


def test_the_unpinned_requirements_come_from_the_in_files_or_the_names():
    assert pininstall.unpinned_requirements(list(PIP_COMPILED), PIP_COMPILED.get) == ["pytest", "asgiref"]
    files = {"requirements-test.txt": "pytest==6.2.5\nrequests[socks]>=2,<3 ; python_version >= '3'\n"}
    assert pininstall.unpinned_requirements(list(files), files.get) == [
        "pytest",
        "requests[socks]; python_version >= '3'",
    ]
    assert pininstall.unpinned(["pkg @ https://example.invalid/pkg.zip", "x~=1.0"]) == [
        "pkg @ https://example.invalid/pkg.zip",
        "x",
    ]


# ---------------------------------------------------------------- what failed, from pip's own output


def test_the_failing_requirement_and_its_reason_are_read_from_a_real_pip_build_failure():
    """typed-ast 1.4.3 (a mypy 0.812 dependency) on Python 3.11, captured: pip says only
    `subprocess-exited-with-error` at the end; the requirement and the compiler's error are above it."""
    out = (DATA / "typed_ast_build_py311.txt").read_text()
    assert pininstall.install_failure(out) == (
        "typed-ast==1.4.3",
        "its build failed: ast27/Custom/../Include/compile.h:5:10: fatal error: code.h: No such file or "
        "directory",
    )
    # werkzeug's 2021 test pins, captured: pip collects all, then builds; greenlet 1.1.0 fails to compile
    out = (DATA / "werkzeug_2021_tests_py311.txt").read_text()
    assert pininstall.install_failure(out) == (
        "greenlet==1.1.0",
        "its build failed: src/greenlet/greenlet.h:42:5: error: unknown type name ‘CFrame’",
    )


# ---------------------------------------------------------------- real installs from a local index


def _wheel(
    d: Path, name: str, version: str, requires_python: str | None = None, body: str | None = None
) -> Path:
    mod, dist = name.replace("-", "_"), f"{name.replace('-', '_')}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    meta += f"Requires-Python: {requires_python}\n" if requires_python else ""
    files = {
        f"{mod}/__init__.py": body or f"VERSION = {version!r}\n",
        f"{dist}/METADATA": meta,
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{dist}/RECORD"] = "".join(f"{k},,\n" for k in [*files, f"{dist}/RECORD"])
    path = d / f"{mod}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
    return path


def _failing_sdist(d: Path, name: str, version: str, error: str) -> Path:
    """An sdist whose (in-tree, dependency-free) build backend fails the way an old release does."""
    base = f"{name}-{version}"
    backend = f"def get_requires_for_build_wheel(config_settings=None):\n    raise RuntimeError({error!r})\n"
    files = {
        f"{base}/pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
        'backend-path = ["."]\n',
        f"{base}/backend.py": backend,
        f"{base}/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    }
    path = d / f"{base}.tar.gz"
    with tarfile.open(path, "w:gz") as t:
        for k, v in files.items():
            data = v.encode()
            info = tarfile.TarInfo(k)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def index(tmp_path, monkeypatch) -> Path:
    """A PEP 503 index on disk: prv-oldpin 1.0 (Python < 3.8 only) and 2.0, prv-brokenbuild 1.0 (an sdist
    whose build fails) and 2.0, prv-good 1.0. pip sees only it (no config files, no network)."""
    files, simple = tmp_path / "files", tmp_path / "simple"
    files.mkdir()
    links = {
        "prv-oldpin": [
            (_wheel(files, "prv-oldpin", "1.0", "<3.8"), "&lt;3.8"),
            (_wheel(files, "prv-oldpin", "2.0"), ""),
        ],
        "prv-brokenbuild": [
            (_failing_sdist(files, "prv-brokenbuild", "1.0", "this old release needs distutils"), ""),
            (_wheel(files, "prv-brokenbuild", "2.0"), ""),
        ],
        "prv-good": [(_wheel(files, "prv-good", "1.0"), "")],
    }
    for name, entries in links.items():
        (simple / name).mkdir(parents=True)
        anchors = "".join(
            f'<a href="../../files/{p.name}"'
            + (f' data-requires-python="{rp}"' if rp else "")
            + f">{p.name}</a>\n"
            for p, rp in entries
        )
        (simple / name / "index.html").write_text(f"<html><body>\n{anchors}</body></html>\n")
    for k in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", simple.as_uri())
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    return simple


def _venv(tmp_path: Path) -> list[str]:
    d = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(d)], check=True)
    return [str(d / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "--no-input"]


def _installed(pip: list[str]) -> dict[str, str]:
    out = subprocess.run([*pip, "list", "--format=json"], capture_output=True, text=True, check=True)
    return {p["name"]: p["version"] for p in json.loads(out.stdout)}


@pytest.mark.slow
def test_pins_that_cannot_install_here_are_retried_unpinned_with_one_note(index, tmp_path):
    pip = _venv(tmp_path)
    files = {
        "requirements/tests.in": "prv-good\nprv-oldpin\nprv-brokenbuild\n",
        "requirements/tests.txt": "prv-good==1.0\nprv-oldpin==1.0\n",
    }
    reqs = ["pytest", *layout(files).requirements]  # the builder's pytest is not in this index
    d = tmp_path / "env"
    d.mkdir()
    (d / "requirements.txt").write_text("\n".join(reqs[1:]) + "\n")
    retry = pininstall.unpinned_args(list(files), files.get, None, reqs, d, [])
    assert (
        retry is not None and Path(retry[1]).read_text() == "pytest\nprv-good\nprv-oldpin\nprv-brokenbuild\n"
    )
    (d / "requirements-unpinned.txt").write_text("prv-good\nprv-oldpin\nprv-brokenbuild\n")  # no pytest here

    def step(args: list[str]) -> str:
        return run_build([*pip, "install", *args], cwd=d, timeout=120)

    notes = pininstall.install_with_fallback(step, ["-r", str(d / "requirements.txt")], retry)
    assert notes == [
        "Test environment: `prv-oldpin==1.0` could not be installed (no release of it for this Python: 1.0 "
        "requires Python <3.8); installed the test requirements without their pins instead."
    ]
    got = _installed(pip)
    assert (got["prv-oldpin"], got["prv-good"], got["prv-brokenbuild"]) == ("2.0", "1.0", "2.0")

    (d / "pinned2.txt").write_text("prv-brokenbuild==1.0\n")
    note = pininstall.install_with_fallback(step, ["-r", str(d / "pinned2.txt")], retry)[0]
    assert "`prv-brokenbuild==1.0` could not be installed (its build failed: RuntimeError: this old " in note
    assert "subprocess-exited-with-error" not in note and "\n" not in note

    (d / "nothing.txt").write_text("prv-not-there==3\n")
    (d / "requirements-unpinned.txt").write_text("prv-not-there\n")
    with pytest.raises(EnvError, match=r"`prv-not-there==3` could not be installed .*without the pins too"):
        pininstall.install_with_fallback(step, ["-r", str(d / "nothing.txt")], retry)


@pytest.mark.slow
def test_only_the_failing_pins_are_relaxed_first_the_others_kept(index, tmp_path):
    """prv-oldpin 1.0 needs Python < 3.8: relaxed in requirements.txt; then prv-brokenbuild 1.0, pinned
    only by a constraint (a uv.lock's), fails to build: dropped from constraints.txt; prv-good keeps its
    pin. The full unpinned retry is never needed (it would fail: prv-not-there is not on the index)."""
    pip = _venv(tmp_path)
    d = tmp_path / "env"
    d.mkdir()
    reqs, cons = ["prv-good==1.0", "prv-oldpin==1.0", "prv-brokenbuild"], ["prv-brokenbuild==1.0"]
    (d / "requirements.txt").write_text("\n".join(reqs) + "\n")
    (d / "constraints.txt").write_text("\n".join(cons) + "\n")
    (d / "unpinned.txt").write_text("prv-not-there\n")

    def step(args: list[str]) -> str:
        return run_build([*pip, "install", *args], cwd=d, timeout=120)

    pinned = ["-r", str(d / "requirements.txt"), "-c", str(d / "constraints.txt")]
    notes = pininstall.install_with_fallback(
        step, pinned, ["-r", str(d / "unpinned.txt")], pinrelax.relax_args(d, reqs, cons, [])
    )
    assert len(notes) == 1 and notes[0].startswith(
        "Test environment: `prv-oldpin==1.0` could not be installed (no release of it for this Python: "
    ), notes
    assert "then `prv-brokenbuild==1.0` (its build failed: RuntimeError: this old release" in notes[0]
    assert notes[0].endswith("installed each without its pin, the other pins kept.")
    got = _installed(pip)
    assert (got["prv-good"], got["prv-oldpin"], got["prv-brokenbuild"]) == ("1.0", "2.0", "2.0")
    assert (d / "requirements-relaxed.txt").read_text() == "prv-good==1.0\nprv-oldpin\nprv-brokenbuild\n"


def test_a_pin_that_installs_but_does_not_run_is_named_from_the_traceback():
    """click's 2021 tree on Python 3.11, captured: pytest 6.2.2 and py 1.10.0 install, then pytest dies at
    import inside py's vendored apipkg. The note names the pin the traceback ends in."""
    out = (DATA / "pytest622_py311_run.txt").read_text()
    pins = ["attrs==20.3.0", "py==1.10.0", "pytest==6.2.2", "colorama; platform_system == 'Windows'"]
    assert pininstall.failing_pin(out, pins) == "py==1.10.0"
    assert pininstall.failing_pin(out, ["pytest"]) == ""  # not pinned: nothing to blame
    # only versions pin: dateutil's `mock ; python_version < '3.0'` made a set of `>=` bounds look
    # pinned, and a base run that timed out was rebuilt unpinned for nothing
    assert not pininstall.pins_versions(["mock ; python_version < '3.0'", "pytest >= 3.0", "six"])
    assert pininstall.pins_versions(["pytest<3.3"]) and pininstall.pins_versions(["six==1.0; os_name == 'x'"])
    # a bound from above pins too (dateutil's `pytest<3.3`: pytest 3.2.5 dies at import on 3.11)
    assert pininstall.failing_pin(out, ["pytest<6.3", "six"]) == "pytest<6.3"


# ---------------------------------------------------------------- end to end: pins that install, do not run


def _pinned_calc(make_repo, package: str) -> Path:
    """A repo whose tests import `package`, pinned at 1.0 (with its `.in` input); head breaks `add`."""
    calc = "def add(a, b):\n    return a + b\n"
    module = package.replace("-", "_")
    tests = f"import {module}\nfrom calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    return make_repo(
        {
            "calc.py": calc,
            "tests/test_calc.py": tests,
            "pytest.ini": "",
            "requirements/tests.in": f"pytest\n{package}\n",
            "requirements/tests.txt": f"{package}==1.0\npytest\n",
        },
        {"calc.py": calc.replace("a + b", "a - b")},
    )


def _silent_review(repo: Path, tmp_path: Path) -> dict:
    """`prereview review --format json` with a model that finds nothing: what it flags is the tests'."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [], "default": {"findings": []}}))
    cfg = tmp_path / "cfg.yml"
    cfg.write_text(
        yaml.safe_dump(
            {"model": {"backend": "scripted", "script": str(script)}, "patches": {"enabled": False}}
        )
    )
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
@pytest.mark.parametrize("mended", [True, False])
def test_a_pinned_set_that_installs_but_does_not_run_is_rebuilt_unpinned(
    mended, make_repo, tmp_path, monkeypatch
):
    """prv-runbreaker 1.0 installs but fails at import on this Python (like py 1.10 on 3.11); 2.0 runs
    (`mended`; else it fails too, and the note says the retry was made and why it did not help).
    pytest comes from the configured index, prv-runbreaker from a local folder."""
    links = tmp_path / "links"
    links.mkdir()
    _wheel(links, "prv-runbreaker", "1.0", body="raise ImportError('needs Python < 3.8')\n")
    _wheel(links, "prv-runbreaker", "2.0", body="" if mended else "raise ImportError('still broken')\n")
    monkeypatch.setenv(
        "PIP_FIND_LINKS", " ".join(filter(None, [str(links), os.environ.get("PIP_FIND_LINKS")]))
    )
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PREREVIEW_ENV_DIR", str(tmp_path / "envs"))
    data = _silent_review(_pinned_calc(make_repo, "prv-runbreaker"), tmp_path)
    broken = [f for f in data["findings"] if f["rule_id"] == "tests/broken"]
    notes = [n for n in data["notes"] if n.startswith("Test environment:")]
    if not mended:
        assert not broken and notes == [
            "Test environment: with the test requirements installed without their pins the tests did not "
            "run either (collection failed: ImportError: still broken)."
        ], data["notes"]
        assert any(n.startswith("Tests not used") and "needs Python < 3.8" in n for n in data["notes"])
        return
    assert [(f["path"], f["line"]) for f in broken] == [("calc.py", 2)], data
    assert len(notes) == 1 and "`prv-runbreaker==1.0`: collection failed" in notes[0], data["notes"]
    assert "needs Python < 3.8" in notes[0] and not any(n.startswith("Tests not") for n in data["notes"])


# ---------------------------------------------------------------- the unpinned retry, bounded by date


class _DatedIndex(http.server.BaseHTTPRequestHandler):
    """A PEP 691 JSON index with PEP 700 upload times (as pypi.org serves them): prv-dated 1.0 uploaded
    in 2020 and 2.0 in 2025. It answers only what pip asks for and counts nothing else."""

    files: dict[str, tuple[Path, str]] = {}

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.rstrip("/") == "/simple/prv-dated":
            body = json.dumps(
                {
                    "meta": {"api-version": "1.1"},
                    "name": "prv-dated",
                    "files": [
                        {"filename": n, "url": f"/files/{n}", "hashes": {}, "upload-time": t}
                        for n, (_, t) in self.files.items()
                    ],
                }
            ).encode()
            kind = "application/vnd.pypi.simple.v1+json"
        elif self.path.startswith("/files/") and self.path[7:] in self.files:
            body, kind = self.files[self.path[7:]][0].read_bytes(), "application/octet-stream"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_the_bound_is_the_base_commits_date_never_before_this_pythons_support():
    from datetime import datetime, timezone

    utc = timezone.utc
    flask_2021 = datetime(2021, 5, 21, 15, 4, tzinfo=utc)
    assert datebound.bound(flask_2021, (3, 8)) == flask_2021  # 3.8 was supported by then
    assert datebound.bound(flask_2021, (3, 11)) == datetime(2023, 4, 25, tzinfo=utc)  # 3.11.0 + 183 days
    assert datebound.bound(flask_2021, (3, 99)) is None  # a Python newer than the table: no bound
    assert datebound.args("pip", flask_2021) == ["--uploaded-prior-to", "2021-05-21T15:04:00Z"]
    assert datebound.args("uv", flask_2021) == ["--exclude-newer", "2021-05-21T15:04:00Z"]


def test_a_bound_is_worth_a_rebuild_only_for_an_old_base(tmp_path) -> None:
    """Requirements that pin nothing get today's releases; only a base old enough that its date leaves
    releases out is rebuilt as of its date (flask 2.2's `Werkzeug >= 2.2.2` got Werkzeug 3)."""
    from datetime import datetime, timezone

    repo = tmp_path / "r"
    repo.mkdir()
    for cmd in (
        ["init", "-q"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"],
    ):
        env = {
            **os.environ,
            "GIT_COMMITTER_DATE": "2024-03-01T12:00:00Z",
            "GIT_AUTHOR_DATE": "2024-03-01T12:00:00Z",
        }
        subprocess.run(["git", "-C", str(repo), *cmd], check=True, env=env)
    sha = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    utc = timezone.utc
    assert datebound.narrows(repo, sha, now=datetime(2026, 12, 1, tzinfo=utc))
    assert not datebound.narrows(repo, sha, now=datetime(2024, 4, 1, tzinfo=utc))  # a month old: today's
    assert not datebound.narrows(repo, "0" * 40)  # no such commit: no bound


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pinned", "local", "when"),
    [
        (True, False, "2024-03-01"),
        (False, False, "2024-03-01"),
        (True, True, "2024-03-01"),
        (True, True, "2021-06-25"),
    ],
)
def test_the_unpinned_install_takes_the_releases_of_the_base_commits_time(
    pinned, local, when, tmp_path, monkeypatch
):
    """A tree whose pin was left out (or that pins nothing and whose tests did not run with today's
    releases): the index has prv-dated 1.0 (2020), 1.5 (2022) and 2.0 (2025); the unpinned install takes
    the release a resolver would have taken at the base commit's date, and the environment's note says so.
    A base dated 2024 (after this Python's floor) gets 1.5. A base dated 2021, before 3.11 was supported,
    gets 1.0, its own date's, and pytest as released at this Python's floor, 2023-04-25 (eratier.py: a
    2021 pytest does not run on 3.11). pytest and pip 26 come from the machine's configured index.
    `local`: a find-links folder also holds prv-dated 3.0, with no upload time (a mirror on disk): it is
    left out of the dated install, or pip would take 3.0 whatever the bound."""
    from bot.config import build
    from bot.evidence import pyvenv
    from bot.progress import Quiet

    files_dir = tmp_path / "files"
    files_dir.mkdir()
    _DatedIndex.files = {
        p.name: (p, t)
        for p, t in (
            (_wheel(files_dir, "prv-dated", "1.0"), "2020-01-01T00:00:00Z"),
            (_wheel(files_dir, "prv-dated", "1.5"), "2022-01-01T00:00:00Z"),
            (_wheel(files_dir, "prv-dated", "2.0"), "2025-01-01T00:00:00Z"),
        )
    }
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _DatedIndex)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("PIP_EXTRA_INDEX_URL", f"http://127.0.0.1:{server.server_port}/simple")
        monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
        if local:
            mirror = tmp_path / "mirror"
            mirror.mkdir()
            _wheel(mirror, "prv-dated", "3.0")
            links = [str(mirror), os.environ.get("PIP_FIND_LINKS", "")]
            monkeypatch.setenv("PIP_FIND_LINKS", " ".join(filter(None, links)))
        tree = {"requirements/tests.in": "prv-dated\n", "requirements/tests.txt": "prv-dated==0.1\n"}
        if not pinned:  # a lower bound alone (no pin to leave out): the same set, as of the base's date
            tree = {"requirements/tests.txt": "prv-dated >= 0.1\n"}
        repo = tmp_path / "repo"
        repo.mkdir()
        for k, v in tree.items():
            (repo / k).parent.mkdir(parents=True, exist_ok=True)
            (repo / k).write_text(v)
        dated = {
            **os.environ,
            "GIT_COMMITTER_DATE": f"{when}T12:00:00Z",
            "GIT_AUTHOR_DATE": f"{when}T12:00:00Z",
        }
        for cmd in (
            ["init", "-q"],
            ["add", "-A"],
            ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
        ):
            subprocess.run(["git", "-C", str(repo), *cmd], check=True, env=dated)
        sha = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout
        exe, *_ = pyvenv.build_venv(
            layout(tree),
            list(tree),
            tree.get,
            tmp_path / "envs",
            build({}, env={}),
            Quiet(),
            repo,
            sha.strip(),
            unpinned="era",
        )
    finally:
        server.shutdown()
    out = subprocess.run(
        [exe, "-c", "import prv_dated; print(prv_dated.VERSION)"], capture_output=True, text=True
    )
    assert out.stdout.strip() == ("1.5" if when == "2024-03-01" else "1.0"), out.stderr
    notes, unpinned = pininstall.built_info(exe)
    assert unpinned and len(notes) == 1, notes
    if when == "2021-06-25":
        assert notes == [
            "Test environment: the test requirements installed without their pins, as released up to "
            "2021-06-25 (the base commit's date), and pytest as released up to 2023-04-25 (the base commit "
            "predates this Python's supporting releases)."
        ]
        got = subprocess.run(
            [exe, "-c", "import pytest; print(pytest.__version__)"], capture_output=True, text=True
        )
        assert got.stdout.startswith("7."), got  # 2023's (7.3), not 2021's 6.2, which fails on 3.11
        return
    assert re.fullmatch(
        r"Test environment: the test requirements installed without their pins, "
        r"(from the indexes with upload times \(\d+ local package source\(s\) left out\), )?"
        r"as released up to 2024-03-01 \(the base commit's date\)\.",
        notes[0],
    ), notes
    assert "left out" in notes[0] or not local


@pytest.mark.parametrize(
    ("requirements", "unpinned", "newer"),
    [
        (["six", "pytest >= 3.0; python_version != '3.3'"], False, True),  # dateutil: pytest 9 here
        (["pytest==7.4.0", "six"], False, False),  # the project's own pytest: its warnings are its own
        (["pytest==6.2.2"], True, True),  # pins left out
    ],
)
def test_pytests_own_deprecations_are_ignored_where_pytest_may_be_newer_than_the_tests(
    tmp_path, requirements, unpinned, newer
):
    (tmp_path / "bin").mkdir()
    (tmp_path / ".prereview-complete").write_text(
        json.dumps({"requirements": requirements, "unpinned": unpinned})
    )
    assert pininstall.newer_pytest(str(tmp_path / "bin" / "python")) is newer


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_where_the_base_dates_releases_do_not_run_the_tests_the_floors_do(make_repo, tmp_path, monkeypatch):
    """A 2021 tree pins prv-dated 1.0, which installs and fails at import on this Python (as py 1.10 does
    on 3.11). Unpinned as released at the base commit's date (eratier.py) it is 1.0 again, and the tests
    do not run either; then everything as released at this Python's floor (2023-04-25) brings 1.5 (2022),
    which runs, and the change's broken test is flagged. Without that last step the note said "did not
    run either" and nothing was tested."""
    files_dir = tmp_path / "files"
    files_dir.mkdir()
    _DatedIndex.files = {
        p.name: (p, t)
        for p, t in (
            (
                _wheel(files_dir, "prv-dated", "1.0", body="raise ImportError('needs Python < 3.8')\n"),
                "2020-01-01T00:00:00Z",
            ),
            (_wheel(files_dir, "prv-dated", "1.5"), "2022-01-01T00:00:00Z"),
            (
                _wheel(files_dir, "prv-dated", "2.0", body="raise ImportError('2025 API')\n"),
                "2025-01-01T00:00:00Z",
            ),
        )
    }
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _DatedIndex)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("PIP_EXTRA_INDEX_URL", f"http://127.0.0.1:{server.server_port}/simple")
        monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
        monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.setenv("PREREVIEW_ENV_DIR", str(tmp_path / "envs"))
        for var in ("GIT_COMMITTER_DATE", "GIT_AUTHOR_DATE"):
            monkeypatch.setenv(var, "2021-06-25T12:00:00Z")
        data = _silent_review(_pinned_calc(make_repo, "prv-dated"), tmp_path)
    finally:
        server.shutdown()
    broken = [f for f in data["findings"] if f["rule_id"] == "tests/broken"]
    notes = [n for n in data["notes"] if n.startswith("Test environment:")]
    assert [(f["path"], f["line"]) for f in broken] == [("calc.py", 2)], data["notes"]
    assert len(notes) == 1 and "`prv-dated==1.0`: collection failed" in notes[0], notes
    assert "installed them without their pins instead, " in notes[0], notes
    assert notes[0].endswith(
        "as released up to 2023-04-25 (the base commit predates this Python's supporting releases)."
    ), notes
