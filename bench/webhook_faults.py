"""Webhook server under faults (prints figures; no assertions): is every PR reviewed exactly once per
head, nothing posted twice, every command answered?

Runs `prereview serve` and `prereview worker` as real processes (scripted model) against the emulated
GitHub API behind a fault-injecting loopback proxy (tests/fakes/proxy.py), on SQLite or a real Redis:
  1. burst: 50 deliveries (commands, their redeliveries and replays under new delivery ids);
  2. store outage (Redis only): redis-server stopped --outage seconds while a review runs;
  3. lost responses: the forge posts the review and the summary but the responses never arrive;
  4. kill -9 of the worker mid-review, then of `serve --workers 1` mid-review (its pool goes with it);
  5. a force-push while a review runs.

usage: python bench/webhook_faults.py [--queue sqlite|redis] [--outage 30]
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.github_api import FakeGitHub  # noqa: E402
from tests.fakes.proxy import FaultProxy  # noqa: E402
from tests.server.stack import DIFF, RedisServer, Stack, comment_event, redis_binary, wait_for  # noqa: E402

REPO, PR = "chmouel/scratchmyback", 1
SUMMARY = "prereview:summary"
_ids = itertools.count(100)


def answers(gh: FakeGitHub) -> collections.Counter[int]:
    return collections.Counter(
        int(m) for c in gh.issue_comments for m in re.findall(r"prereview:reply-to=(\d+)", c["body"])
    )


def reviews_per_head(gh: FakeGitHub) -> collections.Counter[str]:
    return collections.Counter(r["commit_id"][:7] for r in gh.reviews)


def report(name: str, gh: FakeGitHub, asked: list[int], t0: float, extra: str = "") -> None:
    got = answers(gh)
    unanswered = [c for c in asked if not got[c]]
    twice = sum(n > 1 for n in got.values())
    inline = collections.Counter(c["body"] for c in gh.comments)
    summaries = sum(SUMMARY in c["body"] for c in gh.issue_comments)
    print(
        f"  {name}: "
        + (
            f"{len(asked) - len(unanswered)}/{len(asked)} commands answered, {twice} answered twice; "
            if asked
            else ""
        )
        + f"reviews per head {dict(reviews_per_head(gh))}; inline comments posted twice: "
        f"{sum(n > 1 for n in inline.values())}; summaries: {summaries}"
        f"; {time.monotonic() - t0:.1f} s{extra}"
    )


def command(stack: Stack, text: str, delivery: str | None = None) -> int:
    cid = next(_ids)
    assert stack.github(comment_event(text, comment_id=cid), delivery=delivery).status_code in (200, 202)
    return cid


def push(gh: FakeGitHub, digit: str) -> None:
    """A new head (40 × `digit`) whose diff differs from every other head's (so it gets its own review)."""
    gh.set_head(digit * 40, DIFF.replace("eval(x)", f"eval(x)  # head {digit}"))


def reviewed(gh: FakeGitHub, head: str) -> Callable[[], bool]:
    """The head has its review and the summary was written after it."""

    def ok() -> bool:
        return head[:7] in reviews_per_head(gh) and any(head[:12] in c["body"] for c in gh.issue_comments)

    return ok


def settled(gh: FakeGitHub, asked: list[int]) -> Callable[[], bool]:
    def ok() -> bool:
        got = answers(gh)
        return all(got[c] for c in asked)

    return ok


def burst(stack: Stack, gh: FakeGitHub) -> None:
    t0, asked = time.monotonic(), []
    for i in range(20):
        cid = next(_ids)
        body = comment_event("/help" if i % 2 else "/ask what changed?", comment_id=cid)
        asked.append(cid)
        stack.github(body, delivery=f"burst-{cid}")
        stack.github(body, delivery=f"burst-{cid}")  # the forge redelivers
        if i % 2:
            stack.github(body)  # replayed under a new delivery id
    for _ in range(50 - 20 - 20 - 10):
        asked.append(command(stack, "/help"))
    wait_for(settled(gh, asked), 180, "the burst\n" + stack.logs())
    report("burst (50 deliveries)", gh, asked, t0)


def store_outage(stack: Stack, gh: FakeGitHub, redis: RedisServer, seconds: float) -> None:
    t0 = time.monotonic()
    push(gh, "9")
    gh.fail("POST", rf"/issues/{PR}/comments$", 502, times=3)  # hold the job a moment
    command(stack, "/review")
    time.sleep(0.5)
    redis.stop()
    time.sleep(seconds)
    redis.start()
    wait_for(reviewed(gh, "9" * 40), 240, "the review after the outage\n" + stack.logs())
    report(f"store outage ({seconds:g} s of Redis stopped)", gh, [], t0)


