"""The tracer pickles the first N distinct inputs of each callable, and past them a call that brings a kind
of value none of the pickled ones had (prereview_pickles.py): an instance where the first calls held a
class, in a field the callable's lines name."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bot" / "evidence" / "behaviour"))
from prereview_pickles import Pickles  # noqa: E402

KEY = "shop.py::show"


class Schema:
    pass


class Box:
    def __init__(self, nested: Any, n: int) -> None:
        self.nested, self.n = nested, n


def show(box: Box, pickles: Pickles) -> dict[str, Any]:
    """A traced call: its record, as the tracer fills it before `Pickles.add`."""
    rec = {"args": {"box": f"<Box {box.n}>"}, "_states": {"box": f"Box(n={box.n})"}, "_objs": {"box": box}}
    pickles.add(sys._getframe(), KEY, rec)
    return rec


def test_a_call_of_a_new_kind_is_pickled_past_the_first_ones() -> None:
    pickles = Pickles({"replays": 2, "reads": {KEY: ["nested"]}})
    got = [
        "pickled" in show(Box(nested, n), pickles)
        for n, nested in enumerate([Schema, Schema, Schema, Schema(), Schema(), "Schema"])
    ]
    # two of the first kind; a third of it is not; an instance is; a second instance is not; a string is
    assert got == [True, True, False, True, False, True]
    assert pickles.kinds(KEY, {"box": Box(Schema(), 0)}) == {("box", "Box"), ("box.nested", "Schema")}


def test_without_reads_only_the_arguments_types_count() -> None:
    pickles = Pickles({"replays": 1})
    got = ["pickled" in show(Box(nested, n), pickles) for n, nested in enumerate([Schema, Schema()])]
    assert got == [True, False]


def test_a_new_kind_that_does_not_pickle_is_tried_once_not_on_each_call(monkeypatch) -> None:
    """A test's local class cannot be pickled: its calls past the first N are tried once for that kind,
    not each time (each try pickles the whole object graph), and at most N tries in all."""
    import prereview_pickles

    class Local:  # not picklable: a local class
        pass

    tried: list[int] = []
    real = prereview_pickles.pickle.dumps

    def dumps(obj: Any, protocol: int) -> bytes:
        tried.append(1)
        return real(obj, protocol=protocol)

    monkeypatch.setattr(prereview_pickles.pickle, "dumps", dumps)
    pickles = Pickles({"replays": 2, "reads": {KEY: ["nested"]}})
    got = [
        "pickled" in show(Box(nested, n), pickles)
        for n, nested in enumerate([Schema, Schema, *[Local()] * 5])
    ]
    assert got == [True, True, False, False, False, False, False] and len(tried) == 3
    more = [1, 2.0, b"x", None, "s"]  # five more new kinds: two more tries, then none
    got = ["pickled" in show(Box(nested, 10 + n), pickles) for n, nested in enumerate(more)]
    assert got == [True, False, False, False, False] and len(tried) == 4
