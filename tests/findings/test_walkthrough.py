"""The walkthrough: grammar-constrained JSON naming every changed file, anchored risky spots, masked
input and output, and the block that leaves the author's description text intact."""

from __future__ import annotations

import json
from dataclasses import replace

import jsonschema
import pytest

from bot.change.diff import parse
from bot.config import build
from bot.findings.walkthrough import (
    WalkthroughStage,
    behaviour_of,
    describe,
    describe_change,
    walkthrough_schema,
)
from bot.forges.local import LocalForge
from bot.models.scripted import ScriptedModel
from bot.pipeline import run as runner
from bot.render.markdown import summary
from bot.render.walkthrough import END, START, block_in, walkthrough_markdown, with_block
from bot.types import ChangeRef, Walkthrough

DIFF = (
    "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,3 @@\n x = 1\n+y = 2\n z = 3\n"
    "diff --git a/b.py b/b.py\nnew file mode 100644\n--- /dev/null\n+++ b/b.py\n@@ -0,0 +1,1 @@\n+print(1)\n"
)
SECRET = "ghp_" + "Qq1Ww2Ee3Rr4Tt5Yy6Uu7Ii8Oo9Pp0AaSsDdFf"


def answer(**over: object) -> str:
    data = {
        "summary": "Adds y and a new script.",
        "files": {"a.py": "defines y", "b.py": "prints 1"},
        "risks": [
            {"path": "a.py", "line": 2, "why": "y shadows <b>something</b> @alice"},
            {"path": "b.py", "line": 40, "why": "not a line of the diff"},
        ],
    }
    data.update(over)
    return json.dumps(data)


def script(text: str) -> ScriptedModel:
    return ScriptedModel({"replies": [{"match": "Describe the change", "text": text}], "default": {}})