def lost_responses(stack: Stack, gh: FakeGitHub, proxy: FaultProxy) -> None:
    t0 = time.monotonic()
    proxy.lose("POST", rf"/pulls/{PR}/reviews$")
    proxy.lose("POST", rf"/issues/{PR}/comments$")
    push(gh, "1")
    command(stack, "/review")
    wait_for(reviewed(gh, "1" * 40), 120, "the review\n" + stack.logs())
    report("lost responses", gh, [], t0, f"; responses dropped: {len(proxy.lost)}")


def kills(stack: Stack, gh: FakeGitHub, proxy: FaultProxy) -> None:
    t0 = time.monotonic()
    push(gh, "2")
    proxy.delay("GET", rf"/pulls/{PR}/files", 3.0)
    worker = stack.workers[-1]
    command(stack, "/review")
    time.sleep(1.5)
    stack.kill(worker)
    stack.start_worker()
    wait_for(reviewed(gh, "2" * 40), 120, "the review after kill -9 of the worker\n" + stack.logs())
    report("kill -9 of the worker", gh, [], t0)


def force_push(stack: Stack, gh: FakeGitHub, proxy: FaultProxy) -> None:
    t0 = time.monotonic()
    push(gh, "3")
    proxy.delay("GET", rf"/pulls/{PR}/files", 2.0)
    command(stack, "/review")
    time.sleep(1.0)
    push(gh, "4")
    wait_for(reviewed(gh, "4" * 40), 120, "the review of the new head\n" + stack.logs())
    report("force-push during a review", gh, [], t0, " (3333333 must not appear)")


def kill_serve(tmp: Path, backend: dict) -> None:
    with (
        FakeGitHub(repo=REPO, pr_number=PR, diff_text=DIFF, head_sha="5" * 40) as gh,
        FaultProxy(gh.url) as proxy,
    ):
        (tmp / "serve").mkdir()
        stack = Stack(tmp / "serve", proxy.url, **backend)
        try:
            t0 = time.monotonic()
            stack.start_server(workers=1)
            wait_for(lambda: stack.http.get("/readyz").status_code == 200, 120, "ready\n" + stack.logs())
            proxy.delay("GET", rf"/pulls/{PR}/files", 3.0)
            command(stack, "/review")
            time.sleep(1.5)
            assert stack.server is not None
            os.kill(stack.server.pid, signal.SIGKILL)  # its worker pool goes with it
            stack.server.wait(10)
            stack.start_server(workers=1)
            wait_for(reviewed(gh, "5" * 40), 180, "the review after kill -9 of serve\n" + stack.logs())
            report("kill -9 of serve --workers 1", gh, [], t0)
        finally:
            stack.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queue", choices=["sqlite", "redis"], default="sqlite")
    ap.add_argument("--outage", type=float, default=30.0, help="seconds Redis is stopped")
    ap.add_argument("--keep", type=Path, help="keep the servers' logs in this (new) folder")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="prereview-bench-") as name:
        tmp = args.keep or Path(name)
        tmp.mkdir(parents=True, exist_ok=True)
        redis = None
        backend: dict = {"queue": args.queue}
        if args.queue == "redis":
            if redis_binary() is None:
                sys.exit("redis-server not found (apt-get install redis-server)")
            (tmp / "redis").mkdir()
            redis = RedisServer(tmp / "redis", appendonly=True)
            backend["redis_url"] = redis.url
        settings = {"server": {"lease_seconds": 5.0, "store_retry_seconds": args.outage + 60}}
        print(f"prereview webhook fault bench: queue={args.queue}, scripted model")
        with (
            FakeGitHub(repo=REPO, pr_number=PR, diff_text=DIFF, head_sha="0" * 40) as gh,
            FaultProxy(gh.url) as proxy,
        ):
            stack = Stack(tmp, proxy.url, **backend, **settings)
            try:
                stack.start_server()
                stack.start_worker()
                burst(stack, gh)
                if redis is not None:
                    store_outage(stack, gh, redis, args.outage)
                lost_responses(stack, gh, proxy)
                kills(stack, gh, proxy)
                force_push(stack, gh, proxy)
            finally:
                stack.stop()
        kill_serve(tmp, backend)
        if redis is not None:
            redis.stop()


if __name__ == "__main__":
    main()
