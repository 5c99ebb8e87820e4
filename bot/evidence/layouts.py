"""What a project needs to run its tests, read from its tree (never executed): for Python the import roots
and the test dependencies; for Node, Go, Rust and Maven the lockfile their toolchain fetches from.

Everything here reads files through `read(path) -> text | None` over a file list, so it works on a git
revision (`git show`) as well as on a directory.
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import tomllib
from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName

from . import setuppy
from .testsets import DEV_SET, NOT_TESTS, TEST_ONLY, TEST_SET, norm, nox_test_sessions, test_sets  # noqa: F401
from .toxenvs import this_pythons

Reader = Callable[[str], str | None]

TEST_EXTRAS = ("test", "tests", "testing", "dev")  # extras / dependency groups that hold test dependencies
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_REQ_FILE = re.compile(
    r"^(requirements([-_.](test|tests|testing|dev|ci))?[^/]*\.txt|(test|tests|dev)[-_]requirements\.txt"
    r"|requirements/(test|tests|testing|dev|ci|base|main|default)[^/]*\.(txt|in))$"
)
# tox's factor-conditional deps (`min: -r tests-min.txt`, `py38,!dev: x`) belong to other environments
_TOX_FACTOR = re.compile(r"^!?[\w.-]+(?:\s*,\s*!?[\w.-]+)*\s*:\s")
# the project or a folder of the tree (`.`, `-e .[test]`, tox's `examples/tutorial[test]`): not indexed
_LOCAL = re.compile(r"^(-e\s+|--editable\s+)?(\.|\./|\.\[|/|file:|\w:\\|[\w.-]+/)")


@dataclass(frozen=True)
class PythonLayout:
    """How a Python project's tests import its code, and what else they need."""

    name: str | None  # the project's own distribution name (normalized), never installed from an index
    roots: tuple[str, ...]  # import roots relative to the tree ("src", "."), first wins
    requirements: tuple[str, ...]  # pip requirement lines, the project itself left out
    dep_files: tuple[str, ...]  # the files read for them (their text is part of the environment's key)
    uv_lock: bool = False  # a uv.lock exists (uv exports it exactly when uv is available)


def python_layout(files: Sequence[str], read: Reader) -> PythonLayout:
    top = set(files)
    pyproject = _toml(read("pyproject.toml")) if "pyproject.toml" in top else {}
    setup_cfg = _ini(read("setup.cfg")) if "setup.cfg" in top else None
    project = pyproject.get("project", {}) if isinstance(pyproject.get("project"), dict) else {}
    name = project.get("name") or _ini_get(setup_cfg, "metadata", "name")
    name = norm(name) if isinstance(name, str) and name.strip() else None
    dep_files: list[str] = [
        f for f in ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "noxfile.py", "uv.lock") if f in top
    ]
    reqs: list[str] = []
    extras: set[str] = set()  # named explicitly (tox `extras =`, `-e .[test]`): read from every source

    def add_lines(lines: Iterable[str], origin: str) -> None:
        for raw in lines:
            line = raw.split(" #", 1)[0].strip()
            if not line or line.startswith("#"):
                continue
            if m := re.match(r"^(?:-r|--requirement)\s*(\S+)$", line):
                ref = str(PurePosixPath(origin).parent / m.group(1)) if "/" in origin else m.group(1)
                ref = str(PurePosixPath(ref))
                if ref in top and ref not in dep_files:
                    dep_files.append(ref)
                    add_lines((read(ref) or "").splitlines(), ref)
                continue
            if _LOCAL.match(line):  # `.`, `-e .[test]`: the project itself, maybe with extras; or a folder
                wanted = re.search(r"\[([^\]]*)\]", line)
                where = re.sub(r"^(-e|--editable)\s+", "", line).split("[", 1)[0].strip().rstrip("/")
                if where in (".", "./", "") and wanted:
                    extras.update(x.strip() for x in wanted.group(1).split(","))
                continue
            if line.startswith("-"):  # index options, constraints, hashes: not followed (see docs)
                continue
            reqs.append(line)

    for f in requirement_files(files):
        if f not in dep_files:
            dep_files.append(f)
            add_lines((read(f) or "").splitlines(), f)
    if "tox.ini" in top:
        tox = _ini(read("tox.ini"))
        for section in ("testenv", *this_pythons(tox.sections() if tox else [])):
            deps = _ini_get(tox, section, "deps")
            if deps:
                add_lines(
                    (d for d in deps.splitlines() if "{" not in d and not _TOX_FACTOR.match(d.strip())),
                    "tox.ini",
                )
            for x in (_ini_get(tox, section, "extras") or "").replace(",", "\n").split():
                extras.add(x)
    if "noxfile.py" in top:
        for call in re.findall(r"session\.install\(([^)]*)\)", nox_test_sessions(read("noxfile.py") or "")):
            args = re.findall(r"""["']([^"']+)["']""", call)
            joined = " ".join(args)
            add_lines([joined] if args[:1] in (["-r"], ["-e"]) else args, "noxfile.py")
    reqs += [d for d in project.get("dependencies", []) if isinstance(d, str)]
    optional = project.get("optional-dependencies", {})
    groups = pyproject.get("dependency-groups", {})
    poetry = pyproject.get("tool", {}).get("poetry", {}) if isinstance(pyproject.get("tool"), dict) else {}
    for extra in test_sets(optional, extras):
        reqs += [d for d in optional.get(extra, []) if isinstance(d, str)]
    for extra in test_sets(groups, extras):
        reqs += _group(groups, extra, set())
    reqs += _poetry(poetry, extras)
    if setup_cfg is not None:
        reqs += _lines(_ini_get(setup_cfg, "options", "install_requires"))
        cfg_extras = (
            dict(setup_cfg["options.extras_require"])
            if setup_cfg.has_section("options.extras_require")
            else {}
        )
        for extra in test_sets(cfg_extras, extras):
            reqs += _lines(cfg_extras[extra])
    if "setup.py" in top:
        install, extras_req = setuppy.requirements(read("setup.py"))
        reqs += install
        for extra in test_sets(extras_req, extras):
            reqs += extras_req[extra]
    own = {name} if name else set()
    kept = [r for r in dict.fromkeys(r.strip() for r in reqs) if r and _req_name(r) not in own]
    return PythonLayout(
        name=name,
        roots=import_roots(files, read, pyproject, setup_cfg),
        requirements=tuple(kept),
        dep_files=tuple(dep_files),
        uv_lock="uv.lock" in top,
    )


