"""What every project-environment builder shares (projectenv, pyvenv, toolchains): the result type, the
one host-side step that may use the network (dependency installs, with a filtered environment: no
tokens), and the cache folders (one builder at a time, ready marks, keys from the dependency files)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Reader = Callable[[str], "str | None"]


ENV_VERSION = 1  # bump when the layout of a built environment changes


SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"


# What an environment build (outside the sandbox) may see of the host: proxies, index and CA settings.
BUILD_PASS = re.compile(
    r"^(HOME|LANG|LC_ALL|TZ|PATH|TMPDIR|XDG_CACHE_HOME|SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE|"
    r"NODE_EXTRA_CA_CERTS|"
    r"(HTTP|HTTPS|NO|ALL)_PROXY|(http|https|no|all)_proxy|PIP_.*|UV_.*|npm_config_.*|GOPROXY|GOPRIVATE|"
    r"GONOSUMDB|GOFLAGS|CARGO_REGISTRIES_.*|RUSTUP_HOME|CARGO_HOME|MAVEN_OPTS|JAVA_HOME)$"
)


class EnvError(Exception):
    """The environment could not be built; the message is the first error line, `output` the step's
    whole output (what pininstall reads the failing requirement from)."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


@dataclass
class ProjectEnv:
    """How the project's tests run: the command, its variables ("{root}" = the scratch tree), what the
    sandbox must show read-only, links into the scratch tree, and the key results are cached under."""

    kind: str  # "command", "python", "built", "image", "toolchain", "detected"
    argv: tuple[str, ...]
    key: str = ""
    vars: dict[str, str] = field(default_factory=dict)
    ro_paths: tuple[str, ...] = ()
    links: dict[str, str] = field(default_factory=dict)
    describe: str = ""
    seconds: float = 0.0
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    def command(self, root: Path) -> list[str]:
        """The argv for one scratch tree (links made in it, variables set through `env`)."""
        for name, target in self.links.items():
            link = root / name
            if not link.exists() and not link.is_symlink():
                link.symlink_to(target)
        if not self.vars:
            return list(self.argv)
        r = str(root.resolve())
        return ["env", *(f"{k}={v.replace('{root}', r)}" for k, v in self.vars.items()), *self.argv]


def build_env() -> dict[str, str]:
    """The host environment an environment build sees: proxies and index settings, never tokens."""
    return {k: v for k, v in os.environ.items() if BUILD_PASS.match(k)}


def run_build(
    argv: Sequence[str], *, cwd: Path | None, timeout: float, env: Mapping[str, str | None] | None = None
) -> str:
    """Run one build step outside the sandbox; EnvError with the first error line when it fails. `env`
    adds to the build environment (None: that variable unset)."""
    merged = {**build_env(), **(env or {})}
    try:
        proc = subprocess.run(
            list(argv),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={k: v for k, v in merged.items() if v is not None},
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise EnvError(f"`{' '.join(argv[:3])}` took longer than {timeout:.0f}s") from None
    except OSError as exc:
        raise EnvError(f"`{argv[0]}` could not start ({exc.strerror})") from None
    if proc.returncode != 0:
        what = " ".join(_short(a) for a in argv[:4])
        out = proc.stdout + proc.stderr
        raise EnvError(f"`{what}` failed: {first_build_error(out)}", out)
    return proc.stdout


def first_build_error(out: str) -> str:
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    npm = [re.sub(r"^npm (?:error|ERR!)\s*", "", ln) for ln in lines if re.match(r"^npm (?:error|ERR!)", ln)]
    npm = [ln for ln in npm if ln and not ln.startswith("A complete log of this run")]
    if npm:  # `code E404` alone says little: the code with the lines that explain it
        code = npm[0][len("code ") :] if npm[0].startswith("code ") else ""
        rest = [ln for ln in npm[1 if code else 0 :] if not re.fullmatch(r"\d{3}", ln)][:3]
        return (f"npm {code}: " if code else "npm: ") + " ".join(rest)[:400]
    for ln in lines:
        if re.search(r"\b(ERROR|error|Error)\b|No matching distribution|not found|Could not", ln):
            return ln[:200]
    return (lines[-1] if lines else "no output")[:200]


def _short(a: str) -> str:
    return Path(a).name if a.startswith("/") else a


@contextmanager
def locked(d: Path) -> Iterator[None]:
    """One builder per environment directory (reviews and server workers may race for it)."""
    d.parent.mkdir(parents=True, exist_ok=True)
    with open(d.with_name(d.name + ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ready(d: Path) -> bool:
    return (d / ".prereview-complete").is_file()


def mark_ready(d: Path, info: dict[str, Any]) -> None:
    (d / ".prereview-complete").write_text(json.dumps(info, indent=1), encoding="utf-8")


def fresh(d: Path) -> None:
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)


def _hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def file_hash(read: Reader, names: Sequence[str], *extra: Any) -> str:
    return _hash([ENV_VERSION, sys.platform, [(n, read(n)) for n in names], *extra])
