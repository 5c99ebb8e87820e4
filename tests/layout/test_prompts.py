"""Every system prompt is a text file under bot/prompts/, loaded by name, and the wheel carries it."""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

from bot import prompts

ROOT = Path(__file__).resolve().parents[2]


def _loaded_names() -> dict[str, str]:
    """Prompt name -> a module that loads it (`prompts.load("name")` with a literal name)."""
    out = {}
    for path in sorted((ROOT / "bot").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "load"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "prompts"
            ):
                [arg] = node.args
                assert isinstance(arg, ast.Constant), f"{path}: prompts.load takes a literal name"
                out[arg.value] = path.relative_to(ROOT).as_posix()
    return out


def test_every_prompt_the_code_loads_exists_and_is_packaged() -> None:
    names = _loaded_names()
    assert len(names) >= 10  # the review's, and nine more
    toml = (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # tomllib is 3.11+; the line is a list
    line = re.search(r"^\[tool\.setuptools\.package-data\]\nbot = (\[.*\])$", toml, re.M)
    assert line is not None, "pyproject.toml: [tool.setuptools.package-data] bot = [...] not found"
    patterns = ast.literal_eval(line.group(1))
    for name, where in names.items():
        assert prompts.load(name).strip(), f"{where}: bot/prompts/{name}.txt is missing or empty"
        assert any(fnmatch.fnmatch(f"prompts/{name}.txt", p) for p in patterns), (
            f"{name}.txt is not package data"
        )


def test_no_prompt_file_is_left_unused() -> None:
    files = {p.stem for p in (ROOT / "bot" / "prompts").glob("*.txt")}
    assert files == set(_loaded_names())
