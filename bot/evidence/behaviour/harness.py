"""Host side of the sandboxed runs: the tracer hook for the test runs, and calls on generated inputs.

The scripts that run inside the sandbox (`SCRIPTS`: the tracer `prereview_trace.py`, the harness
`prereview_harness.py` and the modules they import) and their specs are given to each run in a bot-owned
folder shown read-only, and the results come back through a second one (sandbox/exchange.py): never
through the scratch tree, where the change (or its tests, while they run) could plant a symlink. Nothing
of `bot` is importable there. Each side runs from its own `git archive` copy, with a clean environment, no
network, the sandbox's memory and process caps, a per-call timeout and PYTHONHASHSEED=0.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from ...sandbox import Sandbox
from ...sandbox.exchange import BACK, GIVEN, Exchange, json_lines
from .. import testrun
from ..projectenv import ProjectEnv, python_command
from . import seeded
from .callables import Changed
from .compare import Call
from .generate import Input
from .testfiles import ChangedTests

SCRIPTS = (
    "prereview_probe.py",
    "prereview_fork.py",
    "prereview_variants.py",
    "prereview_frames.py",
    "prereview_pickles.py",
    "prereview_outer.py",
    "prereview_trace.py",
    "prereview_calls.py",
    "prereview_steer.py",
    "prereview_harness.py",
)


def _scripts() -> tuple[tuple[str, str], ...]:
    pkg = resources.files(__package__)
    return tuple((name, pkg.joinpath(name).read_text(encoding="utf-8")) for name in SCRIPTS)


def is_pytest(argv: Sequence[str]) -> bool:
    return any(Path(a).name in ("pytest", "py.test") or a == "pytest" for a in argv)


PER_TEST = 8  # calls recorded per test and callable: a test that loops must not use up the whole cap


def trace_hook(
    targets: Sequence[Changed],
    *,
    max_calls: int,
    per_test: int = PER_TEST,
    max_repr: int = 400,
    variants: int = 0,
    edges: int = 0,
    outer: int = 0,
    replays: int = 0,
    edited: ChangedTests | None = None,
) -> testrun.RunHook:
    """Extras for a pytest run that record the targets' calls (at base, the head names that exist there),
    for the first `variants` inputs of each the same call with an argument varied (wrapped, with a line
    break, and `edges` times per run at an edge of its type; the tests' outer calls that reach it, `outer`
    calls per run), and for the first `replays` the call's arguments pickled, to be made again at the
    other side (see the plugin); calls in the `edited` tests are recorded and pickled past those caps
    (they are compared only made again). An object argument's state shows the fields the callable's lines
    name first (`seeded.named`: crossed.py and seeded.py vary them)."""
    by_path: dict[str, list[str]] = {}
    for c in targets:
        by_path.setdefault(c.path, []).append(c.qualname)
    spec = {
        "targets": by_path,
        "max_calls": max_calls,
        "per_test": per_test,
        "max_repr": max_repr,
        "variants": variants,
        "edges": edges,
        "outer": max(1, outer // 5) if outer else 0,  # inputs per callable: each made about 5 ways
        "outer_calls": outer,
        "words": {c.key: seeded.words(c) for c in targets} if outer else {},
        "reads": {c.key: sorted({a for _, a in seeded.named(c)}) for c in targets},  # shown first
        "replays": replays,
    }
    if edited is not None:
        spec["edited"] = {
            "functions": sorted(edited.functions),
            "files": sorted(edited.files),
            "dirs": sorted(edited.dirs),
        }
    return testrun.RunHook(
        files=(*_scripts(), ("trace.json", json.dumps(spec, sort_keys=True))),
        args=("-p", "prereview_trace"),
        env=(
            ("PYTHONPATH", GIVEN),
            ("PREREVIEW_TRACE_SPEC", f"{GIVEN}/trace.json"),
            ("PREREVIEW_TRACE_OUT", f"{BACK}/trace.jsonl"),
        ),
        collect="trace.jsonl",
    )


def _spec_calls(inputs: Sequence[Input], paths: dict[str, tuple[str, str]]) -> list[dict[str, object]]:
    calls: list[dict[str, object]] = []
    for i, inp in enumerate(inputs):
        path, qual = paths[inp.callable]
        call: dict[str, object] = {"id": str(i), "path": path, "qualname": qual}
        if inp.probe:
            call["probe"], call["imports"] = inp.probe, inp.imports
        elif inp.pickled:
            call["pickled"] = list(inp.pickled)
            if inp.swap:
                call["swap"] = dict(inp.swap)
                if inp.crossed:  # crossed.py: a value another object held, of any type
                    call["loose"] = True
        elif inp.nesting:
            call["nesting"] = True
        elif inp.doctest:
            call["doctest"] = [list(x) for x in inp.doctest]
            if inp.report:
                call["report"] = list(inp.report)
        else:
            call["args"], call["kwargs"] = list(inp.args), dict(inp.kwargs)
            if inp.instance:
                call["instance"] = True
            if inp.builds:
                call["builds"] = dict(inp.builds)
        calls.append(call)
    return calls


def run_inputs(
    sandbox: Sandbox,
    repo: Path,
    commit: str,
    inputs: Sequence[Input],
    *,
    call_timeout: float,
    budget: float,
    env: ProjectEnv | None = None,
) -> tuple[list[Call | None], str]:
    """Every input's Call (doctests expand to one Call per example, in order); None where the run stopped
    before reaching it. Also a note when the harness itself could not finish ('' otherwise)."""
    if not inputs:
        return [], ""
    with tempfile.TemporaryDirectory(prefix="prereview-behaviour-") as tmp:
        root = testrun.export_tree(repo, commit, Path(tmp) / "work")
        return run_inputs_in(
            sandbox, root, inputs, call_timeout=call_timeout, budget=budget, label=commit[:12], env=env
        )


def run_inputs_in(
    sandbox: Sandbox,
    root: Path,
    inputs: Sequence[Input],
    *,
    call_timeout: float,
    budget: float,
    label: str,
    env: ProjectEnv | None = None,
) -> tuple[list[Call | None], str]:
    """`run_inputs` on a tree already exported (and maybe patched) at `root`, with the project's own
    interpreter and import roots when its tests have a resolved environment (`env`)."""
    if not inputs:
        return [], ""
    paths: dict[str, tuple[str, str]] = {}
    for one in inputs:
        path, _, qual = one.callable.partition("::")
        paths[one.callable] = (path, qual)
    with Exchange() as ex:
        spec = {
            "calls": _spec_calls(inputs, paths),
            "out": str(ex.back / "results.jsonl"),
            "timeout": call_timeout,
        }  # type: ignore[arg-type]
        for name, text in (*_scripts(), ("spec.json", json.dumps(spec))):
            ex.give(name, text)
        script = [str(ex.given / "prereview_harness.py"), str(ex.given / "spec.json")]
        argv = ["env", "PYTHONHASHSEED=0", *python_command(env, root, script)]
        res = sandbox.run(argv, cwd=root, timeout=max(5.0, budget), binds=ex.binds)
        what = f"the call harness's results at {label}"
        data, notes = ex.take("results.jsonl", what)
    records, more = json_lines(data, what)
    by_id: dict[str, list[dict[str, object]]] = {}
    for rec in records:
        if "id" in rec:
            by_id.setdefault(str(rec["id"]).split(".")[0], []).append(rec)
    out: list[Call | None] = []
    stopped = False
    notes += more
    for i, inp in enumerate(inputs):
        recs = by_id.get(str(i))
        if recs is None:
            if not stopped and (res.timed_out or res.returncode != 0):
                kind = "timeout" if res.timed_out else "crash"
                out.append(
                    Call(
                        inp.callable,
                        inp.origin,
                        _args(inp),
                        {"kind": kind, "seconds": round(res.seconds, 1)},
                        expr=inp.expr(paths[inp.callable][1]),
                    )
                )
                notes.append(
                    f"the call harness stopped at {label} ({res.killed_reason or f'exit {res.returncode}'})"
                )
                stopped = True
            else:
                out.append(None)
            continue
        for rec in recs:
            if inp.probe and rec.get("reached") is not True:
                continue  # an expression that did not run the changed callable says nothing of it
            try:  # the harness runs next to the change's code: a record may be forged, so checked here
                call = Call(
                    callable=inp.callable,
                    origin=inp.origin,
                    args=_args(inp),
                    result=dict(rec["result"]),  # type: ignore[call-overload]
                    mutated=tuple(sorted(dict(rec.get("mutated") or {}).items())),  # type: ignore[call-overload]
                    expr=str(rec.get("expr") or inp.expr(paths[inp.callable][1])),
                    want=str(rec["want"]) if "want" in rec else None,
                    replay=inp,
                    variant=_variant(inp),
                )
            except (KeyError, TypeError, ValueError):
                continue
            out.append(call)
    return out, "; ".join(notes)


def _variant(inp: Input) -> str:
    """A steered input's variant: "steered <param>" (steer.py), "seeded <param>" (seeded.py; the param may
    be an attribute, `self.sep`), "crossed <param>" (crossed.py) or "probe expression"; else none."""
    if inp.swap:
        kind = "crossed" if inp.crossed else "seeded" if inp.seeded else "steered"
        return " ".join([kind, *(name for name, _ in inp.swap)])
    return "probe expression" if inp.probe else ""


def _args(inp: Input) -> tuple[tuple[str, str], ...]:
    if inp.shown:
        return inp.shown
    return tuple((str(i), a) for i, a in enumerate(inp.args)) + inp.kwargs
