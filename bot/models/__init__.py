"""Model runtime: one Model protocol, backends chosen by name (llama_cpp, openai_http, scripted)."""

from .base import Completion, Message, Model, ModelError, Scores

__all__ = ["Completion", "Message", "Model", "ModelError", "Scores"]
