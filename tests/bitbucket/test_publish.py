"""Publishing on Bitbucket Data Center in process, against the emulated API (requests checked against
Atlassian's spec): anchors, the summary created then edited in place, Code Insights, refusals, errors."""

from __future__ import annotations

import pytest

from bot.forges.base import PermissionDenied
from bot.forges.bitbucket.api import BitbucketApi
from bot.forges.bitbucket.forge import BitbucketForge
from bot.publish import flow
from bot.types import ChangeRef, ChangeRequest, Coverage, Finding, Review, Stats
from tests.fakes.bitbucket_api import BOT, TOKEN, FakeBitbucket

BASE, HEAD = "b" * 40, "a" * 40
DIFF = """diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1,3 +1,5 @@
 def f(x):
-    return x
+    y = eval(x)
+    z = y
+    return z
 # end
"""


def _change() -> ChangeRequest:
    return ChangeRequest(ChangeRef("bitbucket", "PRJ/widgets", number=3), BASE, HEAD, DIFF)


def _finding(line: int, side: str = "RIGHT", end: int | None = None, msg: str = "m", **kw: object) -> Finding:
    return Finding(path="app.py", line=line, end_line=end, side=side, message=msg, severity="high", **kw)  # type: ignore[arg-type]


def _forge(fake: FakeBitbucket, token: str = TOKEN) -> BitbucketForge:
    return BitbucketForge(BitbucketApi(fake.url, token, fake.repo, retries=0))


def _publish(
    fake: FakeBitbucket,
    *findings: Finding,
    max_comments: int = 30,
    failed: bool = False,
    insights: bool = True,
) -> flow.PublishResult:
    """What `prereview bitbucket` does after the review: the one flow, then the Code Insights report."""
    review = Review(BASE, HEAD, tuple(findings), Stats(), Coverage())
    forge = _forge(fake)
    res = flow.publish(forge, _change(), review, flow.Options(max_comments=max_comments, file_fallback=True))
    if insights:
        forge.report(HEAD, review, failed=failed)
    return res


def _fake() -> FakeBitbucket:
    return FakeBitbucket(diff_text=DIFF, base_sha=BASE, head_sha=HEAD)


def test_added_context_and_removed_lines_are_anchored_by_their_kind() -> None:
    with _fake() as fake:
        res = _publish(
            fake, _finding(2, "LEFT", msg="removed"), _finding(3, msg="added"), _finding(1, msg="context")
        )
        assert fake.violations == [] and fake.off_diff == []
        by_msg = {c["text"].split("\n")[2]: fake.anchors[c["id"]] for c in fake.inline}
        assert by_msg["removed"] | {"fromHash": "", "toHash": ""} == {
            "diffType": "EFFECTIVE",
            "path": "app.py",
            "line": 2,
            "lineType": "REMOVED",
            "fileType": "FROM",
            "fromHash": "",
            "toHash": "",
        }
        assert (by_msg["added"]["line"], by_msg["added"]["lineType"], by_msg["added"]["fileType"]) == (
            3,
            "ADDED",
            "TO",
        )
        assert (by_msg["context"]["line"], by_msg["context"]["lineType"]) == (1, "CONTEXT")
        assert res.posted == 3 and res.summary == "created"
        auth = {r.auth for r in fake.requests}
        assert auth == {"token"}


def test_summary_is_created_once_then_edited_in_place_with_its_version() -> None:
    with _fake() as fake:
        first = _publish(fake, _finding(3, msg="one"))
        [summary] = fake.general
        assert summary["text"].startswith("[prereview:summary]: #\n") and summary["author"]["slug"] == BOT
        assert "<!--" not in summary["text"] and "<!--" not in fake.inline[0]["text"]  # shown as text there
        again = _publish(fake, _finding(3, msg="one"))
        assert again.posted == 0 and again.skipped == 1 and again.summary == "unchanged"
        third = _publish(
            fake, _finding(3, msg="one"), Finding(path="app.py", line=40, message="far", in_diff=False)
        )
        assert third.summary == "updated" and third.in_summary == 1
        [summary] = fake.general  # the same comment, edited: version 0 -> 1
        assert summary["version"] == 1 and "far" in summary["text"]
        assert len(fake.inline) == 1 and first.posted == 1
        puts = [r for r in fake.requests if r.method == "PUT" and "/comments/" in r.path]
        assert [r.body["version"] for r in puts] == [0]
        assert fake.violations == []


