"""The harness's (prereview_harness.py) access to the project's code: its modules and the callables they
define, a replayed call's pickled arguments, and what an iterator a call returns yields. Runs INSIDE the
sandbox (the project's own interpreter, Python 3.8+)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Mapping
from typing import Any

import prereview_probe as probe


def module(path: str, root_dir: str) -> Any:
    """The project module at `path` (a file under the root, `src/` or `lib/`), imported by its name."""
    rel = path[:-3] if path.endswith(".py") else path
    for base in ("", "src/", "lib/"):
        if rel.startswith(base) and base:
            name = rel[len(base) :].replace("/", ".")
            root = os.path.join(root_dir, base.rstrip("/"))
        elif not base:
            name, root = rel.replace("/", "."), root_dir
        else:
            continue
        if root not in sys.path:
            sys.path.insert(0, root)
        try:
            return importlib.import_module(name[: -len(".__init__")] if name.endswith(".__init__") else name)
        except ImportError:
            continue
    spec = importlib.util.spec_from_file_location(os.path.basename(rel), os.path.join(root_dir, path))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def resolve(mod: Any, qualname: str) -> Any:
    obj = mod
    for part in qualname.split("."):
        if part == "<locals>":
            raise AttributeError(f"{qualname} is a nested function")
        obj = getattr(obj, part)
    return obj


def unpickle(chunks: list[str]) -> Any:
    """A call's (positional, keyword) arguments as prereview_trace.py pickled them."""
    import base64
    import pickle
    import zlib

    data = zlib.decompress(base64.b64decode("".join(chunks)))
    return pickle.loads(data)  # noqa: S301 (inside the sandbox, next to the code it runs anyway)


def raw(mod: Any, qualname: str) -> Any:
    """The function a qualified name defines, called with its receiver as the first argument: a method
    as its class holds it, a property's getter, a static or class method's function."""
    owner_name, _, name = qualname.rpartition(".")
    if not owner_name:
        return resolve(mod, qualname)
    owner = resolve(mod, owner_name)
    obj = vars(owner).get(name) if isinstance(vars(owner), Mapping) else None
    if obj is None:
        return getattr(owner, name)
    if isinstance(obj, property):
        return obj.fget
    import functools

    if isinstance(obj, functools.cached_property):
        return obj.func
    return getattr(obj, "__func__", obj)  # staticmethod, classmethod


MAX_ITEMS = 40


class _Items(list):  # noqa: FURB189 (a list that says it came from an iterator)
    more = False  # the iterator had more than MAX_ITEMS items
    root, limit = "", 400  # how its repr is shown

    def __repr__(self) -> str:
        shown = probe.safe_repr(list(self), self.root, self.limit)
        return "iterator of " + shown + (" and more" if self.more else "")


def items(value: Any, root: str, limit: int) -> Any:
    """An iterator's first MAX_ITEMS items (what a generator or `iter(...)` result yields is its value;
    its repr says nothing), else the value itself."""
    import itertools

    if isinstance(value, (str, bytes, bytearray, list, tuple, dict, set, frozenset)):
        return value
    try:
        is_iterator = hasattr(type(value), "__next__") and iter(value) is value
    except Exception:  # noqa: BLE001
        return value
    if not is_iterator:
        return value
    items_ = _Items(itertools.islice(value, MAX_ITEMS + 1))
    if len(items_) > MAX_ITEMS:
        del items_[MAX_ITEMS:]
        items_.more = True
    items_.root, items_.limit = root, limit
    return items_
