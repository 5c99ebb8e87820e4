"""The review pipeline with the scripted model: chunking, coverage, retries, anchoring, in_diff marks."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.change import git
from bot.change.diff import Hunk, Line, parse
from bot.config import Config, build
from bot.findings import analyze
from bot.findings import chunks as context
from bot.findings import model_review as review
from bot.findings.chunks import Chunk, Section
from bot.forges.local import LocalForge
from bot.models.base import ModelError
from bot.models.scripted import ScriptedModel
from bot.types import ChangeRef, ChangeRequest, Finding

FILE_RE = re.compile(r"^File: (.+)$", re.M)
ADDED_RE = re.compile(r"^\s*(\d+) \+ (.*)$", re.M)


def cfg(**review_keys: object) -> Config:
    return build({"model": {"backend": "scripted"}, "review": review_keys}, env={})


def fetch(repo: Path) -> ChangeRequest:
    return LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))


def run(change: ChangeRequest, config: Config, model: ScriptedModel, **kw):
    return review.run(
        change,
        config,
        model_factory=lambda: model,
        read_head=lambda p: git.show(change.workdir, change.head_sha, p),
        **kw,
    )


def script(*replies: dict, default: dict | None = None) -> ScriptedModel:
    return ScriptedModel({"replies": list(replies), "default": default or {"findings": []}})


def finding(quote: str, line: int = 1, severity: str = "medium", message: str = "Bad.", **kw) -> dict:
    return {
        "quote": quote,
        "line": line,
        "message": message,
        "category": kw.get("category", "bug"),
        "severity": severity,
        "cwe": kw.get("cwe", ""),
    }


def _module(name: str, funcs: int) -> str:
    return "".join(f"def {name}_{i}(x):\n    y = x + {i}\n    return y\n\n\n" for i in range(funcs))


# ---------------------------------------------------------------------------------------- chunking
def test_many_files_and_hunks_are_chunked_within_budget(make_repo) -> None:
    base = {f"pkg/m{i}.py": _module(f"m{i}", 12) for i in range(14)}
    head = {
        p: t.replace("y = x + 1\n", "y = x + 1  # one\n").replace("y = x + 10\n", "y = x - 10\n")
        for p, t in base.items()
    }
    repo = make_repo(base, head)
    change = fetch(repo)
    model = ScriptedModel()
    config = cfg(chunk_tokens=300)
    result = run(change, config, model)
    diff = parse(change.diff_text)
    assert result.stats.files == 14 and result.stats.hunks == diff.hunk_count == 28
    assert result.stats.chunks == len(model.requests) > 3
    system = {m[0].content for m in model.requests}
    assert len(system) == 1  # one constant prefix for every chunk (KV cache reuse)
    seen: list[tuple[str, int]] = []
    for messages in model.requests:
        user = messages[-1].content
        assert user.rstrip().endswith("Return the findings as JSON.")  # the diff comes last
        body = user.split("<untrusted>", 1)[1]
        assert model.count_tokens(body) <= 300 + 60  # budget + the small wrapper
        current = None
        for row in body.splitlines():
            m = FILE_RE.match(row)
            if m:
                current = m.group(1)
            a = ADDED_RE.match(row)
            if a:
                seen.append((current, int(a.group(1))))
    added = [(f.path, ln.new_no) for f in diff.files for h in f.hunks for ln in h.added]
    assert sorted(seen) == sorted(added)  # every added line reviewed exactly once
    assert sorted(result.coverage.reviewed) == sorted(base)
    # the scripted model flags the first added line of each chunk: all anchored inside the diff
    assert len(result.findings) == min(len(model.requests), config.review.max_findings)
    assert all(diff.has_line(f.path, f.line) and f.in_diff for f in result.findings)


def test_oversized_hunk_is_split(make_repo) -> None:
    base = {"big.py": "".join(f"a{i} = {i}\n" for i in range(10))}
    head = {"big.py": base["big.py"] + "".join(f"b{i} = {i}\n" for i in range(300))}
    change = fetch(make_repo(base, head))
    model = ScriptedModel()
    result = run(change, cfg(chunk_tokens=400), model)
    assert result.stats.hunks == 1 and result.stats.chunks >= 3
    rows = [int(a.group(1)) for m in model.requests for a in ADDED_RE.finditer(m[-1].content)]
    assert sorted(rows) == list(range(11, 311))


def test_skipped_files_are_listed_in_coverage(make_repo, tmp_path: Path) -> None:
    repo = make_repo(
        {
            "src/app.py": "a = 1\nb = 2\n",
            "src/old.py": "x = 1\n",
            "trim.py": "k = 1\nj = 2\n",
            "docs/guide.md": "hello\n",
        },
        {
            "src/app.py": "a = 1\nb = 3\n",
            "src/old.py": None,
            "trim.py": "k = 1\n",
            "poetry.lock": "x\n",
            "third_party/lib/z.py": "z = 1\n",
            "gen/api_pb2.py": "p = 1\n",
            "web/app.min.js": "var a;\n",
            "docs/guide.md": "hello world\n",
            "tests/test_app.py": "assert True\n",
        },
    )
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    subprocess.run(["git", "-C", str(repo), "add", "logo.png"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@x",
            "commit",
            "-q",
            "--amend",
            "--no-edit",
        ],
        check=True,
    )
    change = fetch(repo)
    result = run(change, cfg(exclude=["docs/*"]), ScriptedModel())
    skipped = {s.path: s.reason for s in result.coverage.skipped}
    assert skipped == {
        "src/old.py": "file deleted",
        "poetry.lock": "lock file",
        "third_party/lib/z.py": "vendored",
        "gen/api_pb2.py": "generated",
        "web/app.min.js": "generated",
        "docs/guide.md": "matches review.exclude",
        "logo.png": "binary file",
    }
    assert sorted(result.coverage.reviewed) == ["src/app.py", "tests/test_app.py", "trim.py"]
    # include narrows; skip_defaults off reviews the lock file
    result = run(change, cfg(include=["src/*"]), ScriptedModel())
    assert result.coverage.reviewed == ("src/app.py",)
    assert {s.reason for s in result.coverage.skipped} >= {"not in review.include"}
    result = run(change, cfg(skip_defaults=False), ScriptedModel())
    assert "poetry.lock" in result.coverage.reviewed and "logo.png" not in result.coverage.reviewed


def test_nothing_reviewable_loads_no_model(make_repo) -> None:
    change = fetch(make_repo({"a.py": "x = 1\ny = 2\n"}, {"a.py": None, "b.lock": "z\n"}))

    def no_model() -> ScriptedModel:
        raise AssertionError("the model must not be created")

    result = review.run(change, cfg(), model_factory=no_model, read_head=lambda p: None)
    assert result.findings == () and result.stats.chunks == 0 and result.stats.model == ""
    assert len(result.coverage.skipped) == 2


# ----------------------------------------------------------------------------------------- retries
@pytest.fixture
def two_file_change(make_repo) -> ChangeRequest:
    return fetch(
        make_repo(
            {"a.py": "x = 1\n", "b.py": "y = 1\n"},
            {"a.py": "x = 1\nx2 = eval(input())\n", "b.py": "y = 1\ny2 = y / 0\n"},
        )
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"text": '{"findings": [{"quote": "x2 = eval(inp', "finish_reason": "length"},
        {"text": "Sure! Here are the findings: none"},
        {"text": json.dumps({"findings": [finding("x2 = eval(input())", severity="urgent")]})},
        {"text": json.dumps({"issues": []})},
    ],
    ids=["length", "not-json", "schema-invalid", "wrong-shape"],
)
def test_bad_reply_is_retried_smaller(two_file_change: ChangeRequest, bad: dict) -> None:
    good = {
        "findings": [
            finding("x2 = eval(input())", 2, "high", category="security", cwe="CWE-95"),
            finding("y2 = y / 0", 2, "medium"),
        ]
    }
    model = script(bad, default=good)
    result = run(two_file_change, cfg(), model)
    # first request had both files; the retry splits them into one request each
    assert [len(FILE_RE.findall(m[-1].content)) for m in model.requests] == [2, 1, 1]
    assert result.stats.chunks == 1 and result.coverage.skipped == ()
    assert {(f.path, f.line, f.severity) for f in result.findings} == {
        ("a.py", 2, "high"),
        ("b.py", 2, "medium"),
    }
    assert next(f for f in result.findings if f.path == "a.py").cwe == "CWE-95"
    assert result.stats.prompt_tokens == sum(
        sum(model.count_tokens(x.content) for x in m) for m in model.requests
    )


def test_single_hunk_retry_asks_for_fewer_findings(make_repo) -> None:
    change = fetch(make_repo({"a.py": "x = 1\n"}, {"a.py": "x = 1\nx2 = 2\n"}))
    seen_schemas: list[int] = []
    model = script({"text": "{", "finish_reason": "length"}, default={"findings": [finding("x2 = 2", 2)]})
    orig = model.complete

    def spy(messages, *, schema=None, max_tokens, temperature=0.0):
        seen_schemas.append(schema["properties"]["findings"]["maxItems"])
        return orig(messages, schema=schema, max_tokens=max_tokens, temperature=temperature)

    model.complete = spy  # type: ignore[method-assign]
    result = run(change, cfg(), model)
    assert seen_schemas == [analyze.MAX_FINDINGS_PER_CHUNK, 2]
    assert [(f.path, f.line) for f in result.findings] == [("a.py", 2)]


def test_failed_retry_is_reported_not_raised(two_file_change: ChangeRequest) -> None:
    model = script(default={"text": "garbage", "finish_reason": "stop"})
    result = run(two_file_change, cfg(), model)
    assert len(model.requests) == 3 and result.findings == ()
    assert result.coverage.reviewed == ()
    reasons = {s.path: s.reason for s in result.coverage.skipped}
    assert set(reasons) == {"a.py", "b.py"}
    assert all(
        r.startswith("not reviewed: model output is not valid findings JSON") for r in reasons.values()
    )
    model = script(default={"text": '{"findings": [', "finish_reason": "length"})
    result = run(two_file_change, cfg(), model)
    assert {s.reason for s in result.coverage.skipped} == {
        "not reviewed: model output cut at the token limit"
    }


def test_backend_failure_propagates_as_user_error(two_file_change: ChangeRequest) -> None:
    model = script({"raise": "model server http://127.0.0.1:9/v1 timed out; raise model.timeout"})
    with pytest.raises(ModelError, match="timed out"):
        run(two_file_change, cfg(), model)


# --------------------------------------------------------------------------------------- anchoring
def test_quotes_anchor_findings_and_hallucinations_are_dropped(make_repo) -> None:
    base = "def total(items):\n    s = 0\n    for it in items:\n        s += it\n    return s\n"
    head = (
        "def total(items):\n    s = 0\n    for it in items[1:]:\n        s += it.price\n"
        "    log('done')\n    return s\n"
    )
    change = fetch(make_repo({"shop.py": base}, {"shop.py": head}))
    model = script(
        {
            "findings": [
                finding("for it in items[1:]:", line=99, severity="high", message="Skips the first item."),
                finding("+        s += it.price", line=1, severity="low"),  # diff marker and indent tolerated
                finding("    s = 0", line=2, severity="medium", message="Context line."),
                finding("launch_missiles(now=True)", line=3, severity="critical", message="Hallucinated."),
                finding("log('done')", line=5, severity="info", message="Below min_severity."),
            ]
        }
    )
    result = run(change, cfg(), model)
    got = {(f.line, f.severity, f.message) for f in result.findings}
    assert got == {(3, "high", "Skips the first item."), (4, "low", "Bad."), (2, "medium", "Context line.")}
    assert all(f.in_diff and f.path == "shop.py" for f in result.findings)
    assert [f.severity for f in result.findings] == ["high", "medium", "low"]  # ranked


def test_findings_outside_the_diff_are_kept_and_marked(make_repo) -> None:
    base = "".join(f"v{i} = {i}\n" for i in range(1, 41))
    change = fetch(make_repo({"m.py": base}, {"m.py": base.replace("v20 = 20", "v20 = 'twenty'")}))

    def scanners(diff):
        return [
            Finding("m.py", 20, "In the diff.", severity="high", source="scanner", rule_id="r1"),
            Finding(
                "m.py", 35, "Same file, outside the hunks.", severity="high", source="scanner", rule_id="r2"
            ),
            Finding(
                "setup.cfg", 3, "File not in the change.", severity="medium", source="scanner", rule_id="r3"
            ),
            Finding("m.py", 18, "Deleted side.", severity="low", side="LEFT", source="scanner", rule_id="r4"),
            Finding("m.py", 20, "Deleted line.", severity="low", side="LEFT", source="scanner", rule_id="r5"),
        ]

    result = run(change, cfg(), script(), extra_findings=scanners)
    marks = {f.rule_id: f.in_diff for f in result.findings}
    assert marks == {"r1": True, "r2": False, "r3": False, "r4": False, "r5": True}
    # in-diff findings rank before outside ones of the same severity
    assert [f.rule_id for f in result.findings][:2] == ["r1", "r2"]


def test_min_severity_dedupe_and_cap(make_repo) -> None:
    change = fetch(
        make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 1\n" + "".join(f"b{i} = {i}\n" for i in range(8))})
    )
    items = [
        finding(f"b{i} = {i}", i + 2, sev)
        for i, sev in enumerate(["medium", "info", "critical", "high", "high"])
    ]
    result = run(change, cfg(max_findings=3, min_severity="medium"), script({"findings": items}))
    assert [f.severity for f in result.findings] == ["critical", "high", "high"]
    # the same finding reported twice (same quote, same category) is one finding, at its highest severity
    dup = script({"findings": [finding("b0 = 0", 2, "low"), finding("b0 = 0", 2, "high")]})
    result = run(change, cfg(), dup)
    assert [(f.line, f.severity) for f in result.findings] == [(2, "high")]


def test_instructions_and_title_reach_the_prompt(make_repo) -> None:
    change = fetch(make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"}))
    model = ScriptedModel()
    run(change, cfg(instructions="Flag every print()."), model)
    (messages,) = model.requests
    assert "Flag every print()." in messages[0].content
    assert "Pull request title: head change" in messages[1].content
    assert "<untrusted>" in messages[1].content and "Flag every" not in messages[1].content


def test_model_finding_on_shown_context_is_kept_outside_the_diff(make_repo) -> None:
    """The prompt widens each hunk with surrounding head code; a quote of such a line is real, not a
    hallucination: kept with in_diff false (it goes to the summary, not inline)."""
    base = (
        "def f(a):\n    unsafe = eval(a)\n"
        + "".join(f"    v{i} = {i}\n" for i in range(8))
        + "    return a\n"
    )
    head = base.replace("    return a\n", "    return a + 1\n")
    change = fetch(make_repo({"f.py": base}, {"f.py": head}))
    model = script(
        {
            "findings": [
                finding("unsafe = eval(a)", 2, "high", category="security", cwe="CWE-95"),
                finding("return a + 1", 11, "low"),
            ]
        }
    )
    result = run(change, cfg(), model)
    assert "    2       unsafe = eval(a)" in model.requests[0][-1].content  # shown, outside the hunk
    got = {(f.line, f.in_diff) for f in result.findings}
    assert got == {(2, False), (11, True)}
    assert parse(change.diff_text).has_line("f.py", 11) and not parse(change.diff_text).has_line("f.py", 2)


def test_change_larger_than_the_context_is_listed_not_sent(make_repo) -> None:
    line = "var a = [" + "1, " * 20_000 + "];\n"  # ~15k scripted tokens > the 8192-token context
    change = fetch(
        make_repo(
            {"app.js": "var b = 1;\n", "ok.py": "x = 1\n"},
            {"app.js": "var b = 1;\n" + line, "ok.py": "x = 2\n"},
        )
    )
    model = ScriptedModel()
    result = run(change, cfg(), model)
    assert len(model.requests) == 1 and "app.js" not in model.requests[0][-1].content
    assert result.coverage.reviewed == ("ok.py",)
    (sk,) = result.coverage.skipped
    assert sk.path == "app.js" and "line 2 is larger than the model context" in sk.reason


def test_submodule_bump_is_skipped(make_repo, tmp_path: Path) -> None:
    sub = make_repo({"s.txt": "1\n"}, {"s.txt": "2\n"})
    repo = tmp_path / "super"
    repo.mkdir()
    g = [
        "git",
        "-C",
        str(repo),
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@x",
        "-c",
        "protocol.file.allow=always",
    ]
    subprocess.run([*g, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*g, "submodule", "-q", "add", str(sub), "sm"], check=True, capture_output=True)
    subprocess.run([*g, "commit", "-q", "-m", "base"], check=True)
    subprocess.run(["git", "-C", str(repo / "sm"), "checkout", "-q", "HEAD~"], check=True)
    (repo / "a.py").write_text("a = 1\n")
    subprocess.run([*g, "add", "-A"], check=True)
    subprocess.run([*g, "commit", "-q", "-m", "bump"], check=True)
    result = run(fetch(repo), cfg(), ScriptedModel())
    assert result.coverage.reviewed == ("a.py",)
    assert [(s.path, s.reason) for s in result.coverage.skipped] == [("sm", "submodule")]


_CODE = st.text(alphabet="abcxyz=+()[]:. 0123456789_'\"", min_size=0, max_size=30)


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(st.tuples(st.sampled_from("+ "), _CODE), min_size=1, max_size=12),
    pick=st.integers(0, 11),
    noise=st.sampled_from(["", "+ ", "+", "  ", "\t"]),
    hint=st.one_of(st.none(), st.integers(-5, 50)),
)
def test_a_verbatim_quote_anchors_to_a_line_with_that_text(rows, pick, noise, hint) -> None:
    """Whatever the model's line number, quoting a line of the chunk lands on a line with that code,
    and an added line wins over a context line with the same code."""
    lines = []
    for i, (kind, code) in enumerate(rows, 1):
        lines.append(Line(kind, None if kind == "+" else i, i, code))
    hunk = Hunk(1, sum(k == " " for k, _ in rows), 1, len(rows), "", tuple(lines))
    chunk = Chunk((Section("f.py", hunk, "", 1),))
    target = lines[pick % len(lines)]
    raw = {"quote": noise + target.text, "line": hint, "message": "m", "category": "bug", "severity": "low"}
    f = analyze.anchor_quote(raw, chunk)
    squash = " ".join(target.text.split())
    if not squash:
        assert f is None or f.line in range(1, len(rows) + 1)
        return
    assert f is not None and f.path == "f.py"
    got = lines[f.line - 1]
    assert " ".join(got.text.split()) == squash or squash in " ".join(got.text.split())
    same = [ln for ln in lines if " ".join(ln.text.split()) == squash]
    if any(ln.kind == "+" for ln in same):
        assert got.kind == "+"


def test_quotes_that_look_like_diff_markers(make_repo) -> None:
    base = "int f(int i) {\n  return i;\n}\n"
    head = "int f(int i) {\n  ++i;\n  + i;\n  return i;\n}\n"
    change = fetch(make_repo({"f.c": base}, {"f.c": head}))
    model = script({"findings": [finding("++i;", 9, "high"), finding("    3 +   + i;", 1, "low")]})
    result = run(change, cfg(), model)
    assert sorted((f.line, f.severity) for f in result.findings) == [(2, "high"), (3, "low")]


@settings(max_examples=60, deadline=None)
@given(
    kinds=st.lists(st.sampled_from("+- "), min_size=1, max_size=300),
    max_lines=st.integers(1, 50),
    tokens=st.lists(st.integers(1, 400), min_size=1, max_size=30),
    budget=st.integers(50, 500),
)
def test_split_and_pack_lose_nothing(kinds, max_lines, tokens, budget) -> None:
    old = new = 0
    lines = []
    for k in kinds:
        old += k != "+"
        new += k != "-"
        lines.append(Line(k, old if k != "+" else None, new if k != "-" else None, f"{k}{len(lines)}"))
    hunk = Hunk(1, old, 1, new, "", tuple(lines))
    pieces = context.split_hunk(hunk, max_lines)
    if len(hunk.lines) <= max_lines:
        assert pieces == [hunk]
    else:
        assert all(len(p.lines) <= max_lines for p in pieces)
        assert [ln for p in pieces for ln in p.lines] == list(hunk.lines)  # removed lines are shown too
    assert [ln for p in pieces for ln in p.added] == list(hunk.added)  # every added line once, in order
    sections = [Section(f"f{i}.py", hunk, f"s{i}", t) for i, t in enumerate(tokens)]
    chunks = context.pack(sections, budget)
    assert [s for c in chunks for s in c.sections] == sections
    assert all(c.tokens <= budget or len(c.sections) == 1 for c in chunks)


def test_a_deletion_only_change_is_shown_to_the_model_with_the_function_as_it_is_now(make_repo) -> None:
    base = "def save(f, data):\n    f.write(data)\n    f.flush()\n    f.close()\n    return len(data)\n"
    head = base.replace("    f.close()\n", "")
    model = script()
    result = run(fetch(make_repo({"io.py": base}, {"io.py": head})), cfg(), model)
    assert result.coverage.reviewed == ("io.py",) and not result.coverage.skipped
    (prompt,) = [m[-1].content for m in model.requests]
    assert re.search(r"^\s+- \s*f\.close\(\)$", prompt, re.M)  # what was removed
    assert "def save(f, data):" in prompt and "return len(data)" in prompt  # the function as it is now


def test_progress_names_the_stage_that_runs_after_the_model(make_repo) -> None:
    """The bar must not read "model done" while later stages (tests, behaviour, patches) still run."""
    from bot.pipeline.run import review_change
    from bot.progress import Collect

    change = fetch(make_repo({"a.py": "x = 1\n"}, {"a.py": "x = 2\n"}))
    progress = Collect()
    seen: list[str] = []

    class Recorder:
        def __init__(self, name: str) -> None:
            self.name = name

        def run(self, ctx, findings):  # type: ignore[no-untyped-def]
            seen.append(progress.messages[-1])
            return findings

    model = script()
    stages = [review.ModelReviewStage(), Recorder("tests"), Recorder("behaviour"), Recorder("patches")]
    review_change(change, cfg(), progress=progress, model=lambda: model, stages=stages)
    assert model.requests, "the model read the change"
    assert [s.split("] ", 1)[1] for s in seen] == ["running tests", "comparing behaviour", "verifying fixes"]
    assert not any("model" in s for s in seen)


def test_the_review_says_what_it_checked_and_only_that(make_repo) -> None:
    from bot.pipeline.run import review_change

    change = fetch(make_repo({"a.py": "x = 1\n"}, {"a.py": "x = 2\n"}))
    data = {
        "model": {"backend": "scripted"},
        "scanners": {"semgrep": "/nonexistent/semgrep"},  # could not run: not claimed
        "tests": "off",
        "behaviour": {"enabled": False},
    }
    model = script()
    review = review_change(change, build(data, env={}), model=lambda: model)
    assert review.checked == ("model review of 1 file(s)", "security scanners (secrets, bandit)")
    assert any("scanner 'patterns' skipped" in n for n in review.notes)
