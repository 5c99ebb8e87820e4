"""The tracer's replays (prereview_trace.py, `"replays": N`): the arguments of the first N distinct inputs
per callable, `self` among them, pickled as they were when the call started (zlib, base64, in chunks; at
most `MAX_PICKLE` bytes), so the review can give the same objects to the other side's code
(`prereview_harness.py`, `pickled`): a base call whose test is gone or edited at head, or whose `self`
head's tests built differently, is still compared. A constructor's half-built `self` is left out (the
harness calls the class). Unpickled only inside the sandbox; the host passes the text on without reading
it.

The tests the change edits (`"edited"`: testfiles.ChangedTests's functions, files and folders) cannot be
compared as they ran, only made again on these pickles: their calls are pickled past the N, up to N more
inputs per callable, and recorded past the tracer's `max_calls`.

Past the first N, a call that brings a kind of value no pickled call of its callable had (an argument's
type, or the type of a field of an object argument that the callable's lines name, `"reads"`: an instance
where the others held a class) is pickled too, up to N more: the first calls of a run are often alike (one
fixture's objects), and crossed.py picks the calls it varies among these by the kinds they cover. Each
such call is tried once, pickled or not (at most N tries per callable), so the cost stays bounded.

Runs INSIDE the sandbox, in the project's interpreter; imports nothing from `bot`.
"""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from typing import Any

from prereview_frames import call_of

MAX_PICKLE = 24_000  # bytes of a call's compressed pickle
CHUNK = 3_900  # characters per string of it (the host cuts longer strings it reads back)


class Pickles:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.replays = int(spec.get("replays", 0))
        self._done: dict[str, set[str]] = {}  # callable -> the inputs already pickled
        self._done_edited: dict[str, set[str]] = {}  # ... past `replays`, in the tests the change edits
        edited = spec.get("edited") or {}
        self.functions = set(edited.get("functions", ()))
        self.files = set(edited.get("files", ()))
        self.dirs = set(edited.get("dirs", ()))
        self.in_edited = False  # whether the change edits the test running now
        self.reads = {k: tuple(v) for k, v in spec.get("reads", {}).items()}
        self._kinds: dict[str, set[tuple[str, str]]] = {}  # callable -> the kinds pickled or tried past N
        self._tries: dict[str, int] = {}  # callable -> calls tried past `replays` for a kind not pickled

    def begin_test(self, nodeid: str) -> None:
        """The test about to run: whether the change edits its code (testfiles.ChangedTests.covers)."""
        path, _, rest = nodeid.partition("::")
        qual = rest.split("[", 1)[0].replace("::", ".")
        self.in_edited = (
            path in self.files
            or f"{path}::{qual}" in self.functions
            or any(d == "" or path.startswith(d + "/") for d in self.dirs)
        )

    def add(self, frame: Any, key: str, rec: dict[str, Any]) -> None:
        """The call's positional and keyword arguments pickled into `rec["pickled"]` (a constructor's
        without its `self`), within the budget above."""
        if not self.replays:
            return
        done = self._done.setdefault(key, set())
        if len(done) >= self.replays:
            if self.in_edited:
                done = self._done_edited.setdefault(key, set())
                if len(done) >= self.replays:
                    return
            elif not self._new_kind(key, rec["_objs"]):
                return
        sig = json.dumps([rec["args"], rec["_states"]], sort_keys=True)
        if sig in done:
            return
        qual = key.split("::", 1)[1]
        call = call_of(frame, qual)
        if call is None:
            return
        _, _, pos, kw = call
        if qual.endswith(".__init__"):
            pos = pos[1:]
        try:
            data = zlib.compress(pickle.dumps((pos, kw), protocol=4), 6)
        except Exception:  # noqa: BLE001 (a lock, a lambda, an open file: not picklable, not replayed)
            return
        if len(data) > MAX_PICKLE:
            return
        done.add(sig)
        self._kinds.setdefault(key, set()).update(self.kinds(key, rec["_objs"]))
        text = base64.b64encode(data).decode("ascii")
        rec["pickled"] = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]

    def _new_kind(self, key: str, objs: dict[str, Any]) -> bool:
        """Whether to try a call past `replays`: it brings a kind no call tried had, and fewer than `replays`
        were tried so. Its kinds count as tried whether it pickles or not: a kind that does not pickle
        (a test's local class) is not tried again on each of its calls."""
        seen, tries = self._kinds.setdefault(key, set()), self._tries.get(key, 0)
        kinds = self.kinds(key, objs)
        if kinds <= seen or tries >= self.replays:
            return False
        self._tries[key] = tries + 1
        seen |= kinds
        return True

    def kinds(self, key: str, objs: dict[str, Any]) -> set[tuple[str, str]]:
        """(name, type) of each argument and of each field in `reads` of an object argument
        (`("self.nested", "PetSchema")`; a class: its metaclass, `type`), read without running their code."""
        out: set[tuple[str, str]] = set()
        for name, value in objs.items():
            out.add((name, type(value).__name__))
            try:
                held = object.__getattribute__(value, "__dict__")
            except Exception:  # noqa: BLE001, S112 (no __dict__, or a hostile __getattribute__)
                continue
            if isinstance(held, dict):
                out.update(
                    (f"{name}.{a}", type(held[a]).__name__) for a in self.reads.get(key, ()) if a in held
                )
        return out
