"""`.prereview.yml` + environment + CLI overrides -> one validated Config, passed explicitly."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .types import PrereviewError

SeverityName = Literal["info", "low", "medium", "high", "critical"]
FailLevel = Literal["none", "info", "low", "medium", "high", "critical"]

CONFIG_FILE = ".prereview.yml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelConfig(_Section):
    name: str = Field("qwen2.5-coder-1.5b", description="Catalog name, a local .gguf path, or a HF repo/file")
    backend: Literal["llama_cpp", "openai_http", "scripted"] = Field(
        "llama_cpp",
        description="In-process llama.cpp, an OpenAI-compatible server, or the scripted test model",
    )
    api_base: str | None = Field(None, description="Base URL of an OpenAI-compatible server (…/v1)")
    api_key_env: str = Field("PREREVIEW_API_KEY", description="Environment variable holding the API key")
    n_gpu_layers: int | None = Field(
        None, ge=-1, description="Layers to offload; None = all when GPU offload exists"
    )
    n_ctx: int | None = Field(None, ge=512, description="Context size; None = from the model and the budget")
    threads: int | None = Field(None, ge=1, description="CPU threads; None = the real CPU quota")
    timeout: float = Field(300.0, gt=0, description="HTTP backend: seconds per request")
    retries: int = Field(2, ge=0, description="HTTP backend: retries on connection errors and 5xx")
    script: str | None = Field(None, description="Scripted backend: JSON file with scripted replies")


class IgnoreConfig(_Section):
    """Changes never reviewed automatically (a person's `/review` still reviews them)."""

    authors: list[str] = Field(
        default_factory=lambda: ["dependabot[bot]", "renovate[bot]", "pre-commit-ci[bot]"],
        description="Author logins (globs, case-insensitive: '*[bot]') whose PRs/MRs are not reviewed",
    )
    labels: list[str] = Field(
        default_factory=lambda: ["skip-review"], description="PRs/MRs with one of these labels (globs)"
    )
    title_prefixes: list[str] = Field(
        default_factory=lambda: ["WIP", "[WIP]", "[skip review]", "Draft:", "[Draft]"],
        description="Titles starting with one of these (case-insensitive, as a whole word)",
    )


class ReviewConfig(_Section):
    include: list[str] = Field(default_factory=list, description="Globs to review (empty = everything)")
    exclude: list[str] = Field(
        default_factory=list, description="Globs never reviewed, added to the defaults"
    )
    skip_defaults: bool = Field(True, description="Skip lock, vendored, generated and minified files")
    max_findings: int = Field(20, ge=0, description="At most this many findings in a review")
    min_severity: SeverityName = Field("low", description="Drop findings below this severity")
    fail_level: FailLevel = Field("none", description="Exit 1 when a finding reaches this severity")
    instructions: str = Field("", description="Extra instructions appended to the review prompt")
    max_file_lines: int = Field(5000, ge=1, description="Skip files whose new version is longer than this")
    max_file_bytes: int = Field(
        1_000_000,
        ge=1,
        description="Files (or their diff) larger than this are skipped before any scanner or redaction",
    )
    chunk_tokens: int | None = Field(None, ge=64, description="Diff tokens per chunk; None = from n_ctx")
    max_new_tokens: int = Field(768, ge=32, description="Completion tokens per chunk")
    filter_mode: Literal["added", "diff_context", "file", "nofilter"] = Field(
        "diff_context",
        description="Lines that may get inline comments: added (changed lines only), diff_context (any line "
        "of a hunk), file (any line of a changed file; outside the hunks as a file comment), nofilter (as "
        "file; `prereview review --filter-mode nofilter` prints every finding)",
    )
    max_comments_per_file: int = Field(
        0, ge=0, description="Inline comments per file (0 = no cap); the rest are listed in the summary"
    )
    ignore: IgnoreConfig = Field(default_factory=IgnoreConfig)
    walkthrough: bool = Field(False, description="Add a walkthrough (summary, file by file, risky spots)")
    language: str = Field(
        "", description="Language of the model's messages and summaries (de, fr, zh, ja, …; empty = English)"
    )

    @field_validator("language")
    @classmethod
    def _known_language(cls, v: str) -> str:
        from .findings.language import LANGUAGES, language_name

        if v.strip() and language_name(v) is None:
            raise ValueError(f"unknown language code '{v}'; use one of {', '.join(sorted(LANGUAGES))}")
        return v.strip()


class ScannersConfig(_Section):
    secrets: bool = Field(True, description="Hard-coded credentials (detect-secrets + known token shapes)")
    bandit: bool = Field(True, description="Python security linter bandit on changed .py files")
    patterns: bool = Field(True, description="semgrep, offline, with the rules shipped in bot/rules/")
    safeguards: bool = Field(True, description="Escaping, validation or safe-API calls the change deletes")
    unreachable: bool = Field(True, description="Python code a change leaves after a return or raise (dead)")
    attributes: bool = Field(True, description="A `self.x` read that the Python class never defines")
    semgrep: str = Field("semgrep", description="semgrep executable (name on PATH or a path)")
    bandit_skip: list[str] = Field(
        default_factory=lambda: ["B101", "B404", "B603", "B607", "B110", "B112"],
        description="bandit test ids never reported (asserts, subprocess imports, try/except/pass)",
    )
    timeout: float = Field(120.0, description="Seconds one scanner may run")
    explain_scanner_findings: bool = Field(False, description="Model explains scanner hits in plain words")
    plausibility: bool = Field(
        True,
        description="Model findings outside bug/security are advisory (low); a CWE needs its sink nearby",
    )
    self_verify: bool = Field(True, description="A second, short model check confirms or downgrades findings")
    verify_categories: list[str] = Field(
        default_factory=lambda: ["security", "bug"], description="Model finding categories self_verify checks"
    )


class SandboxConfig(_Section):
    backend: Literal["auto", "bubblewrap", "docker", "none"] = "auto"
    image: str = Field("python:3.11-slim", description="docker backend: image to run tests in")
    timeout: float = Field(300.0, description="Seconds before a test run is killed")
    memory_mb: int = Field(
        2048, description="Memory limit for one process of a test run (docker: the whole run)"
    )
    memory_total_mb: int | None = Field(
        None, ge=16, description="bubblewrap: memory for a test run as a whole (cgroup); None = 2 × memory_mb"
    )
    shm_mb: int = Field(64, ge=1, description="bubblewrap: size of the run's own /dev/shm")
    disk_mb: int = Field(1024, ge=1, description="bubblewrap: how much a test run may add to the work copy")
    max_processes: int = Field(256, description="Process limit for a test run")
    max_output_bytes: int = Field(1_000_000, description="Output kept from a test run")
    cpus: float = Field(2.0, description="docker backend: CPUs for a test run")
    ro_paths: list[str] = Field(
        default_factory=list, description="bubblewrap: extra host paths shown read-only (a toolchain in /opt)"
    )


class TestsConfig(_Section):
    """`tests:` — the project's tests. The old scalar forms (`tests: off`, `on`, `auto`) still work."""

    __test__ = False  # not a pytest test class

    enabled: bool = Field(True, description="Run the project's tests (false = `tests: off`)")
    command: str | None = Field(
        None, description="The test command, run as given (same as top-level test_command; this wins)"
    )
    python: str | None = Field(
        None, description="Interpreter with the project's dependencies installed (in CI: the workflow's)"
    )
    budget_seconds: float = Field(
        900.0, gt=0, description="Seconds for the test stage (environment build + base and head runs)"
    )
    build_timeout: float = Field(900.0, gt=0, description="Seconds to build the project's test environment")
    wheels_only: bool = Field(
        False, description="Built venvs install wheels only (no sdist build code runs outside the sandbox)"
    )

    @field_validator("python")
    @classmethod
    def _python_path(cls, v: str | None) -> str | None:
        if v is not None and (not v.strip() or any(c in v for c in "\n\0")):
            raise ValueError(
                "must be an interpreter path or name, e.g. /usr/bin/python3.12 or .venv/bin/python"
            )
        return v.strip() if v else v


class PatchesConfig(_Section):
    enabled: bool = True
    candidates: int = Field(
        5,
        ge=1,
        description="Patch candidates per finding (temperature ladder; each sees why the last failed)",
    )
    budget_seconds: float = Field(300.0, description="Time budget for proposing and verifying patches")
    agent_steps: int = Field(8, ge=0, description="Steps of the agent loop in `prereview fix` (0 = off)")
    fix_mode: Literal["suggest", "branch"] = Field(
        "suggest",
        description="Server `/fix`: post the verified fix as suggestions, or push a branch + draft PR/MR",
    )


class BehaviourConfig(_Section):
    enabled: bool = Field(True, description="Compare changed Python functions at base and head, same inputs")
    max_calls: int = Field(40, ge=1, description="Calls generated per changed function no test reaches")
    max_traced_calls: int = Field(
        1000, ge=1, description="Calls recorded per changed function in the test runs (at most 8 per test)"
    )
    wrapped_inputs: int = Field(4, ge=0, description="Distinct test inputs per function made again varied")
    edge_calls: int = Field(48, ge=0, description="Test calls per run made with an edge argument")
    outer_calls: int = Field(60, ge=0, description="Tests' calls reaching a changed function, varied")
    amplified_tests: int = Field(36, ge=0, description="Variants of tests reaching it, one literal changed")
    budget_seconds: float = Field(120.0, gt=0, description="Time budget for generated calls and judgement")
    call_timeout: float = Field(2.0, gt=0, description="Seconds one generated call may run before it hangs")
    model_inputs: bool = Field(True, description="Let the model propose example calls for untyped functions")
    steer: bool = Field(False, description="Let the model aim the tests' calls at the changed lines")
    seeded_calls: int = Field(24, ge=0, description="Test calls given changed lines' or other calls' values")
    judge: Literal["verdict", "probabilities"] = Field(
        "verdict",
        description="How the model judges a difference no rule decides: a verdict question that stands only "
        "if blind comparisons in both orders agree, or each result's probability of being right "
        "(token probabilities; bench/judge.py measures both on your model)",
    )
    allow_unsandboxed: bool = Field(
        False, description="Run the change's code for this stage even with sandbox.backend: none (unsafe)"
    )


class GitHubConfig(_Section):
    max_comments_per_request: int = Field(
        30, ge=1, le=100, description="Inline comments in one review request; the rest go to the summary"
    )
    check_run: bool = Field(False, description="Also create a check run with annotations (checks: write)")
    sarif_upload: bool = Field(False, description="Also upload SARIF to code scanning (security-events)")
    fail_on_permission: bool = Field(False, description="Exit 2 (not just warn) when the token cannot post")
    allow_tests_on_pull_request_target: bool = Field(
        False, description="pull_request_target: allow tests/sandbox on the PR's code (unsafe for forks)"
    )
    incremental: bool = Field(True, description="On a push review only what the new commits changed")
    review_drafts: bool = Field(False, description="Also review draft PRs (else wait for ready_for_review)")
    write_interval: float = Field(1.0, ge=0, description="Seconds between writes (secondary rate limits)")


class GitLabConfig(_Section):
    codequality_path: str = Field(
        "gl-code-quality-report.json", description="Code Quality report path (relative to CI_PROJECT_DIR)"
    )
    max_discussions: int = Field(30, ge=0, description="New diff discussions per run; rest in the summary")
    suggestions: bool = Field(True, description="Post verified fixes as GitLab suggestions")
    file_notes: bool = Field(True, description="If GitLab refuses a line, comment on the file (>= 16.4)")
    resolve_stale: bool = Field(True, description="Resolve prereview threads whose finding is gone")
    fail_on_permission: bool = Field(False, description="Exit 2 (not just warn) when the token cannot post")
    retries: int = Field(4, ge=0, description="Retries of an API call on 429 and 5xx, with backoff")
    timeout: float = Field(30.0, description="Seconds per API request")


class GiteaConfig(_Section):
    max_comments: int = Field(30, ge=0, description="Inline comments in one review; the rest in the summary")
    fail_on_permission: bool = Field(False, description="Exit 2 (not just warn) when the token cannot post")
    retries: int = Field(4, ge=0, description="Retries of an API call on 429 and 5xx, with backoff")
    timeout: float = Field(30.0, gt=0, description="Seconds per API request")


class ServerConfig(_Section):
    """`prereview serve` / `prereview worker`: the server reads these from its own config file and
    environment only, never from a repository's .prereview.yml or a comment."""

    command_prefix: str = Field("/", description="Commands start with this ('/prereview' on shared servers)")
    auto_review: bool = Field(True, description="Review PRs on open/reopen/new commits")
    no_auto_review: list[str] = Field(
        default_factory=list, description="Repositories (globs: 'org/*') without automatic reviews"
    )
    repositories: list[str] = Field(
        default_factory=list,
        description="Only these repositories (globs: 'org/*', case-insensitive) are served; empty: any",
    )
    queue: Literal["sqlite", "redis"] = Field("sqlite", description="Embedded SQLite queue or a shared Redis")
    queue_path: str | None = Field(None, description="SQLite queue file (default ~/.local/state/prereview/)")
    redis_url: str = Field("redis://127.0.0.1:6379/0", description="Redis broker when queue: redis")
    max_body_bytes: int = Field(5_000_000, description="Larger webhook bodies are refused with 413")
    max_unverified_bytes: int = Field(
        20_000_000, ge=1, description="Webhook bodies being received at once, in bytes (503 beyond)"
    )
    rate_limit_per_minute: int = Field(30, description="Accepted events per repo per minute (429 beyond)")
    request_timeout: float = Field(10.0, description="Seconds to receive a webhook body before 408")
    header_timeout: float = Field(
        10.0, gt=0, description="Seconds to receive a request's headers before the connection is closed"
    )
    keep_alive_seconds: float = Field(
        5.0, gt=0, description="Idle keep-alive connections are closed after this"
    )
    max_connections: int = Field(
        200, ge=1, description="Concurrent connections and requests; beyond this the server answers 503"
    )
    max_header_bytes: int = Field(16384, ge=1024, description="Larger request heads are refused with 400")
    github_api_url: str = Field("https://api.github.com", description="GitHub REST base (GHES: …/api/v3)")
    gitlab_url: str = Field("https://gitlab.com", description="GitLab instance URL")
    github_git_url: str = Field("https://github.com", description="Where `/fix` clones GitHub repos from")
    gitlab_git_url: str | None = Field(
        None, description="Where `/fix` clones and pushes GitLab projects (default: gitlab_url)"
    )
    gitea_url: str = Field(
        "", description="Gitea/Forgejo instance URL (https://gitea.example.com; the API is at /api/v1)"
    )
    gitea_git_url: str | None = Field(
        None, description="Where the server clones Gitea/Forgejo repositories (default: gitea_url)"
    )
    bitbucket_url: str = Field(
        "", description="Bitbucket Data Center URL, with its context path (https://bitbucket.example.com)"
    )
    bitbucket_git_url: str | None = Field(
        None, description="Where the server clones Bitbucket repositories (default: bitbucket_url + /scm)"
    )
    bot_logins: list[str] = Field(
        default_factory=list, description="Accounts whose comments are ignored (and any '*[bot]')"
    )
    coalesce_seconds: float = Field(3.0, description="Auto-reviews wait this long so quick pushes coalesce")
    lease_seconds: float = Field(60.0, description="A job whose worker stops renewing this long is retried")
    lost_after_seconds: float = Field(30.0, description="A queued job with no message this long is resent")
    busy_retry_seconds: float = Field(0.2, description="Pause before requeueing a job whose PR is busy")
    retry_seconds: float = Field(10.0, description="Backoff step between attempts of a failed job")
    job_attempts: int = Field(3, ge=1, description="Attempts per job (a killed worker counts as one)")
    reap_seconds: float = Field(5.0, description="How often each worker looks for jobs of dead workers")
    job_timeout_seconds: float = Field(
        3600.0, ge=0, description="Wall-clock limit per job; past it the job fails with a reply (0: none)"
    )
    job_timeout_grace: float = Field(
        30.0, gt=0, description="Seconds a job has to stop after its limit before its worker is replaced"
    )
    log_format: Literal["json", "text"] = Field(
        "json", description="serve/worker logs: one JSON object per line, or text (both carry job ids)"
    )
    store_retry_seconds: float = Field(
        120.0, ge=0, description="How long a job's final writes are retried while the queue store fails"
    )
    ask_max_tokens: int = Field(400, description="Completion tokens for an /ask answer")


class Config(_Section):
    model: ModelConfig = Field(default_factory=ModelConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    scanners: ScannersConfig = Field(default_factory=ScannersConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    patches: PatchesConfig = Field(default_factory=PatchesConfig)
    behaviour: BehaviourConfig = Field(default_factory=BehaviourConfig)
    tests: TestsConfig = Field(default_factory=TestsConfig)
    test_command: str | None = Field(None, description="The test command, run as given (or tests.command)")
    github: GitHubConfig = Field(default_factory=GitHubConfig)
    gitlab: GitLabConfig = Field(default_factory=GitLabConfig)
    gitea: GiteaConfig = Field(default_factory=GiteaConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)

    @field_validator("tests", mode="before")
    @classmethod
    def _scalar_tests(cls, v: Any) -> Any:
        # The old scalar forms. YAML 1.1 reads a bare `off`/`on` as a boolean: `tests: off` means off.
        if isinstance(v, bool):
            return {"enabled": v}
        if isinstance(v, str):
            if v not in ("auto", "on", "off"):
                raise ValueError("must be auto, off, or a mapping (enabled, command, python, budget_seconds)")
            return {"enabled": v != "off"}
        return v

    @property
    def test_cmd(self) -> str | None:
        """The configured test command (`tests.command`, else `test_command`), None = detect."""
        return self.tests.command or self.test_command


# Environment variables that override config keys (dotted path, parsed by pydantic).
ENV_OVERRIDES: dict[str, str] = {
    "PREREVIEW_MODEL": "model.name",
    "PREREVIEW_BACKEND": "model.backend",
    "PREREVIEW_API_BASE": "model.api_base",
    "PREREVIEW_N_GPU_LAYERS": "model.n_gpu_layers",
    "PREREVIEW_N_CTX": "model.n_ctx",
    "PREREVIEW_THREADS": "model.threads",
    "PREREVIEW_FAIL_LEVEL": "review.fail_level",
    "PREREVIEW_SANDBOX": "sandbox.backend",
    "PREREVIEW_TEST_COMMAND": "tests.command",
    "PREREVIEW_TESTS_PYTHON": "tests.python",
}


def _format_error(exc: ValidationError, source: str) -> str:
    err = exc.errors()[0]
    key = ".".join(str(p) for p in err["loc"]) or "(top level)"
    if err["type"] == "extra_forbidden":
        return f"{source}: unknown key '{key}'; remove it or check the spelling (see README, Configuration)"
    return f"{source}: {key}: {err['msg']}"


def set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = data
    for p in parents:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise PrereviewError(f"config: '{p}' must be a mapping to set '{dotted}'")
    node[leaf] = value


MAX_CONFIG_BYTES = 256 * 1024  # a real .prereview.yml is a few hundred bytes


class _NoAliasError(yaml.YAMLError):
    def __init__(self, line: int) -> None:
        super().__init__("alias")
        self.line = line


class _PlainLoader(yaml.SafeLoader):
    """SafeLoader without anchors and aliases: `&a`/`*a` let a few hundred bytes expand into a structure
    that takes seconds and megabytes to walk (a YAML "billion laughs"). Refused before anything walks it."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _NoAliasError(event.start_mark.line + 1)
        return super().compose_node(parent, index)


def parse_yaml(text: str, source: str) -> dict[str, Any]:
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_CONFIG_BYTES:
        raise PrereviewError(
            f"{source}: {size} bytes, over the {MAX_CONFIG_BYTES}-byte limit for a config file; shorten it"
        )
    try:
        data = yaml.load(text, Loader=_PlainLoader) if text.strip() else {}  # noqa: S506 (a SafeLoader)
    except _NoAliasError as exc:
        raise PrereviewError(
            f"{source}: line {exc.line} uses a YAML anchor or alias (&name / *name), which prereview does "
            "not accept; write the values out in full"
        ) from None
    except RecursionError:  # `[[[[…` thousands deep: the parser recurses once per level
        raise PrereviewError(_TOO_DEEP.format(source=source)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise PrereviewError(f"{source}:{where} is not valid YAML; fix the syntax") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PrereviewError(f"{source}: the top level must be a mapping of keys (model:, review:, …)")
    if _depth(data) > MAX_CONFIG_DEPTH:  # nothing after this (merging, validation) recurses too far
        raise PrereviewError(_TOO_DEEP.format(source=source))
    return data


MAX_CONFIG_DEPTH = 32  # a real config nests 3 or 4 levels
_TOO_DEEP = (
    "{source}: lists or mappings nested more than " + str(MAX_CONFIG_DEPTH) + " levels deep; write the "
    "config flat (its keys nest three or four levels)"
)


def _depth(data: Any) -> int:
    """How deeply lists and mappings nest in `data` (walked without recursion)."""
    deepest, todo = 0, [(data, 1)]
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_CONFIG_DEPTH:
            children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
            todo += [(c, depth + 1) for c in children if isinstance(c, (dict, list))]
    return deepest


def build(
    file_data: Mapping[str, Any] | None = None,
    *,
    source: str = CONFIG_FILE,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Merge file < env < CLI overrides (dotted keys) and validate once."""
    data: dict[str, Any] = _deep_copy(dict(file_data or {}))
    env = os.environ if env is None else env
    try:
        Config.model_validate(data)
    except ValidationError as exc:
        raise PrereviewError(_format_error(exc, source)) from None
    if isinstance(data.get("tests"), (str, bool)):  # the old scalar form, so `tests.python` can be set below
        data["tests"] = Config._scalar_tests(data["tests"])
    origin: dict[str, str] = {}  # dotted key -> where its override came from, for the error message
    for var, dotted in ENV_OVERRIDES.items():
        if env.get(var):
            set_dotted(data, dotted, env[var])
            origin[dotted] = f"environment variable {var}"
    for dotted, value in (overrides or {}).items():
        if value is not None:
            set_dotted(data, dotted, value)
            origin[dotted] = "command line"
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        key = ".".join(str(p) for p in exc.errors()[0]["loc"])
        raise PrereviewError(_format_error(exc, origin.get(key, "environment/command line"))) from None


def load_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise PrereviewError(f"config file {path} not found; pass an existing file to --config")
    return parse_yaml(path.read_text(encoding="utf-8", errors="replace"), str(path))


def _deep_copy(d: dict[str, Any]) -> dict[str, Any]:
    return {k: _deep_copy(v) if isinstance(v, dict) else v for k, v in d.items()}
