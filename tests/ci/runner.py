"""A small stand-in for the GitHub Actions runner and the GitLab runner, enough to rehearse action.yml's
composite steps and the GitLab template's script on this machine.

GitHub (`Composite`): parses action.yml, evaluates the `${{ }}` expressions it uses (inputs, steps.*.outputs,
github.*, runner.*; `==`, `!=`, `&&`, `||`, `!`, literals, parentheses) in `with:`, `env:`, `if:`, runs each
`run:` step as the runner does (`bash --noprofile --norc -eo pipefail FILE`) with its `env:` on a clean
environment (HOME, a minimal PATH, the GITHUB_* files), and honours GITHUB_ENV, GITHUB_OUTPUT and
GITHUB_PATH between steps. Two `uses:` are emulated, anything else is refused:
  - actions/setup-python: outputs `python-version`/`python-path` of the interpreter given to the harness
    and puts its directory on PATH (no download);
  - actions/cache: an exact-key store on disk (`CacheStore`): restore copies the saved directory back and
    sets `cache-hit`, and the post step saves the path when the key was missed, as actions/cache does.
    restore-keys are refused (the action does not use them, and an emulation of them would be guesswork).

GitLab (`gitlab_job`): runs the job's `before_script` + `script` lines in one `bash -eo pipefail` shell with
the job's and the template's variables expanded as GitLab does, then saves its `cache:` paths under their
(expanded) keys in the same kind of store.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"


class Unsupported(AssertionError):
    """The action uses something this emulation does not do: the test fails rather than guess."""


# --- expressions -------------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||!|\(|\))"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z_][A-Za-z0-9_\-]*)*))"
)


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise Unsupported(f"expression syntax not emulated: {text!r} at {pos}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


def _truthy(v: Any) -> bool:
    return v not in (None, "", 0, False)


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()  # GitHub compares strings case-insensitively
    return str(a) == str(b) if isinstance(a, str) != isinstance(b, str) else a == b


STATUS_FUNCTIONS = ("always", "success", "failure", "cancelled")


def evaluate(text: str, context: Mapping[str, Any]) -> Any:
    toks = _tokens(text)
    pos = 0

    def peek() -> tuple[str, str] | None:
        return toks[pos] if pos < len(toks) else None

    def take() -> tuple[str, str]:
        nonlocal pos
        pos += 1
        return toks[pos - 1]

    def primary() -> Any:
        kind, val = take()
        if kind == "op" and val == "(":
            v = or_()
            if take() != ("op", ")"):
                raise Unsupported(f"unbalanced parentheses in {text!r}")
            return v
        if kind == "op" and val == "!":
            return not _truthy(primary())
        if kind == "str":
            return val[1:-1].replace("''", "'")
        if kind == "num":
            return float(val) if "." in val else int(val)
        if val in ("true", "false"):
            return val == "true"
        if val == "null":
            return None
        if peek() == ("op", "("):
            take()
            if take() != ("op", ")") or val not in STATUS_FUNCTIONS:
                raise Unsupported(f"function calls are not emulated: {val}() in {text!r}")
            failed = bool(context.get("__failed__"))
            return {"always": True, "success": not failed, "failure": failed, "cancelled": False}[val]
        return lookup(val, context)

    def cmp() -> Any:
        left = primary()
        while peek() in (("op", "=="), ("op", "!=")):
            op = take()[1]
            right = primary()
            left = _eq(left, right) if op == "==" else not _eq(left, right)
        return left

    def and_() -> Any:
        left = cmp()
        while peek() == ("op", "&&"):
            take()
            right = cmp()
            left = right if _truthy(left) else left
        return left

    def or_() -> Any:
        left = and_()
        while peek() == ("op", "||"):
            take()
            right = and_()
            left = left if _truthy(left) else right
        return left

    value = or_()
    if pos != len(toks):
        raise Unsupported(f"trailing tokens in {text!r}")
    return value


def lookup(dotted: str, context: Mapping[str, Any]) -> Any:
    node: Any = context
    parts = dotted.split(".")
    if parts[0] not in context:
        raise Unsupported(f"context '{parts[0]}' is not emulated (in {dotted})")
    for p in parts:
        if isinstance(node, Mapping):
            node = node.get(p, "")
        else:
            return ""
    return node


_EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def interpolate(value: Any, context: Mapping[str, Any]) -> Any:
    if not isinstance(value, str):
        return value
    whole = _EXPR.fullmatch(value.strip())
    if whole and "${{" not in whole[1]:
        v = evaluate(whole[1], context)
        return "" if v is None else ("true" if v is True else "false" if v is False else str(v))
    return _EXPR.sub(lambda m: str(evaluate(m[1], context) or ""), value)


def condition(text: Any, context: Mapping[str, Any]) -> bool:
    """A step's `if:`; without a status function it is `success() && (…)`, as on GitHub."""
    failed = bool(context.get("__failed__"))
    if text is None:
        return not failed
    text = str(text).strip()
    whole = _EXPR.fullmatch(text)
    expr = whole[1] if whole and "${{" not in whole[1] else text
    if not any(re.search(rf"\b{f}\s*\(", expr) for f in STATUS_FUNCTIONS) and failed:
        return False
    return _truthy(evaluate(expr, context))


