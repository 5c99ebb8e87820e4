"""Safeguards a change deletes (bot/findings/scanners/safeguards.py), read from the diff."""

from __future__ import annotations

import pytest

from bot.change.diff import parse
from bot.findings.scanners import safeguards


def diff(body: str, path: str = "app/views.py") -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n" + body


def test_removed_escaping_is_reported_on_the_added_line_with_its_cwe():
    d = diff(
        "@@ -1,4 +1,4 @@\n"
        " def show(name):\n"
        "-    safe = escape(name)\n"
        "+    safe = name\n"
        "     return '<b>' + safe + '</b>'\n"
        " \n"
    )
    [f] = safeguards.scan(parse(d))
    assert (f.line, f.cwe, f.severity, f.category) == (2, "CWE-79", "medium", "security")
    assert f.source == "safeguards"
    assert f.rule_id == "removed-safeguard/cwe-79" and "`escape`" in f.message


@pytest.mark.parametrize(
    ("removed", "added", "cwe"),
    [
        ("data = yaml.safe_load(body)", "data = yaml.load(body)", "CWE-502"),
        ("x = yaml.load(body, Loader=yaml.SafeLoader)", "x = yaml.load(body, Loader=yaml.Loader)", "CWE-502"),
        ("p = flask.safe_join(root, sub)", "p = root + '/' + sub", "CWE-22"),
        ("name = secure_filename(upload.filename)", "name = upload.filename", "CWE-22"),
        ("os.system('ls ' + shlex.quote(d))", "os.system('ls ' + d)", "CWE-78"),
        ("check_redirect_url(url)", "pass", "CWE-601"),
        ("if utils.sid_is_valid(sid):", "if sid:", "CWE-20"),
        ("value = _sanitize(value)", "value = value", "CWE-20"),
        ("out = json.dumps(rows, cls=JSONEncoderForHTML)", "out = json.dumps(rows)", "CWE-79"),
    ],
)
def test_each_family(removed, added, cwe):
    d = diff(f"@@ -1,2 +1,2 @@\n def f():\n-    {removed}\n+    {added}\n")
    assert [f.cwe for f in safeguards.scan(parse(d))] == [cwe]


@pytest.mark.parametrize(
    "body",
    [
        # replaced by another safeguard of the same family
        "@@ -1,2 +1,2 @@\n def f(x):\n-    return cgi.escape(x)\n+    return html.escape(x)\n",
        # moved within the file
        "@@ -1,3 +1,3 @@\n def f(x):\n-    y = escape(x)\n     z = 1\n+    y = escape(x)\n",
        # added, not removed
        "@@ -1,2 +1,2 @@\n def f(x):\n-    return x\n+    return escape(x)\n",
        # only a comment, a string or an import named it
        "@@ -1,4 +1,4 @@\n-from html import escape\n+import os\n def f(x):\n"
        "-    # escape(x) is done by the caller\n+    # the caller does it\n"
        "-    log('escape(x)')\n+    log('x')\n",
        # a definition, not a use
        "@@ -1,2 +1,2 @@\n-def validate_name(x):\n+def check_name(x):\n     return x\n",
        # a validator's result kept in a variable is not a validator call
        "@@ -1,3 +1,3 @@\n def f(x):\n-    is_valid = True\n+    ok = True\n     return x\n",
        # subprocess.check_output is not a validator
        "@@ -1,2 +1,2 @@\n def f():\n-    subprocess.check_output(['ls'])\n+    subprocess.run(['ls'])\n",
    ],
)
def test_quiet(body):
    assert safeguards.scan(parse(diff(body))) == []


def test_a_deletion_only_hunk_anchors_on_the_line_now_in_its_place():
    d = diff("@@ -1,4 +1,3 @@\n def f(x):\n-    x = escape(x)\n     return x\n \n")
    [f] = safeguards.scan(parse(d))
    assert f.line == 2  # `return x`, a context line of the hunk


def test_added_and_deleted_files_are_not_judged():
    added = (
        "diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+x = 1\n"
    )
    deleted = (
        "diff --git a/o.py b/o.py\ndeleted file mode 100644\n--- a/o.py\n+++ /dev/null\n@@ -1 +0,0 @@\n"
        "-y = escape(x)\n"
    )
    assert safeguards.scan(parse(added + deleted)) == []
