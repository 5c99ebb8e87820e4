"""Node, Go, Rust and Maven projects: dependencies fetched outside the sandbox (network) from an export of
the BASE tree into `<env_dir>/<kind>-<key>/` (key = the manifests' and lockfiles' text), then the tests run
inside the sandbox offline with that directory read-only. The fetch steps run no project code:
`npm ci --ignore-scripts`, `go mod download`, `cargo fetch`, `mvn dependency:go-offline`.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path

from ..config import Config
from ..progress import Progress
from . import datebound, layouts, nodepm
from .envbase import (
    SANDBOX_PATH,
    EnvError,
    ProjectEnv,
    file_hash,
    fresh,
    locked,
    mark_ready,
    ready,
    run_build,
)


def build_toolchain(
    tc: layouts.Toolchain,
    argv: Sequence[str],
    read: layouts.Reader,
    env_dir: Path,
    cfg: Config,
    progress: Progress,
    repo: Path,
    base_sha: str,
    dated: bool = False,
) -> ProjectEnv:
    """The toolchain's environment; `dated`: an unlocked npm tree's packages as released at the base
    commit's date (npm_bound), the retry after today's releases did not run its tests."""
    tool = shutil.which(tc.tool)
    if tool is None:
        raise EnvError(
            f"`{tc.tool}` is not installed here (a {tc.kind} project); install it or set test_command"
        )
    before = npm_bound(read, repo, base_sha) if tc.kind == "node" and dated else None
    key = file_hash(read, tc.lockfiles, tc.kind, _version(tool), *([before] if before else []))
    d = env_dir / f"{tc.kind}-{key}"
    with locked(d):
        if not ready(d):
            progress.message(f"fetching the {tc.kind} dependencies ({tc.tool}, with network)")
            fresh(d)
            from .testrun import export_tree

            with tempfile.TemporaryDirectory(prefix=f"prereview-{tc.kind}-") as tmp:
                tree = export_tree(repo, base_sha, Path(tmp) / "base")
                if tc.kind == "go":  # each module's dependencies (modules below the root: each of them)
                    _go_fetch(tool, tree, d, cfg.tests.build_timeout, _go_dirs(argv))
                elif tc.kind == "node":
                    _node_fetch(tool, tree, d, cfg.tests.build_timeout, before)
                else:
                    _FETCH[tc.kind](tool, tree, d, cfg.tests.build_timeout)
            mark_ready(d, {"kind": tc.kind, "lockfiles": list(tc.lockfiles)})
    return _RUN[tc.kind](tool, list(argv), d, key)


def _version(tool: str) -> str:
    arg = "version" if Path(tool).name == "go" else "--version"
    try:
        return subprocess.run([tool, arg], capture_output=True, text=True, timeout=30).stdout.strip()[:100]
    except (OSError, subprocess.SubprocessError):
        return ""


def _toolroot(tool: str) -> str:
    """The installation a tool lives in (shown to the sandbox read-only; /usr is there already)."""
    return str(Path(tool).resolve().parent.parent)


# ---------------------------------------------------------------- node


def npm_bound(read: layouts.Reader, repo: Path, base_sha: str) -> str | None:
    """For a tree npm installs without a lockfile, the day after the base commit when that is over
    datebound.STALE old: `npm install --before` it resolves the releases its tests ran with then (an
    unlocked 2020 tree gets TypeScript 4.0, not a 4.9 whose stricter checks stop its `tsc` step before
    any test runs: a yargs-parser tuning commit). None for a locked tree, another manager, a fresh one.
    Only a retry: `--before` needs each package's release times, and a registry or an old package
    without them fails the whole install (ETARGET), so today's releases are tried first."""
    if any(read(n) is not None for n in ("package-lock.json", "npm-shrinkwrap.json")):
        return None
    if nodepm.manager(read).name != "npm":
        return None
    when = datebound.commit_time(repo, base_sha)
    if when is None or when > datetime.now(datebound.UTC) - datebound.STALE:
        return None
    return (when.astimezone(datebound.UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _node_fetch(npm: str, tree: Path, d: Path, timeout: float, before: str | None = None) -> None:
    pm = nodepm.manager(lambda p: (tree / p).read_text() if (tree / p).is_file() else None)
    if pm.name != "npm":  # pnpm or yarn 1: the project's own manager and lockfile
        nodepm.fetch(npm, pm, tree, d, timeout)
    else:
        ci = (tree / "package-lock.json").exists() or (tree / "npm-shrinkwrap.json").exists()
        step = ["ci"] if ci else ["install"]
        argv = [npm, *step, "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
        if before and not ci:
            argv.append(f"--before={before}")
            (d / BOUND_NOTE).write_text(
                f"{BOUND_PREFIX}as released up to {before[:10]} (the day after the base commit)"
            )
        env = {"npm_config_cache": str(d / "npm-cache")}
        try:
            run_build(argv, cwd=tree, timeout=timeout, env=env)
        except EnvError as exc:
            if "ERESOLVE" not in exc.output:
                raise
            # npm 7+ refuses a tree whose peer dependencies conflict (today's releases of the unpinned
            # devDependencies against an old tree's pins); npm 6 installed it with a warning
            run_build([*argv, "--legacy-peer-deps"], cwd=tree, timeout=timeout, env=env)
            (d / PEER_NOTE).write_text(
                f"`npm {step[0]}` could not resolve the peer dependencies ({exc}); installed with "
                "`--legacy-peer-deps` (npm 6's rules), so a peer version may differ from what npm 7+ "
                "would require"
            )
    (d / "manager").write_text(
        pm.spec.split("@")[0] if pm.spec else f"npm{'; ' + pm.note if pm.note else ''}"
    )
    if (tree / "node_modules").is_dir():
        shutil.move(str(tree / "node_modules"), str(d / "node_modules"))
    else:
        (d / "node_modules").mkdir()
    shutil.rmtree(d / "npm-cache", ignore_errors=True)


PEER_NOTE = "peer-deps-note"  # in the environment's folder: why it was installed with --legacy-peer-deps
BOUND_NOTE = "bound-note"  # ... and up to which date its packages were resolved
BOUND_PREFIX = "the npm packages "  # what runs._unpinned strips to say how they were installed


def _node_run(npm: str, argv: list[str], d: Path, key: str) -> ProjectEnv:
    node = shutil.which("node") or npm
    pm = nodepm.bin_dir(d)  # pnpm or yarn, when the project uses one: its scripts call it
    bins = dict.fromkeys([*([str(pm)] if pm.is_dir() else []), str(Path(npm).parent), str(Path(node).parent)])
    how = (d / "manager").read_text().strip() if (d / "manager").is_file() else "npm"
    step = "npm ci" if how == "npm" else how if how.startswith("npm") else f"{how} install"
    return ProjectEnv(
        "toolchain",
        (npm, *argv[1:]),
        key=key,
        vars={
            "PATH": ":".join([*bins, SANDBOX_PATH]),
            "npm_config_offline": "true",
            "npm_config_cache": "/tmp/npm-cache",  # noqa: S108 (the sandbox's own tmpfs)
            "npm_config_update_notifier": "false",
        },
        ro_paths=tuple(dict.fromkeys([str(d), _toolroot(npm), _toolroot(node)])),
        links={"node_modules": str(d / "node_modules")},
        describe=f"node_modules {d} ({step}, offline)",
        notes=[(d / n).read_text() for n in (BOUND_NOTE, PEER_NOTE) if (d / n).is_file()],
    )


# ---------------------------------------------------------------- go


def _go_dirs(argv: Sequence[str]) -> list[str]:
    """The module folders of a `go test ./a/... ./b/...` for modules below the root; [] for `./...`."""
    dirs = [a[2:-4] for a in argv[2:] if a.startswith("./") and a.endswith("/...") and a != "./..."]
    return [x for x in dirs if x and ".." not in x.split("/")]


def _go_fetch(go: str, tree: Path, d: Path, timeout: float, dirs: Sequence[str] = ()) -> None:
    for sub in dirs or ["."]:
        run_build(
            [go, "mod", "download", "all"],
            cwd=tree / sub,
            timeout=timeout,
            env={"GOMODCACHE": str(d / "mod"), "GOFLAGS": "-modcacherw", "GOTOOLCHAIN": "local"},
        )


def _go_argv(go: str, argv: list[str]) -> tuple[str, ...]:
    """`go test -v ./...`, or for modules below the root one `go test -v ./...` in each module's folder
    (arguments appended later — a rerun's `-run` — reach every one of them through "$@"). `-v` prints
    one `--- PASS:` line per test, so a run counts its passing tests (without it, only packages)."""
    argv = _verbose(argv)
    dirs = _go_dirs(argv)
    if not dirs:
        return (go, *argv[1:])
    flags = " ".join(shlex.quote(a) for a in argv[2:] if not a.startswith("./"))
    loop = " ".join(shlex.quote(x) for x in dirs)
    script = f'st=0; for d in {loop}; do (cd "$d" && go test {flags} ./... "$@") || st=1; done; exit $st'
    return ("sh", "-c", script.replace("  ", " "), "sh")


def _verbose(argv: list[str]) -> list[str]:
    """`go test …` with `-v` (per-test results) unless it already asks for them or for JSON."""
    if argv[1:2] != ["test"] or any(a in ("-v", "-json", "-v=true") for a in argv[2:]):
        return argv
    return [argv[0], "test", "-v", *argv[2:]]


def _go_run(go: str, argv: list[str], d: Path, key: str) -> ProjectEnv:
    goroot = subprocess.run([go, "env", "GOROOT"], capture_output=True, text=True).stdout.strip()
    return ProjectEnv(
        "toolchain",
        _go_argv(go, argv),
        key=key,
        vars={
            "PATH": f"{Path(go).parent}:{SANDBOX_PATH}",
            "GOMODCACHE": str(d / "mod"),
            "GOPROXY": "off",
            "GOFLAGS": "-mod=mod",
            "GOCACHE": "/tmp/go-cache",  # noqa: S108 (the sandbox's own tmpfs)
            "GOTOOLCHAIN": "local",
        },
        ro_paths=tuple(p for p in dict.fromkeys([str(d), goroot or _toolroot(go)]) if p),
        describe=f"go modules {d} (go mod download, GOPROXY=off)",
    )


# ---------------------------------------------------------------- rust


def _rust_fetch(cargo: str, tree: Path, d: Path, timeout: float) -> None:
    run_build([cargo, "fetch"], cwd=tree, timeout=timeout, env={"CARGO_HOME": str(d / "cargo")})


def _rust_run(cargo: str, argv: list[str], d: Path, key: str) -> ProjectEnv:
    # call the toolchain's own cargo (not the rustup proxy, which wants a writable RUSTUP_HOME)
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True).stdout.strip()
    real = Path(sysroot) / "bin" / "cargo" if sysroot else Path(cargo)
    return ProjectEnv(
        "toolchain",
        (str(real), *argv[1:], "--offline"),
        key=key,
        vars={
            "PATH": f"{real.parent}:{SANDBOX_PATH}",
            "CARGO_HOME": str(d / "cargo"),
            "CARGO_NET_OFFLINE": "true",
        },
        ro_paths=tuple(dict.fromkeys([str(d), sysroot or _toolroot(cargo)])),
        describe=f"cargo registry {d} (cargo fetch, --offline)",
    )


# ---------------------------------------------------------------- maven


def _maven_fetch(mvn: str, tree: Path, d: Path, timeout: float) -> None:
    run_build(
        [mvn, "-q", "-B", f"-Dmaven.repo.local={d / 'm2'}", "dependency:go-offline"],
        cwd=tree,
        timeout=timeout,
    )


def _maven_run(mvn: str, argv: list[str], d: Path, key: str) -> ProjectEnv:
    return ProjectEnv(
        "toolchain",
        (mvn, "-o", "-B", f"-Dmaven.repo.local={d / 'm2'}", *argv[1:]),
        key=key,
        vars={"PATH": f"{Path(mvn).parent}:{SANDBOX_PATH}"},
        ro_paths=tuple(dict.fromkeys([str(d), _toolroot(mvn)])),
        describe=f"maven repository {d} (dependency:go-offline, -o)",
    )


_FETCH: dict[str, Callable[[str, Path, Path, float], None]] = {
    "node": _node_fetch,
    "go": _go_fetch,
    "rust": _rust_fetch,
    "maven": _maven_fetch,
}
_RUN = {"node": _node_run, "go": _go_run, "rust": _rust_run, "maven": _maven_run}
