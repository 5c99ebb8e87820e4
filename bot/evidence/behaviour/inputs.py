"""One input for a changed callable, as the call harness (prereview_harness.py) is given it: literal
arguments, docstring examples, a replayed call from the tests (steered or not), or an expression."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Input:
    callable: str  # Changed.key
    origin: str  # "doctest" | "hypothesis" | "boundary" | "model"
    args: tuple[str, ...] = ()  # literal reprs
    kwargs: tuple[tuple[str, str], ...] = ()
    doctest: tuple[tuple[str, str], ...] = ()  # (source, want) examples, run in order
    instance: bool = False  # a method called on a fresh `Class()` (its class built with no arguments)
    builds: tuple[tuple[str, str], ...] = ()  # (name, module path) of the project classes its args build
    report: tuple[int, ...] = ()  # the doctest examples whose results count (empty: all; others are setup)
    nesting: bool = False  # a context manager used inside itself, the module state seen at each step
    pickled: tuple[str, ...] = ()  # a call from the tests, replayed: its arguments as the tracer pickled them
    shown: tuple[tuple[str, str], ...] = ()  # a replayed call's arguments as the tests' run showed them
    swap: tuple[
        tuple[str, str], ...
    ] = ()  # steer.py: a replayed call with these parameters set (`shown` too)
    seeded: bool = False  # seeded.py: the swap is a literal of the changed lines (no model chose it)
    crossed: bool = False  # crossed.py: the swap is a value another of the tests' calls gave it (seeded too)
    probe: str = ""  # steer.py: an expression the model wrote from a test, run after the test's `imports`
    imports: str = ""

    def expr(self, qualname: str) -> str:
        """The call as a reader would write it (methods on their fresh instance); '' for doctests."""
        if self.nesting:
            name = qualname.rsplit(".", 1)[-1]
            return f"with {name}(): with {name}(): ..."
        if self.doctest or self.probe:
            return self.probe
        shown = ", ".join([*self.args, *(f"{k}={v}" for k, v in self.kwargs)])
        if self.instance and "." in qualname:
            owner, name = qualname.rsplit(".", 1)
            return f"{owner.rsplit('.', 1)[-1]}().{name}({shown})"
        return ""
