"""Webhook server benchmark (prints figures; no assertions).

Runs `prereview serve` and `prereview worker` as real processes against the emulated GitHub API and
measures, for signed `issue_comment` webhooks:
  1. webhook -> first reaction (👀) and webhook -> review posted, for single /review commands
     (each on a new head, so every review posts new comments);
  2. a burst of /ask jobs (each: fetch the PR, one model call, one reply): jobs per minute;
  3. a burst of /review commands for one PR: how many ran and how many coalesced.

usage: python bench/webhook.py [--model scripted|qwen2.5-coder-0.5b] [--queue sqlite|redis]
                               [--workers N] [--reviews 5] [--burst 30]
"""

from __future__ import annotations

import argparse
import itertools
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.github_api import FakeGitHub  # noqa: E402
from tests.server.stack import RedisServer, Stack, comment_event, redis_binary, wait_for  # noqa: E402

REPO, PR = "chmouel/scratchmyback", 1
_ids = itertools.count(1)


def diff_for(i: int) -> str:
    return (
        "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,4 @@\n def f(x):\n"
        f"-    return x\n+    y = eval(x)  # change {i}\n+    open('/tmp/f{i}').write(y)\n+    return y\n"
    )


def replies(gh: FakeGitHub) -> set[int]:
    return {int(m) for c in gh.issue_comments for m in re.findall(r"prereview:reply-to=(\d+)", c["body"])}


def model_config(name: str) -> dict:
    if name == "scripted":
        return {"backend": "scripted", "name": "scripted"}
    return {"backend": "llama_cpp", "name": name}


def latency(stack: Stack, gh: FakeGitHub, n: int) -> None:
    first, done = [], []
    for i in range(n):
        head = f"{i + 1:040x}"
        gh.set_head(head, diff_for(i))
        cid = next(_ids)
        t0 = time.monotonic()
        stack.github(comment_event("/review", comment_id=cid))
        wait_for(lambda cid=cid: any(x["subject_id"] == cid for x in gh.reactions), 900, "the reaction")
        first.append(time.monotonic() - t0)
        marker = f"prereview:head={head}"  # the summary comment names the head it reviewed
        wait_for(lambda m=marker: any(m in c["body"] for c in gh.issue_comments), 900, "the review")
        done.append(time.monotonic() - t0)
    findings = sum(1 for _ in gh.comments)
    print(f"  webhook -> 👀 reaction     median {statistics.median(first):6.2f} s  (max {max(first):.2f})")
    print(
        f"  webhook -> review posted  median {statistics.median(done):6.2f} s  (max {max(done):.2f}; "
        f"first includes the model load; {findings} inline comment(s) in {n} reviews)"
    )


def ask_burst(stack: Stack, gh: FakeGitHub, n: int) -> None:
    ids = [next(_ids) for _ in range(n)]
    t0 = time.monotonic()
    for cid in ids:
        stack.github(comment_event(f"/ask what does change {cid} do?", comment_id=cid))
    sent = time.monotonic() - t0
    wait_for(lambda: set(ids) <= replies(gh), 3600, "the burst")
    wall = time.monotonic() - t0
    print(f"  {n} /ask webhooks accepted in {sent:.2f} s ({n / sent:.0f}/s)")
    print(
        f"  {n} /ask jobs done in {wall:.1f} s: {60 * n / wall:.1f} jobs/minute (one PR: one job at a time)"
    )


def review_burst(stack: Stack, gh: FakeGitHub, n: int) -> None:
    before = _metric(stack, "coalesced"), _metric(stack, "done")
    gh.set_head("f" * 40, diff_for(999))
    t0 = time.monotonic()
    for _ in range(n):
        stack.github(comment_event("/review", comment_id=next(_ids)))
    wait_for(lambda: _metric(stack, "coalesced") + _metric(stack, "done") - sum(before) >= n, 3600, "reviews")
    wall = time.monotonic() - t0
    ran, merged = _metric(stack, "done") - before[1], _metric(stack, "coalesced") - before[0]
    print(f"  {n} /review webhooks for one PR: {ran} reviews ran, {merged} coalesced, {wall:.1f} s")


def _metric(stack: Stack, outcome: str) -> int:
    m = re.search(rf'prereview_jobs_total{{outcome="{outcome}"}} ([0-9.e+]+)', stack.metrics())
    return int(float(m.group(1))) if m else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="scripted")
    ap.add_argument("--queue", choices=["sqlite", "redis"], default="sqlite")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--reviews", type=int, default=5)
    ap.add_argument("--burst", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="prereview-bench-") as tmp:
        redis = None
        backend: dict = {"queue": args.queue}
        if args.queue == "redis":
            if redis_binary() is None:
                sys.exit("redis-server not found (apt-get install redis-server)")
            redis = RedisServer(Path(tmp))
            backend["redis_url"] = redis.url
        with FakeGitHub(repo=REPO, pr_number=PR, diff_text=diff_for(0)) as gh:
            stack = Stack(Path(tmp), gh.url, model=model_config(args.model), **backend)
            try:
                t0 = time.monotonic()
                stack.start_server()
                stack.start_worker(args.workers)
                print(
                    f"prereview webhook bench: model={args.model} queue={args.queue} workers={args.workers}"
                )
                print(f"  server up in {time.monotonic() - t0:.1f} s")
                latency(stack, gh, args.reviews)
                ask_burst(stack, gh, args.burst)
                review_burst(stack, gh, max(5, args.burst // 3))
            finally:
                stack.stop()
        if redis is not None:
            redis.stop()


if __name__ == "__main__":
    main()
