"""Scanners on real changes: only what the change introduces, rule ids and CWEs, switches, missing tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.change import git
from bot.change.diff import parse
from bot.config import ScannersConfig, build
from bot.findings.scanners import ScannerMissing, ScannersStage, changed_files, run, semgrep
from bot.forges.local import LocalForge
from bot.pipeline.context import ReviewContext
from bot.progress import Quiet
from bot.types import ChangeRef

HAS_SEMGREP = semgrep.executable() is not None


def stage_context(
    change, scanners, read_head, read_base, mask=lambda f: f, review: dict | None = None
) -> ReviewContext:
    """What the scanners stage reads from a review's context: the diff, the real file text, its config."""
    return ReviewContext(
        change=change,
        diff=parse(change.diff_text),
        cfg=build({"scanners": scanners.model_dump(), "review": review or {}}, env={}),
        model=lambda: None,
        progress=Quiet(),
        read_head=read_head,
        read_base=read_base,
        raw_head=read_head,
        raw_base=read_base,
        mask=mask,
    )


BASE = """import os
import subprocess


def old(name):
    os.system("echo " + name)  # was already there: not the change's fault


def list_dir(path):
    return subprocess.run(["ls", path], capture_output=True)
"""

HEAD = BASE.replace(
    'def list_dir(path):\n    return subprocess.run(["ls", path], capture_output=True)\n',
    'def list_dir(path):\n    return subprocess.run("ls " + path, shell=True, capture_output=True)\n\n\n'
    "def load(blob):\n    import pickle\n    return pickle.loads(blob)\n\n\n"
    'AWS_KEY = "AKIAIOSFODNN7EXAMPLE"\n',
)


def scan_change(repo: Path, cfg: ScannersConfig):
    change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
    files = changed_files(
        parse(change.diff_text),
        lambda p: git.show(repo, change.head_sha, p),
        lambda p: git.show(repo, change.base_sha, p),
    )
    return run(files, cfg)


def cfg(**kw: object) -> ScannersConfig:
    return build({"scanners": kw}, env={}).scanners


def test_bandit_reports_only_added_lines_with_rule_and_cwe(make_repo) -> None:
    repo = make_repo({"app.py": BASE}, {"app.py": HEAD})
    result = scan_change(repo, cfg(secrets=False, patterns=False))
    lines = {f.line for f in result.findings}
    assert 6 not in lines  # the os.system line existed in the base
    by_rule = {f.rule_id.split(":")[0]: f for f in result.findings}
    assert "B602" in by_rule and by_rule["B602"].cwe == "CWE-78" and by_rule["B602"].source == "bandit"
    assert "B301" in by_rule or "B403" in by_rule  # pickle
    assert all(f.rule_id and f.category == "security" for f in result.findings)


def test_secrets_scanner_finds_the_planted_key_without_quoting_it(make_repo) -> None:
    repo = make_repo({"app.py": BASE}, {"app.py": HEAD})
    result = scan_change(repo, cfg(bandit=False, patterns=False))
    [hit] = [f for f in result.findings if f.cwe == "CWE-798"]
    assert hit.line == HEAD.splitlines().index('AWS_KEY = "AKIAIOSFODNN7EXAMPLE"') + 1
    assert hit.source == "secrets" and hit.rule_id and hit.severity == "high"
    assert "AKIA" not in hit.message


def test_a_named_value_in_a_test_file_is_a_low_fixture_and_a_token_shape_stays_high(make_repo) -> None:
    """flask's tests set `app.secret_key = "new test key"`: a fixture, not a leak; a real token shape in a
    test file is one."""
    test = 'def test_x(app):\n    app.secret_key = "new test key"\n    token = "AKIAIOSFODNN7EXAMPLE"\n'
    repo = make_repo({"tests/test_x.py": "\n", "app.py": "\n"}, {"tests/test_x.py": test, "app.py": test})
    result = scan_change(repo, cfg(bandit=False, patterns=False))
    got = sorted((f.path, f.line, f.severity) for f in result.findings if f.source == "secrets")
    assert got == [
        ("app.py", 2, "high"),
        ("app.py", 3, "high"),
        ("tests/test_x.py", 2, "low"),
        ("tests/test_x.py", 3, "high"),
    ]


