"""pytest plugin, run inside the sandbox (`-p prereview_reach`; nothing of prereview is importable there):
which of the changed lines each test executes. The spec (`PREREVIEW_REACH_SPEC`, JSON) maps tree-relative
paths to line numbers; the result (`{"nodeid": [[path, line], ...]}`, one JSON line) goes to
`PREREVIEW_REACH_OUT` (a file in the run's bot-owned result folder).
Lines run while a test's setup, call and teardown run are that test's; lines run outside them (module
bodies at import, during collection) go under "<import>": a changed constant or default argument."""

from __future__ import annotations

import json
import os
import sys
import threading

import pytest

_SPEC = json.load(open(os.environ["PREREVIEW_REACH_SPEC"], encoding="utf-8"))  # noqa: SIM115
_ROOT = os.getcwd()
_TARGETS = {os.path.join(_ROOT, p): set(lines) for p, lines in _SPEC["lines"].items()}
_REL = {os.path.join(_ROOT, p): p for p in _SPEC["lines"]}
_hits: dict[str, set[tuple[str, int]]] = {"<import>": set()}
_current: set[tuple[str, int]] = _hits["<import>"]
_known: dict[str, str | None] = {}


def _target(filename: str) -> str | None:
    if filename not in _known:
        real = os.path.realpath(filename) if not filename.startswith("<") else filename
        _known[filename] = real if real in _TARGETS else None
    return _known[filename]


def _trace(frame, event, arg):  # noqa: ANN001, ANN202 (the settrace protocol)
    path = _target(frame.f_code.co_filename)
    if path is None:
        return None
    lines = _TARGETS[path]

    def local(frame, event, arg):  # noqa: ANN001, ANN202
        if event == "line" and frame.f_lineno in lines:
            _current.add((_REL[path], frame.f_lineno))
        return local

    if frame.f_lineno in lines:
        _current.add((_REL[path], frame.f_lineno))
    return local


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # noqa: ANN001, ANN201
    global _current
    _current = _hits.setdefault(item.nodeid, set())
    try:
        yield
    finally:
        _current = _hits["<import>"]


threading.settrace(_trace)  # from the plugin's import on: collection imports the project's modules
sys.settrace(_trace)


def pytest_sessionfinish(session, exitstatus):  # noqa: ANN001, ANN201
    sys.settrace(None)
    threading.settrace(None)  # type: ignore[arg-type]
    with open(os.environ["PREREVIEW_REACH_OUT"], "w", encoding="utf-8") as fh:
        json.dump({k: sorted(v) for k, v in _hits.items()}, fh)
