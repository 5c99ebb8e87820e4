"""The bubblewrap sandbox for real: what a hostile test in a reviewed change tries is contained."""

from __future__ import annotations

import shutil
import sys
import uuid
from pathlib import Path

import pytest

from bot.sandbox.bubblewrap import BubblewrapSandbox


def run_py(sb, work: Path, code: str, timeout: float = 60):
    (work / "attack.py").write_text(code)
    return sb.run(["python", "attack.py"], cwd=work, timeout=timeout)


def test_runs_the_venv_python_with_pytest_in_the_work_copy(bwrap, work):
    res = run_py(bwrap, work, "import os, pytest, sys\nprint(os.getcwd()); print(pytest.__name__)\n")
    assert res.returncode == 0, res.output
    assert res.stdout.split() == [str(work.resolve()), "pytest"]
    assert not res.timed_out and res.backend == "bubblewrap"


def test_failing_command_is_a_result_not_an_exception(bwrap, work):
    res = bwrap.run(["sh", "-c", "echo out; echo err >&2; exit 3"], cwd=work, timeout=30)
    assert (res.returncode, res.stdout.strip(), res.stderr.strip()) == (3, "out", "err")


def test_no_network(bwrap, work):
    code = (
        "import socket\n"
        "for host in [('1.1.1.1', 80), ('127.0.0.1', 22)]:\n"
        "    try:\n"
        "        socket.create_connection(host, timeout=3); print('CONNECTED', host)\n"
        "    except OSError as e:\n"
        "        print('blocked', e.errno)\n"
    )
    res = run_py(bwrap, work, code)
    assert "CONNECTED" not in res.stdout
    assert res.stdout.count("blocked") == 2


def test_no_tokens_or_ci_secrets_in_the_environment(bwrap, work, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_supersecret")
    monkeypatch.setenv("CI_JOB_TOKEN", "glcbt-secret")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
    monkeypatch.setenv("PREREVIEW_API_KEY", "sk-secret")
    res = run_py(bwrap, work, "import os\nprint(sorted(os.environ.items()))\n")
    assert res.returncode == 0
    for secret in ("ghp_supersecret", "glcbt-secret", "agent.sock", "sk-secret", "GITHUB", "CI_JOB"):
        assert secret not in res.stdout


def test_home_and_ssh_keys_are_not_visible(bwrap, work, tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    monkeypatch.setenv("HOME", str(home))
    code = (
        "import os, pathlib\n"
        f"paths = [os.path.expanduser('~/.ssh'), {str(home / '.ssh' / 'id_ed25519')!r}, '/root/.ssh', "
        f"{str(Path.home() / '.ssh')!r}]\n"
        "print(os.environ['HOME'], [p for p in paths if os.path.exists(p)])\n"
    )
    res = run_py(bwrap, work, code)
    assert res.returncode == 0, res.output
    assert res.stdout.strip() == "/tmp/home []"


def test_writes_outside_the_work_copy_fail_or_vanish(bwrap, work, tmp_path):
    outside = tmp_path / "outside.txt"
    marker = f"/tmp/prereview-escape-{uuid.uuid4().hex}"
    code = (
        "import pathlib\n"
        f"for p in [{str(outside)!r}, '/etc/evil', {sys.prefix + '/evil'!r}, '/usr/evil']:\n"
        "    try:\n"
        "        open(p, 'w').write('x'); print('WROTE', p)\n"
        "    except OSError as e:\n"
        "        print('denied', p)\n"
        f"open({marker!r}, 'w').write('x')\n"  # the sandbox's own /tmp: allowed, gone afterwards
        "pathlib.Path('inside.txt').write_text('ok')\n"
    )
    res = run_py(bwrap, work, code)
    assert res.returncode == 0, res.output
    # outside.txt lies under /tmp, which inside is the sandbox's own tmpfs: the write lands there and vanishes
    assert res.stdout.count("denied") == 3 and f"WROTE {outside}" in res.stdout
    assert not outside.exists() and not Path(marker).exists() and not Path(sys.prefix, "evil").exists()
    assert (work / "inside.txt").read_text() == "ok"


def test_infinite_loop_is_killed_at_the_timeout(bwrap, work):
    res = run_py(bwrap, work, "import subprocess\nsubprocess.Popen(['sleep', '1000'])\nwhile True: pass\n", 2)
    assert res.timed_out and res.killed_reason == "timeout" and res.returncode != 0


def test_unbounded_memory_is_refused(bwrap, work):
    res = run_py(bwrap, work, "x = []\nwhile True: x.append(bytearray(50_000_000))\n")
    assert res.returncode != 0 and not res.timed_out
    assert "MemoryError" in res.stderr


def test_fork_bomb_is_contained(bwrap, work):
    code = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    for _ in range(5000):\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30); os._exit(0)\n"
        "        n += 1\n"
        "    print('forked', n)\n"
        "except OSError as e:\n"
        "    print('fork refused after', n)\n"
    )
    res = run_py(bwrap, work, code, timeout=20)
    # the process cap refuses forks (pids cgroup or RLIMIT_NPROC); at worst the timeout ends it all
    assert "fork refused after" in res.stdout or res.timed_out, res.output