# --- runner files ------------------------------------------------------------------------------------------


def parse_kv_file(path: Path) -> dict[str, str]:
    """GITHUB_OUTPUT / GITHUB_ENV: `name=value` lines and `name<<DELIM` … `DELIM` blocks."""
    out: dict[str, str] = {}
    if not path.exists():
        return out
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1 : j])
            i = j + 1
            continue
        if line.strip():
            name, _, value = line.partition("=")
            out[name] = value
        i += 1
    return out


class CacheStore:
    """actions/cache (and GitLab's cache) without a server: key -> a saved copy of the path."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.saved: list[str] = []
        self.restored: list[str] = []
        self._seeds: dict[str, dict[str, Path | bytes]] = {}

    def _dir(self, key: str) -> Path:
        return self.root / re.sub(r"[^A-Za-z0-9._+-]", "_", key)

    def has(self, key: str) -> bool:
        return self._dir(key).exists()

    def restore(self, key: str, path: Path) -> bool:
        src = self._dir(key)
        for prefix, files in list(self._seeds.items()):
            if key.startswith(prefix) and not src.exists():
                self.seed(key, files)
                del self._seeds[prefix]
        if not src.exists():
            return False
        if path.exists():
            shutil.rmtree(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, path, symlinks=True)
        self.restored.append(key)
        return True

    def save(self, key: str, path: Path) -> None:
        dst = self._dir(key)
        if dst.exists() or not path.exists():
            return
        shutil.copytree(path, dst, symlinks=True)
        self.saved.append(key)

    def seed_prefix(self, prefix: str, files: Mapping[str, Path | bytes]) -> None:
        """An entry an earlier run saved under a key starting with `prefix` (whatever the rest of the key
        is): materialised when a key with that prefix is first restored."""
        self._seeds[prefix] = dict(files)

    def seed(self, key: str, files: Mapping[str, Path | bytes]) -> None:
        """A cache entry an earlier run saved: name -> a file to link, or bytes."""
        dst = self._dir(key)
        dst.mkdir(parents=True, exist_ok=True)
        for name, src in files.items():
            target = dst / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(src, bytes):
                target.write_bytes(src)
            else:
                target.symlink_to(src)


@dataclass
class StepResult:
    name: str
    ran: bool
    code: int = 0
    out: str = ""
    seconds: float = 0.0
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class JobResult:
    steps: list[StepResult]
    outputs: dict[str, str]
    env: dict[str, str]

    @property
    def ok(self) -> bool:
        return all(s.code == 0 for s in self.steps)

    def step(self, name: str) -> StepResult:
        return next(s for s in self.steps if s.name == name)

    @property
    def log(self) -> str:
        return "\n".join(
            f"== {s.name} ({f'ran {s.seconds:.1f} s' if s.ran else 'skipped'}, rc={s.code})\n{s.out}"
            for s in self.steps
        )


# --- GitHub composite action -------------------------------------------------------------------------------


@dataclass
class Composite:
    """Run action.yml from `action_dir` the way a runner runs `uses: OWNER/prereview@REF`."""

    action_dir: Path
    home: Path
    workspace: Path
    cache: CacheStore
    python: Path  # what the emulated setup-python "installs"
    github_env: dict[str, str] = field(default_factory=dict)  # GITHUB_* for the job (event, API url…)
    extra_env: dict[str, str] = field(default_factory=dict)  # e.g. PIP_CACHE_DIR: pre-seeded pip downloads
    extra_path: list[str] = field(
        default_factory=list
    )  # prepended to the clean PATH (a runner image's tools)
    token: str = "ghs_test"

    def run(self, inputs: Mapping[str, str]) -> JobResult:
        action = yaml.safe_load((self.action_dir / "action.yml").read_text())
        assert action["runs"]["using"] == "composite"
        if self.home.exists():  # every job starts on a fresh machine: only the caches carry over
            shutil.rmtree(self.home)
        self.home.mkdir(parents=True)
        temp = Path(tempfile.mkdtemp(prefix="runner-temp-"))
        declared = action.get("inputs", {})
        unknown = set(inputs) - set(declared)
        if unknown:
            raise Unsupported(f"inputs not declared by action.yml: {sorted(unknown)}")
        context: dict[str, Any] = {
            "github": {
                "action_path": str(self.action_dir),
                "token": self.token,
                "workspace": str(self.workspace),
                **{k[len("GITHUB_") :].lower(): v for k, v in self.github_env.items()},
            },
            "runner": {
                "os": "Linux",
                "arch": "X64",
                "temp": str(temp),
                "tool_cache": str(self.home / "tool"),
            },
            "steps": {},
        }
        context["inputs"] = {
            k: str(inputs[k]) if k in inputs else interpolate(str(v.get("default", "")), context)
            for k, v in declared.items()
        }
        env: dict[str, str] = {}
        path: list[str] = []
        results: list[StepResult] = []
        posts: list[tuple[str, Path]] = []
        failed = False
        for i, step in enumerate(action["runs"]["steps"]):
            name = step.get("name") or step.get("id") or step.get("uses", f"step {i}")
            context["__failed__"] = failed
            if not condition(step.get("if"), context):
                results.append(StepResult(name, ran=False))
                if step.get("id"):
                    context["steps"][step["id"]] = {"outputs": {}, "outcome": "skipped"}
                continue
            started = time.monotonic()
            if "uses" in step:
                outputs = self._uses(step, context, posts, path)
                res = StepResult(name, ran=True, outputs=outputs)
            else:
                res = self._run(name, step, context, env, path, temp)
            res.seconds = time.monotonic() - started
            results.append(res)
            if step.get("id"):
                context["steps"][step["id"]] = {
                    "outputs": res.outputs,
                    "outcome": "success" if res.code == 0 else "failure",
                }
            failed = failed or res.code != 0
        for key, p in posts:  # actions/cache's post step: save what was missed
            if not failed:
                self.cache.save(key, p)
        outputs = {k: interpolate(v["value"], context) for k, v in action.get("outputs", {}).items()}
        shutil.rmtree(temp, ignore_errors=True)
        return JobResult(results, outputs, env)

    def _cache_step(self, with_: dict[str, Any]) -> tuple[str, Path]:
        """(key, folder) of an actions/cache step: one path, no restore-keys (the emulation's limits)."""
        if with_.get("restore-keys"):
            raise Unsupported("actions/cache restore-keys are not emulated")
        paths = [p for p in str(with_["path"]).splitlines() if p.strip()]
        if len(paths) != 1:
            raise Unsupported("actions/cache with several paths is not emulated")
        return str(with_["key"]), Path(os.path.expanduser(paths[0].replace("~", str(self.home), 1)))

    def _uses(
        self, step: dict[str, Any], context: dict[str, Any], posts: list[tuple[str, Path]], path: list[str]
    ) -> dict[str, str]:
        uses = step["uses"]
        with_ = {k: interpolate(v, context) for k, v in (step.get("with") or {}).items()}
        name = uses.split("@")[0]
        if name == "actions/setup-python":
            version = subprocess.run(
                [str(self.python), "-c", "import platform; print(platform.python_version())"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            wanted = str(with_.get("python-version", ""))
            if wanted and not version.startswith(wanted):
                raise Unsupported(
                    f"setup-python {wanted} requested; the harness has {version} ({self.python})"
                )
            if str(with_.get("update-environment", "true")).lower() != "false":
                path.insert(0, str(self.python.parent))
            return {"python-version": version, "python-path": str(self.python), "cache-hit": "false"}
        if name in ("actions/cache/restore", "actions/cache/save"):
            key, target = self._cache_step(with_)
            if name.endswith("/save"):
                self.cache.save(key, target)  # a missing path: a warning on GitHub, nothing saved
                return {}
            hit = self.cache.restore(key, target)
            return {"cache-hit": "true" if hit else "false", "cache-primary-key": key}
        if name == "actions/cache":
            key, target = self._cache_step(with_)
            hit = self.cache.restore(key, target)
            if not hit:
                posts.append((key, target))
            return {"cache-hit": "true" if hit else "false"}
        raise Unsupported(f"uses: {uses} is not emulated")

    def _run(
        self,
        name: str,
        step: dict[str, Any],
        context: dict[str, Any],
        env: dict[str, str],
        path: list[str],
        temp: Path,
    ) -> StepResult:
        if step.get("shell") != "bash":
            raise Unsupported(f"step {name}: only shell: bash is emulated")
        files = {
            n: temp / f"{n}-{len(os.listdir(temp))}" for n in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH")
        }
        for f in files.values():
            f.write_text("")
        script = temp / f"step-{len(os.listdir(temp))}.sh"
        script.write_text(step["run"])
        full = {
            "HOME": str(self.home),
            "PATH": ":".join([*path, *self.extra_path, CLEAN_PATH]),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_ACTION_PATH": str(self.action_dir),
            "GITHUB_WORKSPACE": str(self.workspace),
            "RUNNER_OS": "Linux",
            "RUNNER_ARCH": "X64",
            "RUNNER_TEMP": str(temp),
            "LANG": "C.UTF-8",
            **self.github_env,
            **self.extra_env,
            **env,
            **{k: interpolate(v, context) for k, v in (step.get("env") or {}).items()},
            **{k: str(v) for k, v in files.items()},
        }
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=self.workspace,
            env=full,
            capture_output=True,
            text=True,
        )
        env.update(parse_kv_file(files["GITHUB_ENV"]))
        for line in reversed(files["GITHUB_PATH"].read_text().splitlines()):
            if line.strip():
                path.insert(0, line.strip())
        return StepResult(
            name,
            ran=True,
            code=proc.returncode,
            out=proc.stdout + proc.stderr,
            outputs=parse_kv_file(files["GITHUB_OUTPUT"]),
        )


def base_python() -> Path:
    """A real interpreter (not a venv's): what setup-python would have put in the tool cache."""
    import sys

    return Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))


