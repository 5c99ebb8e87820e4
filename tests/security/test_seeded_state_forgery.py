"""A seeded call reads the fields of the objects a test built from the tracer's record (seeded.py
`_fields`). That record comes from the sandbox, next to the change's code, so it can be forged: a state
of megabytes must not reach the parser (a forged 10 MB repr once took it to 3.9 GB, pysyntax.py)."""

from __future__ import annotations

import pytest

from bot import pysyntax
from bot.evidence.behaviour import seeded


def test_a_forged_state_longer_than_the_tracer_writes_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[int] = []
    real = pysyntax.parse

    def watched(source: str, mode: str = "exec"):
        parsed.append(len(source))
        return real(source, mode)

    monkeypatch.setattr(seeded.pysyntax, "parse", watched)
    forged = "Money(currency=" + "(" * 2_000_000 + "'x'" + ")" * 2_000_000 + ")"
    assert seeded._fields(forged) == {}
    assert parsed == []
    assert seeded._fields("Money(amount=5, currency='EUR')") == {"amount": 5, "currency": "EUR"}
    assert parsed == [len("Money(amount=5, currency='EUR')")]
