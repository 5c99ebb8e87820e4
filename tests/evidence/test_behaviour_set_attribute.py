"""The harness sets an attribute of an unpickled argument before a seeded call (prereview_steer.py
`set_attribute`): an instance attribute or a slot holding a value of the same type, set without running
any of the project's code (no property, no `__setattr__`)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bot" / "evidence" / "behaviour"))
import prereview_steer as steer  # noqa: E402


class Plain:
    def __init__(self) -> None:
        self.sep, self.size, self.ratio, self.on = ",", 3, 0.5, True

    @property
    def shown(self) -> str:
        return self.sep


class Slots:
    __slots__ = ("sep", "unset")

    def __init__(self) -> None:
        self.sep = ","


class Guarded(Plain):
    def __setattr__(self, name: str, value: object) -> None:
        raise RuntimeError("project code ran")


@dataclasses.dataclass(frozen=True)
class Frozen:
    sep: str = ","


def test_an_instance_attribute_and_a_slot_are_set() -> None:
    p, s, f = Plain(), Slots(), Frozen()
    steer.set_attribute(p, "sep", "/")
    steer.set_attribute(p, "size", 4)
    steer.set_attribute(p, "ratio", 2)  # an int literal for a float attribute: the float
    steer.set_attribute(s, "sep", "/")
    steer.set_attribute(f, "sep", "/")
    assert (p.sep, p.size, p.ratio, type(p.ratio), s.sep, f.sep) == ("/", 4, 2.0, float, "/", "/")


def test_no_project_code_runs_and_other_types_are_refused() -> None:
    g = Guarded.__new__(Guarded)
    object.__setattr__(g, "sep", ",")
    steer.set_attribute(g, "sep", "/")  # its __setattr__ is not called
    assert g.sep == "/"
    p = Plain()
    for attr, value in [("shown", "/"), ("sep", 1), ("size", "4"), ("on", False), ("size", 2.5), ("nope", 1)]:
        with pytest.raises(TypeError):
            steer.set_attribute(p, attr, value)
    with pytest.raises(TypeError):
        steer.set_attribute(Slots(), "unset", "x")


def test_a_dotted_swap_sets_the_attribute_of_that_argument() -> None:
    def show(self: Plain, n: int) -> str:
        return self.sep * n

    p = Plain()
    pos, kw = steer.swapped(show, [p, 2], {}, {"self.sep": "'/'"}, lambda text, _: eval(text))  # noqa: S307
    assert show(*pos, **kw) == "//"
    with pytest.raises(KeyError):
        steer.swapped(show, [p], {}, {"other.sep": "'/'"}, lambda text, _: eval(text))  # noqa: S307


def test_loose_sets_a_value_of_another_type_but_only_an_instance_attribute() -> None:
    """crossed.py: a value the same attribute held in another of the tests' calls, whatever its type."""
    p, s = Plain(), Slots()
    steer.set_attribute(p, "sep", None, loose=True)
    steer.set_attribute(p, "on", ("a",), loose=True)
    steer.set_attribute(s, "sep", 1, loose=True)
    assert (p.sep, p.on, s.sep) == (None, ("a",), 1)
    g = Guarded.__new__(Guarded)
    object.__setattr__(g, "sep", ",")
    steer.set_attribute(g, "sep", None, loose=True)  # its __setattr__ is not called
    assert g.sep is None
    for obj, attr in [(Plain(), "shown"), (Plain(), "nope"), (Slots(), "unset")]:
        with pytest.raises(TypeError):  # a property, a name it does not hold, an unset slot: refused
            steer.set_attribute(obj, attr, None, loose=True)