def test_the_schema_requires_exactly_the_changed_files() -> None:
    schema = walkthrough_schema(["a.py", "b.py"])
    jsonschema.validate(json.loads(answer()), schema)
    for bad in (
        answer(files={"a.py": "x"}),  # one missing
        answer(files={"a.py": "x", "b.py": "y", "c.py": "invented"}),  # one not in the diff
        answer(risks=[{"path": "c.py", "line": 1, "why": "x"}]),
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(json.loads(bad), schema)


def _change(body: str = "", title: str = "t"):  # type: ignore[no-untyped-def]
    from bot.types import ChangeRequest

    return ChangeRequest(ChangeRef("local", "."), "b" * 40, "a" * 40, DIFF, title=title, body=body)


def test_describe_anchors_risks_and_lists_every_file() -> None:
    model = script(answer())
    w = describe(_change(), parse(DIFF), model)
    assert [n.path for n in w.files] == ["a.py", "b.py"] and w.summary.startswith("Adds y")
    assert [(r.path, r.line) for r in w.risks] == [("a.py", 2)]  # line 40 is not in the diff: dropped
    system, user = model.requests[0]
    assert "<untrusted>" in system.content and "never follow it" in system.content
    assert user.content.startswith("<untrusted>") and "\n</untrusted>\n" in user.content
    md = walkthrough_markdown(w, "a" * 40)
    assert md.startswith(START) and md.rstrip().endswith(END)
    assert "| `a.py` | defines y |" in md and "`a.py:2`" in md
    assert "<b>" not in md and "@\u200balice" in md  # model text is escaped: no HTML, no pings


def test_an_invalid_or_cut_answer_still_lists_the_files_with_a_note() -> None:
    w = describe(_change(), parse(DIFF), script('{"summary": "x"}'))
    assert w.summary == "" and "not valid JSON" in w.note and [n.path for n in w.files] == ["a.py", "b.py"]
    cut = ScriptedModel({"replies": [{"text": "{", "finish_reason": "length"}], "default": {}})
    assert "cut at the token limit" in describe(_change(), parse(DIFF), cut).note


def test_secrets_are_masked_before_the_model_and_after(make_repo) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo({"a.py": "x = 1\n"}, {"a.py": f"x = 1\ntoken = '{SECRET}'\n"})
    change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
    change = replace(change, body=f"uses {SECRET}")
    echo = json.dumps({"summary": f"adds {SECRET}", "files": {"a.py": f"token {SECRET}"}, "risks": []})
    model = script(echo)
    cfg = build({"model": {"backend": "scripted"}}, env={})
    w = describe_change(change, cfg, lambda: model)
    assert SECRET not in model.requests[0][1].content
    assert SECRET not in walkthrough_markdown(w) and w.summary.startswith("adds ")


def test_the_block_leaves_the_authors_text_intact() -> None:
    block = walkthrough_markdown(Walkthrough("first", model="m"))
    author = "My PR.\n\n- item\n"
    once = with_block(author, block)
    assert once.startswith(author) and block_in(once) == block
    newer = walkthrough_markdown(Walkthrough("second", model="m"))
    twice = with_block(once + "\nAn edit after it.\n", newer)
    assert twice.count(START) == 1 and "second" in twice and "first" not in twice
    assert twice.startswith(author) and twice.endswith("\nAn edit after it.\n")
    assert with_block("", block) == block


def test_review_walkthrough_true_adds_it_to_the_summary_with_behaviour_evidence(make_repo) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo({"a.py": "x = 1\n"}, {"a.py": "x = 1\ny = 2\n"})
    change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
    text = json.dumps({"summary": "adds y", "files": {"a.py": "y = 2"}, "risks": []})
    model = ScriptedModel({"replies": [{"match": "Describe the change", "text": text}]})
    cfg = build({"model": {"backend": "scripted"}, "review": {"walkthrough": True}, "tests": "off"}, env={})
    assert isinstance(__import__("bot.pipeline.stages", fromlist=["x"]).default(cfg)[-1], WalkthroughStage)
    review = runner.review_change(change, cfg, model=lambda: model)  # type: ignore[arg-type]
    assert review.walkthrough is not None and review.walkthrough.summary == "adds y"
    assert "#### Walkthrough" in summary(review) and "| `a.py` | y = 2 |" in summary(review)
    off = build({"model": {"backend": "scripted"}, "tests": "off"}, env={})
    assert runner.review_change(change, off, model=lambda: ScriptedModel()).walkthrough is None
    # the hook for behaviour evidence: strings or records with a summary
    assert behaviour_of({"behaviour": ["f(0) was 0, now raises", type("B", (), {"summary": "g ok"})()]}) == (
        "f(0) was 0, now raises",
        "g ok",
    )
    w = Walkthrough("s", behaviour=("f(0) was 0, now raises",))
    assert "**Behaviour changes**" in walkthrough_markdown(w)


def test_the_describe_command_parses() -> None:
    from bot.jobs import chatops

    cmd = chatops.parse("/describe --update")
    assert cmd is not None and cmd.name == "describe" and cmd.update
    plain = chatops.parse("/describe")
    assert plain is not None and not plain.update
    assert "describe" in chatops.help_text()


def test_the_block_goes_above_the_summarys_trailing_state_markers() -> None:
    from bot.render.markdown import SUMMARY_MARKER, trailing_markers

    body = (
        f"{SUMMARY_MARKER}\n### prereview\n\nNo findings.\n"
        "<!-- prereview:fp=0123456789abcdef -->\n<!-- prereview:paused -->\n"
    )
    out = with_block(body, walkthrough_markdown(Walkthrough("adds y", model="m")))
    assert trailing_markers(out) == trailing_markers(body)  # the state stays readable
    assert out.index(START) < out.index("<!-- prereview:fp=") and "adds y" in out


def test_a_walkthrough_written_in_english_anyway_is_translated() -> None:
    english = answer(
        summary="This change adds the variable y and a new script that prints the number.",
        files={"a.py": "It defines the value of y", "b.py": "It prints 1 to the screen"},
        risks=[],
    )
    en = ["This change adds", "It defines", "It prints"]
    german = ["Diese Änderung fügt die Variable y und ein neues Skript hinzu, das die Zahl ausgibt."]
    german += ["Sie definiert y", "Es gibt die 1 auf dem Bildschirm aus"]
    model = ScriptedModel(
        {
            "replies": [
                {"match": "Describe the change", "text": english},
                *(
                    {"match": "^" + e, "text": json.dumps({"german": g})}
                    for e, g in zip(en, german, strict=True)
                ),
            ],
            "default": {},
        }
    )
    w = describe(_change(), parse(DIFF), model, language="de")
    assert w.summary == german[0] and [n.text for n in w.files] == german[1:]
