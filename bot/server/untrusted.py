"""Text from outside (model output, git's error lines) made safe to post in a PR/MR comment."""

from __future__ import annotations


def escape(text: str) -> str:
    # No raw HTML (hidden markers), no @mentions that ping people, no images (an image URL would be
    # fetched by every reader's browser).
    return text.replace("<", "&lt;").replace("@", "@\u200b").replace("![", "!\u200b[")
