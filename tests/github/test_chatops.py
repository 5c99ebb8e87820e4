"""The PR-comment command parser shared by the GitHub Action and the webhook server."""

from __future__ import annotations

import json

import pytest

from bot.jobs.chatops import Command, help_text, is_authorized, parse
from tests.conftest import PLATFORM


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("/review", Command("review")),
        ("/review -i", Command("review", incremental=True, text="-i")),
        ("/review --incremental", Command("review", incremental=True, text="--incremental")),
        ("/review -i --full", Command("review", incremental=False, text="-i --full")),
        ("  /REVIEW  ", Command("review")),
        ("/fix", Command("fix")),
        ("/fix src/a.py:12", Command("fix", args=("src/a.py:12",), text="src/a.py:12")),
        ("/help", Command("help")),
        ("/pause", Command("pause")),
        ("/resume", Command("resume")),
        ("thanks!\n\n/review -i\nplease", Command("review", incremental=True, text="-i")),
    ],
)
def test_parse_commands(body: str, expected: Command) -> None:
    assert parse(body) == expected


def test_ask_keeps_the_question_verbatim() -> None:
    cmd = parse("/ask is this thread-safe? it's called from two workers")
    assert cmd is not None and cmd.name == "ask"
    assert cmd.question == "is this thread-safe? it's called from two workers"
    assert parse("/ask").question == ""  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "body",
    [
        "",
        None,
        "looks good to me",
        "/retest",  # another bot's command
        "/reviewer please",  # not a word boundary
        "> /review\nquoted, not a command",
        "```\n/review\n```",
        "please /review this",
        "/ review",
    ],
)
def test_no_command(body: str | None) -> None:
    assert parse(body) is None


def test_word_prefix() -> None:
    expected = Command("review", incremental=True, text="-i")
    assert parse("/prereview review -i", prefix="/prereview") == expected
    assert parse("/prereview help", prefix="/prereview") == Command("help")
    assert parse("/prereviewreview", prefix="/prereview") is None
    assert parse("/review", prefix="/prereview") is None
    assert parse("@prereview ask why?", prefix="@prereview") == Command("ask", args=("why?",), text="why?")


def test_real_payloads_carry_no_command_of_ours() -> None:
    for kind in ("retest", "ok-to-test"):
        name = f"issue_comment.created.on_pr.pac-{kind}.json"
        event = json.loads((PLATFORM / "payloads/github" / name).read_text())
        assert parse(event["comment"]["body"]) is None
        assert is_authorized(event["comment"]["author_association"])


def test_authorisation() -> None:
    assert is_authorized("OWNER") and is_authorized("member") and is_authorized("COLLABORATOR")
    for assoc in ("CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "NONE", "MANNEQUIN", "", None):
        assert not is_authorized(assoc)


def test_help_lists_every_command_with_the_prefix() -> None:
    text = help_text("/prereview")
    for word in ("review", "review -i", "fix", "ask", "help", "pause", "resume"):
        assert f"`/prereview {word}`" in text
    assert "`/review -i`" in help_text()
