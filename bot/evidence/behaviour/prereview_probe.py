"""Bounded, normalised reprs shared by the tracer plugin and the call harness.

This file runs INSIDE the sandbox, in the reviewed project's interpreter: it imports nothing from `bot`
(only the standard library), so it is copied next to the plugin and the harness in the scratch tree.
"""

from __future__ import annotations

import os
import re
import reprlib

_ADDR = re.compile(r"0x[0-9a-fA-F]{4,}")
_TMP = re.compile(r"(?:/private)?/(?:tmp|var/folders)/[^\s'\"<>,)\]]*")

_R = reprlib.Repr()
_R.maxlist = _R.maxtuple = _R.maxset = _R.maxfrozenset = _R.maxdeque = _R.maxarray = 40
_R.maxdict = 20
_R.maxstring = 300
_R.maxother = 300
_R.maxlevel = 6


def normalise(text: str, root: str = "", limit: int = 400) -> str:
    """Addresses and scratch/temp paths replaced, so base and head (different trees) compare equal."""
    if root:
        text = text.replace(root.rstrip("/") + "/", "").replace(root.rstrip("/"), "<root>")
    text = _ADDR.sub("0x…", text)
    text = _TMP.sub("<tmp>", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def safe_repr(value: object, root: str = "", limit: int = 400) -> str:
    try:
        text = _R.repr(value)
    except Exception as exc:  # noqa: BLE001 (a broken __repr__ must not break the run)
        text = f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"
    return normalise(text, root, limit)


def exception_record(exc: BaseException, root: str = "", limit: int = 400) -> dict:
    return {"kind": "raise", "type": type(exc).__name__, "message": normalise(str(exc), root, limit)}


def return_record(value: object, root: str = "", limit: int = 400) -> dict:
    return {"kind": "return", "repr": safe_repr(value, root, limit)}


def scratch_root() -> str:
    return os.getcwd()
