"""A real-world dev corpus from the git history of real projects (bench/rwcorpus.py lists them: Python
psf/requests, pallets/flask, python-attrs/attrs, andialbrecht/sqlparse, marshmallow-code/marshmallow,
more-itertools/more-itertools, dateutil/dateutil, theskumar/python-dotenv; JavaScript jshttp/mime-types,
jshttp/cookie; TypeScript yargs/yargs-parser, unjs/ufo; Go spf13/pflag, google/uuid, gorilla/mux; any
other clone can be named, as a Python project).

No code of those projects is stored here: `bench/data/realworld.json` lists the cases (project, commit,
kind, file, truth lines, half) and every case repository is rebuilt from a local clone of the project.

    git clone https://github.com/psf/requests /tmp/rw-requests  # and the others, as /tmp/rw-<name>
    python bench/realworld.py build --clone requests=/tmp/rw-requests --clone flask=/tmp/rw-flask \\
        --clone attrs=/tmp/rw-attrs ...              # -> bench/data/realworld.json (8 fixes, 5 ordinary each)
    python bench/realworld.py run --clone requests=/tmp/rw-requests ... --half tuning --out bench/out/rw.jsonl
    python bench/realworld.py report bench/out/rw.jsonl   # figures per half of a finished or partial run
    python bench/realworld.py build --add --per-project 6 --ordinary-per-project 4 \
        --clone pflag=/tmp/lc-pflag ...              # adds (or rebuilds) these projects' cases only

Halves: `build` splits the corpus once into a `tuning` and a `check` half (each case's `half`; the rule is
in bench/rwcorpus.py: per project and kind, by a hash of project and commit, the two cases of a fix
commit together, the first corpus's studied cases in `tuning`). Rules are shaped on `tuning` only; the
`check` half is run and reported as aggregate figures (`run --half check` prints no per-case outcome;
`report` prints each half separately, with the misses per cause and the hits per rule).

Selection rules (`build`; deterministic, newest first, no hand-picking):
- commits considered: `git log --no-merges` of the clone's HEAD, single parent, no renames;
- a **fix** commit: its message matches FIX_RE (fix/fixes/fixed/bug/bugfix/regression, or "closes/
  resolves #N") and its subject not NOT_CODE_FIX_RE (typo, docs, comment, typing, tests, ...); it
  modifies exactly one source file (`rwcorpus.is_source`: a file of the project's language under the
  package folder, not a test) that existed in the parent, with 1..MAX_FIX_LINES changed lines; it adds
  or changes at least one test file
  (`rwcorpus.is_test` for the project's language); any other file it touches is documentation (docs/,
  changelog.d/, *.rst, *.md, *.txt);
- an **ordinary** commit: its message matches none of FIX_RE, BUGGY_RE (error, crash, wrong, issue, typo,
  revert, ...) or CHORE_RE (release, version numbers, lint/format/typing-only, CI, ...); it modifies 1..3
  existing source files with ORDINARY_LINES changed source lines in total; other files are tests or docs;
- per project, the newest `--per-project` fix commits (each gives one `hidden` and one `kept` case) and the
  newest `--ordinary-per-project` ordinary commits. "The package folder" is the project's recorded or
  guessed source prefixes (bench/rwcorpus.py: `src/<name>/`, `<name>/`, or a one-module `<name>.py`).

Case kinds (each a repo whose last commit is the change, reviewed as base=HEAD^, head=HEAD):
- `hidden` (behaviour evidence, issue 16): base = the fix commit; head = the same tree with the source file
  AND the fix's test files put back as they were before the fix (tests the fix added are deleted), so no
  test catches the re-introduced bug. Truth: the head-side lines the revert touches (for a pure deletion,
  the lines around it). Scored: a finding >= medium on the source file within +-2 lines of a truth line;
  a behaviour finding must carry a concrete example in `evidence`. Also: how many of those located
  findings carry such an example (evidence of a behaviour or test finding).
- `kept` (project environments, issue 15): head = source file put back, the regression test kept (it
  should fail at head). Scored: a `tests/broken` finding on the source file; whether the base test run
  was usable (tests ran and some passed, not a failure as a whole; "clean": all passed), and whether a test
  of the fix's test files failed at head that did not fail at base (the denominator of issue 15's figure;
  for JavaScript, TypeScript and Go, whose test ids name no file, any test newly failing at head), and
  whether the `tests/broken` finding names that test (`tests_named`).
  Reviewed twice (`--warm kept`, the default): cold (empty cache: environment and test results built) and
  warm (same cache).
- `ordinary`: base = the parent, head = the commit itself. Scored: findings >= medium per commit.

`run` takes the cases round-robin over (kind, project), so any prefix of a run is balanced, and reviews
each case in-process exactly as `prereview review --format json` does (runner.review_change; the PR title
is blanked), with a fresh cache folder per case (PREREVIEW_CACHE_DIR), and records per case the
whole-review time, the model's time and the test runs' time (base/head, from the test runner).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "realworld.json"

sys.path.insert(0, str(ROOT / "bench"))
import rwcorpus  # noqa: E402

PROJECTS = rwcorpus.PROJECTS  # the projects whose conventions are recorded; others are guessed


def installed_copy(project: str) -> str | None:
    """Where this interpreter (the one today's test runs use) imports the project from, if installed: then
    `import requests` in the project's tests finds that copy, not the change's tree (Python projects only)."""
    import importlib.util

    if rwcorpus.language(rwcorpus.conventions(project)) != "python":
        return None
    spec = importlib.util.find_spec(rwcorpus.conventions(project)["import"])
    return spec.origin if spec is not None else None


FIX_RE = re.compile(
    r"\b(fix|fixes|fixed|fixing|bug|bugs|bugfix|regression)\b|\b(closes|resolves)\s+#\d+", re.I
)
BUGGY_RE = re.compile(
    r"\b(error|errors|crash|wrong|incorrect|correct|broken|break|issue|typo|revert|regress\w*|workaround|"
    r"mistake|problem|fail\w*)\b",
    re.I,
)
CHORE_RE = re.compile(
    r"\b(release|released|version|bump|changelog|lint|linting|format|formatting|black|ruff|flake8|isort|"
    r"pre-commit|typing|mypy|pyright|annotations?|type hints?|style|ci|tox|merge|whitespace|copyright|"
    r"cleanup|clean up)\b|\bv?\d+\.\d+(\.\d+)?\b",
    re.I,
)
NOT_CODE_FIX_RE = re.compile(
    r"\b(typos?|spelling|docs?|documentation|docstrings?|comments?|wording|grammar|lint|typing|mypy|"
    r"type hints?|annotations?|tests?)\b",
    re.I,
)  # in a fix commit's subject: the fix is not a behaviour change (or only in the tests)
MAX_FIX_LINES = 12
ORDINARY_LINES = (3, 60)
DOC_SUFFIXES = (".rst", ".md", ".txt")
IDENT = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"]
FIXED_DATE = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        errors="replace",
        env={**os.environ, **(env or {})},
    ).stdout


# --- selecting commits -------------------------------------------------------------------------------


@dataclass
class Commit:
    sha: str
    parents: list[str]
    time: int
    subject: str
    body: str
    files: list[tuple[int, int, str]] = field(default_factory=list)  # added, removed, path

    @property
    def message(self) -> str:
        return f"{self.subject}\n{self.body}"


def log(clone: Path) -> list[Commit]:
    """Non-merge commits of HEAD, newest first, with their numstat."""
    out = git(
        clone,
        "log",
        "--no-merges",
        "--no-renames",
        "--numstat",
        "--format=%x1e%H%x00%P%x00%ct%x00%s%x00%b%x00",
    )
    commits = []
    for rec in out.split("\x1e")[1:]:
        sha, parents, ct, subject, body, rest = rec.split("\x00", 5)
        c = Commit(sha, parents.split(), int(ct), subject.strip(), body.strip())
        for line in rest.strip().splitlines():
            parts = line.split("\t")
            if len(parts) == 3:
                a, r, p = parts
                c.files.append((int(a) if a.isdigit() else -1, int(r) if r.isdigit() else -1, p))
        commits.append(c)
    return commits


is_test = rwcorpus.is_test  # (path, language="python")
is_source = rwcorpus.is_source  # (path, package, language="python")


def is_doc(path: str) -> bool:
    return (
        path.endswith(DOC_SUFFIXES)
        or path.startswith(("docs/", "changelog.d/"))
        or "/" not in path
        and path.isupper()
    )


def _exists(clone: Path, rev: str, path: str) -> bool:
    return (
        subprocess.run(
            ["git", "-C", str(clone), "cat-file", "-e", f"{rev}:{path}"], capture_output=True
        ).returncode
        == 0
    )


def classify(
    c: Commit, package: tuple[str, ...], clone: Path | None = None, lang: str = "python"
) -> str | None:
    """'fix', 'ordinary' or None, by the rules in the module docstring (files as tests and sources of a
    project in `lang`)."""
    if len(c.parents) != 1 or not c.files or any(a < 0 or r < 0 for a, r, _ in c.files):
        return None  # merges, root commits, binary files
    sources = [(a, r, p) for a, r, p in c.files if is_source(p, package, lang)]
    tests = [(a, r, p) for a, r, p in c.files if is_test(p, lang)]
    others = [p for _, _, p in c.files if not is_source(p, package, lang) and not is_test(p, lang)]
    if any(not is_doc(p) for p in others):
        return None

    def existed(p: str) -> bool:
        return clone is None or _exists(clone, c.parents[0], p)

    if FIX_RE.search(c.message):
        if NOT_CODE_FIX_RE.search(c.subject):
            return None
        if len(sources) != 1 or not tests or not any(a > 0 for a, _, _ in tests):
            return None
        a, r, p = sources[0]
        if not 1 <= a + r <= MAX_FIX_LINES or not existed(p):
            return None
        return "fix"
    if BUGGY_RE.search(c.message) or CHORE_RE.search(c.message):
        return None
    changed = sum(a + r for a, r, _ in sources)
    small = 1 <= len(sources) <= 3 and ORDINARY_LINES[0] <= changed <= ORDINARY_LINES[1]
    if small and all(existed(p) for _, _, p in sources):
        return "ordinary"
    return None


def head_lines(clone: Path, fix: str, parent: str, path: str) -> list[int]:
    """Lines of the parent's version (the re-introduced code) that differ from the fix's version."""
    out = git(clone, "diff", "-U0", "--no-color", fix, parent, "--", path)
    lines: set[int] = set()
    for m in re.finditer(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", out, re.M):
        start, count = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
        if count:
            lines.update(range(start, start + count))
        else:  # the revert only deletes: the lines on either side of the gap
            lines.update({max(1, start), start + 1})
    return sorted(lines)


def select(
    name: str, clone: Path, per_project: int, ordinary_per_project: int | None = None
) -> list[dict[str, Any]]:
    """The newest `per_project` fix commits (a `hidden` and a `kept` case each) and the newest
    `ordinary_per_project` (default: the same number) ordinary commits of the clone's HEAD."""
    conv = rwcorpus.conventions(name, clone)
    package, slug, lang = tuple(conv["package"]), conv["slug"], rwcorpus.language(conv)
    n_ordinary = per_project if ordinary_per_project is None else ordinary_per_project
    fixes: list[Commit] = []
    ordinary: list[Commit] = []
    for c in log(clone):  # newest first
        if len(fixes) >= per_project and len(ordinary) >= n_ordinary:
            break
        kind = classify(c, package, clone, lang)
        if kind == "fix" and len(fixes) < per_project:
            fixes.append(c)
        elif kind == "ordinary" and len(ordinary) < n_ordinary:
            ordinary.append(c)
    out = []
    for c in fixes:
        src = next(p for _, _, p in c.files if is_source(p, package, lang))
        tests = sorted(p for _, _, p in c.files if is_test(p, lang))
        truth = head_lines(clone, c.sha, c.parents[0], src)
        for kind in ("hidden", "kept"):
            out.append(_entry(name, slug, c, kind, [src], tests, truth))
    for c in ordinary:
        srcs = sorted(p for _, _, p in c.files if is_source(p, package, lang))
        tests = sorted(p for _, _, p in c.files if is_test(p, lang))
        out.append(_entry(name, slug, c, "ordinary", srcs, tests, []))
    return [e if lang == "python" else {**e, "language": lang} for e in out]


def _entry(
    name: str, slug: str, c: Commit, kind: str, files: list[str], tests: list[str], truth: list[int]
) -> dict[str, Any]:
    return {
        "id": f"{name}-{kind}-{c.sha[:10]}",
        "project": name,
        "repo": slug,
        "commit": c.sha,
        "parent": c.parents[0],
        "kind": kind,
        "files": files,
        "test_files": tests,
        "truth_lines": truth,
        "subject": c.subject[:100],
    }


# --- building one case repo --------------------------------------------------------------------------


def materialize(case: dict[str, Any], clone: Path, out: Path) -> Path:
    """The case as a git repo at `out` whose HEAD^..HEAD is the change (objects shared with the clone)."""
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(clone), str(out)], check=True)
    if case["kind"] == "ordinary":
        git(out, "checkout", "-q", "--detach", case["commit"])
        return out
    git(out, "checkout", "-q", "--detach", case["commit"])
    put_back = list(case["files"]) + (case["test_files"] if case["kind"] == "hidden" else [])
    for path in put_back:
        target = out / path
        if _exists(out, case["parent"], path):
            target.write_bytes(
                subprocess.run(
                    ["git", "-C", str(out), "show", f"{case['parent']}:{path}"],
                    check=True,
                    capture_output=True,
                ).stdout
            )
        else:
            target.unlink()
    git(out, "add", "-A", "--", *put_back)
    git(out, *IDENT, "commit", "-q", "--no-verify", "-m", "change", env=FIXED_DATE)
    return out


