"""A test run that times out with the behaviour tracer loaded is made once more without it: the tests
stage keeps its evidence, and the behaviour stage says its calls were not recorded (more-itertools'
suite: 52 s plain, 220 s traced; with a 180 s timeout the base was unusable and nothing was tested)."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from click.testing import CliRunner

from bot.cli.root import cli

CALC = "def add(a, b):\n    return a + b\n"
# the test stalls only where the tracer is loaded: the run with it times out, the plain one passes
TESTS = (
    "import sys\nimport time\n\nfrom calc import add\n\n\ndef test_add():\n"
    "    if 'prereview_trace' in sys.modules:\n        time.sleep(120)\n    assert add(2, 3) == 5\n"
)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_a_run_that_times_out_traced_is_made_again_plain_and_the_change_still_tested(
    make_repo, tmp_path, monkeypatch
):
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))
    repo = make_repo(
        {"calc.py": CALC, "tests/test_calc.py": TESTS, "pytest.ini": ""},
        {"calc.py": CALC.replace("a + b", "a - b")},
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [], "default": {"findings": []}}))
    cfg = tmp_path / "cfg.yml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "model": {"backend": "scripted", "script": str(script)},
                "patches": {"enabled": False},
                "sandbox": {"timeout": 15},
            }
        )
    )
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    broken = [f for f in data["findings"] if f["rule_id"] == "tests/broken"]
    assert [(f["path"], f["line"]) for f in broken] == [("calc.py", 2)], data["notes"]
    told = [n for n in data["notes"] if "timed out after" in n]
    assert any(
        n.startswith("tests: the test run with the call recorder timed out after 15s and took ") for n in told
    ), data["notes"]
    assert any(n.startswith("behaviour: the test run with the call recorder timed out") for n in told)
    assert not any("Tests not used" in n or "without their pins" in n for n in data["notes"]), data["notes"]
