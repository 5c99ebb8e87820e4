"""Secret redaction: planted tokens never reach the model input nor any output format."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from bot.change import redact
from bot.config import build
from bot.forges.local import LocalForge
from bot.models.scripted import ScriptedModel
from bot.pipeline import run as runner
from bot.render import FORMATS, render
from bot.types import ChangeRef

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "bot/schemas/review.schema.json").read_text())

AWS = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GHP = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GLPAT = "glpat-" + "x9Y8z7W6v5U4t3S2r1Q0"
KEY_BODY = "MIIEowIBAAKCAQEAu7v0dXf8kq2PpXl3t9eN0fQhZ"
PEM = (
    f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n"
    "-----END RSA PRIVATE KEY-----"
)
PASSWORD = "Sup3rS3cretPassw0rd!"
PLANTED = [AWS, AWS_SECRET, GHP, GLPAT, KEY_BODY, PASSWORD]

HEAD = f'''import os

AWS_ACCESS_KEY_ID = "{AWS}"
aws_secret_access_key = "{AWS_SECRET}"
GITHUB_TOKEN = "{GHP}"
GITLAB = "{GLPAT}"
db_password = "{PASSWORD}"
KEY = """{PEM}"""


def connect(host):
    return os.environ.get("HOST", host)
'''


def _cfg(**scanners: object):
    return build({"model": {"backend": "scripted"}, "scanners": scanners}, env={})


def _leaks(text: str) -> list[str]:
    return [s for s in PLANTED if s in text]


def test_mask_patterns_covers_common_token_shapes() -> None:
    text = (
        f"a={AWS} b={GHP} c={GLPAT} d=xoxb-1234567890-abcdefghij e=https://bob:hunter22@example.com/x\n{PEM}"
    )
    masked = redact.mask_patterns(text)
    assert _leaks(masked) == [] and "hunter22" not in masked and "xoxb-" not in masked
    assert masked.count("\n") == text.count("\n")  # line numbers survive


def test_redactor_masks_detected_values_everywhere() -> None:
    values = redact.secret_values([HEAD])
    assert PASSWORD in values and AWS in values
    r = redact.Redactor(values)
    assert _leaks(r.mask(f"the model said {PASSWORD} and {AWS_SECRET}")) == []
    assert "connect" in r.mask(HEAD) and "os.environ" in r.mask(HEAD)  # ordinary code is untouched


def test_multiline_key_in_a_diff_keeps_its_line_structure() -> None:
    diff = "\n".join("+" + line for line in PEM.splitlines())
    masked = redact.mask_patterns(diff)
    assert KEY_BODY not in masked
    assert [ln[:1] for ln in masked.splitlines()] == ["+"] * len(PEM.splitlines())


@pytest.mark.parametrize("scanners_on", [True, False])
def test_planted_tokens_never_reach_the_model_nor_the_output(make_repo, scanners_on: bool) -> None:
    repo = make_repo({"settings.py": "import os\n"}, {"settings.py": HEAD})
    change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
    from dataclasses import replace

    change = replace(change, title=f"add config {GHP}", body=f"token: {AWS_SECRET}")
    model = ScriptedModel()  # flags the first added line of each chunk, quoting it
    cfg = _cfg(secrets=scanners_on, bandit=scanners_on, patterns=False)
    result = runner.review_change(change, cfg, model=lambda: model)  # type: ignore[arg-type]
    prompts = "\n".join(m.content for req in model.requests for m in req)
    assert model.requests and _leaks(prompts) == []
    assert "[REDACTED]" in prompts
    for fmt in FORMATS:
        out = render(result, fmt)
        assert _leaks(out) == [], fmt
    jsonschema.validate(json.loads(render(result, "json")), SCHEMA)
    if scanners_on:
        assert any(f.cwe == "CWE-798" and f.source == "secrets" for f in result.findings)


def test_a_model_reply_that_echoes_a_token_is_masked(make_repo) -> None:
    repo = make_repo({"a.py": "x = 1\n"}, {"a.py": "x = 1\ny = x + 1\n"})
    change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
    reply = {
        "findings": [
            {
                "quote": "y = x + 1",
                "line": 2,
                "message": f"use {GHP} and {AWS}",
                "category": "bug",
                "severity": "medium",
                "cwe": "",
            }
        ]
    }
    model = ScriptedModel({"replies": [reply], "default": {"findings": []}})
    result = runner.review_change(change, _cfg(), model=lambda: model)  # type: ignore[arg-type]
    assert result.findings and all(_leaks(render(result, fmt)) == [] for fmt in FORMATS)


def test_a_value_that_names_a_changed_file_is_not_masked_out_of_its_path(make_repo) -> None:
    """flask's tests set `SECRET_KEY="config"`: masking "config" everywhere renamed tests/test_config.py
    in the diff to a file that does not exist, and the model stage crashed reading it."""
    before = "import flask\n\n\ndef test_x():\n" + "    app = flask.Flask(__name__)\n" * 30
    after = before + '    app.config.from_mapping(SECRET_KEY="config", TEST_KEY="foo")\n'
    repo = make_repo({"tests/test_config.py": before}, {"tests/test_config.py": after})
    change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
    found = redact.for_change(change, lambda p: None, ["tests/test_config.py"])
    assert "config" not in found.values and "tests/test_config.py" in found.public
    model = ScriptedModel()
    result = runner.review_change(change, _cfg(), model=lambda: model)  # type: ignore[arg-type]
    assert result.coverage.reviewed == ("tests/test_config.py",) and model.requests
    assert "tests/test_config.py" in "\n".join(m.content for req in model.requests for m in req)
    # a value found in a file's text is judged against the same paths
    assert "config" not in found.and_files(lambda p: 'PASSWORD = "config"\n', ["a.py"]).values


def test_a_hunk_beyond_the_files_text_is_shown_without_context() -> None:
    from bot.change.diff import parse
    from bot.findings import chunks

    diff = parse("--- a/a.py\n+++ b/a.py\n@@ -40,2 +40,3 @@\n x = 1\n+y = 2\n z = 3\n")
    shown = chunks.render_section("a.py", diff.files[0].hunks[0], [])  # the text did not come back
    assert shown.splitlines() == ["   40   x = 1", "   41 + y = 2", "   42   z = 3"]
