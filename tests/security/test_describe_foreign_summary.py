"""`/describe` on GitLab writes into the bot's own summary note only: a note by anyone else that starts
with the summary marker is text, never the place to write (nor to take over)."""

from __future__ import annotations

from bot.forges.gitlab.forge import GitLabForge
from bot.publish.gitlab import set_walkthrough
from bot.render.markdown import SUMMARY_MARKER
from bot.render.walkthrough import END, START
from tests.fakes.gitlab_api import BOT_USER, TOKEN, FakeGitLab


def test_describe_never_writes_into_a_look_alike_summary_by_another_user() -> None:
    with FakeGitLab(diff_text="", head_sha="a" * 40, base_sha="b" * 40) as gl:
        planted = gl.add_note(f"{SUMMARY_MARKER}\nfake summary by a contributor", author="dev")
        forge = GitLabForge(gl.url, TOKEN, str(gl.project_id))
        assert set_walkthrough(forge, gl.mr_iid, f"{START}\nwhat changed\n{END}\n") == "summary created"
        bodies = {n["id"]: n for n in gl.notes}
        assert bodies[planted["id"]]["body"].endswith("fake summary by a contributor")
        ours = [n for n in gl.notes if n["author"]["username"] == BOT_USER]
        assert len(ours) == 1 and ours[0]["body"].startswith(SUMMARY_MARKER)
