"""The real-world corpus's projects, its tuning/check split and the causes of its misses (bench/realworld.py).

Projects: each `--clone NAME=DIR` names a project. A name in PROJECTS has its conventions recorded there
(GitHub slug, the source folders or files that count as the package, the import name, where its tests
live); any other name gets them guessed from the clone: the package is `src/<import>/`, `<import>/` or
`<import>.py` (import = the name with `-` as `_`, less a `python-` prefix), the slug comes from the
clone's `origin` when it is a GitHub URL. A project's `language` (python unless recorded: javascript,
typescript, go) says which files are its sources and tests (`is_source`, `is_test`): test files are
recognised the same way in every project of a language (Python: a `.py` under a `tests`/`test`/`testing`
folder, `test_*.py`, `conftest.py`; Go: `*_test.go`, `testdata/`; JavaScript/TypeScript: files under
`test`/`tests`/`__tests__`/`spec`/`__snapshots__`, `*.test.*`, `*.spec.*`), so `tests` below is
documentation of the layout, not a rule. Cases of a non-Python project carry their `language`.

Split (`assign_halves`, run once by `build` and recorded in each case's `half`): cases are grouped by
project and by commit kind (fix commits: their `hidden` and `kept` cases together; ordinary commits); a
group of m commits gives ceil(m/2) to `tuning` when the kind's halves (counted per language) are so far
level or `check` is ahead, floor(m/2) otherwise (groups in (kind, project) name order, so odd groups do
not all favour one half), but never fewer than its STUDIED commits (the first corpus's, studied case by
case before the split: they are tuning cases). The tuning places go to the STUDIED commits first, then to
the commits in the order of sha256("<project>:<commit>"); the rest are `check`. So the split is
deterministic, balanced per project and kind (the halves differ by one commit at most per group, unless
STUDIED forces more), and the two cases of one fix commit are always in the same half. Rebuilding with
another set of commits draws it again: keep the committed JSON to keep the split. Projects added later
(`build --add`: the JavaScript, TypeScript and Go ones) get their halves by the same rule; as the balance
is kept per language, adding them moves no Python case. The check half is for aggregate figures only
(`report --half check`); `run` prints no per-case outcome for it.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

HALVES = ("tuning", "check")

PROJECTS: dict[str, dict[str, Any]] = {
    "requests": {
        "slug": "psf/requests",
        "package": ["src/requests/", "requests/"],
        "import": "requests",
        "tests": "tests/",
        "shape": "HTTP client library",
    },
    "flask": {
        "slug": "pallets/flask",
        "package": ["src/flask/", "flask/"],
        "import": "flask",
        "tests": "tests/",
        "shape": "web framework",
    },
    "attrs": {
        "slug": "python-attrs/attrs",
        "package": ["src/attr/", "src/attrs/", "attr/"],
        "import": "attr",
        "tests": "tests/",
        "shape": "class-building library (code generation)",
    },
    "sqlparse": {
        "slug": "andialbrecht/sqlparse",
        "package": ["sqlparse/"],
        "import": "sqlparse",
        "tests": "tests/",
        "shape": "parser (SQL lexer, grouping, formatter) with a CLI",
    },
    "marshmallow": {
        "slug": "marshmallow-code/marshmallow",
        "package": ["src/marshmallow/", "marshmallow/"],
        "import": "marshmallow",
        "tests": "tests/",
        "shape": "data library (serialization and validation)",
    },
    "more-itertools": {
        "slug": "more-itertools/more-itertools",
        "package": ["more_itertools/"],
        "import": "more_itertools",
        "tests": "tests/ (older: more_itertools/tests/)",
        "shape": "numeric-ish / iterator library",
    },
    "dateutil": {
        "slug": "dateutil/dateutil",
        "package": ["src/dateutil/", "dateutil/"],
        "import": "dateutil",
        "tests": "tests/ (older: dateutil/test/)",
        "shape": "parser and date arithmetic (parse, rrule, relativedelta, tz)",
    },
    "bottle": {
        "slug": "bottlepy/bottle",
        "package": ["bottle.py"],
        "import": "bottle",
        "tests": "test/",
        "shape": "web framework in one module",
    },
    "dotenv": {
        "slug": "theskumar/python-dotenv",
        "package": ["src/dotenv/", "dotenv/", "dotenv.py"],
        "import": "dotenv",
        "tests": "tests/",
        "shape": "config-file parser with a CLI",
    },
}


# JavaScript, TypeScript and Go projects (issue 26): few or no third-party dependencies (npm devDependencies
# only; Go modules that require nothing), so their tests run offline once `npm install` has run. `package`
# "" is the whole tree (a Go module's packages); their tests are recognised by `is_test` for the language.
PROJECTS |= {
    "mime-types": {
        "slug": "jshttp/mime-types",
        "language": "javascript",
        "package": ["index.js", "mimeScore.js", "lib/"],
        "import": "mime-types",
        "tests": "test/ (mocha)",
        "shape": "lookup library (MIME types by extension)",
    },
    "cookie": {
        "slug": "jshttp/cookie",
        "language": "javascript",
        "package": ["index.js", "src/"],
        "import": "cookie",
        "tests": "test/ (mocha; later src/*.spec.ts, vitest)",
        "shape": "HTTP header parser / serializer",
    },
    "path-to-regexp": {
        "slug": "pillarjs/path-to-regexp",
        "language": "typescript",
        "package": ["src/", "index.js"],
        "import": "path-to-regexp",
        "tests": "src/*.spec.ts, test/ (jest, later vitest)",
        "shape": "path pattern compiler (a small parser)",
    },
    "yargs-parser": {
        "slug": "yargs/yargs-parser",
        "language": "typescript",
        "package": ["lib/", "index.js"],
        "import": "yargs-parser",
        "tests": "test/ (mocha, after `tsc` in pretest)",
        "shape": "argument parser (CLI options)",
    },
    "ufo": {
        "slug": "unjs/ufo",
        "language": "typescript",
        "package": ["src/"],
        "import": "ufo",
        "tests": "test/*.test.ts (vitest)",
        "shape": "URL utilities (parsing, joining, encoding)",
    },
    "defu": {
        "slug": "unjs/defu",
        "language": "typescript",
        "package": ["src/"],
        "import": "defu",
        "tests": "test/*.test.ts (vitest)",
        "shape": "object merging (defaults) library",
    },
    "pflag": {
        "slug": "spf13/pflag",
        "language": "go",
        "package": [""],
        "import": "pflag",
        "tests": "*_test.go",
        "shape": "CLI flag parser (stdlib only)",
    },
    "uuid": {
        "slug": "google/uuid",
        "language": "go",
        "package": [""],
        "import": "uuid",
        "tests": "*_test.go",
        "shape": "UUID generation and parsing (stdlib only)",
    },
    "mux": {
        "slug": "gorilla/mux",
        "language": "go",
        "package": [""],
        "import": "mux",
        "tests": "*_test.go",
        "shape": "HTTP router (stdlib only)",
    },
}

LANGUAGES = ("python", "javascript", "typescript", "go")
SOURCE_SUFFIXES = {
    "python": (".py",),
    "javascript": (".js", ".mjs", ".cjs", ".jsx"),
    "typescript": (".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs"),
    "go": (".go",),
}
_JS_TEST_DIRS = {"test", "tests", "__tests__", "spec", "__snapshots__", "__fixtures__"}
_JS_TEST_NAME = re.compile(r"\.(test|spec|test-d)\.[cm]?[jt]sx?$|\.snap$")


def language(case_or_conv: dict[str, Any]) -> str:
    """A case's or a project's language (entries written before there were others are Python)."""
    return str(case_or_conv.get("language") or "python")


def is_test(path: str, lang: str = "python") -> bool:
    """A test file (or test data) of a project in `lang`: Python `.py` under a tests/test/testing folder,
    `test_*.py`, `conftest.py`; Go `*_test.go` and `testdata/`; JavaScript/TypeScript any file under a
    test/tests/__tests__/spec/__snapshots__ folder and `*.test.*`, `*.spec.*`, `*.test-d.*`, `*.snap`."""
    parts = path.split("/")
    if lang == "go":
        return path.endswith("_test.go") or "testdata" in parts[:-1]
    if lang in ("javascript", "typescript"):
        return bool(_JS_TEST_DIRS & set(parts[:-1])) or bool(_JS_TEST_NAME.search(parts[-1]))
    return path.endswith(".py") and (
        bool({"tests", "test", "testing"} & set(parts[:-1]))
        or parts[-1].startswith("test_")
        or parts[-1] == "conftest.py"
    )


def is_source(path: str, package: tuple[str, ...], lang: str = "python") -> bool:
    """A source file of the project: the language's suffix, under a package prefix, not a test, not a
    declaration file or benchmark (`.d.ts`, `*.bench.*`), not vendored."""
    name = path.rsplit("/", 1)[-1]
    if lang != "python" and (
        name.endswith((".d.ts", ".d.mts", ".d.cts"))
        or ".bench." in name
        or {"vendor", "node_modules", "dist"} & set(path.split("/")[:-1])
    ):
        return False
    return path.endswith(SOURCE_SUFFIXES[lang]) and path.startswith(package) and not is_test(path, lang)


def conventions(name: str, clone: Path | None = None) -> dict[str, Any]:
    """A project's conventions: the recorded ones, or guessed from the clone (see the docstring)."""
    if name in PROJECTS:
        return {"language": "python", **PROJECTS[name]}
    imp = re.sub(r"^python-", "", name).replace("-", "_")
    slug = name
    if clone is not None:
        url = subprocess.run(
            ["git", "-C", str(clone), "remote", "get-url", "origin"], capture_output=True, text=True
        ).stdout.strip()
        m = re.search(r"github\.com[:/]([\w.-]+/[\w.-]+?)(?:\.git)?$", url)
        slug = m.group(1) if m else name
    return {
        "slug": slug,
        "package": [f"src/{imp}/", f"{imp}/", f"{imp}.py"],
        "import": imp,
        "tests": "tests/ or test/",
        "shape": "?",
        "language": "python",
    }


