"""Golden JSON reviews with the scripted model: the pipeline's output must not change by accident.

The goldens in tests/data/golden/ were written by the pipeline before it became a list of stages; a
refactor must keep them byte-identical (timings, commit ids and temp paths are normalised). Regenerate
on purpose with `PREREVIEW_WRITE_GOLDEN=1 pytest tests/pipeline/test_golden.py`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from bot.config import build
from bot.forges.local import LocalForge
from bot.render import render
from bot.types import ChangeRef

try:
    from bot.pipeline.run import review_change
except ImportError:  # the pre-stage layout, used once to write the goldens
    from bot.runner import review_change  # type: ignore[no-redef]

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
SCANNERS = {"bandit": False, "patterns": False}  # external tools stay out: their versions vary


def finding(
    quote: str, line: int, message: str, severity: str = "high", category: str = "security", cwe: str = ""
) -> dict:
    return {
        "quote": quote,
        "line": line,
        "message": message,
        "severity": severity,
        "category": category,
        "cwe": cwe,
    }


def reply(*findings: dict, match: str | None = None) -> dict:
    r: dict = {"text": json.dumps({"findings": list(findings)})}
    if match:
        r["match"] = match
    return r


def normalise(text: str, repo: Path, tmp: Path) -> dict:
    data = json.loads(text.replace(str(repo), "<repo>").replace(str(tmp), "<tmp>"))
    data["base"], data["head"] = "0" * 40, "1" * 40
    for key in ("seconds_model", "seconds_total", "stages"):
        data["stats"].pop(key, None)
    return data


def check(name: str, repo: Path, tmp: Path, cfg_data: dict) -> None:
    change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
    result = review_change(change, build(cfg_data, env={}))
    got = normalise(render(result, "json"), repo, tmp)
    path = GOLDEN / f"{name}.json"
    if os.environ.get("PREREVIEW_WRITE_GOLDEN"):
        path.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    assert got == json.loads(path.read_text()), f"{name}: the review changed; see {path}"


def scripted(tmp: Path, replies: list[dict], **extra) -> dict:
    script = tmp / "script.json"
    script.write_text(json.dumps({"replies": replies, "default": {"findings": []}}))
    return {"model": {"backend": "scripted", "script": str(script)}, "scanners": SCANNERS, **extra}


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))


def test_demo_change_with_model_and_scanner_findings(tmp_path):
    from bot.demo import make_repo

    repo = make_repo(tmp_path / "demo")
    sql = finding(
        "query = \"SELECT id, name, email FROM users WHERE name = '%s'\" % name",
        7,
        "The query is built with % formatting: SQL injection.",
        cwe="CWE-89",
    )
    avg = finding("return sum(values) / (len(values) - 1)", 22, "Off by one.", "medium", "bug")
    cfg = scripted(tmp_path, [reply(sql, avg, match="users.py")], tests="off")
    check("demo", repo, tmp_path, cfg)


def test_secret_in_the_change_is_masked_everywhere(make_repo, tmp_path):
    token = "ghp_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7d"
    repo = make_repo(
        {"app.py": "def hello():\n    return 'hi'\n"},
        {"app.py": f"TOKEN = '{token}'\n\n\ndef hello():\n    return 'hi ' + TOKEN\n"},
    )
    model = finding(f"TOKEN = '{token}'", 1, f"Hard-coded token {token}.", cwe="CWE-798")
    cfg = scripted(tmp_path, [reply(model)], tests="off")
    check("secret", repo, tmp_path, cfg)


@pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap not installed (apt-get install bubblewrap)"
)
def test_broken_tests_and_a_verified_patch(make_repo, tmp_path):
    base = {
        "calc.py": "def add(a, b):\n    return a + b\n\n\ndef double(x):\n    return add(x, x)\n",
        "test_calc.py": "from calc import add, double\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_double():\n    assert double(4) == 8\n",
    }
    head = {"calc.py": base["calc.py"].replace("return a + b", "return a - b")}
    repo = make_repo(base, head)
    fix = {
        "match": "Return the fix as JSON",
        "text": json.dumps({"faulty": "return a - b", "fixed": "return a + b"}),
    }
    cfg = scripted(tmp_path, [fix], test_command="python -m pytest -q -p no:cacheprovider")
    check("broken_tests", repo, tmp_path, cfg)


@pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap not installed (apt-get install bubblewrap)"
)
def test_a_review_parses_its_diff_once(make_repo, tmp_path, monkeypatch):
    """Every stage (scanners, model, merge, tests, behaviour, patches) reads the context's one parsed diff;
    only the size cap reads each file's header lines (no hunks) on its own."""
    import bot.change.diff as diff_mod

    real, hunks_parsed = diff_mod.PatchSet, []

    def counting(lines):
        lines = list(lines)
        if any(line.startswith("@@") for line in lines):
            hunks_parsed.append(len(lines))
        return real(lines)

    monkeypatch.setattr(diff_mod, "PatchSet", counting)
    base = {
        "calc.py": "def add(a, b):\n    return a + b\n",
        "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    }
    repo = make_repo(base, {"calc.py": "def add(a, b):\n    return a - b\n"})
    fix = {
        "match": "Return the fix as JSON",
        "text": json.dumps({"faulty": "return a - b", "fixed": "return a + b"}),
    }
    cfg = scripted(tmp_path, [fix], test_command="python -m pytest -q -p no:cacheprovider")
    change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
    result = review_change(change, build(cfg, env={}))
    assert {"scanners", "model", "merge", "tests", "behaviour", "patches"} <= set(result.stats.stages)
    assert any(f.verified for f in result.findings)  # the patches stage ran on that diff too
    assert len(hunks_parsed) == 1
