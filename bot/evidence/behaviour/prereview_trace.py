"""pytest plugin (`-p prereview_trace`): records the calls of a few named callables during the test run.

Runs INSIDE the sandbox, in the project's interpreter; imports nothing from `bot`. The spec file named by
the environment variable PREREVIEW_TRACE_SPEC says what to record:
  {"targets": {"pkg/mod.py": ["f", "C.m"]}, "out": "trace.jsonl", "max_calls": 1000, "per_test": 8,
   "max_repr": 400}
For each call of a target: the test id, the call's place in the run, the argument reprs, the return value
repr or the exception (type and message), and the arguments whose repr changed during the call (mutation).
Reprs are bounded and normalised (addresses, temp paths, the scratch tree's own path). At most `per_test`
calls per test and callable are kept, so a test that loops does not use up `max_calls` and the calls of
later tests (often the unusual inputs) are seen too. Calls with the same inputs and outcome are written
once, with every (test, place) they happened at: the file stays small when tests repeat themselves.
`sys.monitoring` on Python 3.12+, `sys.settrace` (call events only outside the targets) before; events
are on only while a test function runs (not fixtures, not collection), which keeps the run's cost low.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import prereview_probe as probe

_ROOT = os.getcwd()


class Recorder:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.targets: dict[str, set[str]] = {p: set(q) for p, q in spec.get("targets", {}).items()}
        self.out_path = os.path.join(_ROOT, spec.get("out", "trace.jsonl"))
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
        n = self.per_callable.get(key, 0)
        if n >= self.max_calls:
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
            args = _arguments(frame)
            self._open[id(frame)] = {
                "at": (self.test, self.seq),
                "callable": key,
                "args": {k: probe.safe_repr(v, _ROOT, self.limit) for k, v in args.items()},
                "_objs": args,
            }
        finally:
            self._busy = False

    def on_end(self, frame: Any, result: dict[str, Any]) -> None:
        rec = self._open.pop(id(frame), None)
        if rec is None:
            return
        self._busy = True
        try:
            objs = rec.pop("_objs")
            mutated = {}
            for k, v in objs.items():
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
        with open(self.out_path, "w", encoding="utf-8") as fh:
            for rec in self.records.values():
                fh.write(json.dumps(rec) + "\n")
            fh.write(json.dumps({"dropped": self.dropped, "thinned": self.thinned}) + "\n")


def _arguments(frame: Any) -> dict[str, Any]:
    code = frame.f_code
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
    loc = frame.f_locals
    return {name: loc[name] for name in code.co_varnames[:n] if name in loc}


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
        if key is None:
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
        rec.test = item.nodeid


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
        rec.write()