# The commits of the first corpus (27 cases, 2026-12-01), studied case by case before the split: rules were
# shaped on them, so they can only be tuning cases.
STUDIED = frozenset(
    {
        "45de9beb093d2142517ab7d1ebda6522e3d3c4ac",  # attrs
        "5820ce717ed3f6047409845004a3ec004ec1574d",  # attrs
        "97f8d175656bc03c373a1c9038048a4d312c307c",  # attrs
        "af9c510912ce604a94896cc35c27368d5baf6ae6",  # attrs
        "ce89f5d11feb0805da9ed10bb165238cc959f1bb",  # attrs
        "f53fc5440d7f86aac4328aec7a563eb48634177f",  # attrs
        "1af8f95785b85d0937153ee63d504c0b51934d80",  # flask
        "a29f88ce6f2f9843bd6fcbbfce1390a2071965d6",  # flask
        "a411a2434b09d9cbaa4074232b2c247d591bb655",  # flask
        "c77a5203438fe772d41f6a47303ad3f57a4efe6d",  # flask
        "d7b6c1f6703df405c69da45e7e0ba3d1aed512ce",  # flask
        "fb54159861708558b5f5658ebdc14709d984361c",  # flask
        "5691f596134c2feb121e595c77a0178921fcce61",  # requests
        "6404f345e562d962abe6700a1c357ec1e7e18232",  # requests
        "6f205ff422bccd5e4c4fc0b64c5f3e7df5181db6",  # requests
        "6f66281a1d6326b1b9c4ac09ca30de0fc4e6ef43",  # requests
        "84d10f0be83e8f6aeca8a05230c52216431c4d0b",  # requests
        "bc7dd0fc4d56e808bcdd85ac2d797b3107c89259",  # requests
    }
)


