"""The model's steered expressions (behaviour.steer, expressions.py) are code built from the pull request's
untrusted text: on the host they are only parsed, never run; they run in the sandbox next to the change's
code. One that writes to a host path, or reads the review's token from the environment, reaches neither."""

from __future__ import annotations

import json

import pytest

from bot.evidence.behaviour import expressions

from ..evidence.test_behaviour_objects import _own_cache, needs_bwrap  # noqa: F401
from ..evidence.test_behaviour_steer import QUERY, QUERY_BUG, QUERY_TESTS, _expressions, _review


@pytest.mark.parametrize(
    "text",
    ["__import__('os').system('id')", "exec('x=1')", "Query.__init__.__globals__", "(lambda: 1)()"],
)
def test_an_expression_that_does_more_than_compute_is_refused_on_the_host(text) -> None:
    assert expressions.expression(text) is None


@needs_bwrap
def test_a_steered_expression_cannot_write_the_host_or_see_the_token(
    make_repo, tmp_path, monkeypatch
) -> None:
    target = tmp_path / "written-by-the-expression"
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + "a" * 36)
    tests = dict(QUERY_TESTS)
    tests["tests/test_query.py"] = "import os\nimport pathlib\n" + tests["tests/test_query.py"]
    repo = make_repo({"query.py": QUERY, **tests}, {"query.py": QUERY_BUG})
    wrote = f"pathlib.Path({str(target)!r}).write_text('x') and Query('a as b').has_alias()"
    token = "Query(os.environ.get('GITHUB_TOKEN', 'none')).has_alias() or Query('a as b').has_alias()"
    data = _review(repo, tmp_path, [_expressions(wrote, token)])
    assert not target.exists()
    assert "ghp_" not in json.dumps(data)
    # both ran in the sandbox (each reached `has_alias` there, which returns another value at head)
    evidence = " ".join(f["evidence"] for f in data["findings"] if f["source"] == "behaviour")
    assert "write_text('x')" in evidence and "os.environ.get('GITHUB_TOKEN'" in evidence, data
