"""A test environment's install with one retry: when the project's pinned requirements do not install
here (an old pin with no wheel for this Python that fails to build, a release that requires another
Python), first only the requirement that failed is relaxed, the other pins kept (pinrelax.py; flask's
2021 trees: greenlet 1.1.0 does not build, and everything unpinned brings Werkzeug 3 under Flask 2.0),
then the same requirements are installed without their versions — pip-compile's `.in` inputs where the
tree has them, else the names — and one note line says which requirements failed and why.

Old trees pin what was current then (mypy 0.812, typed-ast); their tests usually run on what is current now.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

from . import layouts
from .envbase import EnvError

_COLLECTING = re.compile(r"^(?:Collecting|Processing|Obtaining) (.+?)\s*$")
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?")
_CAUSE = re.compile(r"^\s*[\w.]*(?:Error|Exception)\b:?.*$|fatal error: .+$")
_WHY = re.compile(
    r"^\s*(?:[\w.]*(?:Error|Exception)\b:?.*|fatal error: .+|Cython\.Compiler\..*"
    r"|error: (?!subprocess-exited-with-error|metadata-generation-failed).+)$"
)


def install_failure(output: str) -> tuple[str, str]:
    """(the requirement that failed, why) from pip's output; ("", first error line) when no requirement
    is named. Build failures are put on the last `Collecting …`/`Processing …` before the error, their
    reason is the last error line of the build's own output (not "subprocess-exited-with-error")."""
    lines = output.splitlines()
    for ln in lines:
        if m := re.match(r"ERROR: Package '([^']+)' requires a different Python: (\S+) not in '([^']+)'", ln):
            return m.group(1), f"it requires Python {m.group(3)} (this is {m.group(2)})"
    ignored = next(
        (ln for ln in lines if "Ignored the following versions that require a different python" in ln), ""
    )
    for ln in lines:
        if m := re.match(
            r"ERROR: (?:Could not find a version that satisfies the requirement|No matching distribution "
            r"found for) (\S+)(?: \(from versions: ([^)]*)\))?",
            ln,
        ):
            req = m.group(1)
            other = dict(re.findall(r"(\S+) Requires-Python ([^;]+?)\s*(?:;|$)", ignored))
            if other:  # the pinned release exists, for other Pythons
                ver = req.partition("==")[2]
                ver, needs = (ver, other[ver]) if ver in other else next(iter(other.items()))
                return req, f"no release of it for this Python: {ver} requires Python {needs}"
            have = (m.group(2) or "").strip()
            return req, f"not on the index (versions there: {have[-60:] or 'none'})"
        if m := re.match(r"ERROR: Cannot install (.+?) because these package versions have conflicting", ln):
            return m.group(1), "its pins conflict"
    error_at = next(
        (
            i
            for i, ln in enumerate(lines)
            if re.search(r"error: (subprocess-exited-with-error|metadata-gener)", ln)
        ),
        None,
    )
    if error_at is not None:
        end = next((i for i in range(error_at, len(lines)) if "[end of output]" in lines[i]), len(lines))
        block = lines[error_at + 1 : end]  # the build's own output, pip's frame around it
        return _built(lines[:error_at], block), _build_cause(block)
    if m := re.search(r"Failed (?:to build|building wheel for) `?([^`\s]+)`?", output):
        return m.group(1), "its build failed"
    from .envbase import first_build_error

    return "", first_build_error(output)


def _built(before: list[str], block: list[str]) -> str:
    """The requirement whose build failed: the package pip names in `× Building wheel for X …` (all
    packages are collected before any is built), with the pin from its `Collecting X==1.0` line; else
    the last `Collecting …`/`Processing …` before the error (a failed metadata step follows it)."""
    named = next(
        (
            m.group(1)
            for ln in block[:3]
            if (m := re.search(r"(?:Building wheel|Running setup\.py install) for (\S+)", ln))
        ),
        None,
    )
    for ln in reversed(before):
        if m := _COLLECTING.match(ln.strip()):
            req = _requirement_of(m.group(1))
            if named is None or _same(req, named):
                return req
    return named or ""


