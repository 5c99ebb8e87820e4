"""The project's tests at base and head, once per review: the `TestRuns` record the stages after the tests
stage read (behaviour evidence collects its traces from them, patches verify against head's run), and
`prereview fix` starts from.

Detect the command, build the project environment (pins that do not install retried unpinned once), run
it at base and head in the sandbox, compare, and re-run what flipped (flaky.py) before it counts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..change import git
from ..config import Config
from ..progress import Progress, Quiet
from ..sandbox import Sandbox
from ..sandbox import create as create_sandbox
from ..types import ChangeRequest, Finding, PrereviewError
from . import datebound, envnotes, eratier, flaky, projectenv, pycompat, toolchains
from .breakage import Breakage, breakage_finding, compare, localize
from .detect import detect_command, none_found, tree_files
from .pininstall import failing_pin, pins_versions
from .testrun import RunHook, TestRun, TestRunner

HookFor = Callable[[list[str]], "RunHook | None"]  # the test command -> extras its runs load (a tracer)


@dataclass(frozen=True)
class TestRuns:
    """What running the project's tests at base and head gave. `runner` reruns them (a patched tree, a
    traced call's results); it is None when the runs give no evidence (`unusable` says why, if they ran)."""

    __test__ = False  # not a pytest test class

    runner: TestRunner | None = None
    base: TestRun | None = None
    head: TestRun | None = None
    breakage: Breakage | None = None  # what the change broke, flaky flips already left out
    sandbox: Sandbox | None = None
    env: projectenv.ProjectEnv | None = None
    unusable: str | None = None  # why the tests gave no evidence (environment failed, base tested nothing)
    notes: tuple[str, ...] = ()
    seconds: Mapping[str, float] = field(default_factory=dict)  # per step: "env", "tests", "reruns"
    untraced: str = ""  # why the runs were made without the behaviour tracer (its base run timed out)

    @property
    def compared(self) -> bool:
        """Both sides ran and can be compared (and a patch verified against head)."""
        return self.runner is not None and self.base is not None and self.head is not None

    def breakage_findings(self, change: ChangeRequest) -> list[Finding]:
        """One finding for the tests the change breaks (none when it breaks none)."""
        if self.breakage is None or change.workdir is None:
            return []
        path, _ = localize(self.breakage, change.diff)
        text = git.show(change.workdir, change.head_sha, path)
        return [breakage_finding(self.breakage, change.diff, text)]


