"""Run the reviewed project's commands in isolation: bubblewrap | docker | none, behind one protocol."""

from .base import Bind, RunResult, Sandbox
from .registry import BACKENDS, create, preflight

__all__ = ["BACKENDS", "Bind", "RunResult", "Sandbox", "create", "preflight"]