def requirement_files(files: Sequence[str]) -> list[str]:
    """The requirement files a test environment reads, without their alternatives: `x.in` when `x.txt`
    (pip-compile's output) is there, and a variant `x-min.txt` / `x-pallets-dev.txt` of a file `x.txt` in
    the same folder (tox picks those by factor; together they conflict, and `-dev` variants fetch
    branches from github). The root's `requirements.txt` is never the plain file of a variant:
    `requirements-test.txt` beside it is a second set, not an alternative. A kept file's `-r` is still
    followed, so a variant it names explicitly is read. Where a test set is there (`requirements/tests.txt`,
    `requirements-test.txt`, `test-requirements.txt`), the `dev` and `ci` sets are left out: they add docs,
    linters and type checkers, whose old pins are what fails to build on a newer Python."""
    matched = sorted(f for f in files if _REQ_FILE.match(f) and not NOT_TESTS.search(f))
    if any(TEST_SET.search(f) for f in matched):
        matched = [f for f in matched if TEST_SET.search(f) or not DEV_SET.search(f)]
    stems = {f.rsplit(".", 1)[0] for f in matched} - {"requirements"}
    kept = []
    for f in matched:
        stem, ext = f.rsplit(".", 1)
        if ext == "in" and f"{stem}.txt" in matched:
            continue
        if not any(stem.startswith(plain) and stem[len(plain)] in "-_." for plain in stems - {stem}):
            kept.append(f)
    return kept


def uv_lock_pins(
    text: str | None, own: str | None, environment: dict[str, str] | None = None
) -> tuple[str, ...]:
    """`name==version` for each package uv.lock pins from an index (not the project, not workspace
    members): pip constraints, so a venv built without uv gets the locked versions. A package locked at
    several versions (a fork by Python version: pytest 8 for 3.9, 9 for 3.10+) gets the one whose
    `resolution-markers` hold for `environment` (this interpreter's by default). None or several
    hold, or a marker is unreadable: left to pip."""
    versions: dict[str, set[str]] = {}
    unsure: set[str] = set()
    for pkg in _toml(text).get("package", []):
        if not isinstance(pkg, dict) or not isinstance(pkg.get("source"), dict):
            continue
        name, version = pkg.get("name"), pkg.get("version")
        if "registry" not in pkg["source"] or not isinstance(name, str) or not isinstance(version, str):
            continue
        holds = _holds(pkg.get("resolution-markers"), environment)
        if holds is None:
            unsure.add(norm(name))
        elif holds:
            versions.setdefault(norm(name), set()).add(version)
    return tuple(
        f"{n}=={next(iter(v))}"
        for n, v in sorted(versions.items())
        if len(v) == 1 and n != own and n not in unsure
    )


def _holds(markers: Any, environment: dict[str, str] | None) -> bool | None:
    """Does one of a lock entry's resolution markers hold (True without any)? None: one is unreadable,
    and the package is left to pip."""
    if not isinstance(markers, list) or not markers:
        return True
    try:
        return any(Marker(str(m)).evaluate(environment) for m in markers)
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return None


