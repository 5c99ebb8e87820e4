"""The in-process llama.cpp backend with the real 0.5B model (marked `model`; loaded once per module)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bot.change import git
from bot.change.diff import parse
from bot.cli.root import main
from bot.config import build
from bot.findings import analyze
from bot.findings import model_review as review
from bot.forges.local import LocalForge
from bot.models.base import Completion, Message, ModelError
from bot.types import ChangeRef

pytestmark = pytest.mark.model
SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "bot" / "schemas" / "review.schema.json").read_text()
)


@pytest.fixture(scope="module")
def llm(test_model_path: Path) -> Iterator[Any]:
    pytest.importorskip("llama_cpp", reason="needs llama-cpp-python: pip install -e '.[testmodel]'")
    from bot.models.llama_cpp import LlamaCppModel

    yield LlamaCppModel(test_model_path, name="qwen2.5-coder-0.5b", n_ctx=4096)


class Recording:
    """The real model, keeping each Completion it returns (to read prompt_tokens_evaluated)."""

    def __init__(self, model: Any) -> None:
        self.model, self.name, self.n_ctx = model, model.name, model.n_ctx
        self.completions: list[Completion] = []

    def count_tokens(self, text: str) -> int:
        return int(self.model.count_tokens(text))

    def complete(self, messages: list[Message], **kw: Any) -> Completion:
        c = self.model.complete(messages, **kw)
        self.completions.append(c)
        return c


def test_grammar_holds_against_the_prompt(llm: Any) -> None:
    """With maxItems 0 the schema admits exactly one document: the grammar must produce it even though
    the prompt asks for something else entirely (and it costs a handful of tokens)."""
    schema = analyze.findings_schema(0)
    msgs = [Message("user", "Write a limerick about a cat. Plain text only, no JSON, no braces.")]
    c = llm.complete(msgs, schema=schema, max_tokens=32)
    assert c.finish_reason == "stop" and json.loads(c.text) == {"findings": []}
    assert c.prompt_tokens > 0 and 0 < c.completion_tokens < 32
    assert llm.complete(msgs, max_tokens=8).text.strip() != c.text.strip()  # unconstrained: not the JSON


def test_a_sampled_answer_depends_on_the_request_not_on_what_came_before(llm: Any) -> None:
    ask = [Message("user", "Name three fruits, comma separated.")]
    first = llm.complete(ask, max_tokens=12, temperature=1.1).text
    llm.complete([Message("user", "Count to five.")], max_tokens=8, temperature=1.1)  # other draws
    assert llm.complete(ask, max_tokens=12, temperature=1.1).text == first


def test_over_long_prompt_is_a_length_result_not_a_crash(llm: Any) -> None:
    c = llm.complete([Message("user", "x " * 5000)], schema=analyze.findings_schema(), max_tokens=64)
    assert (c.finish_reason, c.completion_tokens) == ("length", 0)


def test_second_chunk_reuses_the_prompt_prefix(llm: Any, make_repo) -> None:
    """Two chunks share the constant system prompt: llama.cpp's KV cache keeps it, so the second
    chunk evaluates fewer prompt tokens than the first."""
    base = {
        f"m{i}.py": "".join(f"def f{i}_{k}(x):\n    return x + {k}\n\n\n" for k in range(3)) for i in range(2)
    }
    head = {p: t.replace("return x + 1\n", "return x - 1\n") for p, t in base.items()}
    repo = make_repo(base, head)
    change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
    cfg = build({"review": {"chunk_tokens": 64, "max_new_tokens": 128}}, env={})
    model = Recording(llm)
    result = review.run(
        change, cfg, model_factory=lambda: model, read_head=lambda p: git.show(repo, change.head_sha, p)
    )
    assert result.stats.chunks == 2 and len(model.completions) >= 2
    first, second = model.completions[0], model.completions[1]
    assert first.prompt_tokens_evaluated is not None and second.prompt_tokens_evaluated is not None
    system_tokens = llm.count_tokens(analyze.system_prompt())
    assert second.prompt_tokens_evaluated < first.prompt_tokens_evaluated
    assert second.prompt_tokens_evaluated <= second.prompt_tokens - system_tokens  # the whole prefix reused
    d = parse(change.diff_text)
    assert all(d.has_line(f.path, f.line, f.side) for f in result.findings if f.in_diff)


def test_cli_review_of_a_bug_introducing_change(
    test_model_path: Path, bench_repo, capsys, tmp_path: Path
) -> None:
    """The issue's acceptance check: schema-valid JSON whose in_diff findings all sit on diff lines."""
    pytest.importorskip("llama_cpp", reason="needs llama-cpp-python: pip install -e '.[testmodel]'")
    info = bench_repo("quixbugs", "gcd", kind="bug")
    cfg = tmp_path / "c.yml"
    cfg.write_text("model: {n_ctx: 4096}\nreview: {max_new_tokens: 192}\n")
    try:
        main(
            [
                "review",
                "--repo",
                info["repo"],
                "--base",
                "HEAD~",
                "--format",
                "json",
                "--model",
                "qwen2.5-coder-0.5b",
                "--config",
                str(cfg),
            ]
        )
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)
    jsonschema.validate(doc, SCHEMA)
    assert doc["stats"]["model"] == "qwen2.5-coder-0.5b" and doc["stats"]["chunks"] >= 1
    assert doc["stats"]["prompt_tokens"] > 0 and doc["stats"]["completion_tokens"] > 0
    assert info["changed_file"] in doc["coverage"]["reviewed"] + [
        s["path"] for s in doc["coverage"]["skipped"]
    ]
    d = parse(git.diff(Path(info["repo"]), "HEAD~", "HEAD"))
    for f in doc["findings"]:
        if f["in_diff"]:
            assert d.has_line(f["path"], f["line"], f["side"]), f


def test_scores_are_log_probabilities_of_the_first_token_and_reproducible(llm: Any) -> None:
    msgs = [Message("system", "Answer with one word: yes or no."), Message("user", "Is 7 a prime number?")]
    got = llm.score(msgs, ["yes", "no"])
    assert got is not None and got.prompt_tokens > 0
    assert all(v <= 0.0 for v in got.logprobs.values())
    assert sum(math.exp(v) for v in got.logprobs.values()) <= 1.0 + 1e-6
    llm.complete([Message("user", "Say hi.")], max_tokens=4)  # another prompt in the KV cache between
    again = llm.score(msgs, ["yes", "no"])
    assert again is not None
    assert again.logprobs == pytest.approx(got.logprobs, abs=1e-3)


def test_corrupt_gguf_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="needs llama-cpp-python")
    from bot.models.llama_cpp import LlamaCppModel

    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 4096)
    with pytest.raises(ModelError, match="corrupt"):
        LlamaCppModel(bad)


def test_on_an_amx_cpu_the_weights_stay_out_of_the_amx_buffer(llm: Any) -> None:
    """llama.cpp's AMX kernel segfaults on the first token (llama.cpp#20824): on a CPU that reports AMX,
    the model loads without the extra (repacking) buffer types, and still answers."""
    from bot.models.hardware import cpu_has_amx

    assert llm._llm.model_params.use_extra_bufts is (llm.gpu_layers != 0 or not cpu_has_amx())
    out = llm.complete([Message("user", "Say hi")], max_tokens=4)
    assert out.text
