"""review.language: the model writes its prose in that language; the output stays schema-valid and
anchored (code, quotes and CWE ids untouched)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from bot.config import build
from bot.findings import analyze
from bot.findings.language import instruction, language_name
from bot.forges.local import LocalForge
from bot.jobs.ask import ask_messages
from bot.models.scripted import ScriptedModel
from bot.pipeline import run as runner
from bot.render import render
from bot.types import ChangeRef, PrereviewError

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "bot/schemas/review.schema.json").read_text())
BASE = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef last(xs):\n    return xs[len(xs) - 1]\n"
HEAD = "def mean(xs):\n    return sum(xs) / (len(xs) - 1)\n\n\ndef last(xs):\n    return xs[len(xs)]\n"


def test_codes_and_the_instruction() -> None:
    assert language_name("de") == "German" and language_name("zh-TW") == "Traditional Chinese"
    assert language_name("de-AT") == "German" and language_name("pt_BR") == "Brazilian Portuguese"
    assert language_name("xx") is None
    assert instruction("") == "" and instruction("en") == ""
    text = instruction("ja")
    assert "Japanese" in text and "CWE ids exactly" in text and "quote is still copied exactly" in text


def test_config_accepts_known_codes_and_names_the_fix_for_unknown_ones() -> None:
    assert build({"review": {"language": "zh"}}, env={}).review.language == "zh"
    with pytest.raises(PrereviewError, match=r"review.language: .*unknown language code 'klingon'"):
        build({"review": {"language": "klingon"}}, env={})


@pytest.fixture
def bug_repo(make_repo) -> Path:  # type: ignore[no-untyped-def]
    return make_repo({"stats.py": BASE}, {"stats.py": HEAD})


def _cfg(**model: str):  # type: ignore[no-untyped-def]
    return build(
        {
            "model": model or {"backend": "scripted"},
            "review": {"language": "ja"},
            "scanners": {"patterns": False, "bandit": False, "explain_scanner_findings": True},
            "tests": "off",
            "patches": {"enabled": False},
        },
        env={},
    )


def test_every_model_prompt_of_a_review_carries_the_language(bug_repo: Path) -> None:
    model = ScriptedModel()
    change = LocalForge().fetch(ChangeRef("local", str(bug_repo), "HEAD~", "HEAD"))
    runner.review_change(change, _cfg(), model=lambda: model)  # type: ignore[arg-type]
    assert model.requests
    for system, _user in model.requests:
        assert "in Japanese" in system.content
    assert "in Japanese" not in analyze.system_prompt("")  # English stays the default
    ask = ask_messages(change, "why?", budget=4000, count=len, review=_cfg().review)
    assert "in Japanese" in ask[0].content


class _Recording:
    """The real model, with every request's system prompt kept for the assertions."""

    def __init__(self, model):  # type: ignore[no-untyped-def]
        self._m, self.systems = model, []

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._m, name)

    def complete(self, messages, **kw):  # type: ignore[no-untyped-def]
        self.systems.append(messages[0].content)
        return self._m.complete(messages, **kw)


@pytest.mark.model
@pytest.mark.parametrize("language", ["ja", "de"])
def test_real_model_review_in_another_language_stays_schema_valid_and_anchored(
    bug_repo: Path, test_model_path: Path, language: str
) -> None:
    cfg = _cfg(name=str(test_model_path))
    cfg = cfg.model_copy(update={"review": cfg.review.model_copy(update={"language": language})})
    lazy = runner.LazyModel(cfg, runner.Quiet())
    recording: list[_Recording] = []

    def model():  # type: ignore[no-untyped-def]
        if not recording:
            recording.append(_Recording(lazy()))
        return recording[0]

    change = LocalForge().fetch(ChangeRef("local", str(bug_repo), "HEAD~", "HEAD"))
    review = runner.review_change(change, cfg, model=model)
    jsonschema.validate(json.loads(render(review, "json")), SCHEMA)
    assert recording and all(language_name(language) in s for s in recording[0].systems)
    assert not any("not valid findings JSON" in s.reason for s in review.coverage.skipped)
    head_lines = HEAD.splitlines()
    for f in review.findings:
        assert f.path == "stats.py" and 1 <= f.line <= len(head_lines)
        assert f.in_diff and f.quote is not None
        assert re.sub(r"\s+", "", f.quote) in re.sub(r"\s+", "", head_lines[f.line - 1])
        assert f.cwe is None or re.fullmatch(r"CWE-[1-9][0-9]{0,3}", f.cwe)


ENGLISH = "The loop bound is off by one: it reads past the end of the list."
GERMAN = "Die Schleifengrenze ist um eins verschoben: sie liest über das Ende der Liste hinaus."


def test_written_in_tells_the_asked_language_from_english() -> None:
    from bot.findings.language import written_in

    assert written_in(ENGLISH, "de") is False and written_in(GERMAN, "de") is True
    assert written_in("ループの境界が1つずれています。", "ja") is True
    assert written_in("`range(n + 1)` reads past the end of the list.", "ja") is False
    assert written_in("`xs[len(xs)]`", "de") is None  # code only: cannot tell
    assert written_in(ENGLISH, "en") is None and written_in(ENGLISH, "sw") is None


def _review_in_german(bug_repo: Path, translation: str) -> tuple[str, list]:  # type: ignore[type-arg]
    finding = {"quote": "return xs[len(xs)]", "line": 6, "message": ENGLISH, "category": "bug"}
    finding |= {"severity": "high", "cwe": ""}
    model = ScriptedModel(
        {
            "replies": [
                {"match": "^The loop bound", "text": json.dumps({"german": translation})},
                {"findings": [finding]},
            ],
            "default": {"text": json.dumps({"verdict": "confirmed"})},
        }
    )
    cfg = _cfg()
    cfg = cfg.model_copy(update={"review": cfg.review.model_copy(update={"language": "de"})})
    change = LocalForge().fetch(ChangeRef("local", str(bug_repo), "HEAD~", "HEAD"))
    review = runner.review_change(change, cfg, model=lambda: model)  # type: ignore[arg-type]
    [f] = [f for f in review.findings if f.source == "model"]
    return f.message, model.requests


def test_a_message_the_model_wrote_in_english_is_translated(bug_repo: Path) -> None:
    message, requests = _review_in_german(bug_repo, GERMAN)
    assert message == GERMAN
    [ask] = [r for r in requests if "translator" in r[0].content]
    assert ask[-1].content == ENGLISH and "into German" in ask[0].content


def test_a_translation_that_is_not_in_the_language_is_not_kept(bug_repo: Path) -> None:
    message, _ = _review_in_german(bug_repo, "The loop is wrong and it is off by one.")
    assert message == ENGLISH