def run_tests(
    change: ChangeRequest,
    cfg: Config,
    *,
    cache_dir: Path | None = None,
    env_dir: Path | None = None,
    sandbox: Sandbox | None = None,
    hook_for: HookFor | None = None,
    progress: Progress | None = None,
) -> TestRuns:
    """Detect the test command and run it at base and head; every failure to do so is a note."""
    progress = progress or Quiet()
    repo = change.workdir
    if repo is None or not cfg.tests.enabled:
        return TestRuns()
    files = tree_files(repo, change.head_sha, cfg)  # listed once: detecting, and saying what was not found
    argv = detect_command(files, lambda p: git.show(repo, change.head_sha, p), cfg)
    if argv is None:  # said, so a review with no tests behind it never looks like one whose tests agreed
        return TestRuns(notes=(none_found(files),))
    notes: list[str] = []
    try:
        sandbox = sandbox or create_sandbox(cfg.sandbox)
    except PrereviewError as exc:
        return TestRuns(notes=(f"tests not run: {exc}",))
    if sandbox.warning:
        notes.append(sandbox.warning)
    env_dir = env_dir or projectenv.default_env_dir(cache_dir)
    env = _environment(argv, change, cfg, sandbox, env_dir, progress)
    seconds = {"env": env.seconds}
    notes += env.notes
    if env.error is not None:
        unusable = f"could not build the test environment: {env.error}"
        notes.append(f"Tests not run: {unusable}; {projectenv.fix_for(argv)}.")
        return TestRuns(sandbox=sandbox, env=env, unusable=unusable, notes=tuple(notes), seconds=seconds)
    sandbox = projectenv.with_ro_paths(sandbox, env.ro_paths)
    budget = max(1.0, cfg.tests.budget_seconds - env.seconds)
    timeout = min(cfg.sandbox.timeout, budget / 2)  # base and head share what the build left
    full = min(cfg.sandbox.timeout, cfg.tests.budget_seconds / 2)  # had the build cost nothing
    # the build took away more than half of the runs' time: a timeout is then the build's, said so
    env_took = (env.seconds, cfg.tests.budget_seconds) if timeout < full / 2 else None
    runner = TestRunner(sandbox, argv, timeout, cache_dir, env=env)
    bounds = getattr(sandbox, "bounds", "")
    progress.message(
        f"running tests at base and head: {' '.join(env.argv)} ({sandbox.name} sandbox; "
        + (f"{bounds}; " if bounds else "")
        + f"environment: {env.describe}, ready in {env.seconds:.1f}s)"
    )
    hook = hook_for(argv) if hook_for is not None else None
    t0, why, head, untraced = time.monotonic(), None, None, ""
    try:  # with the behaviour tracer loaded when there is one: still one run per side
        base = runner.at_commit(repo, change.base_sha, hook)
        if hook is not None and base.timed_out:  # the tracer's cost, or the suite's own: once without it
            plain = runner.at_commit(repo, change.base_sha, None)
            if not plain.timed_out:
                untraced = (
                    f"the test run with the call recorder timed out after {base.seconds:.0f}s and took "
                    f"{plain.seconds:.0f}s without it, so the tests' calls were not recorded"
                )
                base, hook = plain, None
                notes.append(f"tests: {untraced}.")
        why = projectenv.unusable(base)
        pinned = pins_versions(_requirements(env)) and not any("without their pins" in n for n in env.notes)
        broke = why is not None and why.startswith(("collection failed", "no test ran"))  # not a timeout
        dated = not pinned and broke and datebound.narrows(repo, change.base_sha)
        npm_dated = broke and env.kind == "toolchain" and argv[:1] == ["npm"] and _npm_stale(repo, change)
        installs = env.kind == "built" and (pinned or dated) and not base.timed_out  # not an install's fault
        if why is not None and (installs or npm_dated):  # installs, no run
            retried = _unpinned(argv, change, cfg, runner, base, env, env_dir, hook, progress)
            if isinstance(retried, str):  # that did not run either: said, with the first run's reason
                notes.append(retried)
            else:
                env, runner, base, sandbox, note = retried
                seconds["env"] += env.seconds
                notes.append(note)
                why = None
        if why is None:
            notes += filter(None, [envnotes.uncollected_note(base)])
            head = runner.at_commit(repo, change.head_sha, hook)
    except PrereviewError as exc:  # e.g. the docker engine is down: review without tests, say why
        notes.append(f"tests not run: {exc}")
        return TestRuns(sandbox=sandbox, env=env, notes=tuple(notes), seconds=seconds)
    finally:
        seconds["tests"] = round(time.monotonic() - t0, 2)
    notes += [f"tests: {n}" for n in runner.notes]  # read-backs refused or cut
    if why is not None:  # nothing to compare against, nothing to verify a patch with
        notes.append(envnotes.cannot_test_note(why, argv=argv, env_took=env_took))
        progress.message(f"tests: base unusable ({why}); {seconds['tests']:.1f}s")
        return TestRuns(
            base=base, sandbox=sandbox, env=env, unusable=why, notes=tuple(notes), seconds=seconds
        )
    assert head is not None
    breakage = compare(base, head)
    if breakage is not None:  # a test that flips on a rerun is flaky, never a finding
        left = max(30.0, cfg.tests.budget_seconds - seconds["env"] - seconds["tests"])
        checked = flaky.recheck(
            runner, repo, change.base_sha, change.head_sha, breakage, change.diff, budget=left
        )
        breakage, seconds["reruns"] = checked.breakage, checked.seconds
        notes += checked.notes
    progress.message(
        f"tests: base {base.summary()}; head {head.summary()} "
        f"(environment {seconds['env']:.1f}s, tests {seconds['tests']:.1f}s)"
    )
    return TestRuns(runner, base, head, breakage, sandbox, env, None, tuple(notes), seconds, untraced)