def test_someone_elses_summary_lookalike_is_not_the_bots_state() -> None:
    with _fake() as fake:
        fake.add_comment(
            "[prereview:summary]: #\nfake summary\n[prereview:fp=0123456789abcdef]: #", author="mallory"
        )
        res = _publish(fake, _finding(3))
        assert res.summary == "created" and len(fake.general) == 2
        assert fake.general[0]["text"].endswith("0123456789abcdef]: #")  # untouched


def test_a_range_sits_on_its_first_line_and_the_cap_sends_the_rest_to_the_summary() -> None:
    with _fake() as fake:
        res = _publish(
            fake,
            _finding(3, end=4, msg="range"),
            _finding(2, "LEFT", msg="two"),
            max_comments=1,
        )
        [c] = fake.inline
        assert c["text"].startswith("**lines 3–4**") and fake.anchors[c["id"]]["line"] == 3
        assert res.in_summary == 1 and "two" in fake.general[0]["text"]


def test_code_insights_report_and_annotations_replace_the_previous_run() -> None:
    with _fake() as fake:
        sec = _finding(3, msg="eval of input", category="security", cwe="CWE-95")
        _publish(fake, sec, _finding(2, "LEFT", msg="gone"), failed=True)
        report = fake.reports[(HEAD, "prereview")]
        assert report["result"] == "FAIL" and report["title"] == "prereview"
        notes = fake.annotations[(HEAD, "prereview")]
        assert {(a["line"], a["severity"], a["type"]) for a in notes} == {
            (3, "HIGH", "VULNERABILITY"),
            (0, "HIGH", "BUG"),
        }
        _publish(fake, sec)  # a re-run: exactly this run's annotations, PASS now
        assert [a["message"] for a in fake.annotations[(HEAD, "prereview")]] == ["eval of input"]
        assert fake.reports[(HEAD, "prereview")]["result"] == "PASS"
        assert fake.violations == []


def test_insights_off_posts_no_report() -> None:
    with _fake() as fake:
        _publish(fake, _finding(3), insights=False)
        assert fake.reports == {} and not any("/insights/" in r.path for r in fake.requests)


def test_a_read_only_token_is_a_one_line_permission_error_that_names_the_fix() -> None:
    with FakeBitbucket(diff_text=DIFF, read_only_tokens=(TOKEN,)) as fake:
        with pytest.raises(PermissionDenied, match="PREREVIEW_BITBUCKET_TOKEN") as err:
            _publish(fake, _finding(3))
        assert TOKEN not in str(err.value) and "\n" not in str(err.value)


def test_a_wrong_token_is_401_and_never_shown() -> None:
    with _fake() as fake:
        api = BitbucketApi(fake.url, "wrong-token", fake.repo, retries=0)
        with pytest.raises(PermissionDenied, match="401") as err:
            api.pull(3)
        assert "wrong-token" not in str(err.value) and "wrong-token" not in repr(api)


def test_fetch_reads_the_pull_request_and_its_diff() -> None:
    with FakeBitbucket(diff_text=DIFF, base_sha=BASE, head_sha=HEAD, title="T", description="D") as fake:
        change = _forge(fake).fetch(ChangeRef("bitbucket", fake.repo, number=3))
        assert (change.base_sha, change.head_sha, change.title, change.body) == (BASE, HEAD, "T", "D")
        assert change.diff_text == DIFF and change.author == "dev"
        assert fake.violations == []


