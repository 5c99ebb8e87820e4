"""One review's shared state: the change (secrets masked), its diff parsed once, readers, config, model.

Built once per review by `pipeline.run.review_change` and handed to every stage in turn. Stages read
what they need from it and add what they learn (notes, coverage, usage, timings, and each stage's
typed result: test runs, behaviour, walkthrough); findings
flow separately, from stage to stage, so each stage's effect on them is explicit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..change.diff import Diff
from ..config import Config
from ..models import Model
from ..progress import Progress
from ..types import (
    BehaviourChange,
    BehaviourResult,
    ChangeRequest,
    Coverage,
    Finding,
    Review,
    Skipped,
    Stats,
    Walkthrough,
)
from .selection import Selection, select

if TYPE_CHECKING:  # the stages' own records; the stages import this module
    from ..evidence.behaviour.engine import BehaviourEvidence
    from ..evidence.runs import TestRuns

FileReader = Callable[[str], "str | None"]
ModelFactory = Callable[[], Model]


@dataclass
class Usage:
    """What the model cost, summed over the stages that asked it."""

    chunks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds_model: float = 0.0
    model: str = ""


@dataclass
class ReviewContext:
    change: ChangeRequest  # as stages and the model see it: secrets already masked
    diff: Diff  # parsed once from change.diff_text
    cfg: Config
    model: ModelFactory  # lazy: a change with nothing to review loads nothing
    progress: Progress
    read_head: FileReader  # masked text (what prompts may show), cached
    read_base: FileReader
    raw_head: FileReader = field(repr=False, default=lambda p: None)  # real text, for scanners only
    raw_base: FileReader = field(repr=False, default=lambda p: None)
    mask: Callable[[Finding], Finding] = lambda f: f  # applied to findings built from real text
    mask_runtime: Callable[[str], str] = lambda s: s  # runtime text: the repository's secrets too
    cache_dir: Any = None  # where test runs and project environments are cached (None: default)
    notes: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    reviewed: tuple[str, ...] = ()
    behaviour: list[BehaviourChange] = field(default_factory=list)  # intended changes (behaviour stage)
    usage: Usage = field(default_factory=Usage)
    seconds: dict[str, float] = field(default_factory=dict)  # stage name -> wall seconds
    # what one stage leaves for the later ones, each a typed record (data flows one way, in stage order)
    tests: TestRuns | None = None  # the tests stage's runs at base and head
    behaviour_engine: BehaviourEvidence | None = None  # prepared once, before the test runs (its tracer)
    behaviour_prepared: bool = False
    behaviour_result: BehaviourResult | None = None  # what the behaviour stage compared; its re-check
    walkthrough: Walkthrough | None = None  # the walkthrough stage's
    _selection: Selection | None = field(default=None, repr=False)
    started: float = field(default_factory=time.monotonic)

    def head_lines(self, path: str) -> list[str] | None:
        text = self.read_head(path)
        return None if text is None else text.splitlines()

    def selection(self) -> Selection:
        """The files every stage looks at (pipeline/selection.py), chosen once per review."""
        if self._selection is None:
            self._selection = select(
                self.diff, self.cfg.review, lambda p: None if (t := self.head_lines(p)) is None else len(t)
            )
        return self._selection

    def charge(self, stage: str, work: Background) -> None:
        """Count a stage's background work in its seconds: the pipeline times the stage's foreground,
        which includes the wait for that work; the work's own duration replaces the wait."""
        self.seconds[stage] = self.seconds.get(stage, 0.0) + work.seconds - work.waited


class Background:
    """Work a stage starts early (a scanner subprocess, a model load, test runs) and collects later.

    The result (or the exception) is handed over by `result()`; a stage that never collects it leaves a
    daemon thread that ends with the work."""

    def __init__(self, fn: Callable[[], Any], name: str) -> None:
        self.seconds = 0.0  # how long the work took
        self.waited = 0.0  # how long `result()` waited for it
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn,), name=f"prereview-{name}", daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        t0 = time.monotonic()
        try:
            self._value = fn()
        except BaseException as exc:  # handed to the collecting stage, which decides
            self._error = exc
        finally:
            self.seconds = time.monotonic() - t0

    def result(self) -> Any:
        t0 = time.monotonic()
        self._thread.join()
        self.waited += time.monotonic() - t0
        if self._error is not None:
            raise self._error
        return self._value


def assemble(ctx: ReviewContext, findings: list) -> Review:
    """The Review the renderers and publishers get, from the context and the final findings."""
    u = ctx.usage
    return Review(
        base=ctx.change.base_sha,
        head=ctx.change.head_sha,
        title=ctx.change.title,
        findings=tuple(findings),
        stats=Stats(
            files=len(ctx.diff.files),
            hunks=ctx.diff.hunk_count,
            chunks=u.chunks,
            prompt_tokens=u.prompt_tokens,
            completion_tokens=u.completion_tokens,
            seconds_model=round(u.seconds_model, 3),
            seconds_total=round(time.monotonic() - ctx.started, 3),
            model=u.model,
            stages={name: round(s, 3) for name, s in ctx.seconds.items()},
        ),
        coverage=Coverage(reviewed=ctx.reviewed, skipped=tuple(ctx.skipped)),
        notes=tuple(ctx.notes) + _no_checkout_note(ctx),
        behaviour=tuple(ctx.behaviour),
        walkthrough=ctx.walkthrough,
        unchecked=_unchecked(ctx),
    )


def _unchecked(ctx: ReviewContext) -> tuple[str, ...]:
    """The sources this review could not run (their earlier findings must not be resolved)."""
    out = []
    if ctx.tests is None or ctx.tests.head is None:  # no test run at head
        out.append("tests")
    if ctx.behaviour_result is None or not ctx.behaviour_result.ran:
        out.append("behaviour")
    return tuple(out)


def _no_checkout_note(ctx: ReviewContext) -> tuple[str, ...]:
    if ctx.change.workdir is not None or (not ctx.cfg.tests.enabled and not ctx.cfg.behaviour.enabled):
        return ()
    return (
        "No checkout of the head commit here (a comment command's workflow checks out the default branch): "
        "the project's tests, the behaviour checks and fix verification did not run; findings they reported "
        "earlier stay open.",
    )
