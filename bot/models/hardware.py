"""What the hardware allows: CPU threads from the real quota, GPU offload when the build has it."""

from __future__ import annotations

import math
import os
from pathlib import Path


def cpu_quota(cgroup_root: Path = Path("/sys/fs/cgroup")) -> int:
    """CPUs this process may really use: affinity mask, capped by a cgroup v2/v1 CPU quota."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = _cgroup_v2(cgroup_root / "cpu.max") or _cgroup_v1(cgroup_root / "cpu")
    if quota:
        n = min(n, max(1, math.ceil(quota)))
    return max(1, n)


def _cgroup_v2(path: Path) -> float | None:
    try:
        quota, period = path.read_text().split()[:2]
    except (OSError, ValueError):
        return None
    return None if quota == "max" else int(quota) / int(period)


def _cgroup_v1(root: Path) -> float | None:
    try:
        quota = int((root / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota <= 0 or period <= 0 else quota / period


def cpu_has_amx(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU reports Intel AMX (Sapphire Rapids and later): llama.cpp's AMX matrix kernels
    crash there on quantized models (ggml-org/llama.cpp#20824), so the weights must stay out of them."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            return "amx_int8" in line.split(":", 1)[-1].split()
    return False
