"""The review as a plain list of stages, chosen from config. To add a stage: write its module (a class
with `name` and `run(ctx, findings) -> findings`, optionally `prepare(ctx)`) and put it in this list."""

from __future__ import annotations

from ..config import Config
from ..evidence.behaviour_stage import BehaviourStage
from ..evidence.tests_stage import TestsStage
from ..findings.merge import MergeStage
from ..findings.model_review import ModelReviewStage
from ..findings.rank import RankStage
from ..findings.scanners import ScannersStage
from ..findings.walkthrough import WalkthroughStage
from ..patches.stage import PatchesStage
from .stage import Stage


def default(cfg: Config) -> list[Stage]:
    """scanners -> model review -> rank -> merge/plausibility/self-check -> tests -> behaviour -> patches
    -> rank."""
    stages: list[Stage] = [ScannersStage(), ModelReviewStage(), RankStage(), MergeStage()]
    if cfg.tests.enabled or cfg.patches.enabled or cfg.behaviour.enabled:
        stages += [TestsStage()]
        stages += [BehaviourStage()] if cfg.behaviour.enabled else []
        stages += [PatchesStage(), RankStage()]
    if cfg.review.walkthrough:
        stages.append(WalkthroughStage())
    return stages
