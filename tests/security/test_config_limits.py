"""What a repository's configuration cannot do to the host or to a shared server (issue 25, item 7).

The `.prereview.yml` a server reads is the base branch's: written by whoever can push there, so it is
parsed with bounds and its budgets cannot exceed the server's own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot import config as config_mod
from bot.jobs import repo_config
from bot.server import settings
from bot.types import PrereviewError

DEEP = [
    "[" * 10_000,  # 10 KB of brackets: the parser recursed until RecursionError ("internal error")
    "review:\n  exclude: " + "[" * 3_000,
    "tests: " + "{a: " * 3_000,
    "a: " + "[" * 100 + "]" * 100,  # parses, but nothing after the parser should have to walk it
]


@pytest.mark.parametrize("text", DEEP, ids=["brackets", "in-a-key", "flow-mappings", "parsed-deep"])
def test_deep_nesting_is_a_one_line_error_naming_the_fix(text: str) -> None:
    with pytest.raises(PrereviewError) as cli:
        config_mod.parse_yaml(text, ".prereview.yml")
    with pytest.raises(PrereviewError) as server:
        repo_config.load(settings.load(None, env={}), lambda: text, "b" * 40)
    for exc in (cli.value, server.value):
        msg = str(exc)
        assert "\n" not in msg and "nested more than" in msg and "write the config flat" in msg, msg


def test_a_repository_cannot_raise_the_servers_behaviour_budgets(tmp_path: Path) -> None:
    own = tmp_path / "server.yml"
    own.write_text("behaviour:\n  budget_seconds: 60\n  max_calls: 20\n")
    server = settings.load(own, env={})
    greedy = (
        "behaviour:\n  budget_seconds: 86400\n  max_calls: 100000\n  max_traced_calls: 100000\n"
        "  call_timeout: 3600\n  wrapped_inputs: 1000\n"
    )
    cfg, _ = repo_config.load(server, lambda: greedy, "b" * 40)
    assert cfg.behaviour.model_dump() == server.behaviour.model_dump()
    modest, _ = repo_config.load(
        server, lambda: "behaviour:\n  budget_seconds: 10\n  max_calls: 5\n", "b" * 40
    )
    assert (modest.behaviour.budget_seconds, modest.behaviour.max_calls) == (10, 5)  # lowering is allowed


def test_the_server_builds_environments_from_wheels_only_unless_its_owner_says_otherwise(tmp_path) -> None:
    assert settings.load(None, env={}).tests.wheels_only is True
    own = tmp_path / "server.yml"
    own.write_text("tests: on\n")
    assert settings.load(own, env={}).tests.wheels_only is True
    own.write_text("tests:\n  wheels_only: false\n")
    server = settings.load(own, env={})
    assert server.tests.wheels_only is False  # the owner's choice
    cfg, notes = repo_config.load(
        settings.load(None, env={}), lambda: "tests:\n  wheels_only: false\n", "b" * 40
    )
    assert cfg.tests.wheels_only is True and "tests.wheels_only" in notes[0]  # never a repository's
    assert config_mod.build({}, env={}).tests.wheels_only is False  # the CLI (CI runners) keeps its default