def test_output_flood_is_capped_keeping_head_and_tail(bwrap, work):
    code = "import sys\nprint('FIRST')\nfor _ in range(20000): sys.stdout.write('x' * 100 + '\\n')\n"
    code += "print('LAST')\n"
    res = run_py(bwrap, work, code)
    assert res.truncated and len(res.stdout) < 25_000
    assert res.stdout.startswith("FIRST") and res.stdout.rstrip().endswith("LAST")


def test_does_not_run_as_root_inside(bwrap, work):
    res = bwrap.run(["id", "-u"], cwd=work, timeout=30)
    assert res.stdout.strip() != "0"


def test_missing_bwrap_is_a_one_line_error(work, monkeypatch):
    from bot.config import SandboxConfig
    from bot.types import PrereviewError

    sb = BubblewrapSandbox(SandboxConfig())
    sb._bwrap = None
    try:
        sb.run(["true"], cwd=work, timeout=5)
    except PrereviewError as exc:
        assert "apt-get install bubblewrap" in str(exc)
    else:
        raise AssertionError("expected PrereviewError")


def test_own_tmp_is_private(bwrap, work):
    res = run_py(bwrap, work, "import os\nprint(sorted(os.listdir('/tmp')))\n")
    # only HOME and the directories leading to the work copy and to the read-only interpreter (a venv
    # of a checkout under /tmp, as in CI)
    bound = [work.resolve(), *map(Path, bwrap._readonly_paths())]
    visible = {"home"} | {p.parts[2] for p in bound if len(p.parts) > 2 and p.parts[1] == "tmp"}
    assert set(eval(res.stdout)) == visible


RESERVE = """import ctypes, ctypes.util, mmap
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mmap.restype = ctypes.c_void_p
I, L = ctypes.c_int, ctypes.c_long
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, I, I, I, L]
p = libc.mmap(None, 16 << 30, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
print("reserved" if p not in (None, ctypes.c_void_p(-1).value) else f"refused {ctypes.get_errno()}")
"""


def test_reserved_address_space_is_free_where_the_run_is_bounded_as_a_whole(bwrap, work):
    """WebAssembly engines (Node), the JVM and Go reserve far more address space than they use; under a
    whole-run bound a process's cap is on its data, so the reservation works and greed still fails."""
    if bwrap._probe() == "rlimit":
        pytest.skip("no cgroup or systemd scope here: RLIMIT_AS is the only bound, and it stays")
    res = run_py(bwrap, work, RESERVE)
    assert res.stdout.strip() == "reserved", res.stderr
    greedy = run_py(bwrap, work, "x = []\nwhile True: x.append(bytearray(50_000_000))\n")
    assert "MemoryError" in greedy.stderr


def test_node_can_instantiate_webassembly_with_memory(bwrap, work):
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    if bwrap._probe() == "rlimit":
        pytest.skip("no cgroup or systemd scope here: RLIMIT_AS is the only bound, and it stays")
    # a module with one memory of one page: V8 reserves its guard region (~10 GiB) for it
    wasm = "new Uint8Array([0,97,115,109,1,0,0,0,5,3,1,0,1])"
    code = f"WebAssembly.instantiate({wasm}).then(() => console.log('instantiated'))"
    res = bwrap.run(["node", "-e", code], cwd=work, timeout=60)
    assert res.stdout.strip() == "instantiated", res.stderr
