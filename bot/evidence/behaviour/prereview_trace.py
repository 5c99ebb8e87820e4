"""pytest plugin (`-p prereview_trace`): records the calls of a few named callables during the test run.

Runs INSIDE the sandbox, in the project's interpreter; imports nothing from `bot`. The spec file named by
the environment variable PREREVIEW_TRACE_SPEC says what to record:
  {"targets": {"pkg/mod.py": ["f", "C.m"]}, "out": "trace.jsonl", "max_calls": 1000, "per_test": 8,
   "max_repr": 400}
For each call of a target: the test id, the call's place in the run, the argument reprs, the return value
repr or the exception (type and message), and the arguments the call changed (mutation): for an object
of a project class (`self` of a method or a constructor among them) what its public fields hold after
the call (`probe.state_repr`; the fields the callable's lines name, `"reads"`, first), for other values
their repr. A constructor's effect is the object it builds; a property's getter is traced as `Class.name`.
Reprs are bounded and normalised (addresses, temp paths, the scratch tree's own path). At most `per_test`
calls per test and callable are kept, so a test that loops does not use up `max_calls` and the calls of
later tests (often the unusual inputs) are seen too. Calls with the same inputs and outcome are written
once, with every (test, place) they happened at: the file stays small when tests repeat themselves.

Wrapped variants (`"variants": N`, the first N distinct inputs per callable): the same call is made once
more with one argument wrapped in a `Proxy`, an object that forwards attribute access to the argument
(the way file, stream and lazy-object wrappers do) but is not an instance of its class and has none of
its special methods. Code that duck-types its input gives the same result either way; code that asks
`isinstance` (of an ABC or a Protocol) or looks special methods up on the type does not. Base and head
are both given the variant, so a wrapper base handled and head does not is seen. The variant runs in a
forked child, so the test's own call and everything after it see no side effect in memory: the child's
standard streams go to /dev/null, its inherited sockets and pipes are closed, it may not grow any file,
and the offsets of the parent's open files are put back after it. A child that hangs or dies gives no
record (noise, not evidence); after two children have hung (`variant_timeout`, 5 s) the run makes no
more variants, so they cannot cost a test run more than that.

Line-break variants (same budget): the call made again with a str or bytes argument ending in a newline.
A check that rejected it at base and lets it through at head has lost its guard against header and log
injection (a regex anchored with `$` instead of `\\Z` is the usual way).

Edge variants (`"edges": M` calls per run, same first N inputs): one argument at an edge of its own type
(prereview_variants.edges: empty, a list cut to its first item, 0, negated). Tests reach a changed method
with the inputs its author thought of; the regressions they miss are often one step away. A variant's
generator is run in the child (its first items, or what it raises): it fails on iteration, not the call.

Outer variants (`"outer": N` inputs per callable, `"outer_calls": M` forked calls per run): the test's
own call of a project function that reached a target, made again at the end of the run with a plain
argument varied (prereview_outer.py).

Replays (`"replays": N`, and `"edited"`: the tests the change edits): the arguments of the first N
distinct inputs per callable pickled, to be made again at the other side (prereview_pickles.py); the
calls of edited tests are recorded past `max_calls`.

Events: `sys.monitoring` on Python 3.12+, `sys.settrace` (call events only outside the targets) before;
on only while a test function runs (not fixtures, not collection), which keeps the run's cost low.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from typing import Any

import prereview_fork as fork
import prereview_frames as frames
import prereview_probe as probe
from prereview_outer import Outer
from prereview_pickles import Pickles
from prereview_variants import KINDS

_ROOT = os.getcwd()


class Recorder:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.targets: dict[str, set[str]] = {p: set(q) for p, q in spec.get("targets", {}).items()}
        self.reads = {k: frozenset(v) for k, v in spec.get("reads", {}).items()}  # fields shown first
        self.out_path = os.environ.get("PREREVIEW_TRACE_OUT") or os.path.join(
            _ROOT, spec.get("out", "trace.jsonl")
        )
        self.max_calls = int(spec.get("max_calls", 1000))
        self.per_test = int(spec.get("per_test", 8))
        self.limit = int(spec.get("max_repr", 400))
        self.test = "<collection>"
        self.records: dict[str, dict[str, Any]] = {}  # the call's inputs and outcome (JSON) -> record
        self.seq = 0  # calls kept so far, over all tests: the order base and head are matched in
        self.per_callable: dict[str, int] = {}
        self.dropped: dict[str, int] = {}  # over max_calls (the review says so)
        self.thinned: dict[str, int] = {}  # over per_test (normal: loops in a test)
        self.index: dict[tuple[str, str], int] = {}
        self._codes: dict[Any, str | None] = {}
        self._open: dict[int, dict[str, Any]] = {}  # id(frame) -> record being filled
        self._busy = False
        self.variants = int(spec.get("variants", 0)) if hasattr(os, "fork") else 0
        self.max_variants = int(spec.get("max_variants", 40))
        self.variant_timeout = float(spec.get("variant_timeout", 5.0))
        self._varied: dict[str, set[str]] = {}  # callable -> the inputs already given variants
        self.n_variants = 0
        self.max_edges = int(spec.get("edges", 0)) if self.variants else 0
        self.n_edges = 0
        self.hung = 0  # children killed at variant_timeout; at MAX_HUNG no more variants are made
        self.pickles = Pickles(spec)
        self.outer = Outer(spec, _ROOT, self.variant_timeout)

    def begin_test(self, nodeid: str) -> None:
        self.test = nodeid
        self.pickles.begin_test(nodeid)

    # -------------------------------------------------------------- which code is a target

    def target_of(self, code: Any) -> str | None:
        hit = self._codes.get(code, 0)
        if hit != 0:
            return hit  # type: ignore[return-value]
        name = None
        fname = code.co_filename.replace(os.sep, "/")
        qual = getattr(code, "co_qualname", code.co_name)
        for path, quals in self.targets.items():
            if (fname == path or fname.endswith("/" + path)) and qual in quals:
                name = f"{path}::{qual}"
                break
        self._codes[code] = name
        return name

    # -------------------------------------------------------------- events

    def on_start(self, frame: Any, key: str) -> None:
        if self._busy:
            return
        self.outer.note(frame, key, self.test)  # its own caps: past this one's, the tests' inputs differ
        n = self.per_callable.get(key, 0)
        if n >= self.max_calls and not self.pickles.in_edited:
            self.dropped[key] = self.dropped.get(key, 0) + 1
            return
        idx = self.index.get((self.test, key), 0)
        if idx >= self.per_test:
            self.thinned[key] = self.thinned.get(key, 0) + 1
            return
        self._busy = True  # reprs may call other code (and targets): do not record inside them
        try:
            self.per_callable[key] = n + 1
            self.index[(self.test, key)] = idx + 1
            self.seq += 1
            args, first = frames.arguments(frame), self.reads.get(key, ())
            self._open[id(frame)] = {
                "at": (self.test, self.seq),
                "callable": key,
                "args": {k: probe.safe_repr(v, _ROOT, self.limit) for k, v in args.items()},
                "_objs": args,
                "_states": {k: probe.state_repr(v, _ROOT, self.limit, first) for k, v in args.items()},
            }
            self.pickles.add(frame, key, self._open[id(frame)])
            if self.variants and (self.n_variants < self.max_variants or self.n_edges < self.max_edges):
                self._vary(frame, key, self._open[id(frame)]["args"])
        finally:
            self._busy = False

    # -------------------------------------------------------------- wrapped variants

    def _vary(self, frame: Any, key: str, reprs: dict[str, str]) -> None:
        sig = json.dumps(reprs, sort_keys=True)
        done = self._varied.setdefault(key, set())
        if sig in done or len(done) >= self.variants:
            return
        qual = key.split("::", 1)[1]
        call = frames.call_of(frame, qual)
        if call is None:
            return
        fn, names, pos, kw = call
        receiver = names[0] if "." in qual and names and names[0] in ("self", "cls") else None
        for label, make in KINDS:
            tried = 0  # at most two arguments varied per kind
            for i, name in enumerate(names):
                if name == receiver or tried >= 2 or not self._budget(label):
                    continue
                values = make(pos[i] if i < len(pos) else kw.get(name))
                if values is None:
                    continue
                tried += 1
                done.add(sig)  # only inputs with something to vary count against `variants`
                for varied in values:
                    if not self._budget(label):
                        break
                    if label == "edge":
                        self.n_edges += 1
                    else:
                        self.n_variants += 1
                    p, k = list(pos), dict(kw)
                    if i < len(p):
                        p[i] = varied
                    else:
                        k[name] = varied
                    shown = dict(reprs)
                    shown[name] = probe.safe_repr(varied, _ROOT, self.limit)
                    self._variant(key, fn, p, k, name, varied, shown, f"{label} {name}")

    def _budget(self, label: str) -> bool:
        if not self.variants:  # two children hung: no more variants of any kind
            return False
        return self.n_edges < self.max_edges if label == "edge" else self.n_variants < self.max_variants

    def _variant(
        self,
        key: str,
        fn: Any,
        pos: list[Any],
        kw: dict[str, Any],
        name: str,
        value: Any,
        shown: dict[str, str],
        variant: str,
    ) -> None:
        outcome = self._forked(fn, pos, kw, {name: value})
        if outcome is None:
            return
        self.seq += 1
        self._keep({"callable": key, "args": shown, "variant": variant, **outcome})

    def _keep(self, rec: dict[str, Any]) -> None:
        sig = json.dumps(rec, sort_keys=True)
        self.records.setdefault(sig, {**rec, "at": []})["at"].append((self.test, self.seq))

    def after_run(self) -> None:
        """The tests' outer calls made again varied (prereview_outer.py), once every test has run."""
        for test, rec in self.outer.run():
            self.seq, self.test = self.seq + 1, test
            self._keep(rec)

    def _forked(
        self, fn: Any, pos: list[Any], kw: dict[str, Any], watched: dict[str, Any]
    ) -> dict[str, Any] | None:
        """{"result", "mutated"} of fn(*pos, **kw) run in a forked child; None if it hung or died."""
        out, hung = fork.call_in_child(
            fn,
            pos,
            kw,
            watched,
            self.variant_timeout,
            lambda v: probe.return_record(v, _ROOT, self.limit),
            lambda e: probe.exception_record(e, _ROOT, self.limit),
            lambda v: probe.safe_repr(v, _ROOT, self.limit),
        )
        self.hung += hung
        if self.hung >= MAX_HUNG:  # a run's variants may not cost the test run more than this
            self.variants = 0
        return out

    def on_end(self, frame: Any, result: dict[str, Any]) -> None:
        rec = self._open.pop(id(frame), None)
        if rec is None:
            return
        self._busy = True
        try:
            objs, states = rec.pop("_objs"), rec.pop("_states")
            held = {k: v for k, v in states.items() if v is not None}
            if held:  # part of the inputs: an object that held other values at head is another input
                rec["state"] = held
            mutated = {}
            for k, v in objs.items():
                if states.get(k) is not None:  # an object: what it holds, not what its repr says
                    after = probe.state_repr(v, _ROOT, self.limit, self.reads.get(rec["callable"], ()))
                    if after != states[k]:
                        mutated[k] = after
                    continue
                after = probe.safe_repr(v, _ROOT, self.limit)
                if after != rec["args"][k]:
                    mutated[k] = after
            at = rec.pop("at")
            rec["result"] = result
            rec["mutated"] = mutated
            sig = json.dumps(rec, sort_keys=True)
            self.records.setdefault(sig, {**rec, "at": []})["at"].append(at)
        finally:
            self._busy = False

    def returned(self, frame: Any, value: Any) -> None:
        if id(frame) in self._open:
            self.on_end(frame, probe.return_record(value, _ROOT, self.limit))

    def raised(self, frame: Any, exc: BaseException) -> None:
        if id(frame) in self._open:
            self.on_end(frame, probe.exception_record(exc, _ROOT, self.limit))

    def write(self) -> None:
        """Appended under a lock: with pytest-xdist each worker process records its own tests' calls into
        the same file (and the controller, which runs no test, only its empty counts). The file does not
        exist before a run: the plugin is loaded into a fresh scratch tree."""
        lines = [json.dumps(rec) + "\n" for rec in self.records.values()]
        lines.append(json.dumps({"dropped": self.dropped, "thinned": self.thinned}) + "\n")
        with open(self.out_path, "a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write("".join(lines))
            fh.flush()


MAX_HUNG = 2


# ---------------------------------------------------------------- the two event sources


class _Monitoring:  # Python 3.12+
    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        mon = sys.monitoring  # type: ignore[attr-defined]
        self.mon = mon
        self.tool = next(t for t in (4, 5, 3, 2) if mon.get_tool(t) is None)
        mon.use_tool_id(self.tool, "prereview-trace")
        mon.register_callback(self.tool, mon.events.PY_START, self._start)
        mon.register_callback(self.tool, mon.events.PY_RETURN, self._return)
        mon.register_callback(self.tool, mon.events.PY_UNWIND, self._unwind)

    def on(self) -> None:
        self.mon.set_events(self.tool, self.mon.events.PY_START | self.mon.events.PY_UNWIND)

    def off(self) -> None:
        self.mon.set_events(self.tool, 0)

    def _start(self, code: Any, offset: int) -> Any:
        key = self.rec.target_of(code)
        if key is None:
            return self.mon.DISABLE
        self.mon.set_local_events(self.tool, code, self.mon.events.PY_RETURN)
        self.rec.on_start(sys._getframe(1), key)
        return None

    def _return(self, code: Any, offset: int, value: Any) -> Any:
        self.rec.returned(sys._getframe(1), value)

    def _unwind(self, code: Any, offset: int, exc: BaseException) -> Any:
        if self.rec._open:
            self.rec.raised(sys._getframe(1), exc)

    def stop(self) -> None:
        self.off()
        self.mon.free_tool_id(self.tool)


class _Settrace:  # before 3.12: a global tracer that only returns a local one for targets
    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.previous = sys.gettrace()

    def on(self) -> None:
        self.previous = sys.gettrace()
        sys.settrace(self._global)

    def off(self) -> None:
        sys.settrace(self.previous)

    def _global(self, frame: Any, event: str, arg: Any) -> Any:
        if event != "call":
            return None
        key = self.rec.target_of(frame.f_code)
        if key is None or frames.resumed(frame):  # a generator's next step is not another call
            return None
        self.rec.on_start(frame, key)
        pending: list[BaseException] = []

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "exception":
                pending[:] = [arg[1]]
            elif event == "line":
                pending.clear()  # handled inside the function: not a raise
            elif event == "return":
                if pending and arg is None:
                    self.rec.raised(frame, pending[0])
                else:
                    self.rec.returned(frame, arg)
            return local

        return local

    def stop(self) -> None:
        self.off()


_STATE: dict[str, Any] = {}


def pytest_configure(config: Any) -> None:
    path = os.environ.get("PREREVIEW_TRACE_SPEC")
    if not path:
        return
    with open(os.path.join(_ROOT, path), encoding="utf-8") as fh:
        rec = Recorder(json.load(fh))
    _STATE["rec"] = rec
    _STATE["src"] = _Monitoring(rec) if hasattr(sys, "monitoring") else _Settrace(rec)


def pytest_runtest_protocol(item: Any, nextitem: Any) -> None:
    rec = _STATE.get("rec")
    if rec is not None:
        rec.begin_test(item.nodeid)


try:
    import pytest as _pytest

    @_pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(item: Any) -> Any:
        """Events only while a test function runs: pytest's own machinery is never traced (cost)."""
        src = _STATE.get("src")
        if src is not None:
            src.on()
        try:
            yield
        finally:
            if src is not None:
                src.off()

except ImportError:  # loaded outside pytest (the harness imports only prereview_probe)
    pass


def pytest_unconfigure(config: Any) -> None:
    rec, src = _STATE.pop("rec", None), _STATE.pop("src", None)
    if src is not None:
        src.stop()
    if rec is not None:
        rec.after_run()
        rec.write()
