"""A Python project's test venv, built by prereview outside the sandbox (network) from the BASE tree.

`<env_dir>/py3.12-<key>/`: the key hashes the Python version, the installer, the derived requirement lines
and the dependency files' text, so an unchanged project reuses it across commits and reviews. The venv
holds pytest and the project's test dependencies; the project itself is NOT installed — only a bare
`.dist-info` (name, version, entry points) so `importlib.metadata` and pytest plugins still find it — and
any copy a dependency pulled in is removed: the scratch tree's code (on PYTHONPATH) is what runs.

pip steps start the built interpreter with `-I -S` and add site-packages to `sys.path` by hand (`_PIP`),
so no installed package's `.pth` file or `sitecustomize` runs on the host. With `tests.wheels_only` the
build therefore runs no package code on the host at all: no sdist is built, and pip is the installer
even where uv is on PATH (uv starts the venv's interpreter normally to ask it for its markers).
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import tomllib

from ..config import Config
from ..progress import Progress
from . import datebound, eratier, layouts, pipdated
from .envbase import EnvError, file_hash, fresh, locked, mark_ready, ready, run_build
from .pininstall import install_with_fallback, unpinned_args
from .pinrelax import relax_args


def base_python() -> str:
    """The interpreter a built venv is made from: prereview's own base installation (not its venv)."""
    return str(getattr(sys, "_base_executable", None) or sys.executable)


