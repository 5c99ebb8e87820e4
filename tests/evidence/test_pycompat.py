"""Old trees on this Python: a base whose own code uses the `collections` aliases Python 3.10 removed
runs its tests with them restored (one note says so); a tree that moved to `collections.abc` does not,
so a change that brings an alias back still fails its tests."""

from __future__ import annotations

import sys

import pytest

from bot.evidence import pycompat
from tests.evidence.test_projectenv import broken, needs_bwrap, review

OLD = (
    "import collections\n\n\ndef is_map(x):\n    return isinstance(x, collections.Mapping)\n\n\n"
    "def add(a, b):\n    return a + b\n"
)
TESTS = (
    "from calc import add, is_map\n\n\ndef test_is_map():\n    assert is_map({})\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n"
)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        (OLD, ["Mapping"]),
        ("from collections import OrderedDict, Callable\n", ["Callable"]),
        ("import collections\n# collections.Sequence would do\n", []),  # a comment
        (
            "try:\n    from collections.abc import Mapping\n"
            "except ImportError:\n    from collections import Mapping\n",
            [],
        ),
        ("from collections import OrderedDict\n", []),
        ("import collections\nfrom typing import Iterable\nx: Iterable = collections.Sized\n", ["Sized"]),
    ],
)
def test_the_aliases_a_tree_uses_are_found(make_repo, text, names):
    repo = make_repo({"calc.py": text}, {})
    assert pycompat.uses_removed_aliases(repo, "HEAD~1") == names


@needs_bwrap
def test_an_old_tree_runs_its_tests_with_the_aliases_restored(make_repo, tmp_path, monkeypatch):
    files = {"calc.py": OLD, "tests/test_calc.py": TESTS, "pytest.ini": ""}
    repo = make_repo(files, {"calc.py": OLD.replace("a + b", "a - b")})
    data = review(repo, tmp_path, monkeypatch, tmp_path / "envs", tests={"python": sys.executable})
    found = broken(data)
    assert len(found) == 1 and "test_add" in found[0]["message"], data
    assert "2 passed at base" in found[0]["message"]  # test_is_map ran too: it failed before
    notes = [n for n in data["notes"] if "Python 3.10 removed" in n]
    assert len(notes) == 1 and "`collections.Mapping`" in notes[0], data["notes"]


@needs_bwrap
def test_a_change_that_brings_an_alias_back_still_fails(make_repo, tmp_path, monkeypatch):
    new = OLD.replace("collections.Mapping", "collections.abc.Mapping").replace(
        "import collections\n", "import collections.abc\n"
    )
    files = {"calc.py": new, "tests/test_calc.py": TESTS, "pytest.ini": ""}
    repo = make_repo(
        files,
        {"calc.py": "import collections\n" + new.replace("collections.abc.Mapping", "collections.Mapping")},
    )
    data = review(repo, tmp_path, monkeypatch, tmp_path / "envs", tests={"python": sys.executable})
    found = broken(data)
    assert len(found) == 1 and "test_is_map" in found[0]["message"], data
    assert not [n for n in data["notes"] if "Python 3.10 removed" in n]
