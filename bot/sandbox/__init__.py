"""Run the reviewed project's commands in isolation: bubblewrap | docker | none, behind one protocol."""

from .base import RunResult, Sandbox
from .registry import BACKENDS, create, preflight

__all__ = ["BACKENDS", "RunResult", "Sandbox", "create", "preflight"]
