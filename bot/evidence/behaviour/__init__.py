"""Behaviour evidence: changed callables run at base and head on the same inputs, differences judged."""
