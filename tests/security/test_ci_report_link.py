"""`prereview gitlab` writes its Code Quality report into the merge request's checkout
(gl-code-quality-report.json): a link the merge request committed at that path is replaced by the report,
never written through to the file it points at."""

from __future__ import annotations

from pathlib import Path

from bot.cli.ci_jobs import Echo
from bot.cli.ci_review import CiOutlet


def test_a_committed_link_at_the_report_path_is_replaced_not_followed(tmp_path: Path) -> None:
    host = tmp_path / "home" / ".bashrc"
    host.parent.mkdir()
    host.write_text("the host's\n")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    report = checkout / "gl-code-quality-report.json"
    report.symlink_to(host)
    outlet = CiOutlet("!7", "gitlab", Echo(), None, "no token", report=report)
    outlet.skipped("draft")
    assert host.read_text() == "the host's\n"
    assert not report.is_symlink() and report.read_text() == "[]\n"
    assert report.stat().st_mode & 0o777 == 0o644  # the runner's artifact upload reads it
    assert [p.name for p in checkout.iterdir()] == [report.name], "no temporary file left behind"
