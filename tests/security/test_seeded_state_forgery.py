"""A seeded call reads the fields of the objects a test built from the tracer's record (seeded.py
`_fields`, and crossed.py `kinds` when it picks the calls to cross). That record comes from the sandbox,
next to the change's code, so it can be forged: a state of megabytes is not read at all (its values go to
the parser, and a forged 10 MB repr once took that to 3.9 GB, pysyntax.py)."""

from __future__ import annotations

import pytest

from bot import pysyntax
from bot.evidence.behaviour import crossed, seeded
from bot.evidence.behaviour.compare import Call


def test_a_forged_state_longer_than_the_tracer_writes_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []
    real = seeded._top_level

    def watched(body: str) -> list[str]:
        read.append(len(body))
        return real(body)

    monkeypatch.setattr(seeded, "_top_level", watched)
    forged = "Money(currency=" + "(" * 2_000_000 + "'x'" + ")" * 2_000_000 + ")"
    assert seeded._fields(forged) == ({}, False)
    assert read == []
    shown = Call("m.py::f", "t::a", (("self", "<M>"),), {"kind": "return"}, state=(("self", forged),))
    assert crossed.kinds(shown, [("self", "currency")]) == set()  # the crossed calls' choice reads it neither
    assert read == []
    assert seeded._fields("Money(amount=5, currency='EUR')") == ({"amount": 5, "currency": "EUR"}, True)
    assert len(read) == 1 and read[0] < pysyntax.LITERAL_CHARS