def python_version(python: Path) -> str:
    out = subprocess.run(
        [str(python), "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip() or platform.python_version()


# --- GitLab job --------------------------------------------------------------------------------------------

_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def expand(text: str, variables: Mapping[str, str]) -> str:
    """GitLab's variable expansion in keys and variable values: $VAR and ${VAR}; unknown ones become ''."""
    return _VAR.sub(lambda m: variables.get(m[1] or m[2], ""), text)


_INPUT = re.compile(r"\$\[\[\s*inputs\.([A-Za-z0-9_-]+)\s*\]\]")


def load_component(path: Path, inputs: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A CI file with a `spec:` header, as GitLab includes it: the body is parsed, then every
    `$[[ inputs.NAME ]]` in its strings is the given value, else the input's default (an undeclared
    input, a missing required one or a value outside `options` fails as GitLab refuses the include)."""
    text = path.read_text()
    header, sep, body = text.partition("\n---\n")
    if not sep:
        if _INPUT.search(text) or inputs:
            raise Unsupported(f"{path.name}: inputs without a spec header")
        return yaml.safe_load(text)  # type: ignore[no-any-return]
    spec = (yaml.safe_load(header) or {}).get("spec", {}).get("inputs", {}) or {}
    given = dict(inputs or {})
    unknown = set(given) - set(spec)
    if unknown:
        raise AssertionError(f"GitLab refuses the include: unknown inputs {sorted(unknown)}")
    values: dict[str, str] = {}
    for name, decl in spec.items():
        decl = decl or {}
        if name not in given and "default" not in decl:
            raise AssertionError(f"GitLab refuses the include: input {name} is required")
        value = str(given.get(name, decl.get("default")))
        if decl.get("options") and value not in [str(o) for o in decl["options"]]:
            raise AssertionError(f"GitLab refuses the include: {name}={value!r} not in {decl['options']}")
        values[name] = value

    def sub(m: re.Match[str]) -> str:
        if m[1] not in values:
            raise AssertionError(f"GitLab refuses the include: $[[ inputs.{m[1]} ]] is not declared")
        return values[m[1]]

    def walk(node: Any) -> Any:  # GitLab interpolates the parsed YAML's strings, keys included
        if isinstance(node, dict):
            return {walk(k): walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return _INPUT.sub(sub, node) if isinstance(node, str) else node

    return walk(yaml.safe_load(body))  # type: ignore[no-any-return]


@dataclass
class Image:
    """A container image as the job sees it: what its PATH holds, and its ENV (job variables override)."""

    path: list[str]
    env: dict[str, str] = field(default_factory=dict)


def gitlab_job(
    template: Mapping[str, Any],
    job_name: str,
    *,
    project_dir: Path,
    home: Path,
    cache: CacheStore,
    ci_env: Mapping[str, str],
    extra_env: Mapping[str, str] | None = None,
    extra_path: list[str] | None = None,
    overrides: Mapping[str, str] | None = None,
    images: Mapping[str, Image] | None = None,
) -> JobResult:
    """Run one job of a GitLab CI file as a runner would: variables, cache restore, script, cache save.
    `images`: the images this runner can pull, by name (a `python:*` key matches any python tag); the
    job's `image:` must be one of them. Without `images`, `extra_path` stands for the image."""
    job = template[job_name]
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    variables: dict[str, str] = {**ci_env, "CI_PROJECT_DIR": str(project_dir), "HOME": str(home)}
    for source in (template.get("variables") or {}, job.get("variables") or {}, overrides or {}):
        for k, v in source.items():
            value = v["value"] if isinstance(v, dict) else v
            variables[k] = expand(str(value), variables)
    image = Image(path=list(extra_path or []))
    if images is not None:
        name = expand(str(job.get("image", "")), variables)
        match = images.get(name) or (images.get("python:*") if name.startswith("python:") else None)
        if match is None:
            raise Unsupported(f"image {name!r} is not emulated (have {sorted(images)})")
        image = match
    caches = job.get("cache") or []
    caches = [caches] if isinstance(caches, dict) else caches
    resolved = []
    for c in caches:
        key = c["key"]
        if isinstance(key, dict):
            raise Unsupported("cache:key:files is not emulated")
        key = expand(str(key), variables)
        if "/" in key or key in (".", ".."):
            raise AssertionError(f"GitLab refuses the cache key {key!r} (no '/', not . or ..)")
        for p in c["paths"]:
            resolved.append((f"{key}::{p}", project_dir / expand(p, variables), c.get("when", "on_success")))
    for key, p, _ in resolved:
        cache.restore(key, p)
    lines = [*(job.get("before_script") or []), *job["script"]]
    script = project_dir.parent / f"{job_name}-script.sh"
    script.write_text("\n".join(str(x) for x in lines) + "\n")
    env = {
        "PATH": ":".join([*image.path, CLEAN_PATH]),
        "LANG": "C.UTF-8",
        **image.env,
        "CI": "true",
        "GITLAB_CI": "true",
        **variables,
        **(extra_env or {}),
    }
    started = time.monotonic()
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-x", str(script)],
        cwd=project_dir,
        env=env,
        capture_output=True,
        text=True,
    )
    step = StepResult("script", ran=True, code=proc.returncode, out=proc.stdout + proc.stderr)
    step.seconds = time.monotonic() - started
    for key, p, when in resolved:  # after the script: on success by default, or `when: always`
        if when == "always" or (when == "on_success") == (proc.returncode == 0):
            cache.save(key, p)
    return JobResult([step], {}, variables)


# --- a GitHub-style workflow job (Gitea / Forgejo Actions) --------------------------------------------------


def workflow_job(
    workflow: Mapping[str, Any],
    job_name: str,
    *,
    workspace: Path,
    env: Mapping[str, str],
    secrets: Mapping[str, str],
    images: Mapping[str, Image],
    cache: CacheStore | None = None,
) -> JobResult:
    """Run one job of a workflow as act_runner does, for the steps a review job uses: `actions/checkout`
    (the workspace already holds the checkout the test made; its `fetch-depth` must be 0, as prereview
    needs base and head), `uses: docker://IMAGE` (its `args` run in that image, the workspace mounted,
    the job's and the step's env passed), `run:` (bash on the runner), actions/cache/restore and
    actions/cache/save (one path under the workspace, in `cache`), and the steps' `if:` and `id:` outputs.
    Anything else is refused."""
    job = workflow["jobs"][job_name]
    context: dict[str, Any] = {
        "secrets": dict(secrets),
        "github": {},
        "inputs": {},
        "steps": {},
        "runner": {},
    }
    results: list[StepResult] = []
    for i, step in enumerate(job["steps"]):
        name = step.get("name") or step.get("uses") or f"step {i}"
        context["__failed__"] = any(r.code for r in results)
        if not condition(step.get("if"), context):
            results.append(StepResult(name, ran=False))
            continue
        step_env = {k: interpolate(v, context) for k, v in (step.get("env") or {}).items()}
        uses = str(step.get("uses", ""))
        if uses.startswith("actions/checkout@"):
            if (step.get("with") or {}).get("fetch-depth") != 0 or not (workspace / ".git").exists():
                raise Unsupported("only a full-history checkout already in the workspace is emulated")
            results.append(StepResult(name, ran=True))
            continue
        if uses.split("@")[0] in ("actions/cache/restore", "actions/cache/save") and cache is not None:
            with_ = {k: interpolate(v, context) for k, v in (step.get("with") or {}).items()}
            if with_.get("restore-keys") or len(str(with_["path"]).split()) != 1:
                raise Unsupported("actions/cache with restore-keys or several paths is not emulated")
            key, target = str(with_["key"]), workspace / str(with_["path"])
            outputs = {}
            if uses.startswith("actions/cache/save"):
                cache.save(key, target)  # a missing path: a warning, nothing saved
            else:
                outputs = {"cache-hit": "true" if cache.restore(key, target) else "false"}
            results.append(StepResult(name, ran=True, outputs=outputs))
            if step.get("id"):
                context["steps"][step["id"]] = {"outputs": outputs, "outcome": "success"}
            continue
        if uses.startswith("docker://"):
            image = images.get(uses[len("docker://") :])
            if image is None:
                raise Unsupported(f"image {uses} is not emulated (have {sorted(images)})")
            argv = shlex.split(str((step.get("with") or {}).get("args", "")))
            full = {"PATH": ":".join([*image.path, CLEAN_PATH]), **image.env, **env, **step_env}
        elif "run" in step:
            argv = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]]
            full = {"PATH": CLEAN_PATH, **env, **step_env}
        else:
            raise Unsupported(f"step {name} is not emulated")
        started = time.monotonic()
        proc = subprocess.run(argv, cwd=workspace, env=full, capture_output=True, text=True)
        res = StepResult(name, ran=True, code=proc.returncode, out=proc.stdout + proc.stderr)
        res.seconds = time.monotonic() - started
        results.append(res)
    return JobResult(results, {}, dict(env))