def _environment(
    argv: list[str],
    change: ChangeRequest,
    cfg: Config,
    sandbox: Sandbox,
    env_dir: Path,
    progress: Progress,
    *,
    unpinned: str = "",
) -> projectenv.ProjectEnv:
    assert change.workdir is not None
    env = projectenv.resolve(
        argv,
        cfg=cfg,
        repo=change.workdir,
        source=change.env_source,
        head_sha=change.head_sha,
        sandbox_name=sandbox.name,
        env_dir=env_dir,
        progress=progress,
        unpinned=unpinned,
    )
    return (
        pycompat.with_aliases(env, change.workdir, change.base_sha, env_dir)
        if sandbox.name != "docker"
        else env
    )


def _unpinned(
    argv: list[str],
    change: ChangeRequest,
    cfg: Config,
    runner: TestRunner,
    base: TestRun,
    env: projectenv.ProjectEnv,
    env_dir: Path,
    hook: RunHook | None,
    progress: Progress,
) -> tuple[projectenv.ProjectEnv, TestRunner, TestRun, Sandbox, str] | str:
    """The base run tested nothing with the pinned test requirements (pytest 6 on Python 3.11): the same
    requirements without their versions, once; with nothing pinned, today's releases (Werkzeug 3 under
    flask 2.2): the same requirements as released at the base commit's date (datebound.narrows).
    The new environment, runner, base run, sandbox and the note saying so; when that does not run the
    tests either, the note saying what was tried and why it failed."""
    assert change.workdir is not None
    pinned = pins_versions(_requirements(env))
    how = "without their pins" if pinned else "as released at the base commit"
    what = "the npm packages" if argv[:1] == ["npm"] else "the test requirements"
    for dated in ("era", "floor"):  # the floor only where the era's releases (eratier.py) did not run them
        retried = _environment(argv, change, cfg, runner.sandbox, env_dir, progress, unpinned=dated)
        if retried.error is not None:
            return f"Test environment: rebuilding {what} {how} failed too ({retried.error[:200]})."
        sandbox = projectenv.with_ro_paths(runner.sandbox, retried.ro_paths)
        again = TestRunner(sandbox, argv, runner.timeout, runner.cache_dir, env=retried)
        unpinned_base = again.at_commit(change.workdir, change.base_sha, hook)
        still = projectenv.unusable(unpinned_base)
        if still is None or not any(eratier.TIERED in n for n in retried.notes):
            break
    if still is not None:
        return f"Test environment: with {what} installed {how} the tests did not run either ({still})."
    why = projectenv.unusable(base)
    pin = failing_pin(base.output, _requirements(env))
    bounded = next(  # the date the rebuild was bounded by, as its note says (datebound.py, toolchains.py)
        (
            n.removeprefix(prefix).rstrip(".")
            for n in retried.notes
            for prefix in (datebound.UNPINNED_NOTE, toolchains.BOUND_PREFIX)
            if n.startswith(prefix)
        ),
        "",
    )
    if not pinned:  # nothing pinned: today's releases, then the base's date's
        return (
            retried,
            again,
            unpinned_base,
            sandbox,
            (
                f"Test environment: the tests did not run with today's releases of {what} "
                f"({why}); installed them {bounded or 'as released at the base commit'} instead."
            ),
        )
    note = (
        "Test environment: the tests did not run with the pinned test requirements ("
        + (f"`{pin}`: " if pin else "")
        + f"{why}); installed them without their pins instead"
        + (f", {bounded}." if bounded else ".")
    )
    return retried, again, unpinned_base, sandbox, note


def _npm_stale(repo: Path, change: ChangeRequest) -> bool:
    """An unlocked npm tree whose base is old enough for its date's releases to differ (npm_bound)."""
    sha = change.env_source.sha
    return toolchains.npm_bound(lambda p: git.show(repo, sha, p), repo, sha) is not None


def _requirements(env: projectenv.ProjectEnv) -> list[str]:
    """A built venv's requirement lines (what its pins were)."""
    try:
        return (Path(env.argv[0]).parent.parent / "requirements.txt").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