def build_venv(
    layout: layouts.PythonLayout,
    files: list[str],
    read: layouts.Reader,
    env_dir: Path,
    cfg: Config,
    progress: Progress,
    repo: Path,
    base_sha: str,
    unpinned: str = "",
) -> tuple[str, str, tuple[str, ...], str]:
    """(python executable, key, read-only paths for the sandbox, description). `unpinned`: the test
    requirements without their versions (the pinned set installed, but the tests did not run with it);
    for a tree older than this Python, "era" installs them in two tiers (eratier.py), "floor" all at this
    Python's floor (the era environment's tests did not run). A pinned install's fallback is "era"."""
    uv = None if cfg.tests.wheels_only else shutil.which("uv")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    reqs = list(layout.requirements)
    if not any(layouts.norm(re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0]) == "pytest" for r in reqs):
        reqs.insert(0, "pytest")
    if cfg.tests.wheels_only and (src := next((r for r in reqs if source_reference(r)), None)):
        raise EnvError(
            f"tests.wheels_only: the requirement `{src[:120]}` names source code, not a wheel (pip would "
            "build it on this host); use a released wheel, or turn tests.wheels_only off where that is safe"
        )
    pins = layouts.uv_lock_pins(read("uv.lock"), layout.name) if layout.uv_lock else ()
    key = file_hash(
        read,
        layout.dep_files,
        version,
        base_python(),
        "uv" if uv else "pip",
        reqs,
        layout.name,
        cfg.tests.wheels_only,
        *([list(pins)] if pins else []),  # the lock's versions for this Python, as read by this prereview
        *(["unpinned", "local sources left out"] if unpinned else []),  # built before that: not reused
        f"dated {unpinned or 'era'}",  # how an unpinned install is bounded (eratier.py): not reused
    )
    d = env_dir / f"py{version}-{key}"
    exe = d / "bin" / "python"
    tool = "uv" if uv else "pip"
    with locked(d):
        if not ready(d):
            progress.message(
                f"building the test environment ({tool}, {len(reqs)} requirements, with network)"
            )
            fresh(d)
            (d / "requirements.txt").write_text("\n".join(reqs) + "\n", encoding="utf-8")
            (d / "constraints.txt").write_text("".join(f"{p}\n" for p in pins), encoding="utf-8")
            reqs_args = ["-r", str(d / "requirements.txt"), "-c", str(d / "constraints.txt")]
            binary = (["--no-build"] if uv else ["--only-binary", ":all:"]) if cfg.tests.wheels_only else []
            reqs_args += binary  # wheels_only: no package's build code runs on this host
            retry = unpinned_args(files, read, layout.name, reqs, d, binary)
            relax = None if unpinned else relax_args(d, reqs, pins, binary)  # the failing pin alone first
            timeout = cfg.tests.build_timeout
            when = datebound.commit_time(repo, base_sha)
            limit = datebound.bound(when) if when is not None else None
            # the base's own date where the floor is later: the runner at the floor, the rest at it
            era = datebound.era(when, limit) if unpinned != "floor" else None
            if unpinned and retry is None:  # no pins to leave out: the same set, as of the base's date
                if limit is None:
                    raise EnvError("the test requirements have no versions to leave out")
                retry = reqs_args
            if uv:
                run_build(
                    [uv, "venv", "--quiet", "--python", base_python(), str(d)], cwd=None, timeout=timeout
                )
                locked_reqs = _uv_export(uv, layout, repo, base_sha, d, timeout)
                install = [uv, "pip", "install", "--quiet", "--python", str(exe)]

                def step(args: list[str]) -> None:
                    run_build([*install, *args], cwd=d, timeout=timeout)

                def loose(args: list[str]) -> str:  # unpinned: the releases of the base's time
                    if era is not None and limit is not None:
                        how = eratier.attempt(
                            lambda a, t: step([*a, *datebound.args("uv", t)]), args, reqs, era, limit
                        )
                        if how is not None:
                            return how
                        args = [*args, "--upgrade"]  # everything at the floor, the era's releases replaced
                    step([*args, *(datebound.args("uv", limit) if limit else [])])
                    return datebound.describe(limit, when) if limit else ""

                notes = _install(step, loose, reqs_args, retry, bool(unpinned), relax)
                if locked_reqs:
                    run_build([*install, "-r", locked_reqs, "--no-deps"], cwd=d, timeout=timeout)
                uninstall = [uv, "pip", "uninstall", "--quiet", "--python", str(exe)]
            else:
                # -I: the stdlib's venv, never a `venv` package in the working directory (a CI job's checkout)
                run_build([base_python(), "-I", "-m", "venv", str(d)], cwd=None, timeout=timeout)
                pip = [*_pip(exe, d), "--disable-pip-version-check", "--no-input"]

                def step(args: list[str]) -> None:  # not -q: pip's `Collecting x` names what failed
                    run_build([*pip, "install", *args], cwd=d, timeout=timeout)

                def loose(args: list[str]) -> str:  # unpinned: the releases of the base's time
                    if limit is None:
                        step(args)
                        return ""
                    try:  # the venv's own pip may predate --uploaded-prior-to
                        run_build([*pip, "install", "-q", datebound.PIP_WITH_BOUND], cwd=d, timeout=timeout)
                    except EnvError as exc:
                        step(args)
                        return f"with today's releases ({datebound.PIP_WITH_BOUND} did not install: {exc})"
                    if era is not None:
                        how = eratier.attempt(
                            lambda a, t: pipdated.install(
                                pip, [*a, *datebound.args("pip", t)], d, timeout, None
                            ),
                            args,
                            reqs,
                            era,
                            limit,
                        )
                        if how is not None:
                            return how
                        args = [*args, "--upgrade", "--upgrade-strategy", "eager"]  # as for uv, above
                    return pipdated.install(pip, [*args, *datebound.args("pip", limit)], d, timeout, step) + (
                        datebound.describe(limit, when)
                    )

                notes = _install(step, loose, reqs_args, retry, bool(unpinned), relax)
                uninstall = [*pip, "-q", "uninstall", "-y"]
            if layout.name:
                _remove_own_copy(uninstall, layout.name, d, timeout)
                _bare_dist_info(d, layout.name, read)
            info = {"requirements": reqs, "tool": tool, "python": version, "notes": notes}
            mark_ready(d, {**info, "unpinned": bool(unpinned or notes)})
    if not exe.exists():
        raise EnvError(f"the test environment {d} has no bin/python; delete it and retry")
    ro = (str(d), sys.base_prefix, str(Path(base_python()).resolve().parent.parent))
    return str(exe), key, tuple(dict.fromkeys(ro)), f"venv {d} ({tool})"


def _install(
    step: Callable[[list[str]], None],
    loose: Callable[[list[str]], str],
    pinned: list[str],
    retry: list[str] | None,
    unpinned: bool,
    relax: Callable[[Sequence[str]], list[str] | None] | None = None,
) -> list[str]:
    """The pinned install with its unpinned retry (`loose`, bounded by date); `unpinned`: the retry's
    install alone (the pinned set installed before, but its tests did not run), its bound in a note."""
    if unpinned:
        assert retry is not None
        how = loose(retry)
        return (
            [f"Test environment: the test requirements installed without their pins, {how}."] if how else []
        )
    return install_with_fallback(step, pinned, retry, relax, retry_step=loose)


