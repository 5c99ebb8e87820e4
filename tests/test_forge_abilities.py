"""Every forge is a `forges.base.Forge`; what only some can do is found with `isinstance`, never by name."""

from __future__ import annotations

from bot.forges.base import KeepsState, OpensDraftFixes, ResolvesThreads, SuggestsFixes
from bot.forges.gitea.forge import GiteaForge
from bot.forges.github.api import GitHubAPI
from bot.forges.github.forge import GitHubForge
from bot.forges.gitlab.forge import GitLabForge


def test_each_forge_has_the_abilities_its_host_offers() -> None:
    github = GitHubForge(GitHubAPI("http://127.0.0.1:9", "t", "o/r"))
    gitlab = GitLabForge("http://127.0.0.1:9", "t", "g/p")
    gitea = GiteaForge("http://127.0.0.1:9", "t", "o/r")
    has = {
        name: {
            a.__name__
            for a in (ResolvesThreads, KeepsState, SuggestsFixes, OpensDraftFixes)
            if isinstance(f, a)
        }
        for name, f in (("github", github), ("gitlab", gitlab), ("gitea", gitea))
    }
    assert has == {
        "github": {"ResolvesThreads", "KeepsState", "SuggestsFixes", "OpensDraftFixes"},
        "gitlab": {"ResolvesThreads", "OpensDraftFixes"},  # suggestions: the fix goes in a reply
        "gitea": {"ResolvesThreads"},  # no committable suggestions, no draft fix branches
    }
