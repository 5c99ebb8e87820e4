"""scripts/ci/sandbox.sh on an Ubuntu 24.04-like runner: bwrap blocked by AppArmor until it has a profile.

The kernel side is played by small fakes on PATH: `bwrap` succeeds only once `apparmor_parser` loaded a
profile with `userns,` for it (or once `sysctl` lifted the restriction); the restriction's /proc file is a
temporary file. The script itself runs for real (PREREVIEW_SANDBOX_SUDO=direct: no sudo involved).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "ci" / "sandbox.sh"


def _fakes(tmp: Path, parser_helps: bool) -> Path:
    bin_ = tmp / "bin"
    bin_.mkdir()
    allowed = tmp / "userns-allowed"
    scripts = {
        "bwrap": f'[ -e "{allowed}" ] && exit 0\necho "bwrap: setting up uid map: Permission denied" >&2\n'
        "exit 1\n",
        "apparmor_parser": (
            f'[ "$1" = -r ] && grep -q "userns," "$2" && grep -q "profile bwrap {bin_}/bwrap" "$2" '
            f"&& {'touch ' + str(allowed) if parser_helps else 'true'}\n"
        ),
        "sysctl": f'echo "$@" > "{tmp}/sysctl-args"\ntouch "{allowed}"\n',
    }
    for name, body in scripts.items():
        (bin_ / name).write_text("#!/bin/sh\n" + body)
        (bin_ / name).chmod(0o755)
    return bin_


def _run(tmp: Path, bin_: Path, **env: str) -> subprocess.CompletedProcess[str]:
    restrict = tmp / "restrict"
    restrict.write_text("1\n")
    full = {
        "PATH": f"{bin_}:/usr/bin:/bin",
        "HOME": str(tmp),
        "PREREVIEW_USERNS_SYSCTL": str(restrict),
        "PREREVIEW_APPARMOR_PROFILE": str(tmp / "apparmor.d-bwrap"),
        "PREREVIEW_SANDBOX_SUDO": "direct",
        "RUNNER_ENVIRONMENT": "github-hosted",  # a throwaway VM: the action may relax the restriction
        "GITHUB_ENV": str(tmp / "github_env"),
        **env,
    }
    (tmp / "github_env").write_text("")
    return subprocess.run(["bash", str(SCRIPT)], env=full, capture_output=True, text=True, cwd=tmp)


def test_an_apparmor_profile_for_bwrap_makes_the_sandbox_work(tmp_path: Path) -> None:
    bin_ = _fakes(tmp_path, parser_helps=True)
    proc = _run(tmp_path, bin_)
    assert proc.stdout.strip().splitlines()[-1] == "ok", proc.stdout + proc.stderr
    profile = (tmp_path / "apparmor.d-bwrap").read_text()
    assert f"profile bwrap {bin_}/bwrap flags=(unconfined) {{" in profile and "  userns," in profile
    assert not (tmp_path / "sysctl-args").exists(), "the profile sufficed: the sysctl stays as it was"
    assert (tmp_path / "github_env").read_text() == ""


def test_the_sysctl_is_the_fallback(tmp_path: Path) -> None:
    bin_ = _fakes(tmp_path, parser_helps=False)
    proc = _run(tmp_path, bin_)
    assert proc.stdout.strip().splitlines()[-1] == "ok", proc.stdout + proc.stderr
    assert "kernel.apparmor_restrict_unprivileged_userns=0" in (tmp_path / "sysctl-args").read_text()


def test_without_privileges_the_reason_goes_to_the_review(tmp_path: Path) -> None:
    bin_ = _fakes(tmp_path, parser_helps=True)
    proc = _run(tmp_path, bin_, PREREVIEW_SANDBOX_SUDO="0")
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("off: AppArmor restricts unprivileged user namespaces"), proc.stdout
    env_line = (tmp_path / "github_env").read_text().strip()
    assert env_line.startswith("PREREVIEW_SANDBOX_OFF=AppArmor restricts") and "\n" not in env_line
    assert not (tmp_path / "apparmor.d-bwrap").exists()


def test_a_working_bwrap_is_left_alone(tmp_path: Path) -> None:
    bin_ = _fakes(tmp_path, parser_helps=True)
    (tmp_path / "userns-allowed").touch()
    proc = _run(tmp_path, bin_)
    assert proc.stdout.strip() == "ok" and not (tmp_path / "apparmor.d-bwrap").exists()
    assert os.access(SCRIPT, os.X_OK)


def test_a_self_hosted_runner_is_not_changed_unless_asked(tmp_path: Path) -> None:
    """Relaxing user namespaces is host-wide: only on GitHub-hosted runners by default (issue 27)."""
    bin_ = _fakes(tmp_path, parser_helps=True)
    proc = _run(tmp_path, bin_, RUNNER_ENVIRONMENT="self-hosted")
    assert proc.stdout.strip().splitlines()[-1].startswith("off: AppArmor restricts"), proc.stdout
    assert "sandbox-userns: allow" in proc.stdout
    assert not (tmp_path / "apparmor.d-bwrap").exists() and not (tmp_path / "sysctl-args").exists()
    asked = _run(tmp_path, bin_, RUNNER_ENVIRONMENT="self-hosted", PREREVIEW_SANDBOX_USERNS="allow")
    assert asked.stdout.strip().splitlines()[-1] == "ok", asked.stdout + asked.stderr
    assert (tmp_path / "apparmor.d-bwrap").exists()