def _uv_export(
    uv: str, layout: layouts.PythonLayout, repo: Path, base_sha: str, d: Path, timeout: float
) -> str:
    """uv.lock's pins as requirements (the project and workspace members left out); "" without a lock."""
    if not layout.uv_lock:
        return ""
    from .testrun import export_tree

    with tempfile.TemporaryDirectory(prefix="prereview-uvlock-") as tmp:
        tree = export_tree(repo, base_sha, Path(tmp) / "base")
        out = d / "uv-lock.txt"
        try:
            run_build(
                [
                    uv,
                    "export",
                    "--frozen",
                    "--no-emit-project",
                    "--no-emit-workspace",
                    "--all-extras",
                    "--all-groups",
                    "--no-hashes",
                    "--quiet",
                    "-o",
                    str(out),
                ],
                cwd=tree,
                timeout=timeout,
            )
        except EnvError:
            return ""  # an older uv or an unusual lock: the pyproject requirements still stand
        return str(out)


_NAMED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\s*(?:\[[^\]]*\])?\s*(?:[<>=!~;(]|$)")


def source_reference(req: str) -> bool:
    """A requirement pip would install from a URL or path rather than an index — building it when it is
    not a wheel, even with `--only-binary :all:` (`name @ git+https://…`, `./pkg`, `https://…/x.tar.gz`)."""
    if _NAMED.match(req):
        return False
    url = req.split("@", 1)[-1].split(";", 1)[0].strip()
    return not url.lower().endswith(".whl")


# pip in the built venv, started without `site`: sys.prefix set as `site.venv()` would, site-packages
# appended without reading its .pth files, so nothing a package installed runs in this process.
_PIP = (
    "import sys, runpy; d = sys.argv[1]; sys.prefix = sys.exec_prefix = d; "
    "sys.path.append(sys.argv[2]); sys.argv = ['pip', *sys.argv[3:]]; "
    "runpy.run_module('pip', run_name='__main__', alter_sys=True)"
)


def _pip(exe: Path, d: Path) -> list[str]:
    """The argv prefix of a pip command in the venv `d` that starts no installed package's code."""
    return [str(exe), "-I", "-S", "-c", _PIP, str(d), str(_site_packages(d))]


def _site_packages(d: Path) -> Path:
    found = sorted(d.glob("lib/python*/site-packages"))
    if not found:
        raise EnvError(f"the test environment {d} has no site-packages")
    return found[0]


def _remove_own_copy(uninstall: list[str], name: str, d: Path, timeout: float) -> None:
    """A dependency may have pulled the project itself in from the index: that copy must not be tested."""
    site = _site_packages(d)
    if any(layouts.norm(p.name.split("-")[0]) == name for p in site.glob("*.dist-info")):
        run_build([*uninstall, name], cwd=d, timeout=timeout)


def _bare_dist_info(d: Path, name: str, read: layouts.Reader) -> None:
    """Metadata only (no files, no RECORD): `importlib.metadata.version(name)` and the project's own
    entry points (a pytest plugin) work, while the code comes from the scratch tree."""
    project: dict[str, Any] = {}
    try:
        project = tomllib.loads(read("pyproject.toml") or "").get("project", {})
    except tomllib.TOMLDecodeError:
        pass
    version = project.get("version") if isinstance(project.get("version"), str) else "0+prereview"
    info = _site_packages(d) / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "INSTALLER").write_text("prereview\n")
    groups = project.get("entry-points", {})
    scripts = project.get("scripts", {})
    lines: list[str] = []
    if isinstance(scripts, dict) and scripts:
        lines += ["[console_scripts]", *(f"{k} = {v}" for k, v in scripts.items()), ""]
    for group, eps in groups.items() if isinstance(groups, dict) else ():
        if isinstance(eps, dict):
            lines += [f"[{group}]", *(f"{k} = {v}" for k, v in eps.items()), ""]
    if lines:
        (info / "entry_points.txt").write_text("\n".join(lines))