@pytest.mark.skipif(not HAS_SEMGREP, reason="semgrep is not installed (pipx install semgrep)")
def test_semgrep_rules_flag_new_injection_and_deserialization(make_repo) -> None:
    repo = make_repo({"app.py": BASE}, {"app.py": HEAD})
    result = scan_change(repo, cfg(bandit=False, secrets=False))
    got = {(f.rule_id, f.cwe) for f in result.findings}
    assert ("py-subprocess-shell-true", "CWE-78") in got
    assert ("py-unsafe-deserialization", "CWE-502") in got
    assert all(f.source == "semgrep" for f in result.findings)
    assert 6 not in {f.line for f in result.findings}


@pytest.mark.skipif(not HAS_SEMGREP, reason="semgrep is not installed (pipx install semgrep)")
def test_semgrep_sql_rule_on_an_indented_excerpt(make_repo) -> None:
    # a method cut out of its class (indented as a whole) is still scanned, line numbers intact
    base = (
        "    def find(self, name):\n        return self.db.execute('SELECT * FROM t WHERE n = ?', (name,))\n"
    )
    head = (
        "    def find(self, name):\n"
        "        return self.db.execute(\"SELECT * FROM t WHERE n = '%s'\" % name)\n"
    )
    repo = make_repo({"m.py": base}, {"m.py": head})
    result = scan_change(repo, cfg(secrets=False))
    assert any(f.line == 2 and f.cwe == "CWE-89" for f in result.findings)


def test_a_fix_is_quiet(make_repo) -> None:
    repo = make_repo({"app.py": HEAD}, {"app.py": BASE})
    assert scan_change(repo, cfg()).findings == ()


def test_each_scanner_can_be_switched_off(make_repo) -> None:
    repo = make_repo({"app.py": BASE}, {"app.py": HEAD})
    assert scan_change(repo, cfg(secrets=False, bandit=False, patterns=False)).findings == ()
    assert {f.source for f in scan_change(repo, cfg(bandit=False, patterns=False)).findings} == {"secrets"}


def test_missing_semgrep_is_a_note_not_a_crash(make_repo) -> None:
    repo = make_repo({"app.py": BASE}, {"app.py": HEAD})
    result = scan_change(repo, cfg(semgrep="/nonexistent/semgrep", bandit=False, secrets=False))
    assert result.findings == ()
    [note] = result.notes
    assert "patterns" in note and "not found" in note and "scanners.patterns: false" in note


def test_scanner_that_raises_missing_is_reported(make_repo, monkeypatch) -> None:
    import bot.findings.scanners.bandit as bandit_mod

    def gone() -> list[str]:
        raise ScannerMissing("bandit is not installed; pip install -e '.[scanners]'")

    monkeypatch.setattr(bandit_mod, "command", gone)
    repo = make_repo({"app.py": BASE}, {"app.py": HEAD})
    result = scan_change(repo, cfg(secrets=False, patterns=False))
    assert result.findings == () and "bandit is not installed" in result.notes[0]


def test_paths_that_escape_the_scan_folder_are_ignored() -> None:
    diff = parse(
        "diff --git a/../evil.py b/../evil.py\n--- a/../evil.py\n+++ b/../evil.py\n"
        "@@ -1 +1,2 @@\n x = 1\n+y = 2\n"
    )
    assert changed_files(diff, lambda p: "x = 1\ny = 2\n", lambda p: "x = 1\n") == []


def test_scan_callable_keeps_notes_and_masks(make_repo) -> None:
    repo = make_repo({"app.py": BASE}, {"app.py": HEAD})
    change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
    ctx = stage_context(
        change,
        cfg(semgrep="/nonexistent/semgrep"),
        lambda p: git.show(repo, change.head_sha, p),
        lambda p: git.show(repo, change.base_sha, p),
        mask=lambda f: f.with_(message="masked"),
    )
    found = ScannersStage().run(ctx, [])
    assert found and all(f.message == "masked" for f in found)
    assert any("semgrep" in n or "patterns" in n for n in ctx.notes)


