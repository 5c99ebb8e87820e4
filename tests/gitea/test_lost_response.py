"""A Gitea/Forgejo write whose response is lost (Gitea acted, the client never heard) is not posted twice:
before retrying, the client reads back the PR's reviews and comments. Faults come from a loopback proxy in
front of the emulated API."""

from __future__ import annotations

from bot.config import GiteaConfig
from bot.forges.gitea.forge import GiteaForge
from bot.publish.gitea import publish
from bot.types import ChangeRef, ChangeRequest, Coverage, Finding, Review, Stats
from tests.fakes.gitea_api import TOKEN, FakeGitea
from tests.fakes.proxy import FaultProxy
from tests.gitea.test_publish import DIFF


def test_a_review_and_a_summary_whose_responses_are_lost_are_posted_once() -> None:
    change = ChangeRequest(ChangeRef("gitea", "acme/widgets", number=3), "b" * 40, "a" * 40, DIFF)
    finding = Finding(path="app.py", line=3, message="eval of input", severity="high")
    review = Review("b" * 40, "a" * 40, (finding,), Stats(), Coverage())
    with FakeGitea(diff_text=DIFF) as fake, FaultProxy(fake.url) as proxy:
        proxy.lose("POST", r"/pulls/3/reviews$")
        proxy.lose("POST", r"/issues/3/comments$")
        forge = GiteaForge(proxy.url, TOKEN, "acme/widgets", sleep=lambda s: None)
        publish(forge, change, review, GiteaConfig())
        assert len(proxy.lost) == 2
        assert len(fake.reviews) == 1 and len(fake.inline) == 1
        assert len(fake.comments) == 1  # one summary
        assert fake.violations == []