def import_roots(
    files: Sequence[str], read: Reader, pyproject: dict[str, Any], setup_cfg: configparser.ConfigParser | None
) -> tuple[str, ...]:
    """Where the tests import the project's code from: pytest's `pythonpath`, the build backend's
    package directory, a `src/` layout; the root last (flat layouts, and what `python -m pytest` adds)."""
    roots: list[str] = []
    tool = pyproject.get("tool", {}) if isinstance(pyproject.get("tool"), dict) else {}
    pp = tool.get("pytest", {}).get("ini_options", {}).get("pythonpath", [])
    roots += (
        [pp] if isinstance(pp, str) else [p for p in pp if isinstance(p, str)] if isinstance(pp, list) else []
    )
    for ini, section in (("pytest.ini", "pytest"), ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        if ini in set(files):
            roots += (_ini_get(_ini(read(ini)), section, "pythonpath") or "").split()
    st = tool.get("setuptools", {})
    find = st.get("packages", {}).get("find", {}) if isinstance(st.get("packages"), dict) else {}
    roots += [w for w in find.get("where", []) if isinstance(w, str)]
    pkg_dir = st.get("package-dir", {})
    if isinstance(pkg_dir, dict) and isinstance(pkg_dir.get(""), str):
        roots.append(pkg_dir[""])
    if setup_cfg is not None:
        m = re.search(r"^\s*=\s*(\S+)", _ini_get(setup_cfg, "options", "package_dir") or "", re.M)
        roots += [m.group(1)] if m else []
        roots += (_ini_get(setup_cfg, "options.packages.find", "where") or "").split()
    wheel = tool.get("hatch", {}).get("build", {}).get("targets", {}).get("wheel", {})
    for pkg in wheel.get("packages", []) if isinstance(wheel, dict) else []:
        if isinstance(pkg, str) and "/" in pkg:
            roots.append(str(PurePosixPath(pkg).parent))
    for pkg in tool.get("poetry", {}).get("packages", []):
        if isinstance(pkg, dict) and isinstance(pkg.get("from"), str):
            roots.append(pkg["from"])
    if any(
        re.match(r"src/[^/]+(/__init__)?\.py$", f) or re.match(r"src/[^/]+/__init__\.py$", f) for f in files
    ):
        roots.append("src")
    clean = [str(PurePosixPath(r.strip())) for r in roots if r.strip() and ".." not in PurePosixPath(r).parts]
    return tuple(dict.fromkeys([*(r for r in clean if not r.startswith("/")), "."]))


def _group(groups: Any, name: str, seen: set[str]) -> list[str]:
    """PEP 735 dependency group, with `{include-group = "…"}` followed."""
    if not isinstance(groups, dict) or name in seen:
        return []
    seen.add(name)
    out: list[str] = []
    for item in groups.get(name, []):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
            out += _group(groups, item["include-group"], seen)
    return out


def _poetry(poetry: Any, explicit: set[str]) -> list[str]:
    """Poetry's dependency tables: the names only (its `^1.2` constraints are not pip syntax); of its
    groups the test ones (`dev` without one), as for extras."""
    if not isinstance(poetry, dict):
        return []
    tables = [poetry.get("dependencies", {}), poetry.get("dev-dependencies", {})]
    groups = poetry.get("group", {})
    for g in test_sets(groups, explicit):
        tables.append(groups[g].get("dependencies", {}) if isinstance(groups[g], dict) else {})
    return [n for t in tables if isinstance(t, dict) for n in t if n.lower() != "python"]


def _req_name(req: str) -> str | None:
    m = _REQ_NAME.match(req)
    return norm(m.group(1)) if m else None


def _lines(value: str | None) -> list[str]:
    return [ln.strip() for ln in (value or "").splitlines() if ln.strip() and not ln.strip().startswith("#")]


def _toml(text: str | None) -> dict[str, Any]:
    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError:
        return {}


def _ini(text: str | None) -> configparser.ConfigParser | None:
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cp.read_string(text or "")
    except configparser.Error:
        return None
    return cp


def _ini_get(cp: configparser.ConfigParser | None, section: str, key: str) -> str | None:
    if cp is None or not cp.has_section(section):
        return None
    return cp.get(section, key, fallback=None)


# ---------------------------------------------------------------- other toolchains


@dataclass(frozen=True)
class Toolchain:
    """A non-Python project: the tool that fetches its dependencies, and the files that pin them."""

    kind: str  # "node", "go", "rust", "maven"
    tool: str  # the executable that must be on PATH
    lockfiles: tuple[str, ...]  # hashed into the cache key (every manifest and lockfile in the tree)


_MANIFESTS = {
    "node": ("package.json", "package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "yarn.lock"),
    "go": ("go.mod", "go.sum", "go.work", "go.work.sum"),
    "rust": ("Cargo.toml", "Cargo.lock", "rust-toolchain", "rust-toolchain.toml"),
    "maven": ("pom.xml",),
}


def toolchain(argv: Sequence[str], files: Sequence[str]) -> Toolchain | None:
    top = set(files)
    kind = {"npm": "node", "go": "go", "cargo": "rust", "mvn": "maven"}.get(argv[0] if argv else "")
    if kind is None:
        return None
    below = kind == "go" and any(PurePosixPath(f).name == "go.mod" for f in files)  # modules below the root
    if _MANIFESTS[kind][0] not in top and not below:
        return None
    names = set(_MANIFESTS[kind])
    locks = tuple(sorted(f for f in files if PurePosixPath(f).name in names and "node_modules/" not in f))
    return Toolchain(kind, argv[0], locks)