def _build_cause(block: list[str]) -> str:
    """Why a build failed: the first compiler error (`greenlet.h:42:5: error: unknown type name
    'CFrame'`), else the last exception or `error:` line of the build's output."""
    first_cc = next(
        (ln.strip() for ln in block if re.search(r"^\s*\S+:\d+(?::\d+)?: (?:fatal )?error: ", ln)), ""
    )
    cause = next((m.group(0).strip() for ln in reversed(block) if (m := _CAUSE.search(ln))), "")
    why = first_cc or cause or next((ln.strip() for ln in reversed(block) if _WHY.match(ln)), "")
    return f"its build failed: {why}"[:200] if why else "its build failed"


def _requirement_of(what: str) -> str:
    """`typed-ast<1.5 (from mypy==0.812)` as it is; a file pip processed (a local index, a link)
    `/files/pkg-1.0.tar.gz` or `pkg-1.0-py3-none-any.whl` -> `pkg==1.0`."""
    what = re.sub(r" \(from -[rc] .*$", "", what)  # `(from -r …/requirements.txt (line 4))`: our file
    first = what.split(" (", 1)[0]
    if "/" not in first:
        return what
    name = PurePosixPath(first.split(" ", 1)[0]).name
    if name.endswith(".whl") and name.count("-") >= 4:
        dist, version = name.split("-")[:2]
    elif m := re.match(r"(.+)-([^-]+?)(\.tar\.gz|\.zip|\.tar\.bz2)$", name):
        dist, version = m.group(1), m.group(2)
    else:
        return name
    return f"{dist}=={version}"


def unpinned(requirements: Sequence[str]) -> list[str]:
    """The requirement lines without versions: `name[extras]; marker`. URLs and local paths are kept as
    they are (they name one thing, not a version of it)."""
    out: list[str] = []
    for req in requirements:
        spec, _, marker = req.partition(";")
        if "@" in spec or "/" in spec or "://" in spec:
            out.append(req.strip())
            continue
        m = _REQ_NAME.match(spec)
        if not m:
            continue
        line = m.group(1) + (m.group(2) or "")
        out.append(f"{line}; {marker.strip()}" if marker.strip() else line)
    return list(dict.fromkeys(out))


def unpinned_requirements(files: Sequence[str], read: layouts.Reader) -> list[str]:
    """The layout's requirements read again with each pip-compile output `x.txt` replaced by its input
    `x.in` (the direct dependencies, without the transitive pins), then unpinned."""
    top = set(files)

    def read_in(path: str) -> str | None:
        src = path[:-4] + ".in"
        return read(src) if path.endswith(".txt") and src in top else read(path)

    return unpinned(layouts.python_layout(files, read_in).requirements)


MAX_RELAXED = 3  # requirements relaxed one by one before every pin is left out


def install_with_fallback(
    step: Callable[[list[str]], object],
    pinned: list[str],
    retry: list[str] | None,
    relax: Callable[[Sequence[str]], list[str] | None] | None = None,
    retry_step: Callable[[list[str]], str] | None = None,
) -> list[str]:
    """Run `step(pinned)`; when it fails, first only the failing requirement relaxed (`relax`: the
    arguments with the requirements named so far left unpinned, the other pins kept; pinrelax.py), again
    for each new requirement that then fails, at most MAX_RELAXED; then the unpinned `retry`, through
    `retry_step` when given (it returns what bounded the resolution, see datebound.py). Returns the one
    note line that says what was left out and why. Everything failing: EnvError naming each failure."""
    try:
        step(pinned)
        return []
    except EnvError as exc:
        if not retry and relax is None:
            raise
        first, failed = exc, [install_failure(getattr(exc, "output", "") or str(exc))]
    while relax is not None and len(failed) <= MAX_RELAXED:
        req = failed[-1][0]
        if not req or any(_same(req, r) for r, _ in failed[:-1]):
            break  # nothing named, or a relaxed requirement failing again
        args = relax([r for r, _ in failed])
        if args is None:
            break
        try:
            step(args)
        except EnvError as again:
            failed.append(install_failure(getattr(again, "output", "") or str(again)))
            continue
        one = len(failed) == 1  # never "without their pins": runs.py still rebuilds unpinned if no test runs
        return [
            f"Test environment: {_failures(failed)}; installed "
            + ("it without its pin" if one else "each without its pin")
            + ", the other pins kept."
        ]
    what = _failures(failed)
    if not retry:
        raise first if len(failed) == 1 else EnvError(what, first.output) from None
    try:
        bounded = retry_step(retry) if retry_step is not None else None
        if retry_step is None:
            step(retry)
    except EnvError as again:
        raise EnvError(f"{what}; without the pins too: {again}") from None
    return [
        f"Test environment: {what}; installed the test requirements without their pins instead"
        + (f", {bounded}." if bounded else ".")
    ]


