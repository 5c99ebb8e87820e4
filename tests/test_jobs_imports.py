"""The directions the job layer keeps (docs/architecture.md): the server never imports the CLI; `jobs/`
imports neither the server nor the CLI nor click (the CI commands and the worker both call into it)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parents[1] / "bot"


def _imports(package: str) -> set[tuple[str, str]]:
    """(module, imported package) for every import in `bot/<package>/`, relative ones resolved."""
    out: set[tuple[str, str]] = set()
    for path in (BOT / package).rglob("*.py"):
        parts = ["bot", *path.relative_to(BOT).with_suffix("").parts]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                out |= {(str(path), a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = parts[: len(parts) - node.level] if node.level else []
                name = ".".join([*base, node.module] if node.module else base)
                out.add((str(path), name))
    return out


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("server", ("bot.cli",)), ("jobs", ("bot.cli", "bot.server", "click"))],
)
def test_the_job_layer_imports_only_downwards(package: str, forbidden: tuple[str, ...]) -> None:
    bad = sorted(
        (where, name)
        for where, name in _imports(package)
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    )
    assert bad == []


def test_the_check_sees_a_forbidden_import() -> None:  # the test above can fail
    assert any(name == "bot.server.masking" for _, name in _imports("cli"))
