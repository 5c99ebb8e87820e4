"""Node projects managed with pnpm or yarn (classic): which manager a tree declares, that manager fetched
with npm (outside the sandbox, registry integrity checked by npm) into the environment folder, and the
dependencies installed with it — so a `"test": "pnpm lint && vitest run"` script finds `pnpm` in the
sandbox, and a pnpm lockfile is honoured instead of re-resolved by `npm install`.

The manager is the `packageManager` field (`pnpm@9.15.0+sha512…`), else the lockfile's (`pnpm-lock.yaml`:
pnpm of its lockfile's major; `yarn.lock` v1: yarn 1). Yarn 2+ (Plug'n'Play) is not run: npm installs
the tree instead, and the environment says so.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .envbase import EnvError, run_build


@dataclass(frozen=True)
class Manager:
    name: str  # "npm", "pnpm" or "yarn"
    spec: str = ""  # what npm installs: "pnpm@9.15.0", "pnpm@9", "yarn@1"
    note: str = ""  # said in the environment's description when the declared manager is not used


def manager(read: Callable[[str], str | None]) -> Manager:
    """The package manager the tree at hand declares (npm when it declares none we can run)."""
    try:
        declared = json.loads(read("package.json") or "{}").get("packageManager", "")
    except (json.JSONDecodeError, AttributeError):
        declared = ""
    if isinstance(declared, str) and (m := re.fullmatch(r"(pnpm|yarn|npm)@([\w.\-]+)(?:\+.*)?", declared)):
        name, version = m.groups()
        if name == "npm":
            return Manager("npm")
        if name == "yarn" and not version.startswith("1."):
            return Manager("npm", note=f"yarn {version} (Plug'n'Play) is not run: installed with npm")
        return Manager(name, f"{name}@{version}")
    if (lock := read("pnpm-lock.yaml")) is not None:
        v = re.search(r"^lockfileVersion:\s*'?(\d+)", lock, re.M)
        major = {"9": "9", "6": "8", "5": "7"}.get(v.group(1) if v else "", "9")
        return Manager("pnpm", f"pnpm@{major}")
    if (lock := read("yarn.lock")) is not None:
        if "__metadata:" in lock:
            return Manager("npm", note="yarn 2+ (Plug'n'Play) is not run: installed with npm")
        return Manager("yarn", "yarn@1")
    return Manager("npm")


def bin_dir(d: Path) -> Path:
    """Where the fetched manager's executables are (put on the sandbox's PATH)."""
    return d / "pm" / "node_modules" / ".bin"


def fetch(npm: str, m: Manager, tree: Path, d: Path, timeout: float) -> None:
    """Install `m` into `d/pm` with npm, then the tree's dependencies with it into `tree/node_modules`."""
    (d / "pm").mkdir(parents=True, exist_ok=True)
    quiet = ["--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
    cache = {"npm_config_cache": str(d / "npm-cache")}
    run_build(
        [npm, "install", "--prefix", str(d / "pm"), "--no-save", *quiet, m.spec],
        cwd=d,
        timeout=timeout,
        env=cache,
    )
    tool = bin_dir(d) / m.name
    if not tool.exists():
        raise EnvError(f"`npm install {m.spec}` gave no `{m.name}` executable")
    if m.name == "pnpm":
        base = [str(tool), "install", "--ignore-scripts", "--store-dir", str(d / "pnpm-store")]
        env = {**cache, "npm_config_update_notifier": "false", "CI": "true"}
        try:
            run_build([*base, "--frozen-lockfile"], cwd=tree, timeout=timeout, env=env)
        except EnvError:  # a lockfile the manifest outgrew: resolve again (said by pnpm's own error)
            run_build([*base, "--no-frozen-lockfile"], cwd=tree, timeout=timeout, env=env)
    else:
        argv = [str(tool), "install", "--frozen-lockfile", "--ignore-scripts", "--non-interactive"]
        run_build([*argv, "--cache-folder", str(d / "yarn-cache")], cwd=tree, timeout=timeout, env=cache)
    for scratch in ("npm-cache", "yarn-cache"):
        shutil.rmtree(d / scratch, ignore_errors=True)
