"""A `docker run` for the rehearsals, where no container engine exists: the image is an emulated one
(tests/ci/image.py: a PATH and an ENV, by name, from $FAKE_DOCKER_IMAGES as JSON), the command runs in the
working directory given with -w (else in `/`, the image's WORKDIR), with the image's ENV plus only the
variables passed with -e (a name alone takes the caller's value, as docker does). Refused as docker would
fail: an unknown image, a working directory, an event file, an output file or a cache dir passed with -e
outside every -v mount (absent in the container). Each argv is appended to $FAKE_DOCKER_LOG as one JSON
line."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def main(argv: list[str]) -> int:
    with open(os.environ["FAKE_DOCKER_LOG"], "a") as log:
        log.write(json.dumps(argv) + "\n")
    if not argv or argv[0] != "run":
        print(f"fake docker: only `docker run` is emulated, got {argv[:1]}", file=sys.stderr)
        return 125
    mounts, env_names, i = [], [], 1
    workdir: str | None = None
    while i < len(argv) and argv[i].startswith("-"):
        flag = argv[i]
        if flag == "--rm":
            i += 1
            continue
        value = argv[i + 1]
        if flag == "-v":
            mounts.append(value.split(":")[1])
        elif flag == "-e":
            env_names.append(value)
        elif flag == "-w":
            workdir = value
        elif flag not in ("--user", "--security-opt"):
            print(f"fake docker: flag {flag} is not emulated", file=sys.stderr)
            return 125
        i += 2
    image, command = argv[i], argv[i + 1 :]
    images = json.loads(os.environ["FAKE_DOCKER_IMAGES"])
    if image not in images:
        print(f"Unable to find image '{image}' locally", file=sys.stderr)
        return 125
    env = dict(images[image]["env"])
    for item in env_names:
        name, sep, value = item.partition("=")
        if sep:
            env[name] = value
        elif name in os.environ:
            env[name] = os.environ[name]
    env["PATH"] = ":".join([*images[image]["path"], "/usr/local/bin:/usr/bin:/bin"])

    def visible(path: str) -> bool:
        return any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounts)

    passed = {item.partition("=")[0] for item in env_names}
    for name in ("GITHUB_EVENT_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "PREREVIEW_CACHE_DIR"):
        if name == "PREREVIEW_CACHE_DIR" and name not in passed:
            continue  # the image's own (its ENV): inside the image
        if env.get(name) and not visible(env[name]):
            print(f"fake docker: {name}={env[name]} is not mounted into the container", file=sys.stderr)
            return 125
    if workdir is not None and not visible(workdir):
        print(f"fake docker: the working directory {workdir} is not mounted", file=sys.stderr)
        return 125
    return subprocess.run(command, cwd=workdir or "/", env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