def _key(case: dict[str, Any]) -> str:
    return hashlib.sha256(f"{case['project']}:{case['commit']}".encode()).hexdigest()


def assign_halves(cases: list[dict[str, Any]], studied: frozenset[str] = STUDIED) -> list[dict[str, Any]]:
    """The cases with `half` set by the split rule in the module docstring (input order kept)."""

    def kind(c: dict[str, Any]) -> str:
        return ("ordinary" if c["kind"] == "ordinary" else "fix") + (
            "" if language(c) == "python" else f"/{language(c)}"
        )

    groups: dict[tuple[str, str], set[str]] = defaultdict(set)
    for c in cases:
        groups[(kind(c), c["project"])].add(c["commit"])
    half: dict[tuple[str, str, str], str] = {}
    balance: dict[str, int] = defaultdict(int)  # per kind and language: tuning - check so far, over projects
    for k, project in sorted(groups):
        commits = groups[(k, project)]
        m = len(commits)
        n_tuning = (m + 1) // 2 if balance[k] <= 0 else m // 2
        n_tuning = max(n_tuning, len(commits & studied))
        balance[k] += n_tuning - (m - n_tuning)
        order = sorted(
            commits, key=lambda sha: (sha not in studied, _key({"project": project, "commit": sha}))
        )
        for i, sha in enumerate(order):
            half[(k, project, sha)] = "tuning" if i < n_tuning else "check"
    return [{**c, "half": half[(kind(c), c["project"], c["commit"])]} for c in cases]


def in_half(case: dict[str, Any], which: str) -> bool:
    return which == "all" or case.get("half") == which


MISS_CAUSES = (
    "error",
    "no environment",
    "not compared (not Python)",
    "not reached",
    "judged intended",
    "found below medium",
    "no difference",
)


def miss_cause(row: dict[str, Any]) -> str:
    """Why a `hidden` case was not flagged, from what its result row holds (first that applies):
    the review failed; the base test run was not usable (no environment: nothing ran the project's code);
    the changed file is not Python, which the behaviour stage does not compare yet; a changed callable
    was reached by no test and not compared (coverage.skipped says "reached by no test"); a difference
    was observed and listed as intended (the summary's `behaviour` entries on the case's file); a
    finding sat on the right lines below medium; otherwise no difference was found."""
    if row.get("error"):
        return "error"
    if not row.get("base_usable"):
        return "no environment"
    files = set(row.get("files", []))
    if files and not any(f.endswith(".py") for f in files):
        return "not compared (not Python)"
    if any(isinstance(b, dict) and b.get("path") in files for b in row.get("behaviour", [])):
        return "judged intended"
    if any("reached by no test" in str(s) for s in row.get("skipped", [])):
        return "not reached"
    lines = row.get("truth_lines", [])
    for f in row.get("findings", []):
        end = f.get("end_line") or f.get("line", 0)
        if f.get("path") in files and any(f.get("line", 0) - 2 <= n <= end + 2 for n in lines):
            return "found below medium"
    return "no difference"