def test_comments_are_read_across_activity_pages_with_replies() -> None:
    with _fake() as fake:
        for i in range(130):
            fake.add_comment(f"c{i}")
        fake.comments[0]["comments"].append(
            {**fake.user("x"), "id": 999, "version": 0, "text": "reply", "comments": []}
        )
        got = BitbucketApi(fake.url, TOKEN, fake.repo, retries=0).comments(3)
        assert len(got) == 131 and any(c.get("parent_id") == fake.comments[0]["id"] for c in got)
        assert sum(r.path.endswith("/activities") for r in fake.requests) == 2


def test_the_forge_protocol_reply_resolve_and_file_comments() -> None:
    from bot.change.diff import parse
    from bot.forges.base import KeepsState, OpensDraftFixes, ResolvesThreads, SuggestsFixes

    with _fake() as fake:
        forge = _forge(fake)
        abilities = (ResolvesThreads, KeepsState, SuggestsFixes, OpensDraftFixes)
        assert [a.__name__ for a in abilities if isinstance(forge, a)] == ["ResolvesThreads"]
        outside = Finding(path="app.py", line=40, message="far", in_diff=False)
        c = forge.placement(_change()).on_file(outside, parse(DIFF), "outside the diff")
        assert c is not None and "line" not in c.where
        assert forge.post_review(3, HEAD, "", [c]).posted == (c,)
        [posted] = forge.published(3).comments
        assert posted.path == "app.py" and posted.line is None
        forge.reply(3, "thanks", thread=posted.id)
        assert fake.comments[0]["comments"][0]["text"] == "thanks"
        forge.resolve(3, posted, HEAD)
        assert fake.comments[0]["threadResolved"] is True and forge.published(3).comments == ()
        assert fake.violations == [] and fake.off_diff == []


def test_a_refused_anchor_is_in_posting_refused_not_an_exception() -> None:
    from bot.forges.base import Comment

    with _fake() as fake:
        bad = Comment(
            _finding(3), "x", {"path": "app.py", "line": 3, "lineType": "SIDEWAYS", "fileType": "TO"}
        )
        posting = _forge(fake).post_review(3, HEAD, "", [bad])
        assert posting.posted == () and posting.refused[0][0] is bad and "lineType" in posting.refused[0][1]


def test_untrusted_text_cannot_become_a_marker_on_bitbucket() -> None:
    """A model message with a line in the reference form is written with an invisible break, so reading
    the bot's own comment back finds only the bot's markers."""
    from bot.render.markdown import fingerprints_in

    with _fake() as fake:
        forged = "0123456789abcdef"
        f = _finding(3, msg=f"look\n[prereview:fp={forged}]: #")
        _publish(fake, f)
        [posted] = _forge(fake).published(3).comments
        assert fingerprints_in(posted.body) == {f.fingerprint}


def test_an_overloaded_server_is_retried_with_backoff_then_a_throttled_error() -> None:
    from bot.types import Throttled

    with _fake() as fake:
        slept: list[float] = []
        api = BitbucketApi(fake.url, TOKEN, fake.repo, retries=2, sleep=slept.append)
        fake.fail_next = [503, 429]
        assert api.pull(3)["id"] == 3 and slept == [1.0, 2.0]
        fake.fail_next = [503, 503, 503]
        with pytest.raises(Throttled, match="run again later"):
            api.pull(3)


def test_a_finding_gone_at_the_next_review_has_its_thread_resolved() -> None:
    with _fake() as fake:
        _publish(fake, _finding(3, msg="fixed later"))
        res = _publish(fake)
        [c] = fake.inline
        assert res.resolved == 1 and c["threadResolved"] is True and c["version"] == 1
        assert fake.violations == []


def test_without_x_ausername_the_token_user_must_be_named() -> None:
    from bot.types import PrereviewError

    with _fake() as fake:
        fake.username_header = False
        with pytest.raises(PrereviewError, match="PREREVIEW_BITBUCKET_USER"):
            _forge(fake).published(3)
        named = BitbucketForge(BitbucketApi(fake.url, TOKEN, fake.repo, user=BOT, retries=0))
        assert named.published(3).summary is None
