"""The GitLab template's job rehearsed as a runner runs it (tests/ci/runner.py) against the emulated GitLab.

Real: the job's script (venv, pip installs, semgrep's own venv, the model step, the bwrap check, the
review) with the template's variables expanded, bubblewrap, the emulated GitLab API. Emulated: the image
(this machine's Python first on a clean PATH) and GitLab's cache (a directory store keyed by the
expanded `cache:key`). Pre-seeded, as an earlier pipeline would have left them in the cache: the
llama-cpp-python wheel (the one pip built for this machine; nothing is compiled) and the model cache
(the review uses the scripted model, so the GGUF's bytes are never read).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bot.models import catalog
from bot.render.markdown import SUMMARY_MARKER
from tests.ci.runner import CacheStore, base_python, gitlab_job
from tests.github.test_action_rehearsal import (
    LLAMA_VERSION,
    RISKY,
    TEST_COMMAND,
    copy_action,
    llama_wheel,
    rehearsal_env,
)

from .conftest import MR, SCRIPTED

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "templates" / "prereview.gitlab-ci.yml"


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CacheStore, Path]:
    wheel = llama_wheel()
    if wheel is None:
        pytest.skip(
            f"no llama-cpp-python {LLAMA_VERSION} wheel in pip's cache to pre-seed (run make install-dev, "
            "or set PREREVIEW_LLAMA_WHEEL); the rehearsal never compiles it"
        )
    root = tmp_path_factory.mktemp("gitlab-runner")
    store = CacheStore(root / "cache-store")
    store.seed_prefix("prereview-wheel-", {wheel.name: wheel})
    return copy_action(root / "prereview-src"), store, root / "home"


def _seed_model(store: CacheStore, tmp_path: Path) -> None:
    entry = catalog.CATALOG[catalog.TEST_MODEL]
    gguf = catalog.cache_dir() / "models" / entry.filename
    if not (gguf.is_file() and gguf.stat().st_size == entry.size):
        gguf = tmp_path / "sparse" / entry.filename
        gguf.parent.mkdir()
        with gguf.open("wb") as fh:
            fh.truncate(entry.size)
    store.seed_prefix(
        "prereview-model-",
        {entry.filename: gguf, Path(entry.filename).with_suffix(".verified").name: entry.sha256.encode()},
    )


def test_the_template_installs_the_pipeline_reviews_and_then_runs_from_the_cache(
    bug_mr: MR, machine, tmp_path: Path
) -> None:
    src, store, home = machine
    _seed_model(store, tmp_path)
    bug_mr.commit({"python_programs/run.py": RISKY})
    cfg_dir = tmp_path / "my config"
    cfg_dir.mkdir()
    config = dict(
        SCRIPTED,
        scanners={"secrets": True, "bandit": True, "patterns": True, "self_verify": False},
        tests="auto",
        sandbox={"backend": "auto"},
        test_command=TEST_COMMAND,
    )
    (cfg_dir / "c.yml").write_text(yaml.safe_dump(config))
    template = yaml.safe_load(TEMPLATE.read_text())

    with bug_mr.fake() as fake:
        env = {k: v for k, v in bug_mr.env(fake).items() if k not in ("PATH", "HOME")}

        def job():
            return gitlab_job(
                template,
                "prereview",
                project_dir=bug_mr.repo,
                home=home,
                cache=store,
                ci_env=env,
                extra_env=rehearsal_env(),
                extra_path=[str(base_python().parent)],  # the image's python
                overrides={
                    "PREREVIEW_PIP_SPEC": str(src),
                    "PREREVIEW_MODEL": catalog.TEST_MODEL,
                    "PREREVIEW_ARGS": f'--config "{cfg_dir / "c.yml"}" --fail-level none',
                },
            )

        first = job()
        assert first.ok, first.log
        out = first.steps[0].out
        assert "installing" in out and "already in the cache" in out, out
        assert "PREREVIEW_SANDBOX_OFF" not in out, out
        bodies = "\n".join(n["body"] for n in fake.notes)
        assert "· semgrep `py-subprocess-shell-true`" in bodies, bodies
        assert "· bandit `B104" in bodies, bodies
        assert "This change breaks" in bodies and "· tests" in bodies, bodies  # ran inside bwrap
        assert "not installed" not in bodies and "Sandbox off" not in bodies
        assert sum(SUMMARY_MARKER in n.get("body", "") for n in fake.notes) == 1
        assert fake.violations == []
        assert (bug_mr.repo / "gl-code-quality-report.json").is_file()
        assert any(k.startswith("prereview-venv-py3.11-llama") for k in store.saved), store.saved

        posted = len(fake.diff_notes)
        second = job()
        assert second.ok, second.log
        assert "venv restored from the cache" in second.steps[0].out
        assert "installing" not in second.steps[0].out
        assert len(fake.diff_notes) == posted, "nothing posted twice"


def test_drafts_are_skipped_by_default() -> None:
    rule = yaml.safe_load(TEMPLATE.read_text())["prereview"]["rules"][0]["if"]
    assert '$CI_MERGE_REQUEST_DRAFT != "true"' in rule and '$PREREVIEW_REVIEW_DRAFTS == "true"' in rule
