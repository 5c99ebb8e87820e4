"""The reviewed project's own test environment — never prereview's interpreter or site-packages.

Resolution (first that applies):
1. `tests.command` / `test_command`: run as given (with `tests.python`'s bin directory first on PATH
   when that is set too).
2. `tests.python`: that interpreter runs `python -m pytest` (in CI: where the workflow installed the project).
3. prereview builds one: a venv under the cache dir keyed by the Python version and the dependency files,
   holding pytest and the project's test dependencies read from the BASE tree (never head's: installing
   runs code outside the sandbox), with uv when it is on PATH, else `python -m venv` + pip. This is the one
   step that uses the network; the tests then run inside the sandbox, offline, the venv mounted read-only.
   Node, Go, Rust and Maven projects get their dependencies fetched the same way (`toolchains.py`).

The project itself is never installed into the venv: the scratch tree's import roots (`src/`, the root,
pytest's `pythonpath`) come first on PYTHONPATH, so head's code runs at head and base's at base.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..change import git
from ..config import Config
from ..progress import Progress, Quiet
from ..types import EnvSource
from . import layouts
from .breakage import first_error
from .envbase import (  # noqa: F401  (the builders' shared names, importable from here too)
    BUILD_PASS,
    ENV_VERSION,
    SANDBOX_PATH,
    EnvError,
    ProjectEnv,
    _hash,
    build_env,
    file_hash,
    first_build_error,
    fresh,
    locked,
    mark_ready,
    ready,
    run_build,
)
from .pininstall import NEWER_PYTEST, built_info, newer_pytest
from .runners import ANSI

FIX = (
    "set `test_command` (e.g. `uv run pytest`, `tox -e py312`) or `tests.python` (an interpreter with the "
    "project's dependencies installed)"
)

FIX_BY_TOOL = {  # the same advice in the project's own terms
    "npm": "set `test_command` to a command that runs the tests offline with the project's node_modules "
    "(e.g. `npm test`, `npx mocha`, `npx vitest run`, `node --test`)",
    "go": "set `test_command` (e.g. `go test ./...`), with Go installed where prereview runs",
    "cargo": "set `test_command` (e.g. `cargo test --offline`), with cargo installed where prereview runs",
    "mvn": "set `test_command` (e.g. `mvn -o test`), with Maven installed where prereview runs",
}


def fix_for(argv: Sequence[str] | None) -> str:
    """What to set when the tests could not run, for this kind of project (Python advice for Python)."""
    tool = Path(argv[0]).name if argv else ""
    if tool in FIX_BY_TOOL:
        return FIX_BY_TOOL[tool]
    if not argv or "pytest" in " ".join(argv) or tool.startswith("python"):
        return FIX
    return "set `test_command` to the command that runs the tests (offline, in the sandbox)"


FIX_TIME = "raise `sandbox.timeout` (and `tests.budget_seconds`), or set `test_command` to a quicker subset"


def python_command(env: ProjectEnv | None, root: Path, args: Sequence[str]) -> list[str]:
    """A Python script run the way the project's tests run: its interpreter and import roots first (the
    scratch tree's `src/` …); prereview's `python` where the tests are not run by a Python we resolved."""
    if env is None or env.kind not in ("python", "built", "image") or env.error is not None:
        return ["python", *args]
    r = str(root.resolve())
    return ["env", *(f"{k}={v.replace('{root}', r)}" for k, v in env.vars.items()), env.argv[0], *args]


def default_env_dir(cache_dir: Path | None) -> Path:
    if os.environ.get("PREREVIEW_ENV_DIR"):
        return Path(os.environ["PREREVIEW_ENV_DIR"])
    if cache_dir is not None:
        return cache_dir.parent / "envs"
    from ..models.catalog import cache_dir as root

    return root() / "envs"


def resolve(
    argv: Sequence[str],
    *,
    cfg: Config,
    repo: Path,
    source: EnvSource,
    sandbox_name: str,
    env_dir: Path,
    progress: Progress | None = None,
    head_sha: str = "HEAD",
    unpinned: str = "",
) -> ProjectEnv:
    """The environment for `argv` (the configured or detected test command). Never raises for what the
    project lacks: a failed build comes back with `error` set (the first error line). `unpinned` ("era",
    "floor": pyvenv.build_venv): a venv's test requirements unpinned; an npm tree's of the base's date.

    Dependency files are read, and builds run, from `source` only: the PR's real base (a comparison base
    such as an incremental review's last head is the PR author's commit and never reaches the host)."""
    progress = progress or Quiet()
    t0 = time.monotonic()
    base_sha = source.sha
    files = git.git(repo, "ls-tree", "-r", "--name-only", base_sha).splitlines()

    def read(p: str) -> str | None:
        return git.show(repo, base_sha, p)

    try:
        env = _resolve(
            list(argv), cfg, repo, base_sha, files, read, sandbox_name, env_dir, progress, head_sha, unpinned
        )
    except EnvError as exc:
        env = ProjectEnv("failed", tuple(argv), error=str(exc) or "environment build failed")
    env.seconds = round(time.monotonic() - t0, 2)
    return env


def _resolve(
    argv: list[str],
    cfg: Config,
    repo: Path,
    base_sha: str,
    files: list[str],
    read: layouts.Reader,
    sandbox_name: str,
    env_dir: Path,
    progress: Progress,
    head_sha: str = "HEAD",
    unpinned: str = "",
) -> ProjectEnv:
    python = interpreter(cfg.tests.python, repo, head_sha) if cfg.tests.python else None
    if cfg.test_cmd:
        if python is None:
            return ProjectEnv("command", tuple(argv), describe="test_command as given")
        return ProjectEnv(
            "command",
            tuple(argv),
            key=python["key"],
            vars={"PATH": f"{Path(python['executable']).parent}:{SANDBOX_PATH}"},
            ro_paths=python["paths"],
            describe=f"test_command with {python['executable']} first on PATH",
        )
    if argv[:3] == ["python", "-m", "pytest"]:
        layout = layouts.python_layout(files, read)
        if python is not None:
            exe, key, ro, how = (
                python["executable"],
                python["key"],
                python["paths"],
                f"tests.python {python['executable']}",
            )
        elif sandbox_name == "docker":
            exe, key, ro, how = "python", "image", (), "the sandbox image's python (sandbox.image)"
        else:
            from .pyvenv import build_venv

            exe, key, ro, how = build_venv(
                layout, files, read, env_dir, cfg, progress, repo, base_sha, unpinned=unpinned
            )
        pythonpath = ":".join("{root}" if r == "." else "{root}/" + r for r in layout.roots)
        bindir = str(Path(exe).parent) if "/" in exe else ""
        env_vars = {"PYTHONPATH": pythonpath, "PYTHONNOUSERSITE": "1"}
        if bindir:
            env_vars["PATH"] = f"{bindir}:{SANDBOX_PATH}"
        kind = "python" if python is not None else "image" if sandbox_name == "docker" else "built"
        full_key = _hash([key, layout.roots])
        notes = built_info(exe)[0] if kind == "built" else []  # e.g. pins left out, why
        extra = NEWER_PYTEST if kind == "built" and newer_pytest(exe) else ()
        return ProjectEnv(
            kind,
            (exe, *argv[1:], *extra),
            key=full_key,
            vars=env_vars,
            ro_paths=ro,
            describe=how,
            notes=notes,
        )
    tc = layouts.toolchain(argv, files)
    if tc is not None and sandbox_name != "docker":
        from .toolchains import build_toolchain

        return build_toolchain(tc, argv, read, env_dir, cfg, progress, repo, base_sha, dated=bool(unpinned))
    return ProjectEnv("detected", tuple(argv), describe="detected command, run as is")


def with_ro_paths(sandbox: Any, paths: Sequence[str]) -> Any:
    """The sandbox, showing `paths` read-only too (bubblewrap; `none` sees everything anyway)."""
    cfg = getattr(sandbox, "cfg", None)
    if cfg is None or getattr(sandbox, "name", "") != "bubblewrap":
        return sandbox
    extra = [p for p in paths if p not in cfg.ro_paths]
    if not extra:
        return sandbox
    return type(sandbox)(cfg.model_copy(update={"ro_paths": [*cfg.ro_paths, *extra]}))


def interpreter(spec: str, repo: Path, head_sha: str = "HEAD") -> dict[str, Any]:
    """`tests.python`: a name on PATH or a path (relative to the repository); asked for its prefixes.

    It runs on the host, so it must not be the change's own file: a path in the checkout that the head
    commit tracks (the file, or a link or file on its way) is refused before anything starts it."""
    cand = Path(spec).expanduser()
    if not cand.is_absolute() and "/" in spec:
        cand = repo / cand
    exe = str(cand) if "/" in spec else shutil.which(spec)
    if exe is None or not Path(exe).exists():
        raise EnvError(f"tests.python {spec!r} not found; give the path of the interpreter to test with")
    tracked = tracked_at_head(Path(exe), repo, head_sha)
    if tracked is not None:
        raise EnvError(
            f"tests.python {spec!r} is the reviewed change's own file (`{tracked}` is in the head commit), "
            "never run on the host; give an interpreter outside the checkout (an absolute path) or one the "
            "workflow created there"
        )
    probe = (  # the site-packages' mtimes: installing into it invalidates cached runs made with it
        "import json, os, site, sys; print(json.dumps([sys.prefix, sys.base_prefix, sys.version, "
        "[os.stat(p).st_mtime for p in site.getsitepackages() if os.path.isdir(p)]]))"
    )
    try:
        out = subprocess.run(
            [exe, "-c", probe], capture_output=True, text=True, timeout=60, env=build_env(), check=True
        ).stdout
        prefix, base_prefix, version, mtimes = json.loads(out.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        raise EnvError(f"tests.python {spec!r} does not run as a Python interpreter") from None
    # a venv's python is a link into its base installation: both are shown to the sandbox, not resolved
    abs_exe = str(Path(exe).absolute())
    paths = tuple(dict.fromkeys([prefix, base_prefix, str(Path(exe).resolve().parent.parent)]))
    return {"executable": abs_exe, "paths": paths, "key": _hash([abs_exe, prefix, version, mtimes])}


def tracked_at_head(path: Path, repo: Path, head_sha: str) -> str | None:
    """The first part of `path` (as given, or with links followed) inside the checkout that the head
    commit tracks as a file, link or submodule, or the path itself when tracked; None when there is none."""
    rels: list[tuple[str, ...]] = []
    for p in (Path(os.path.abspath(path)), path.resolve()):
        for root in (Path(os.path.abspath(repo)), repo.resolve()):
            if p.is_relative_to(root) and p != root:
                rels.append(p.relative_to(root).parts)
    wanted: dict[str, bool] = {}  # repository-relative path -> is it the interpreter itself
    for parts in rels:
        for n in range(1, len(parts) + 1):
            name = "/".join(parts[:n])
            wanted[name] = wanted.get(name, False) or n == len(parts)
    if not wanted:
        return None
    try:
        listing = git.git(repo, "--literal-pathspecs", "ls-tree", "-z", head_sha, "--", *wanted)
    except git.GitError:
        return min(wanted, key=len)  # cannot tell what the head tracks: refused, not run
    for line in listing.split("\0"):
        meta, _, name = line.partition("\t")
        if name in wanted and (meta.split()[1:2] != ["tree"] or wanted[name]):
            return name
    return None


# ---------------------------------------------------------------- was the base run a usable test run?

_IMPORT = re.compile(r"^E?\s*((?:ModuleNotFoundError|ImportError): .*)$", re.M)
_COLLECT = re.compile(
    r"errors? during collection|ERROR collecting|ImportError while (?:loading conftest|importing test module)"
    r"|no tests ran|collected 0 items"
)


def unusable(run: Any) -> str | None:
    """Why a base run tested nothing (None: it is a usable baseline). Failing tests are usable."""
    if run.ok:
        return None
    if run.timed_out:  # a base that never finished is no baseline either (unless tests already failed)
        return None if run.passed or run.bad else f"timed out after {run.seconds:.0f}s"
    out = ANSI.sub("", run.output)  # a colour code quoted in a note shows as `[90m`
    if run.returncode in (126, 127):
        return f"the test command did not start ({first_error(out) or _last_line(out) or 'not found'})"
    imp = _IMPORT.search(out)
    if run.passed == 0 and (_COLLECT.search(out) or imp):  # some tests passed: the others are a baseline
        first = imp.group(1).strip() if imp else first_error(out) or _last_line(out) or "no test collected"
        return f"collection failed: {first[:200]}"
    if run.passed == 0 and run.failed == 0:
        tail = (first_error(out) or _last_line(out) or "no output")[:200]
        return f"no test ran (exit code {run.returncode}: {tail})"
    return None


def _last_line(out: str) -> str:
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""
