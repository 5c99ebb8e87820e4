"""Webhook server benchmark (prints figures; no assertions).

Runs `prereview serve` and `prereview worker` as real processes against the emulated GitHub API and
measures, for signed `issue_comment` webhooks:
  1. webhook -> first reaction (👀) and webhook -> review posted, for single /review commands
     (each on a new head, so every review posts new comments);
  2. a burst of /ask jobs (each: fetch the PR, one model call, one reply): jobs per minute;
  3. a burst of /review commands for one PR: how many ran and how many coalesced;
  4. a burst of /ask jobs spread over several PRs (one job per PR at a time; PRs run in parallel on
     --workers processes): jobs per minute.

usage: python bench/webhook.py [--model scripted|qwen2.5-coder-0.5b] [--queue sqlite|redis]
                               [--workers N] [--reviews 5] [--burst 30] [--prs 4]
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import re
import signal
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


class Router:
    """One API URL in front of several emulated repositories (one PR each): routes /repos/OWNER/NAME/…"""

    def __init__(self, fakes: dict[str, FakeGitHub]) -> None:
        self.fakes = fakes
        router = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                router.forward(self)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any  # noqa: N815

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def forward(self, h: BaseHTTPRequestHandler) -> None:
        parts = h.path.split("/")
        fake = self.fakes.get("/".join(parts[2:4])) or next(iter(self.fakes.values()))
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        conn = http.client.HTTPConnection("127.0.0.1", int(fake.url.rsplit(":", 1)[1]), timeout=60)
        conn.request(h.command, h.path, body=body or None, headers=dict(h.headers))
        resp = conn.getresponse()
        # The fake names itself in URLs (PR links, pagination); PyGithub insists they match its base URL.
        data = resp.read().replace(fake.url.encode(), self.url.encode())
        h.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                h.send_header(k, v.replace(fake.url, self.url))
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
        conn.close()


def multi_pr_burst(args: argparse.Namespace, backend: dict, tmp: Path) -> None:
    """/ask jobs spread over several PRs: one job per PR at a time, PRs in parallel across workers."""
    fakes = {
        f"bench/r{i}": FakeGitHub(repo=f"bench/r{i}", pr_number=PR, diff_text=diff_for(i)).start()
        for i in range(args.prs)
    }
    router = Router(fakes)
    (tmp / "multi").mkdir()
    stack = Stack(tmp / "multi", router.url, model=model_config(args.model), **backend)
    try:
        stack.start_server()
        stack.start_worker(args.workers)
        ids = []
        t0 = time.monotonic()
        for n in range(args.burst):
            repo, cid = f"bench/r{n % args.prs}", next(_ids)
            data = json.loads(comment_event(f"/ask what does change {cid} do?", comment_id=cid))
            data["repository"]["full_name"] = repo
            stack.github(json.dumps(data).encode())
            ids.append((repo, cid))
        wait_for(lambda: all(cid in replies(fakes[repo]) for repo, cid in ids), 3600, "the multi-PR burst")
        wall = time.monotonic() - t0
        print(
            f"  {args.burst} /ask jobs over {args.prs} PRs, {args.workers} worker(s): {wall:.1f} s, "
            f"{60 * args.burst / wall:.1f} jobs/minute"
        )
    finally:
        stack.stop()
        router.server.shutdown()
        for fake in fakes.values():
            fake.stop()


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
    ap.add_argument("--prs", type=int, default=4, help="PRs the multi-PR burst is spread over")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still stop the server and workers
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
        multi_pr_burst(args, backend, Path(tmp))
        if redis is not None:
            redis.stop()


if __name__ == "__main__":
    main()