def _failures(failed: Sequence[tuple[str, str]]) -> str:
    """`a==1` could not be installed (why), then `b==2` (why); "the pinned install failed (why)" unnamed."""
    said = [
        (f"`{r}`" + ("" if i else " could not be installed")) if r else "the pinned install failed"
        for i, (r, _) in enumerate(failed)
    ]
    return ", then ".join(f"{what} ({why})" for what, (_, why) in zip(said, failed, strict=True))


def unpinned_args(
    files: Sequence[str],
    read: layouts.Reader,
    own: str | None,
    pinned: Sequence[str],
    d: Path,
    extra: list[str],
) -> list[str] | None:
    """pip arguments for the unpinned retry (a requirements file written into the venv folder `d`, no
    constraints); None when unpinning changes nothing."""
    names = [
        r for r in unpinned_requirements(files, read) if layouts.norm(r.split("[")[0].split(";")[0]) != own
    ]
    if not any(_same("pytest", n) for n in names):  # the builder adds it to every venv
        names.insert(0, "pytest")
    if names == list(pinned):
        return None
    path = d / "requirements-unpinned.txt"
    path.write_text("\n".join(names) + "\n", encoding="utf-8")
    return ["-r", str(path), *extra]


def _same(a: str, b: str) -> bool:
    ma, mb = _REQ_NAME.match(a), _REQ_NAME.match(b)
    return bool(ma and mb and layouts.norm(ma.group(1)) == layouts.norm(mb.group(1)))


def built_info(python: str) -> tuple[list[str], bool]:
    """What a built venv recorded (read back on every review that reuses it): its notes, and whether
    its test requirements were installed without their pins."""
    try:
        info = json.loads((Path(python).parent.parent / ".prereview-complete").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [], False
    if not isinstance(info, dict):
        return [], False
    notes = (
        [n for n in info.get("notes", []) if isinstance(n, str)]
        if isinstance(info.get("notes"), list)
        else []
    )
    return notes, info.get("unpinned") is True


def newer_pytest(python: str) -> bool:
    """Whether a built venv's pytest may be newer than the project's tests know: installed without the
    pins, or its requirements do not pin pytest with `==` (dateutil's `pytest >= 3.0` gets pytest 9,
    whose deprecations its `filterwarnings = error` turns into collection errors)."""
    try:
        info = json.loads((Path(python).parent.parent / ".prereview-complete").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(info, dict):
        return False
    reqs = [r for r in info.get("requirements", []) if isinstance(r, str)]
    exact = any(_same("pytest", r) and "==" in r.split(";", 1)[0] for r in reqs)
    return info.get("unpinned") is True or not exact


# pytest newer than the project pinned: its own deprecations (PytestRemovedIn9Warning, a subclass) are
# not the project's, and a `filterwarnings = error` tree would turn them into collection errors
NEWER_PYTEST = ("-W", "ignore::pytest.PytestDeprecationWarning")


def pins_versions(requirements: Sequence[str]) -> bool:
    """Whether any requirement pins a version (`==`, `~=`, a bound from above) that an unpinned rebuild
    would leave out; an environment marker (`mock; python_version < '3.0'`) is not a pin."""
    return any(re.search(r"==|~=|<", r.split(";", 1)[0]) for r in requirements)


def failing_pin(output: str, requirements: Sequence[str]) -> str:
    """The pinned requirement whose installed code the run's traceback ends in (`py==1.10.0` for
    `…/site-packages/py/_vendored_packages/apipkg/__init__.py`, `pytest<3.3` for `…/_pytest/…`); ""
    when none is. A bound from above pins as much as `==` does: both keep this Python's releases out."""
    pins = {}
    for r in requirements:
        m = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:==|~=|<)", r)
        if m:
            pins[layouts.norm(m.group(1))] = r.split(";")[0].strip()
    for pkg in reversed(re.findall(r"site-packages/([A-Za-z0-9_.-]+?)(?:/|\.py)", output)):
        name = layouts.norm(pkg.lstrip("_"))
        if name in pins:
            return pins[name]
    return ""
