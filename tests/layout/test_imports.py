"""The directions docs/architecture.md states, checked on the import graph (tests/layout/imports.py):
a module may not reach a forbidden package directly or through other modules."""

from __future__ import annotations

from .imports import chains, graph, within

G = graph()


def _forbid(source: str, target: str, allowed: tuple[str, ...] = ()) -> None:
    found = chains(G, source, target, allowed)
    assert not found, f"{source} must not import {target}:\n" + "\n".join(found)


def test_the_graph_sees_the_package() -> None:
    assert "bot.pipeline.run" in G and "bot.pipeline.context" in G["bot.pipeline.run"]
    assert "bot.evidence.runs" in G["bot.evidence.tests_stage"]  # relative imports are resolved


def test_evidence_never_imports_patches() -> None:
    _forbid("bot.evidence", "bot.patches")


def test_patches_use_only_the_test_runs_of_evidence() -> None:
    """Patches take the tests stage's `TestRuns` and a re-check function: of `evidence` they see the
    test-run records (runs, testrun, breakage, detect) and nothing else, the behaviour engine least."""
    public = ("bot.evidence.runs", "bot.evidence.testrun", "bot.evidence.breakage", "bot.evidence.detect")
    direct = sorted(
        f"{m} -> {t}"
        for m in G
        if within(m, "bot.patches")
        for t in G[m]
        if within(t, "bot.evidence") and t not in public
    )
    assert not direct, "bot.patches imports evidence internals:\n" + "\n".join(direct)
    _forbid("bot.patches", "bot.evidence.behaviour")


def test_no_stage_imports_the_pipeline_runner() -> None:
    """Stages get a ReviewContext; they never start a review (`pipeline.run`) or pick stages."""
    for package in ("bot.findings", "bot.evidence", "bot.patches"):
        for target in ("bot.pipeline.run", "bot.pipeline.stages"):
            direct = [m for m in G if within(m, package) and target in G[m]]
            assert not direct, f"{target} imported by the stage module(s) {direct}"


def test_publishers_never_reach_the_model_and_stages_never_reach_a_forge() -> None:
    _forbid("bot.publish", "bot.models")
    for package in ("bot.findings", "bot.evidence", "bot.patches", "bot.pipeline"):
        _forbid(package, "bot.forges")
        _forbid(package, "bot.publish")


def test_forges_never_import_publish() -> None:
    _forbid("bot.forges", "bot.publish")


def test_the_server_never_imports_the_cli() -> None:
    _forbid("bot.server", "bot.cli")


def test_a_forbidden_import_is_found() -> None:
    """The check can fail: a made-up graph with one chain through a third module."""
    g = {"bot.a.x": {"bot.c"}, "bot.c": {"bot.b.y"}, "bot.b.y": set()}
    assert chains(g, "bot.a", "bot.b") == ["bot.a.x -> bot.c -> bot.b.y"]
    assert chains(g, "bot.a", "bot.b", allowed=("bot.c",)) == []