def test_a_scanner_that_times_out_is_a_note(make_repo, monkeypatch) -> None:
    import sys

    import bot.findings.scanners.bandit as bandit_mod

    monkeypatch.setattr(bandit_mod, "command", lambda: [sys.executable, "-c", "import time; time.sleep(30)"])
    repo = make_repo({"app.py": BASE}, {"app.py": HEAD})
    result = scan_change(repo, cfg(secrets=False, patterns=False, timeout=0.5))
    assert result.findings == () and "ran over 0.5s" in result.notes[0]


def test_the_scan_reports_removed_safeguards_unless_switched_off(make_repo) -> None:
    base = "from html import escape\n\n\ndef show(name):\n    return '<b>' + escape(name) + '</b>'\n"
    head = base.replace("escape(name)", "name")
    repo = make_repo({"app.py": base}, {"app.py": head})
    change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))

    def scan(**kw: object) -> list:
        off = {"secrets": False, "bandit": False, "patterns": False}
        ctx = stage_context(change, cfg(**off, **kw), lambda p: head, lambda p: base)
        return ScannersStage().run(ctx, [])

    [f] = scan()
    assert (f.source, f.cwe, f.line) == ("safeguards", "CWE-79", 5)
    assert scan(safeguards=False) == []


def test_the_review_selection_reaches_the_scanners(make_repo) -> None:
    """Files the review leaves out (vendored by default, review.exclude) get no bandit or safeguards
    findings; the secrets scanner still reads vendored files, but not the ones the project excluded."""
    guard_base = "from html import escape\n\n\ndef show(name):\n    return '<b>' + escape(name) + '</b>'\n"
    guard_head = guard_base.replace("escape(name)", "name")
    base = {"app.py": BASE, "vendor/lib.py": BASE, "fixtures/fake.py": BASE, "vendor/page.py": guard_base}
    head = {"app.py": HEAD, "vendor/lib.py": HEAD, "fixtures/fake.py": HEAD, "vendor/page.py": guard_head}
    repo = make_repo(base, head)
    change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
    ctx = stage_context(
        change,
        cfg(patterns=False),
        lambda p: git.show(repo, change.head_sha, p),
        lambda p: git.show(repo, change.base_sha, p),
        review={"exclude": ["fixtures/*"]},
    )
    found = ScannersStage().run(ctx, [])
    by_source: dict[str, set[str]] = {}
    for f in found:
        by_source.setdefault(f.source, set()).add(f.path)
    assert by_source.get("bandit") == {"app.py"}
    assert by_source.get("secrets") == {"app.py", "vendor/lib.py"}
    assert "safeguards" not in by_source


@pytest.mark.skipif(not HAS_SEMGREP, reason="semgrep is not installed (pipx install semgrep)")
def test_semgrep_sql_fstring_needs_sql_text_or_a_query_call(make_repo) -> None:
    # Words elsewhere in the file ("Select ... from", "where ... =") made every f-string between them
    # "SQL injection", click.style's ANSI f-strings included.
    head = (
        "import click\n"  # 1
        "\n\n"
        "def show(name, n):\n"  # 4
        '    """Select the rows to show; colours come from click."""\n'  # 5
        "    click.echo(f\"{click.style(name, fg='green')}: {n} rows\")\n"  # 6
        '    return f"\\x1b[1m{name}\\x1b[0m"  # copied from the table where n = {n}\n'  # 7
        "\n\n"
        "def find(cur, table, x):\n"  # 10
        '    cur.execute(f"SELECT id, name FROM {table} WHERE id = {x}")\n'  # 11
        "    q = f\"name = '{x}'\"\n"  # 12
        "    cur.execute(q)\n"  # 13
        '    return f"UPDATE {table} SET name = {x}"\n'  # 14
    )
    repo = make_repo({"m.py": "import click\n"}, {"m.py": head})
    result = scan_change(repo, cfg(secrets=False, bandit=False))
    lines = {f.line for f in result.findings if f.rule_id == "py-sql-fstring"}
    assert lines == {11, 12, 14}