# --- reviewing and scoring ---------------------------------------------------------------------------

MEDIUM = 2  # severity_rank("medium"); checked against bot.types at run time


def example_of(f: dict[str, Any]) -> bool:
    """A finding that carries a concrete example: a behaviour or test finding with evidence text."""
    ev = (f.get("evidence") or "").strip()
    if not ev or ev.startswith(("self-check", "not confirmed")):
        return False
    return f.get("source") == "behaviour" or f.get("rule_id") == "tests/broken"


def only_from(f: dict[str, Any], tests: set[str]) -> bool:
    """Each example the finding shows names its test (`(in test `id`)`), and each such test is in `tests`."""
    named = re.findall(r"\(in test `([^`]+)`\)", f.get("message", ""))
    examples = [e for e in str(f.get("evidence") or "").split(" | ") if e and not e.startswith("judge:")]
    return bool(named) and len(named) >= len(examples) and all(test_name(t) in tests for t in named)


def removed_tests(case: dict[str, Any], repo: Path) -> list[str]:
    """The test functions (by name) base's test files define and head's do not: for a `hidden` case, the
    fix's regression tests."""
    gone: set[str] = set()
    for path in case["test_files"] if case["kind"] == "hidden" else ():
        texts = []
        for rev in ("HEAD^", "HEAD"):
            got = subprocess.run(
                ["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True, text=True
            )
            texts.append(set(re.findall(r"def (test\w*)", got.stdout)) if got.returncode == 0 else set())
        gone |= texts[0] - texts[1]
    return sorted(gone)


def source_of(f: dict[str, Any]) -> str:
    if f.get("rule_id") == "tests/broken":
        return "tests"
    return str(f.get("source") or "model")


def score(case: dict[str, Any], findings: list[dict[str, Any]], runs: list[dict[str, Any]]) -> dict[str, Any]:
    strong = [f for f in findings if f["rank"] >= MEDIUM]
    files = set(case["files"])
    row: dict[str, Any] = {"n_findings": len(findings), "n_strong": len(strong)}
    if case["kind"] in ("hidden", "kept"):
        located = [
            f
            for f in strong
            if f["path"] in files
            and any(f["line"] - 2 <= n <= (f.get("end_line") or f["line"]) + 2 for n in case["truth_lines"])
        ]
        ok = [f for f in located if f.get("source") != "behaviour" or example_of(f)]
        removed = set(case.get("removed_tests") or ())
        row |= {
            "detected": bool(ok),
            # every example of every hit came from a test the change deletes (base ran the fix's own
            # regression test; its calls were made again at head): the corpus's construction, not a
            # regression a real pull request's base would have a test for
            "via_removed_test": bool(ok) and bool(removed) and all(only_from(f, removed) for f in ok),
            "with_example": any(example_of(f) for f in located),
            "detected_by": sorted({source_of(f) for f in ok}),
        }
    if case["kind"] == "kept":
        row["tests_flagged"] = any(
            f.get("rule_id") == "tests/broken" and f["path"] in files for f in findings
        )
    head_at = next((i for i, r in enumerate(runs) if r["which"] == "head"), len(runs))
    # the base run the review compared with: the last before head's (an environment rebuilt after a base
    # that tested nothing runs base again; the flaky re-runs of single tests come after head's)
    base = next((r for r in reversed(runs[:head_at]) if r["which"] == "base"), None)
    head = runs[head_at] if head_at < len(runs) else None
    row["tests_ran"] = base is not None
    row["base_usable"] = bool(base and not base["timed_out"] and (base["ok"] or base["passed"] > 0))
    row["base_summary"] = base["summary"] if base else None
    row["head_summary"] = head["summary"] if head else None
    tests = tuple(case["test_files"])
    was = set(base["failing"]) if base else set()
    new = [t for t in head["failing"] if t not in was] if head else []
    row["base_clean"] = bool(base and base["ok"])
    if rwcorpus.language(case) == "python":  # pytest ids name the file
        ours = [t for t in new if t.split("::")[0] in tests or t.startswith(tests)]
    else:  # go, mocha, vitest ids do not: any new failure (head differs from base by the revert only)
        ours = new if tests else []
    row["regression_fails_at_head"] = bool(ours)
    row["tests_named"] = any(
        f.get("rule_id") == "tests/broken" and any(test_name(t) in f.get("message", "") for t in ours)
        for f in findings
    )
    row["implausible_cwe"] = [
        {"rank": f["rank"], "cwe": f.get("evidence", "").split(":")[0].removeprefix("kept as a bug, not ")}
        for f in findings
        if f.get("source") == "model" and str(f.get("evidence", "")).startswith("kept as a bug, not ")
    ]
    return row


def test_name(test_id: str) -> str:
    """The last part of a test id as a finding names it: pytest `file::Class::test`, mocha/vitest
    `suite > test`, go `TestX/sub`."""
    return test_id.rsplit("::", 1)[-1].split(" > ")[-1]


class RunRecorder:
    """Wraps the test runner's per-commit run (bench instrumentation only): which commit, how long, result."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []
        self.base = self.head = ""
        from bot.evidence import testrun

        cls = testrun.TestRunner
        original = cls.at_commit
        rec = self

        def at_commit(this: Any, repo: Path, commit: str, *args: Any, **kw: Any) -> Any:
            t0 = time.monotonic()
            res = original(this, repo, commit, *args, **kw)
            rec.runs.append(
                {
                    "which": "base" if commit == rec.base else "head" if commit == rec.head else commit[:12],
                    "seconds": round(time.monotonic() - t0, 2),
                    "ok": res.ok,
                    "passed": res.passed,
                    "failed": res.failed,
                    "errors": res.errors,
                    "failing": list(res.failing)[:50],
                    "timed_out": res.timed_out,
                    "summary": res.summary(),
                    "tail": res.output[-300:],
                }
            )
            return res

        cls.at_commit = at_commit  # type: ignore[method-assign]


def review_case(
    case: dict[str, Any], repo: Path, cfg: Any, lazy: Any, rec: RunRecorder, cache: Path
) -> dict[str, Any]:
    from bot.forges.local import LocalForge
    from bot.pipeline import run as runner
    from bot.render.json_out import render_json
    from bot.types import ChangeRef

    os.environ["PREREVIEW_CACHE_DIR"] = str(cache)
    change = LocalForge().fetch(ChangeRef("local", str(repo), base="HEAD^", head="HEAD"))
    change = replace(change, title="")  # the commit subject may name the fix: never show it
    rec.base, rec.head, rec.runs = change.base_sha, change.head_sha, []
    t0 = time.monotonic()
    review = runner.review_change(change, cfg, model=lazy)
    seconds = time.monotonic() - t0
    doc = json.loads(render_json(review))  # what `prereview review --format json` prints
    findings = [{**f, "rank": _rank(f.get("severity", "info"))} for f in doc.get("findings", [])]
    return {
        "seconds": round(seconds, 2),
        "seconds_model": review.stats.seconds_model,
        "seconds_tests": round(sum(r["seconds"] for r in rec.runs), 2),
        "runs": list(rec.runs),
        "notes": list(review.notes),
        "skipped": doc.get("coverage", {}).get("skipped", []),
        "findings": findings,
        "stages": doc.get("stats", {}).get("stages", {}),  # wall seconds per pipeline stage (they overlap)
        "behaviour": doc.get("behaviour", []),  # the intended changes listed in the summary
    }


INTENDED_WHY = (  # how the judge's reason for listing a difference as intended begins -> a short label
    ("the change adds a test", "a test the change adds"),
    ("the change says so", "the change's words"),
)


def _why_label(reason: str) -> str:
    return next((label for start, label in INTENDED_WHY if reason.startswith(start)), "other")


def _intended_by(rows: list[dict[str, Any]]) -> list[str]:
    """Per kind, the cases with a difference listed as intended, by why (aggregates: no case is shown)."""
    out = []
    for kind in ("hidden", "kept", "ordinary"):
        rs = [r for r in rows if r["kind"] == kind]
        if not rs:
            continue
        why: dict[str, int] = defaultdict(int)
        for r in rs:
            labels = {_why_label(b.get("reason", "")) for b in r.get("behaviour", [])}
            for label in labels:
                why[label] += 1
        out.append(
            f"{kind:<8} cases with a difference listed as intended, by why: "
            + (", ".join(f"{k} {v}" for k, v in sorted(why.items())) or "none")
        )
    return out


def _rank(sev: str) -> int:
    from bot.types import severity_rank

    try:
        return severity_rank(sev)
    except Exception:
        return 0


def interleave(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Round-robin over (project, kind), each in the data file's order: any prefix of a run is balanced."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for c in cases:
        groups[(c["project"], c["kind"])].append(c)
    queues = [groups[k] for k in sorted(groups, key=lambda k: (k[1], k[0]))]
    out: list[dict[str, Any]] = []
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def _clones(values: list[str]) -> dict[str, Path]:
    out = {}
    for v in values:
        name, _, path = v.partition("=")
        if not name or not path:
            raise SystemExit(f"--clone wants NAME=DIR (e.g. requests=/tmp/rw-requests), got {v!r}")
        if not (Path(path) / ".git").exists() and not (Path(path) / "HEAD").exists():
            slug = rwcorpus.conventions(name)["slug"]
            raise SystemExit(f"{path} is not a git clone; git clone https://github.com/{slug} {path}")
        out[name] = Path(path).resolve()
    return out


def cmd_build(args: argparse.Namespace) -> None:
    clones = _clones(args.clone)
    cases = []
    for name, clone in clones.items():
        got = select(name, clone, args.per_project, args.ordinary_per_project)
        head = git(clone, "rev-parse", "HEAD").strip()
        print(
            f"{name}: HEAD {head[:12]}, {sum(c['kind'] == 'hidden' for c in got)} fix commits, "
            f"{sum(c['kind'] == 'ordinary' for c in got)} ordinary",
            file=sys.stderr,
        )
        cases += got
    doc = {
        "about": "bench/realworld.py build: cases rebuilt from clones of these projects; see its docstring",
        "heads": {n: git(c, "rev-parse", "HEAD").strip() for n, c in clones.items()},
        "projects": {n: rwcorpus.conventions(n, c) for n, c in clones.items()},
        "per_project": args.per_project,
        "ordinary_per_project": args.ordinary_per_project,
        "split": "half: per project, kind and language, commits by sha256('<project>:<commit>') alternate "
        "tuning, check (bench/rwcorpus.py)",
    }
    if args.add:
        doc = add_projects(json.loads(args.out.read_text()), doc, cases)
        cases = doc["cases"]
    else:
        doc["cases"] = cases = rwcorpus.assign_halves(cases)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(cases)} cases -> {args.out}", file=sys.stderr)
    print(counts_table(cases), file=sys.stderr)


def add_projects(old: dict[str, Any], new: dict[str, Any], cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The data file `old` with the newly built projects' cases added (replacing any it had of those
    projects), their halves drawn by the same rule; the cases it kept keep their halves (the rule is per
    project, kind and language, so other projects' draws cannot move them: checked)."""
    names = set(new["heads"])
    kept = [c for c in old["cases"] if c["project"] not in names]
    merged = rwcorpus.assign_halves([{k: v for k, v in c.items() if k != "half"} for c in kept] + cases)
    moved = [c["id"] for c, m in zip(kept, merged, strict=False) if c.get("half") != m["half"]]
    if moved:
        raise SystemExit(
            f"--add would move {len(moved)} existing case(s) to the other half ({', '.join(moved[:3])}); "
            "rebuild the whole corpus without --add instead"
        )
    added = [a for a in old.get("added", []) if not names & set(a["projects"])]
    added.append(
        {
            "projects": sorted(names),
            "per_project": new["per_project"],
            "ordinary_per_project": new["ordinary_per_project"],
        }
    )
    return {
        **old,
        "heads": {**old["heads"], **new["heads"]},
        "projects": {**old["projects"], **new["projects"]},
        "split": new["split"],
        "added": added,
        "cases": merged,
    }


def counts_table(cases: list[dict[str, Any]]) -> str:
    """Cases per project, kind and half: one line per project, and the totals."""
    n: dict[tuple[str, str, str], int] = defaultdict(int)
    for c in cases:
        for p in (c["project"], "total"):
            n[(p, c["kind"], c.get("half", "?"))] += 1
    projects = sorted({c["project"] for c in cases}) + ["total"]
    kinds = ("hidden", "kept", "ordinary")
    lines = [f"{'project':<15}" + "".join(f"{k + ' t/c':>16}" for k in kinds)]
    for p in projects:
        cells = [f"{n[(p, k, 'tuning')]}/{n[(p, k, 'check')]}" for k in kinds]
        lines.append(f"{p:<15}" + "".join(f"{x:>16}" for x in cells))
    return "\n".join(lines)


def cmd_run(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    from bot.models.catalog import resolve
    from bot.pipeline import run as runner
    from bot.types import severity_rank

    assert severity_rank("medium") == MEDIUM
    clones = _clones(args.clone)
    cases = [c for c in json.loads(args.data.read_text())["cases"] if c["kind"] in args.kinds.split(",")]
    cases = [c for c in cases if c["project"] in clones and rwcorpus.in_half(c, args.half)]
    cases = interleave(cases)
    if args.ids:
        cases = [c for c in cases if c["id"] in args.ids.split(",")]
    if args.limit:
        cases = cases[: args.limit]
    name = args.model or "qwen2.5-coder-1.5b"
    model_path = name if name.endswith(".gguf") else str(resolve(name))  # before the cache folder moves
    overrides: dict[str, Any] = {
        "model.name": model_path,
        "patches.enabled": False,
        "sandbox.timeout": args.test_timeout,
    }
    cfg = runner.load_config(None, None, config_file=args.config, overrides=overrides)
    if cfg.model.backend != "llama_cpp":  # e.g. a silent scripted model: the tests stage measured alone
        name = f"{cfg.model.backend}:{Path(cfg.model.script or cfg.model.api_base or '').name}"
    lazy = runner.LazyModel(cfg, runner.Quiet())
    lazy()  # load once: model load time is not review time
    rec = RunRecorder()
    out = args.out or ROOT / "bench" / "out" / f"realworld-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if args.resume and out.exists():
        done = {json.loads(x)["id"] for x in out.read_text().splitlines() if x.strip()}
    warm_kinds = set(args.warm.split(",")) if args.warm else set()
    print(f"realworld: {len(cases)} cases, model {name}, results -> {out}", file=sys.stderr)
    with out.open("a") as sink:
        for i, c in enumerate(cases, 1):
            if c["id"] in done:
                continue
            row: dict[str, Any] = {**c, "model": name, "interpreter_has": installed_copy(c["project"])}
            with tempfile.TemporaryDirectory(prefix="prereview-rw-") as tmp:
                try:
                    repo = materialize(c, clones[c["project"]], Path(tmp) / "repo")
                    row["removed_tests"] = removed_tests(c, repo)
                    cold = review_case(c, repo, cfg, lazy, rec, Path(tmp) / "cache")
                    row |= cold | score(row, cold["findings"], cold["runs"])
                    if c["kind"] in warm_kinds:
                        warm = review_case(c, repo, cfg, lazy, rec, Path(tmp) / "cache")
                        row["warm"] = {k: warm[k] for k in ("seconds", "seconds_model", "seconds_tests")}
                except Exception as exc:  # a failing case is a figure, not the end of the run
                    row |= {"error": f"{type(exc).__name__}: {exc}"[:300], "findings": [], "n_strong": 0}
            sink.write(json.dumps(row) + "\n")
            sink.flush()
            if c.get("half") == "check":  # never looked at one by one: progress only
                print(f"[{i}/{len(cases)}] a check-half case done", file=sys.stderr)
                continue
            print(
                f"[{i}/{len(cases)}] {c['id']}: {_mark(row)} ({row.get('n_strong', 0)} >=medium, "
                f"cold {row.get('seconds', '?')}s"
                + (f", warm {row['warm']['seconds']}s" if row.get("warm") else "")
                + f", tests {row.get('base_summary')} / {row.get('head_summary')})",
                file=sys.stderr,
            )
    rows = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    print(report(rows, args.half))


def _mark(row: dict[str, Any]) -> str:
    if row.get("error"):
        return "ERROR " + row["error"][:80]
    if row["kind"] == "hidden":
        return "hit" if row["detected"] else "MISS"
    if row["kind"] == "kept":
        return "tests flagged" if row["tests_flagged"] else "tests MISS"
    return "quiet" if not row["n_strong"] else "NOISY"


# --- figures -----------------------------------------------------------------------------------------


AMPLIFIED = "one literal or keyword of the test changed"  # judge.py `_HOW`: a variant of a test (amplify.py)


def _amplified_line(hidden: list[dict[str, Any]], ordinary: list[dict[str, Any]]) -> str:
    """How many hits and how much noise came from the tests' variants (amplify.py): hidden cases with a
    >=medium variant finding on the right lines (+-2), ordinary commits with any >=medium one."""

    def strong(r: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            f
            for f in r.get("findings", [])
            if f.get("rank", 0) >= MEDIUM and AMPLIFIED in f.get("message", "")
        ]

    def located(r: dict[str, Any], f: dict[str, Any]) -> bool:
        last = f.get("end_line") or f["line"]
        return f["path"] in r["files"] and any(
            f["line"] - 2 <= n <= last + 2 for n in r.get("truth_lines", [])
        )

    hits = sum(any(located(r, f) for f in strong(r)) for r in hidden)
    noise = sum(len(strong(r)) for r in ordinary)
    return (
        f"tests' variants (amplify.py): hidden cases flagged on the right lines through one {hits} of "
        f"{len(hidden)}; ordinary >=medium findings through one {noise} on {len(ordinary)} commit(s)"
    )


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:5.1f}% ({n}/{d})" if d else "n/a"


def _med(xs: list[float]) -> str:
    return f"{statistics.median(xs):.1f}s" if xs else "n/a"


def _rule_hits(rows: list[dict[str, Any]]) -> str:
    """Hits per behaviour rule (bench/rulehits.py): tests removed (hidden + ordinary) and tests kept."""
    sys.path.insert(0, str(ROOT / "bench"))
    import rulehits

    def located(r: dict[str, Any], f: dict[str, Any]) -> bool:
        end = f.get("end_line") or f["line"]
        lines = r.get("truth_lines", [])
        return f["path"] in set(r.get("files", [])) and any(f["line"] - 2 <= n <= end + 2 for n in lines)

    return rulehits.table(
        rows,
        corpus=lambda r: "tests kept" if r["kind"] == "kept" else "tests removed",
        is_bug=lambda r: r["kind"] in ("hidden", "kept"),
        located=located,
    )


def miss_causes(rows: list[dict[str, Any]]) -> str:
    """The `hidden` cases not flagged, by cause (bench/rwcorpus.py miss_cause), as shares of the misses."""
    misses = [r for r in rows if r["kind"] == "hidden" and (r.get("error") or not r.get("detected"))]
    if not misses:
        return "hidden   misses by cause: none"
    n: dict[str, int] = defaultdict(int)
    for r in misses:
        n[rwcorpus.miss_cause(r)] += 1
    return f"hidden   misses by cause ({len(misses)}): " + "; ".join(
        f"{cause} {_pct(n[cause], len(misses))}" for cause in rwcorpus.MISS_CAUSES if n[cause]
    )


def report(rows: list[dict[str, Any]], half: str = "all", data: Path = DATA) -> str:
    """The figures of each half separately (`half` all: tuning, then check, then rows of no known half)."""
    halves = {c["id"]: c.get("half") for c in json.loads(data.read_text())["cases"]} if data.exists() else {}
    rows = [r if r.get("half") else {**r, "half": halves.get(r["id"])} for r in rows]
    out = []
    for which in ("tuning", "check", None) if half == "all" else (half,):
        rs = [r for r in rows if r.get("half") == which]
        if not rs:
            continue
        out.append(
            f"== {which or 'no half (not in the data file)'} half: {len({r['id'] for r in rs})} case(s)"
        )
        rs = [r if r.get("error") else {**r, **score(r, r["findings"], r.get("runs", []))} for r in rs]
        out += [summarize(rs), miss_causes(list({r["id"]: r for r in rs}.values()))]
    return "\n".join(out) if out else f"no result rows in the {half} half"


def summarize(rows: list[dict[str, Any]]) -> str:
    rows = list({r["id"]: r for r in rows}.values())  # a case in several files counts once (the last)
    rows = [r if r.get("error") else {**r, **score(r, r["findings"], r.get("runs", []))} for r in rows]
    lines = []
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_kind[r["kind"]].append(r)
    counts = defaultdict(lambda: defaultdict(int))
    for r in rows:
        counts[r["project"]][r["kind"]] += 1
    lines.append(
        "cases: "
        + "; ".join(
            f"{p} " + ", ".join(f"{k} {n}" for k, n in sorted(v.items())) for p, v in sorted(counts.items())
        )
    )
    ok = [r for r in rows if not r.get("error")]
    h = [r for r in ok if r["kind"] == "hidden"]
    if h:
        srcs: dict[str, int] = defaultdict(int)
        for r in h:
            for s in r.get("detected_by", []) if r["detected"] else []:
                srcs[s] += 1
        hit, example = sum(r["detected"] for r in h), sum(r["with_example"] for r in h)
        known = [r for r in h if "removed_tests" in r]
        lines.append(
            f"hidden   flagged on the right lines (>=medium, +-2) {_pct(hit, len(h))}; "
            f"with a concrete example {_pct(example, len(h))}; by source: "
            + (", ".join(f"{k} {v}" for k, v in sorted(srcs.items())) or "none")
        )
        if known:
            leak = sum(r["via_removed_test"] for r in known)
            lines.append(
                f"hidden   of those, flagged only through calls of a test the change deletes (base ran the "
                f"fix's regression test) {leak} of {sum(r['detected'] for r in known)} (recorded on "
                f"{len(known)} of {len(h)} cases)"
            )
    k = [r for r in ok if r["kind"] == "kept"]
    if k:
        fails = [r for r in k if r["regression_fails_at_head"]]
        flagged, usable = sum(r["tests_flagged"] for r in k), sum(r["base_usable"] for r in k)
        clean, fails_flagged = (
            sum(r.get("base_clean", False) for r in k),
            sum(r["tests_flagged"] for r in fails),
        )
        named = sum(r.get("tests_named", False) for r in fails)
        lines.append(
            f"kept     failing test named in the tests/broken finding, of those whose test newly failed "
            f"at head {_pct(named, len(fails))}"
        )
        lines.append(
            f"kept     tests flagged it {_pct(flagged, len(k))} (any source on the right lines "
            f"{_pct(sum(r['detected'] for r in k), len(k))}); "
            f"base run usable {_pct(usable, len(k))} "
            f"(clean {_pct(clean, len(k))}); "
            f"regression test newly failed at head {_pct(len(fails), len(k))}, "
            f"of those flagged {_pct(fails_flagged, len(fails))}"
        )
    o = [r for r in ok if r["kind"] == "ordinary"]
    if o:
        lines.append(
            f"ordinary >=medium findings per commit {sum(r['n_strong'] for r in o) / len(o):.2f}; quiet "
            f"{_pct(sum(not r['n_strong'] for r in o), len(o))}"
        )
    if h or o:
        lines.append(_amplified_line(h, o))
    lines.append(
        f"base test run usable (all kinds) {_pct(sum(r.get('base_usable', False) for r in ok), len(ok))}"
    )
    for kind in ("hidden", "ordinary"):
        imp = [x for r in ok if r["kind"] == kind for x in r.get("implausible_cwe", [])]
        if any(r["kind"] == kind for r in ok):
            lines.append(
                f"{kind:<8} model findings whose CWE was implausible (kept as bugs): {len(imp)} "
                f"({sum(x['rank'] >= MEDIUM for x in imp)} >=medium)"
                + (f": {', '.join(sorted({x['cwe'] for x in imp}))}" if imp else "")
            )
    for kind, rs in sorted(by_kind.items()):
        rs = [r for r in rs if not r.get("error")]
        warm = [r["warm"] for r in rs if r.get("warm")]
        tests = _med([r["seconds_tests"] for r in rs])
        lines.append(
            f"time {kind:<9} median review {_med([r['seconds'] for r in rs])} (model "
            f"{_med([r['seconds_model'] for r in rs])}, tests base+head {tests})"
            + (
                f"; warm review {_med([w['seconds'] for w in warm])} "
                f"(tests {_med([w['seconds_tests'] for w in warm])})"
                if warm
                else ""
            )
        )
    lines.append(_rule_hits(ok))
    lines += _intended_by(ok)
    notes: dict[str, int] = defaultdict(int)
    for r in ok:
        for n in r.get("notes", []):
            notes[n[:110]] += 1
    for n, c in sorted(notes.items(), key=lambda x: -x[1])[:6]:
        lines.append(f"note x{c}: {n}")
    summaries: dict[str, int] = defaultdict(int)
    for r in ok:
        summaries[f"base {r.get('base_summary')}"] += 1
    lines.append(
        "base runs: " + "; ".join(f"{k} x{v}" for k, v in sorted(summaries.items(), key=lambda x: -x[1]))
    )
    has = {r["project"]: r["interpreter_has"] for r in rows if "interpreter_has" in r}
    if has:
        lines.append(
            "prereview's interpreter has the project installed (tests that run with it import that copy): "
            + ", ".join(f"{p} {'yes' if v else 'no'}" for p, v in sorted(has.items()))
        )
    lines.append(f"errors: {sum(1 for r in rows if r.get('error'))}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    clone_help = (
        f"NAME=DIR: a local git clone of a project ({', '.join(PROJECTS)} have recorded conventions; "
        "others are guessed, see bench/rwcorpus.py); repeat for each"
    )
    half_help = "the corpus half: tuning, check (aggregate figures only) or all"
    b = sub.add_parser("build", help="select the cases from the clones' history -> JSON")
    b.add_argument("--clone", action="append", required=True, help=clone_help)
    b.add_argument("--per-project", type=int, default=8, help="fix commits per project")
    b.add_argument("--ordinary-per-project", type=int, default=5, help="ordinary commits per project")
    b.add_argument("--out", type=Path, default=DATA)
    b.add_argument(
        "--add",
        action="store_true",
        help="add these projects to the existing --out file (its other cases and their halves kept)",
    )
    r = sub.add_parser("run", help="review every case and print the figures")
    r.add_argument("--clone", action="append", required=True, help=clone_help)
    r.add_argument("--data", type=Path, default=DATA)
    r.add_argument("--kinds", default="hidden,kept,ordinary")
    r.add_argument("--half", choices=("tuning", "check", "all"), default="tuning", help=half_help)
    r.add_argument("--limit", type=int, default=0)
    r.add_argument("--ids", default="", help="only these case ids (comma-separated)")
    r.add_argument("--model", help="catalog name or .gguf path (default qwen2.5-coder-1.5b)")
    r.add_argument("--config", type=Path, help="a .prereview.yml to review with")
    r.add_argument("--test-timeout", type=float, default=300.0, help="seconds before a test run is killed")
    r.add_argument(
        "--warm", default="kept", help="kinds reviewed a second time with the same cache ('' = none)"
    )
    r.add_argument("--out", type=Path, help="JSONL of per-case results (appended; --resume skips done)")
    r.add_argument("--resume", action="store_true")
    p = sub.add_parser("report", help="figures of existing JSONL files")
    p.add_argument("files", type=Path, nargs="+")
    p.add_argument("--half", choices=("tuning", "check", "all"), default="all", help=half_help)
    p.add_argument(
        "--severity",
        action="append",
        default=[],
        metavar="RULE=LEVEL",
        help="what if: score the recorded findings of RULE at LEVEL (a calibration from recorded runs "
        "without re-running them; e.g. behaviour/unexplained=medium); repeat for each",
    )
    args = ap.parse_args(argv)
    if args.cmd == "build":
        cmd_build(args)
    elif args.cmd == "run":
        cmd_run(args)
    else:
        rows = [json.loads(x) for f in args.files for x in f.read_text().splitlines() if x.strip()]
        print(report(reranked(rows, dict(s.split("=", 1) for s in args.severity)), args.half))


def reranked(rows: list[dict[str, Any]], levels: dict[str, str]) -> list[dict[str, Any]]:
    """The rows with each finding of a rule in `levels` scored at that severity instead (what-if)."""
    if not levels:
        return rows

    def move(f: dict[str, Any]) -> dict[str, Any]:
        level = levels.get(str(f.get("rule_id")))
        return f if level is None else {**f, "severity": level, "rank": _rank(level)}

    return [{**r, "findings": [move(f) for f in r.get("findings", [])]} for r in rows]


if __name__ == "__main__":
    main()
